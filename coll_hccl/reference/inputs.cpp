#include "coll_hccl/reference/inputs.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "coll_hccl/reference/scalar.hpp"

namespace hccl::reference {
namespace {

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Draw {
  std::uint64_t h;
  std::uint32_t ranks;

  // A fresh 64-bit value for each k.
  std::uint64_t bits(std::uint64_t k) const { return splitmix(h + k * 0x632be59bd9b4e019ull); }
  // True with probability num / den.
  bool chance(std::uint64_t k, std::uint64_t num, std::uint64_t den) const {
    return bits(k) % den < num;
  }
};

// Largest |exponent| of sum/max/min operands: wide enough that sums round, narrow enough that 64
// of them stay finite (fp16 tops out at 65504).
int spread(DataType t) {
  switch (t) {
    case DataType::Float16:
      return 5;
    case DataType::BFloat16:
      return 20;
    case DataType::Float32:
    case DataType::ComplexFloat:
      return 30;
    default:
      return 60;
  }
}

// A d-bit significand times 2^(k-d) with k in [-E, E], either sign; now and then a signed zero
// (max and min must rank +0 above -0).
long double mixedMagnitude(const Draw& d, std::uint64_t k, int dig, int e) {
  if (d.chance(k, 1, 29)) return d.chance(k + 1, 1, 2) ? -0.0L : 0.0L;
  const std::uint64_t m = (d.bits(k + 2) >> (64 - dig)) | (std::uint64_t{1} << (dig - 1));
  const int expo = static_cast<int>(d.bits(k + 3) % static_cast<std::uint64_t>(2 * e + 1)) - e;
  const long double v = std::ldexp(static_cast<long double>(m), expo - dig);
  return d.chance(k + 4, 1, 2) ? -v : v;
}

// 1 + m 2^-(d-1) with |m| <= 2^(d-1) * frac: exactly representable, within [1-frac, 1+frac].
long double nearOne(const Draw& d, std::uint64_t k, int dig, double frac) {
  const auto limit = static_cast<std::int64_t>(std::ldexp(frac, dig - 1));
  const auto m =
      static_cast<std::int64_t>(d.bits(k) % static_cast<std::uint64_t>(2 * limit + 1)) - limit;
  return 1.0L + std::ldexp(static_cast<long double>(m), 1 - dig);
}

long double realOperand(const Draw& d, std::uint64_t k, DataType t, ReduceOp op) {
  const int dig = significandBits(t);
  if (op == ReduceOp::Prod) {
    const long double v = nearOne(d, k, dig, 0.1);
    return d.chance(k + 9, 1, 4) ? -v : v;
  }
  return mixedMagnitude(d, k, dig, spread(t));
}

void storeReal(std::byte* p, DataType t, long double v) {
  switch (t) {
    case DataType::Float16: {
      const std::uint16_t b = fp16Bits(v);
      std::memcpy(p, &b, 2);
      break;
    }
    case DataType::BFloat16: {
      const std::uint16_t b = bf16Round(static_cast<double>(v));
      std::memcpy(p, &b, 2);
      break;
    }
    case DataType::Float32: {
      const auto f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DataType::Float64: {
      const auto f = static_cast<double>(v);
      std::memcpy(p, &f, 8);
      break;
    }
    default:  // long double: the 10 significant bytes; the padding stays zero
      std::memcpy(p, &v, significantBytes(DataType::LongDouble));
      break;
  }
}

template <typename T>
T integerOperand(const Draw& d, ReduceOp op) {
  constexpr unsigned kBits = 8 * sizeof(T);
  const std::uint64_t r = d.bits(0);
  // Logical and bitwise operands: the odds are set so that a reduction over p ranks comes out
  // either way (about (1 - 1/(p+2))^p = 1/e that no rank flips it).
  const std::uint64_t flip = d.ranks + 2;
  std::uint64_t v = r;
  switch (op) {
    case ReduceOp::Prod:
      v = d.chance(1, 1, 11) ? r & ~std::uint64_t{1} : r | 1;  // mostly odd
      break;
    case ReduceOp::LAnd:
      v = d.chance(1, 1, flip) ? 0 : (r | (std::uint64_t{1} << (r % kBits)));
      break;
    case ReduceOp::LOr:
      v = d.chance(1, 1, flip) ? (r | (std::uint64_t{1} << (r % kBits))) : 0;
      break;
    case ReduceOp::LXor:
      v = d.chance(1, 1, 2) ? 0 : (r | (std::uint64_t{1} << (r % kBits)));
      break;
    case ReduceOp::BAnd:
      v = d.chance(1, 4, flip) ? ~(std::uint64_t{1} << (r % kBits)) : ~std::uint64_t{0};
      break;
    case ReduceOp::BOr:
      v = d.chance(1, 4, flip) ? std::uint64_t{1} << (r % kBits) : 0;
      break;
    default:  // sum (wraps), max, min, bxor: any bits
      break;
  }
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(v));
}

template <typename T>
void storeInteger(std::byte* p, const Draw& d, ReduceOp op) {
  const T v = integerOperand<T>(d, op);
  std::memcpy(p, &v, sizeof(T));
}

void element(std::byte* p, DataType t, ReduceOp op, const Draw& d) {
  switch (t) {
    case DataType::Int8:
      return storeInteger<std::int8_t>(p, d, op);
    case DataType::Int16:
      return storeInteger<std::int16_t>(p, d, op);
    case DataType::Int32:
      return storeInteger<std::int32_t>(p, d, op);
    case DataType::Int64:
      return storeInteger<std::int64_t>(p, d, op);
    case DataType::UInt8:
    case DataType::Byte:
    case DataType::Bool:  // any non-zero byte is true, not only 1
      return storeInteger<std::uint8_t>(p, d, op);
    case DataType::UInt16:
      return storeInteger<std::uint16_t>(p, d, op);
    case DataType::UInt32:
      return storeInteger<std::uint32_t>(p, d, op);
    case DataType::UInt64:
      return storeInteger<std::uint64_t>(p, d, op);
    case DataType::Float16:
    case DataType::BFloat16:
    case DataType::Float32:
    case DataType::Float64:
    case DataType::LongDouble:
      return storeReal(p, t, realOperand(d, 0, t, op));
    case DataType::ComplexFloat:
    case DataType::ComplexDouble: {
      const DataType part = t == DataType::ComplexFloat ? DataType::Float32 : DataType::Float64;
      const int dig = significandBits(t);
      long double re = 0, im = 0;
      if (op == ReduceOp::Prod) {
        // |z| within about [0.95, 1.09] (im has 9 bits, exact in either part): 64 factors stay
        // far from overflow and underflow.
        re = nearOne(d, 0, dig, 0.05);
        im = std::ldexp(static_cast<long double>(static_cast<std::int64_t>(d.bits(1) % 601) - 300),
                        -10);
      } else {
        re = mixedMagnitude(d, 0, dig, spread(t));
        im = mixedMagnitude(d, 10, dig, spread(t));
      }
      storeReal(p, part, re);
      storeReal(p + sizeOf(part), part, im);
      return;
    }
  }
}

}  // namespace

std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return splitmix(splitmix(splitmix(a) ^ b) ^ c);
}

std::vector<std::byte> contribution(DataType t, ReduceOp op, std::uint64_t seed,
                                    std::uint32_t ranks, std::uint32_t rank, std::uint64_t count) {
  const std::size_t es = sizeOf(t);
  std::vector<std::byte> out(count * es, std::byte{0});
  for (std::uint64_t i = 0; i < count; ++i)
    element(out.data() + i * es, t, op, Draw{mix(seed, rank, i), ranks});
  return out;
}

}  // namespace hccl::reference
