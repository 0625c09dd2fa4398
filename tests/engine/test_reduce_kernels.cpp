// Every defined (type, op) kernel against a scalar reference written independently of the kernels:
// integers through 128-bit arithmetic reduced modulo 2^bits, fp16 through GCC's _Float16, bf16
// through double arithmetic and a frexp/nearbyint rounding, the others through plain scalar code.
#include <gtest/gtest.h>

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "coll_hccl/engine/float16.hpp"
#include "coll_hccl/engine/reduce_kernels.hpp"

namespace hccl::engine {
namespace {

__extension__ typedef __int128 I128;
__extension__ typedef unsigned __int128 U128;

using Bytes = std::vector<std::byte>;

template <typename T>
T load(const Bytes& v, std::size_t i) {
  T x;
  std::memcpy(&x, v.data() + i * sizeof(T), sizeof(T));
  return x;
}
template <typename T>
void store(Bytes& v, std::size_t i, T x) {
  std::memcpy(v.data() + i * sizeof(T), &x, sizeof(T));
}

// ---- references ---------------------------------------------------------------------------------

// The exact value reduced modulo 2^bits, read back as T (two's complement).
template <typename T>
T wrapToType(U128 v) {
  constexpr int bits = 8 * sizeof(T);
  const U128 m = v & ((U128{1} << bits) - 1);
  using U = std::make_unsigned_t<T>;
  return std::bit_cast<T>(static_cast<U>(m));
}

template <typename T>
T refInteger(ReduceOp op, T a, T b) {
  // Exact in 128 bits for sums; products are taken modulo 2^128, which keeps their low 64 bits.
  const U128 x = static_cast<U128>(static_cast<I128>(a)),
             y = static_cast<U128>(static_cast<I128>(b));
  switch (op) {
    case ReduceOp::Sum:
      return wrapToType<T>(x + y);
    case ReduceOp::Prod:
      return wrapToType<T>(x * y);
    case ReduceOp::Max:
      return a < b ? b : a;
    case ReduceOp::Min:
      return b < a ? b : a;
    case ReduceOp::LAnd:
      return (a != 0 && b != 0) ? T{1} : T{0};
    case ReduceOp::LOr:
      return (a != 0 || b != 0) ? T{1} : T{0};
    case ReduceOp::LXor:
      return ((a != 0) != (b != 0)) ? T{1} : T{0};
    case ReduceOp::BAnd:
      return wrapToType<T>(x & y);
    case ReduceOp::BOr:
      return wrapToType<T>(x | y);
    case ReduceOp::BXor:
      return wrapToType<T>(x ^ y);
  }
  return T{};
}

// The documented float rule: NaN wins (left first), +0 is above -0.
template <typename T>
T refMax(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a < b ? b : a;
}
template <typename T>
T refMin(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return b < a ? b : a;
}

template <typename T>
T refFloat(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Sum:
      return a + b;
    case ReduceOp::Prod:
      return a * b;
    case ReduceOp::Max:
      return refMax(a, b);
    case ReduceOp::Min:
      return refMin(a, b);
    default:
      return T{};
  }
}

// The documented NaN rule of the 16-bit formats, written out on the encodings: a NaN operand,
// the left one first, comes back quieted with its payload kept; an invalid operation on numbers
// (inf - inf, 0 x inf) gives x86's default NaN: negative, quiet, zero payload.
struct Format16 {
  std::uint16_t expMask;
  std::uint16_t quietBit;
  bool isNan(std::uint16_t h) const { return (h & 0x7fff) > expMask; }
  std::uint16_t defaultNan() const {
    return static_cast<std::uint16_t>(0x8000 | expMask | quietBit);
  }
};
constexpr Format16 kFp16Format{0x7c00, 0x0200};
constexpr Format16 kBf16Format{0x7f80, 0x0040};

// 0 when neither operand is NaN, else the result the NaN rule gives.
std::uint16_t nanOperand(const Format16& f, std::uint16_t a, std::uint16_t b) {
  if (f.isNan(a)) return a | f.quietBit;
  if (f.isNan(b)) return b | f.quietBit;
  return 0;
}

std::uint16_t refFp16Numbers(ReduceOp op, std::uint16_t a, std::uint16_t b);

std::uint16_t refFp16(ReduceOp op, std::uint16_t a, std::uint16_t b) {
  if (const std::uint16_t n = nanOperand(kFp16Format, a, b)) return n;
  const std::uint16_t r = refFp16Numbers(op, a, b);
  return kFp16Format.isNan(r) ? kFp16Format.defaultNan() : r;
}

std::uint16_t refFp16Numbers(ReduceOp op, std::uint16_t a, std::uint16_t b) {
  const auto x = std::bit_cast<_Float16>(a), y = std::bit_cast<_Float16>(b);
  _Float16 r;
  switch (op) {
    case ReduceOp::Sum:
      r = static_cast<_Float16>(x + y);
      break;
    case ReduceOp::Prod:
      r = static_cast<_Float16>(x * y);
      break;
    case ReduceOp::Max:
      r = static_cast<_Float16>(refMax(static_cast<float>(x), static_cast<float>(y)));
      break;
    default:
      r = static_cast<_Float16>(refMin(static_cast<float>(x), static_cast<float>(y)));
      break;
  }
  return std::bit_cast<std::uint16_t>(r);
}

double bf16ToDouble(std::uint16_t h) {
  const int exp = (h >> 7) & 0xff;
  const int man = h & 0x7f;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0xff)
    return man ? std::numeric_limits<double>::quiet_NaN()
               : sign * std::numeric_limits<double>::infinity();
  if (exp == 0) return sign * std::ldexp(man, -133);
  return sign * std::ldexp(128 + man, exp - 134);
}

// Round a double to bf16, nearest-even, by scaling to an integer significand.
std::uint16_t doubleToBf16(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double ax = std::fabs(x);
  if (ax == 0) return sign;
  if (std::isinf(ax)) return sign | 0x7f80;
  const int e = std::max(std::ilogb(ax), -126);  // subnormals share the quantum of 2^-126
  const double quantum = std::ldexp(1.0, e - 7);
  const double rounded = std::nearbyint(ax / quantum) * quantum;  // FE_TONEAREST: ties to even
  if (rounded >= std::ldexp(1.0, 128)) return sign | 0x7f80;
  // `rounded` is a bf16 value, exact in float: its top 16 bits are the encoding.
  const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(rounded));
  return static_cast<std::uint16_t>(sign | (bits >> 16));
}

std::uint16_t refBf16Numbers(ReduceOp op, std::uint16_t a, std::uint16_t b) {
  const double x = bf16ToDouble(a), y = bf16ToDouble(b);
  switch (op) {
    case ReduceOp::Sum:
      return doubleToBf16(x + y);  // double (p=53 >= 2*8+2) rounding first is innocuous
    case ReduceOp::Prod:
      return doubleToBf16(x * y);  // exact: 8-bit significands
    case ReduceOp::Max:
      return doubleToBf16(refMax(x, y));
    default:
      return doubleToBf16(refMin(x, y));
  }
}

std::uint16_t refBf16(ReduceOp op, std::uint16_t a, std::uint16_t b) {
  if (const std::uint16_t n = nanOperand(kBf16Format, a, b)) return n;
  const std::uint16_t r = refBf16Numbers(op, a, b);
  return kBf16Format.isNan(r) ? kBf16Format.defaultNan() : r;
}

template <typename T>
std::complex<T> refComplex(ReduceOp op, std::complex<T> a, std::complex<T> b) {
  const T ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  if (op == ReduceOp::Sum) return {ar + br, ai + bi};
  // Test data for products is finite, where C's product is the textbook formula.
  const T re1 = ar * br, re2 = ai * bi, im1 = ar * bi, im2 = ai * br;
  return {re1 - re2, im1 + im2};
}

// ---- test data ----------------------------------------------------------------------------------

std::size_t elemBytes(DataType t) {
  return sizeOf(t);
}

template <typename T>
std::vector<T> integerEdges() {
  using L = std::numeric_limits<T>;
  return {T{0},
          T{1},
          static_cast<T>(-1),
          L::min(),
          L::max(),
          static_cast<T>(L::min() + 1),
          static_cast<T>(L::max() - 1),
          static_cast<T>(T{1} << (4 * sizeof(T))),
          T{2},
          T{3}};
}

template <typename T>
std::vector<T> floatEdges() {
  using L = std::numeric_limits<T>;
  return {T{0},
          -T{0},
          L::denorm_min(),
          -L::denorm_min(),
          L::min(),
          L::max(),
          L::lowest(),
          L::infinity(),
          -L::infinity(),
          L::quiet_NaN(),
          -L::quiet_NaN(),
          T{1},
          T{1} + L::epsilon(),
          L::epsilon() / 2,
          T{2},
          L::min() / 3,
          -L::min() / 5,
          T{3} * L::epsilon() / 2};
}

const std::vector<std::uint16_t> kFp16Edges = {
    0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00,
    0x7c01, 0xfe01, 0x3c00, 0x3c01, 0x1000, 0x1400, 0x0200, 0x5bff, 0x7800, 0x3555, 0x0002};
const std::vector<std::uint16_t> kBf16Edges = {
    0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0,
    0x7f81, 0xff81, 0x3f80, 0x3f81, 0x3b80, 0x3c00, 0x0040, 0x7f00, 0x3eab, 0x1f80, 0x2000};

// Operand `role` (0 = a, 1 = b): the first edges^2 elements pair every edge value with every
// other, in both orders; the rest mixes random values with edge values.
template <typename T, typename Edges, typename Random>
void fill(Bytes& v, std::size_t n, std::mt19937_64& rng, const Edges& edges, Random random,
          int role) {
  v.resize(n * sizeof(T));
  const std::size_t e = edges.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i < e * e) {
      store<T>(v, i, static_cast<T>(edges[role == 0 ? i / e : i % e]));
      continue;
    }
    const bool edge = rng() % 3 == 0;
    store<T>(v, i, edge ? static_cast<T>(edges[rng() % e]) : random());
  }
}

template <typename T>
T randomFloat(std::mt19937_64& rng) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  if (rng() % 2) return std::bit_cast<T>(static_cast<Bits>(rng()));
  return static_cast<T>(std::uniform_real_distribution<double>(-1000.0, 1000.0)(rng));
}

Bytes makeValues(DataType t, ReduceOp op, std::size_t n, std::mt19937_64& rng, int role) {
  Bytes v;
  switch (t) {
#define HCCL_INT_CASE(DT, T)                                                        \
  case DataType::DT:                                                                \
    fill<T>(                                                                        \
        v, n, rng, integerEdges<T>(), [&] { return static_cast<T>(rng()); }, role); \
    break;
    HCCL_INT_CASE(Int8, std::int8_t)
    HCCL_INT_CASE(Int16, std::int16_t)
    HCCL_INT_CASE(Int32, std::int32_t)
    HCCL_INT_CASE(Int64, std::int64_t)
    HCCL_INT_CASE(UInt8, std::uint8_t)
    HCCL_INT_CASE(UInt16, std::uint16_t)
    HCCL_INT_CASE(UInt32, std::uint32_t)
    HCCL_INT_CASE(UInt64, std::uint64_t)
#undef HCCL_INT_CASE
    case DataType::Float16:
      fill<std::uint16_t>(
          v, n, rng, kFp16Edges, [&] { return static_cast<std::uint16_t>(rng()); }, role);
      break;
    case DataType::BFloat16:
      fill<std::uint16_t>(
          v, n, rng, kBf16Edges, [&] { return static_cast<std::uint16_t>(rng()); }, role);
      break;
    case DataType::Float32:
      fill<float>(
          v, n, rng, floatEdges<float>(), [&] { return randomFloat<float>(rng); }, role);
      break;
    case DataType::Float64:
      fill<double>(
          v, n, rng, floatEdges<double>(), [&] { return randomFloat<double>(rng); }, role);
      break;
    case DataType::LongDouble:
      // Built from doubles (valid x87 encodings only), with bits beyond double's precision.
      fill<long double>(
          v, n, rng, floatEdges<long double>(),
          [&] {
            const double hi = randomFloat<double>(rng);
            return std::isfinite(hi) ? static_cast<long double>(hi) * (1.0L + 0x1p-60L)
                                     : static_cast<long double>(hi);
          },
          role);
      break;
    case DataType::ComplexFloat:
    case DataType::ComplexDouble: {
      const bool f = t == DataType::ComplexFloat;
      v.resize(n * sizeOf(t));
      std::uniform_real_distribution<double> d(-100.0, 100.0);
      const std::vector<double> edges = {0.0, -0.0, 1.0, 1e-3, 3.0};
      for (std::size_t i = 0; i < n; ++i) {
        double re = rng() % 4 ? d(rng) : edges[rng() % edges.size()];
        double im = rng() % 4 ? d(rng) : edges[rng() % edges.size()];
        if (op == ReduceOp::Sum && rng() % 8 == 0) re = std::numeric_limits<double>::infinity();
        if (f)
          store(v, i, std::complex<float>(static_cast<float>(re), static_cast<float>(im)));
        else
          store(v, i, std::complex<double>(re, im));
      }
      break;
    }
    case DataType::Bool:
      fill<std::uint8_t>(
          v, n, rng, std::vector<std::uint8_t>{0, 1, 2, 0x80, 0xff},
          [&] { return static_cast<std::uint8_t>(rng() % 3 ? rng() % 2 : rng()); }, role);
      break;
    case DataType::Byte:
      fill<std::uint8_t>(
          v, n, rng, std::vector<std::uint8_t>{0, 0xff, 0x0f},
          [&] { return static_cast<std::uint8_t>(rng()); }, role);
      break;
  }
  return v;
}

// Expected element i of a (+) b, as bytes.
Bytes reference(DataType t, ReduceOp op, const Bytes& a, const Bytes& b) {
  Bytes r(a.size());
  const std::size_t n = a.size() / elemBytes(t);
  for (std::size_t i = 0; i < n; ++i) {
    switch (t) {
#define HCCL_INT_CASE(DT, T)                                         \
  case DataType::DT:                                                 \
    store<T>(r, i, refInteger<T>(op, load<T>(a, i), load<T>(b, i))); \
    break;
      HCCL_INT_CASE(Int8, std::int8_t)
      HCCL_INT_CASE(Int16, std::int16_t)
      HCCL_INT_CASE(Int32, std::int32_t)
      HCCL_INT_CASE(Int64, std::int64_t)
      HCCL_INT_CASE(UInt8, std::uint8_t)
      HCCL_INT_CASE(UInt16, std::uint16_t)
      HCCL_INT_CASE(UInt32, std::uint32_t)
      HCCL_INT_CASE(UInt64, std::uint64_t)
      HCCL_INT_CASE(Bool, std::uint8_t)
      HCCL_INT_CASE(Byte, std::uint8_t)
#undef HCCL_INT_CASE
      case DataType::Float16:
        store(r, i, refFp16(op, load<std::uint16_t>(a, i), load<std::uint16_t>(b, i)));
        break;
      case DataType::BFloat16:
        store(r, i, refBf16(op, load<std::uint16_t>(a, i), load<std::uint16_t>(b, i)));
        break;
      case DataType::Float32:
        store(r, i, refFloat(op, load<float>(a, i), load<float>(b, i)));
        break;
      case DataType::Float64:
        store(r, i, refFloat(op, load<double>(a, i), load<double>(b, i)));
        break;
      case DataType::LongDouble:
        store(r, i, refFloat(op, load<long double>(a, i), load<long double>(b, i)));
        break;
      case DataType::ComplexFloat:
        store(r, i,
              refComplex(op, load<std::complex<float>>(a, i), load<std::complex<float>>(b, i)));
        break;
      case DataType::ComplexDouble:
        store(r, i,
              refComplex(op, load<std::complex<double>>(a, i), load<std::complex<double>>(b, i)));
        break;
    }
  }
  return r;
}

bool isNanElement(DataType t, const Bytes& v, std::size_t i) {
  switch (t) {
    case DataType::Float16:
      return (load<std::uint16_t>(v, i) & 0x7fff) > 0x7c00;
    case DataType::BFloat16:
      return (load<std::uint16_t>(v, i) & 0x7fff) > 0x7f80;
    case DataType::Float32:
      return std::isnan(load<float>(v, i));
    case DataType::Float64:
      return std::isnan(load<double>(v, i));
    case DataType::LongDouble:
      return std::isnan(load<long double>(v, i));
    default:
      return false;
  }
}

// Significant bytes of an element: x87 long double leaves 6 bytes of padding undefined.
std::size_t valueBytes(DataType t) {
  return t == DataType::LongDouble ? 10 : sizeOf(t);
}

bool sameElement(DataType t, const Bytes& x, const Bytes& y, std::size_t i) {
  if (t == DataType::ComplexFloat || t == DataType::ComplexDouble) {
    // Component-wise: bitwise, or both NaN.
    const std::size_t half = sizeOf(t) / 2;
    for (std::size_t c = 0; c < 2; ++c) {
      const std::size_t off = i * sizeOf(t) + c * half;
      const bool xn =
          half == 4 ? std::isnan(load<float>(x, off / 4)) : std::isnan(load<double>(x, off / 8));
      const bool yn =
          half == 4 ? std::isnan(load<float>(y, off / 4)) : std::isnan(load<double>(y, off / 8));
      if (xn || yn) {
        if (xn != yn) return false;
        continue;
      }
      if (std::memcmp(x.data() + off, y.data() + off, half) != 0) return false;
    }
    return true;
  }
  // fp16 and bf16 have a documented NaN rule (float16.hpp): bitwise, payloads included.
  const bool exactNan = t == DataType::Float16 || t == DataType::BFloat16;
  const bool xn = isNanElement(t, x, i), yn = isNanElement(t, y, i);
  if (!exactNan && (xn || yn)) return xn == yn;
  return std::memcmp(x.data() + i * sizeOf(t), y.data() + i * sizeOf(t), valueBytes(t)) == 0;
}

std::string hex(const Bytes& v, std::size_t i, std::size_t size) {
  std::string s;
  static const char* digits = "0123456789abcdef";
  for (std::size_t k = size; k-- > 0;) {  // little endian: most significant byte first
    const auto byte = static_cast<unsigned>(v[i * size + k]);
    s += digits[byte >> 4];
    s += digits[byte & 15];
  }
  return s;
}

void expectSame(DataType t, ReduceOp op, const Bytes& a, const Bytes& b, const Bytes& got,
                const Bytes& want, const std::string& form) {
  const std::size_t n = want.size() / sizeOf(t);
  int reported = 0;
  for (std::size_t i = 0; i < n && reported < 5; ++i) {
    if (sameElement(t, got, want, i)) continue;
    ++reported;
    ADD_FAILURE() << name(op) << " on " << name(t) << " (" << form << ") element " << i
                  << ": a=" << hex(a, i, sizeOf(t)) << " b=" << hex(b, i, sizeOf(t))
                  << " got=" << hex(got, i, sizeOf(t)) << " want=" << hex(want, i, sizeOf(t));
  }
}

struct Pair {
  DataType t;
  ReduceOp op;
};

std::vector<Pair> definedPairs() {
  std::vector<Pair> out;
  for (const auto& [t, op] : hccl::definedPairs()) out.push_back({t, op});
  return out;
}

class KernelTest : public ::testing::TestWithParam<Pair> {};

// n not a multiple of any vector width, so vector body and scalar tail both run.
constexpr std::size_t kCount = 1000 + 13;

// Checks one kernel in every aliasing form, misaligned, and that it writes only `count` elements.
void checkKernel(DataType t, ReduceOp op, ReduceFn fn, const std::string& variant) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 131 + static_cast<std::uint64_t>(op));
  const std::size_t es = sizeOf(t);
  const Bytes a = makeValues(t, op, kCount, rng, 0);
  const Bytes b = makeValues(t, op, kCount, rng, 1);
  const Bytes want = reference(t, op, a, b);

  Bytes dst(a.size(), std::byte{0x5a});
  fn(dst.data(), a.data(), b.data(), kCount);
  expectSame(t, op, a, b, dst, want, variant + ", dst disjoint");

  Bytes left = a;  // dst == a
  fn(left.data(), left.data(), b.data(), kCount);
  expectSame(t, op, a, b, left, want, variant + ", dst == a");

  Bytes right = b;  // dst == b
  fn(right.data(), a.data(), right.data(), kCount);
  expectSame(t, op, a, b, right, want, variant + ", dst == b");

  Bytes self = a;  // dst == a == b
  fn(self.data(), self.data(), self.data(), kCount);
  expectSame(t, op, a, a, self, reference(t, op, a, a), variant + ", dst == a == b");

  // Misaligned by one byte: MPI buffers need not be aligned to the element type.
  if (es > 1) {
    Bytes ua(a.size() + 1), ub(b.size() + 1), ud(a.size() + 1);
    std::memcpy(ua.data() + 1, a.data(), a.size());
    std::memcpy(ub.data() + 1, b.data(), b.size());
    fn(ud.data() + 1, ua.data() + 1, ub.data() + 1, kCount);
    Bytes got(ud.begin() + 1, ud.end());
    expectSame(t, op, a, b, got, want, variant + ", misaligned, dst disjoint");
    fn(ub.data() + 1, ua.data() + 1, ub.data() + 1, kCount);
    got.assign(ub.begin() + 1, ub.end());
    expectSame(t, op, a, b, got, want, variant + ", misaligned, dst == b");
  }

  // A prefix only: the kernel must not write past count.
  Bytes part(a.size(), std::byte{0x5a});
  fn(part.data(), a.data(), b.data(), 7);
  for (std::size_t i = 7 * es; i < part.size(); ++i) ASSERT_EQ(part[i], std::byte{0x5a}) << i;
}

// Every instruction-set variant this CPU runs must give the reference results.
TEST_P(KernelTest, MatchesReferenceInEveryAliasingForm) {
  const auto [t, op] = GetParam();
  ASSERT_NE(kernel(t, op), nullptr);
  int variants = 0;
  for (KernelVariant v : {KernelVariant::Baseline, KernelVariant::Avx2}) {
    const ReduceFn fn = kernel(t, op, v);
    if (fn == nullptr) continue;
    ++variants;
    checkKernel(t, op, fn, name(v));
  }
  EXPECT_GE(variants, 1);
  EXPECT_EQ(kernel(t, op), kernel(t, op, KernelVariant::Best));
}

std::string pairName(const ::testing::TestParamInfo<Pair>& info) {
  return std::string(name(info.param.t)) + "_" + std::string(name(info.param.op));
}

INSTANTIATE_TEST_SUITE_P(AllDefinedPairs, KernelTest, ::testing::ValuesIn(definedPairs()),
                         pairName);

TEST(Kernels, UndefinedPairsHaveNoKernel) {
  int defined_ = 0;
  for (int t = 0; t < kNumDataTypes; ++t)
    for (int o = 0; o < kNumReduceOps; ++o) {
      const auto dt = static_cast<DataType>(t);
      const auto op = static_cast<ReduceOp>(o);
      EXPECT_EQ(kernel(dt, op) != nullptr, defined(op, dt)) << name(op) << " on " << name(dt);
      defined_ += defined(op, dt) ? 1 : 0;
    }
  // 8 integer types x 10 ops, 5 floating x 4, 2 complex x 2, bool x 3, byte x 3.
  EXPECT_EQ(defined_, 80 + 20 + 4 + 3 + 3);
}

TEST(Kernels, FloatMaxMinNanAndSignedZeroRule) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const ReduceFn max = kernel(DataType::Float32, ReduceOp::Max);
  const ReduceFn min = kernel(DataType::Float32, ReduceOp::Min);
  const float a[] = {nan, 1.0f, -0.0f, 0.0f, nan};
  const float b[] = {1.0f, nan, 0.0f, -0.0f, -nan};
  float r[5];
  max(r, a, b, 5);
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_TRUE(r[2] == 0.0f && !std::signbit(r[2]));
  EXPECT_TRUE(r[3] == 0.0f && !std::signbit(r[3]));
  EXPECT_FALSE(std::signbit(r[4])) << "both NaN: the left one";
  min(r, a, b, 5);
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_TRUE(r[2] == 0.0f && std::signbit(r[2]));
  EXPECT_TRUE(r[3] == 0.0f && std::signbit(r[3]));
}

TEST(Kernels, Fp16RoundsTiesToEvenAndKeepsNan) {
  const ReduceFn sum = kernel(DataType::Float16, ReduceOp::Sum);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even is 1. (1 + 2^-10) + 2^-11 rounds up to
  // 1 + 2^-9. 65504 + 16 overflows to inf (halfway to 65536, max is odd). NaN + 1 stays NaN.
  const std::uint16_t a[] = {0x3c00, 0x3c01, 0x7bff, 0x7e00, 0x0001};
  const std::uint16_t b[] = {0x1000, 0x1000, 0x4c00, 0x3c00, 0x8001};
  std::uint16_t r[5];
  sum(r, a, b, 5);
  EXPECT_EQ(r[0], 0x3c00);
  EXPECT_EQ(r[1], 0x3c02);
  EXPECT_EQ(r[2], 0x7c00);
  EXPECT_GT(r[3] & 0x7fff, 0x7c00);
  EXPECT_EQ(r[4] & 0x7fff, 0);
}

TEST(Kernels, IntegerOverflowWraps) {
  const ReduceFn sum = kernel(DataType::Int32, ReduceOp::Sum);
  const ReduceFn prod = kernel(DataType::Int8, ReduceOp::Prod);
  const std::int32_t a[] = {std::numeric_limits<std::int32_t>::max(), -2147483647 - 1};
  const std::int32_t b[] = {1, -1};
  std::int32_t r[2];
  sum(r, a, b, 2);
  EXPECT_EQ(r[0], std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(r[1], std::numeric_limits<std::int32_t>::max());
  const std::int8_t x[] = {-128, 16, 127};
  const std::int8_t y[] = {-1, 16, 127};
  std::int8_t z[3];
  prod(z, x, y, 3);
  EXPECT_EQ(z[0], -128);  // 128 mod 256
  EXPECT_EQ(z[1], 0);     // 256 mod 256
  EXPECT_EQ(z[2], 1);     // 16129 = 63 * 256 + 1
}

TEST(Kernels, ComplexProductRecoversInfinitiesLikeC) {
  // Annex G: (inf + NaN i) is an infinity; times a non-zero finite number it stays infinite,
  // where the textbook formula gives NaN + NaN i.
  const ReduceFn prod = kernel(DataType::ComplexFloat, ReduceOp::Prod);
  const std::complex<float> a[] = {
      {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}};
  const std::complex<float> b[] = {{1.0f, 0.0f}};
  std::complex<float> r[1];
  prod(r, a, b, 1);
  EXPECT_TRUE(std::isinf(r[0].real()) || std::isinf(r[0].imag()))
      << r[0].real() << " " << r[0].imag();
}

TEST(Kernels, BoolTreatsAnyNonZeroByteAsTrue) {
  const std::uint8_t a[] = {0, 2, 0x80, 1, 0};
  const std::uint8_t b[] = {0, 1, 0x40, 0, 7};
  std::uint8_t r[5];
  kernel(DataType::Bool, ReduceOp::LAnd)(r, a, b, 5);
  EXPECT_EQ((std::vector<std::uint8_t>(r, r + 5)), (std::vector<std::uint8_t>{0, 1, 1, 0, 0}));
  kernel(DataType::Bool, ReduceOp::LXor)(r, a, b, 5);
  EXPECT_EQ((std::vector<std::uint8_t>(r, r + 5)), (std::vector<std::uint8_t>{0, 0, 0, 1, 1}));
}

// ---- fp16 and bf16 on every rounding edge
// -------------------------------------------------------- Every 16-bit encoding as the left
// operand against right operands chosen for the edges, and the other way round, for sum, prod, max
// and min, in every variant, bitwise against the reference (NaN payloads included). Counters then
// prove the data reached every edge: ties broken up and down, overflow to infinity, subnormal and
// negative-zero results, quiet and signalling NaNs with payloads on either side, invalid
// operations.

struct Half16Case {
  DataType t;
  Format16 format;
  int precision;  // significand bits, hidden bit included
  int minExponent;
  std::vector<std::uint16_t> partners;
};

Half16Case fp16Case() {
  return {DataType::Float16,
          kFp16Format,
          11,
          -14,
          {0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x01ff, 0x0200, 0x03ff, 0x83ff, 0x0400, 0x8400,
           0x0401, 0x3c00, 0xbc00, 0x3c01, 0x3bff, 0x1000, 0x0c00, 0x1400, 0x1001, 0x9000, 0x7bff,
           0xfbff, 0x7800, 0x5000, 0x4c00, 0x5bff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7e01, 0x7fff,
           0xffff, 0x7c01, 0xfc01, 0x7d55, 0x7dff, 0x3555, 0x2e66, 0xc000, 0x3800, 0x0800, 0x2400}};
}

Half16Case bf16Case() {
  return {DataType::BFloat16,
          kBf16Format,
          8,
          -126,
          {0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x003f, 0x0040, 0x007f, 0x807f, 0x0080, 0x8080,
           0x0081, 0x3f80, 0xbf80, 0x3f81, 0x3f7f, 0x3b80, 0x3c00, 0x3b00, 0x3b81, 0xbb80, 0x7f7f,
           0xff7f, 0x7f00, 0x7e80, 0x4000, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7fc1, 0x7fff, 0xffff,
           0x7f81, 0xff81, 0x7faa, 0x7fbf, 0x3eab, 0x3dcd, 0xc000, 0x3f00, 0x0100, 0x1f80, 0x2000}};
}

double toDouble(const Half16Case& c, std::uint16_t h) {
  if (c.t == DataType::BFloat16) return bf16ToDouble(h);
  return static_cast<double>(std::bit_cast<_Float16>(h));
}

// Which edge the exact result x (+) y of two numbers sits on; exact only where double holds it.
struct EdgeCounts {
  std::size_t tiesUp = 0, tiesDown = 0, overflow = 0, subnormal = 0, negativeZero = 0,
              signedZeroPairs = 0, quietLeft = 0, signallingLeft = 0, nanRight = 0, bothNan = 0,
              invalid = 0;
};

void countEdges(const Half16Case& c, ReduceOp op, std::uint16_t a, std::uint16_t b, std::uint16_t r,
                EdgeCounts& n) {
  const Format16& f = c.format;
  const bool an = f.isNan(a), bn = f.isNan(b);
  if (an && bn) ++n.bothNan;
  if (an && !bn) ++((a & f.quietBit) ? n.quietLeft : n.signallingLeft);
  if (!an && bn) ++n.nanRight;
  if (an || bn) return;
  if (f.isNan(r)) ++n.invalid;
  if ((r & f.expMask) == 0 && (r & 0x7fff) != 0) ++n.subnormal;
  if (r == 0x8000) ++n.negativeZero;
  const double x = toDouble(c, a), y = toDouble(c, b);
  if ((op == ReduceOp::Max || op == ReduceOp::Min) && x == 0 && y == 0 && a != b)
    ++n.signedZeroPairs;
  if (op != ReduceOp::Sum && op != ReduceOp::Prod) return;
  if (!std::isfinite(x) || !std::isfinite(y)) return;
  const double v = op == ReduceOp::Sum ? x + y : x * y;
  if (std::isinf(v)) return;
  if ((r & 0x7fff) == f.expMask) ++n.overflow;  // finite operands, infinite result
  // Exact in double? (bf16 sums of far-apart exponents are not; they are no ties either.)
  if (op == ReduceOp::Sum && (v - x != y || v - y != x)) return;
  if (v == 0) return;
  const int e = std::max(std::ilogb(std::fabs(v)), c.minExponent);
  const double q = std::ldexp(1.0, e - (c.precision - 1));
  const double scaled = std::fabs(v) / q;
  if (scaled - std::floor(scaled) != 0.5) return;
  const bool up = std::fabs(toDouble(c, r)) > std::fabs(v);
  ++(up ? n.tiesUp : n.tiesDown);
}

void checkHalfEdges(const Half16Case& c) {
  std::vector<std::uint16_t> a, b;
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    for (std::uint16_t p : c.partners) {
      a.push_back(static_cast<std::uint16_t>(h));
      b.push_back(p);
      a.push_back(p);
      b.push_back(static_cast<std::uint16_t>(h));
    }
  }
  std::mt19937_64 rng(0x16);
  for (int i = 0; i < 1 << 20; ++i) {
    a.push_back(static_cast<std::uint16_t>(rng()));
    b.push_back(static_cast<std::uint16_t>(rng()));
  }
  const std::size_t n = a.size();
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min}) {
    std::vector<std::uint16_t> want(n);
    EdgeCounts edges;
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = c.t == DataType::Float16 ? refFp16(op, a[i], b[i]) : refBf16(op, a[i], b[i]);
      countEdges(c, op, a[i], b[i], want[i], edges);
    }
    int variants = 0;
    for (KernelVariant v : {KernelVariant::Baseline, KernelVariant::Avx2}) {
      const ReduceFn fn = kernel(c.t, op, v);
      if (fn == nullptr) continue;
      ++variants;
      std::vector<std::uint16_t> got(n, 0x5a5a);
      fn(got.data(), a.data(), b.data(), n);
      int reported = 0;
      for (std::size_t i = 0; i < n && reported < 8; ++i) {
        if (got[i] == want[i]) continue;
        ++reported;
        ADD_FAILURE() << name(op) << " on " << name(c.t) << " (" << name(v) << "): a=0x" << std::hex
                      << a[i] << " b=0x" << b[i] << " got=0x" << got[i] << " want=0x" << want[i]
                      << std::dec;
      }
    }
    EXPECT_GE(variants, 1);
    // The data must reach every edge the operation has.
    SCOPED_TRACE(std::string(name(op)) + " on " + std::string(name(c.t)));
    EXPECT_GT(edges.quietLeft, 0u);
    EXPECT_GT(edges.signallingLeft, 0u);
    EXPECT_GT(edges.nanRight, 0u);
    EXPECT_GT(edges.bothNan, 0u);
    EXPECT_GT(edges.subnormal, 0u);
    if (op == ReduceOp::Sum || op == ReduceOp::Prod) {
      EXPECT_GT(edges.tiesUp, 0u);
      EXPECT_GT(edges.tiesDown, 0u);
      EXPECT_GT(edges.overflow, 0u);
      EXPECT_GT(edges.invalid, 0u);
      EXPECT_GT(edges.negativeZero, 0u);
    } else {
      EXPECT_GT(edges.signedZeroPairs, 0u);
      EXPECT_GT(edges.negativeZero, 0u);
    }
  }
}

TEST(HalfKernels, Fp16EveryEncodingOnEveryEdge) {
  checkHalfEdges(fp16Case());
}

TEST(HalfKernels, Bf16EveryEncodingOnEveryEdge) {
  checkHalfEdges(bf16Case());
}

// The vector and scalar fp16 kernels agree because float16.hpp's conversions compute what F16C's
// instructions compute. Checked on every fp16 encoding, and on every float whose 13 bits below
// fp16's precision (the ones rounding looks at) take one of their edge values, across all
// signs, exponents and kept mantissas; HCCL_EXHAUSTIVE=1 checks all 2^32 floats.
[[gnu::target("f16c")]] std::uint16_t f16cNarrow(float f) {
  return static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
[[gnu::target("f16c")]] float f16cWiden(std::uint16_t h) {
  return _cvtsh_ss(h);
}

TEST(HalfKernels, Fp16ConversionsMatchF16c) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C";
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto x = static_cast<std::uint16_t>(h);
    const float mine = halfToFloat(x), theirs = f16cWiden(x);
    // A signalling NaN may come out quieted by F16C; narrowing quiets either way.
    if (kFp16Format.isNan(x)) {
      ASSERT_TRUE(std::isnan(mine) && std::isnan(theirs)) << std::hex << h;
      ASSERT_EQ(floatToHalf(mine), floatToHalf(theirs)) << std::hex << h;
      ASSERT_EQ(floatToHalf(mine), x | kFp16Format.quietBit) << std::hex << h;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(mine), std::bit_cast<std::uint32_t>(theirs))
          << std::hex << h;
    }
  }
  const char* env = std::getenv("HCCL_EXHAUSTIVE");
  const bool all = env != nullptr && std::string(env) == "1";
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x0800, 0x17ff};
  std::uint64_t checked = 0;
  auto check = [&checked](std::uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    ++checked;
    return floatToHalf(f) == f16cNarrow(f);
  };
  if (all) {
    for (std::uint64_t bits = 0; bits <= 0xffffffffu; ++bits)
      ASSERT_TRUE(check(static_cast<std::uint32_t>(bits))) << std::hex << bits;
  } else {
    for (std::uint32_t high = 0; high < (1u << 19); ++high)
      for (std::uint32_t low : lows) ASSERT_TRUE(check(high << 13 | low)) << std::hex << high;
  }
  RecordProperty("floats_checked", static_cast<int>(std::min<std::uint64_t>(checked, 1u << 31)));
}

}  // namespace
}  // namespace hccl::engine
