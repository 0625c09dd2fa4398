#include "coll_hccl/reference/scalar.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace hccl::reference {
namespace {

template <typename T>
T load(const std::byte* p) {
  T x;
  std::memcpy(&x, p, sizeof(T));
  return x;
}
template <typename T>
void store(std::byte* p, T x) {
  std::memcpy(p, &x, sizeof(T));
}

// ---- integers: two's complement, wrapping ------------------------------------------------------

template <typename T>
T integer(ReduceOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const std::uint64_t x = static_cast<U>(a), y = static_cast<U>(b);
  const auto wrap = [](std::uint64_t v) { return static_cast<T>(static_cast<U>(v)); };
  switch (op) {
    case ReduceOp::Sum:
      return wrap(x + y);
    case ReduceOp::Prod:
      return wrap(x * y);  // modulo 2^64, which keeps the low bits of every narrower type
    case ReduceOp::Max:
      return a < b ? b : a;
    case ReduceOp::Min:
      return b < a ? b : a;
    case ReduceOp::LAnd:
      return static_cast<T>(a != 0 && b != 0);
    case ReduceOp::LOr:
      return static_cast<T>(a != 0 || b != 0);
    case ReduceOp::LXor:
      return static_cast<T>((a != 0) != (b != 0));
    case ReduceOp::BAnd:
      return wrap(x & y);
    case ReduceOp::BOr:
      return wrap(x | y);
    case ReduceOp::BXor:
      return wrap(x ^ y);
  }
  return T{};
}

template <typename T, ReduceOp Op>
void integerFn(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  store(dst, integer<T>(Op, load<T>(a), load<T>(b)));
}

// ---- floating point ----------------------------------------------------------------------------

// The documented rule: a NaN wins (the left one when both are), +0 ranks above -0.
template <typename V>
bool leftIsMax(V a, V b) {
  if (std::isnan(a)) return true;
  if (std::isnan(b)) return false;
  if (a != b) return a > b;
  return !std::signbit(a) || std::signbit(b);
}
template <typename V>
bool leftIsMin(V a, V b) {
  if (std::isnan(a)) return true;
  if (std::isnan(b)) return false;
  if (a != b) return a < b;
  return std::signbit(a) || !std::signbit(b);
}

// Max and min pick an operand whole, whatever the type.
template <std::size_t N, ReduceOp Op>
void pickFn(std::byte* dst, const std::byte* a, const std::byte* b, const void* ctx) {
  const auto t = *static_cast<const DataType*>(ctx);
  const long double x = realValue(t, a), y = realValue(t, b);
  const bool left = Op == ReduceOp::Max ? leftIsMax(x, y) : leftIsMin(x, y);
  std::byte tmp[N];
  std::memcpy(tmp, left ? a : b, N);
  std::memcpy(dst, tmp, N);
}

float roundToFloat(long double v) {
  return static_cast<float>(v);
}

template <ReduceOp Op>
void fp32Fn(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  const auto x = static_cast<long double>(load<float>(a));
  const auto y = static_cast<long double>(load<float>(b));
  store(dst, roundToFloat(Op == ReduceOp::Sum ? x + y : x * y));
}

template <typename T, ReduceOp Op>
void nativeFn(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  const T x = load<T>(a), y = load<T>(b);
  store(dst, Op == ReduceOp::Sum ? static_cast<T>(x + y) : static_cast<T>(x * y));
}

template <ReduceOp Op>
void fp16Fn(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  const auto x = load<_Float16>(a), y = load<_Float16>(b);
  const _Float16 r =
      Op == ReduceOp::Sum ? static_cast<_Float16>(x + y) : static_cast<_Float16>(x * y);
  store(dst, r);
}

template <ReduceOp Op>
void bf16Fn(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  const auto x = static_cast<double>(bf16Value(load<std::uint16_t>(a)));
  const auto y = static_cast<double>(bf16Value(load<std::uint16_t>(b)));
  store(dst, bf16Round(Op == ReduceOp::Sum ? x + y : x * y));
}

// ---- complex: (re, im) pairs; the product is the textbook formula C's _Complex uses for finite
// operands, each product and sum rounded to the component type ---------------------------------

template <ReduceOp Op>
void complex64Fn(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  const auto x = load<std::array<float, 2>>(a), y = load<std::array<float, 2>>(b);
  const auto L = [](float v) { return static_cast<long double>(v); };
  std::array<float, 2> r{};
  if (Op == ReduceOp::Sum) {
    r = {roundToFloat(L(x[0]) + L(y[0])), roundToFloat(L(x[1]) + L(y[1]))};
  } else {
    const float ac = roundToFloat(L(x[0]) * L(y[0])), bd = roundToFloat(L(x[1]) * L(y[1]));
    const float ad = roundToFloat(L(x[0]) * L(y[1])), bc = roundToFloat(L(x[1]) * L(y[0]));
    r = {roundToFloat(L(ac) - L(bd)), roundToFloat(L(ad) + L(bc))};
  }
  store(dst, r);
}

template <ReduceOp Op>
void complex128Fn(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  const auto x = load<std::array<double, 2>>(a), y = load<std::array<double, 2>>(b);
  std::array<double, 2> r{};
  if (Op == ReduceOp::Sum) {
    r = {x[0] + y[0], x[1] + y[1]};
  } else {
    // Built with -ffp-contract=off: four roundings of products, then one per sum.
    const double ac = x[0] * y[0], bd = x[1] * y[1], ad = x[0] * y[1], bc = x[1] * y[0];
    r = {ac - bd, ad + bc};
  }
  store(dst, r);
}

// ---- bool and byte -----------------------------------------------------------------------------

template <ReduceOp Op>
void byteFn(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  const auto x = std::to_integer<unsigned>(*a), y = std::to_integer<unsigned>(*b);
  unsigned r = 0;
  switch (Op) {
    case ReduceOp::LAnd:
      r = x != 0 && y != 0;
      break;
    case ReduceOp::LOr:
      r = x != 0 || y != 0;
      break;
    case ReduceOp::LXor:
      r = (x != 0) != (y != 0);
      break;
    case ReduceOp::BAnd:
      r = x & y;
      break;
    case ReduceOp::BOr:
      r = x | y;
      break;
    case ReduceOp::BXor:
      r = x ^ y;
      break;
    default:
      break;
  }
  *dst = static_cast<std::byte>(r);
}

// ---- dispatch ----------------------------------------------------------------------------------

template <typename T>
ElementFn integerOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return integerFn<T, ReduceOp::Sum>;
    case ReduceOp::Prod:
      return integerFn<T, ReduceOp::Prod>;
    case ReduceOp::Max:
      return integerFn<T, ReduceOp::Max>;
    case ReduceOp::Min:
      return integerFn<T, ReduceOp::Min>;
    case ReduceOp::LAnd:
      return integerFn<T, ReduceOp::LAnd>;
    case ReduceOp::LOr:
      return integerFn<T, ReduceOp::LOr>;
    case ReduceOp::LXor:
      return integerFn<T, ReduceOp::LXor>;
    case ReduceOp::BAnd:
      return integerFn<T, ReduceOp::BAnd>;
    case ReduceOp::BOr:
      return integerFn<T, ReduceOp::BOr>;
    case ReduceOp::BXor:
      return integerFn<T, ReduceOp::BXor>;
  }
  return nullptr;
}

template <std::size_t N>
ElementFn pick(ReduceOp op) {
  return op == ReduceOp::Max ? pickFn<N, ReduceOp::Max> : pickFn<N, ReduceOp::Min>;
}

ElementFn floatOp(DataType t, ReduceOp op) {
  const bool sum = op == ReduceOp::Sum;
  if (op == ReduceOp::Max || op == ReduceOp::Min) {
    switch (sizeOf(t)) {
      case 2:
        return pick<2>(op);
      case 4:
        return pick<4>(op);
      case 8:
        return pick<8>(op);
      default:
        return pick<sizeof(long double)>(op);
    }
  }
  switch (t) {
    case DataType::Float16:
      return sum ? fp16Fn<ReduceOp::Sum> : fp16Fn<ReduceOp::Prod>;
    case DataType::BFloat16:
      return sum ? bf16Fn<ReduceOp::Sum> : bf16Fn<ReduceOp::Prod>;
    case DataType::Float32:
      return sum ? fp32Fn<ReduceOp::Sum> : fp32Fn<ReduceOp::Prod>;
    case DataType::Float64:
      return sum ? nativeFn<double, ReduceOp::Sum> : nativeFn<double, ReduceOp::Prod>;
    case DataType::LongDouble:
      return sum ? nativeFn<long double, ReduceOp::Sum> : nativeFn<long double, ReduceOp::Prod>;
    default:
      return nullptr;
  }
}

ElementFn lookup(DataType t, ReduceOp op) {
  switch (t) {
    case DataType::Int8:
      return integerOp<std::int8_t>(op);
    case DataType::Int16:
      return integerOp<std::int16_t>(op);
    case DataType::Int32:
      return integerOp<std::int32_t>(op);
    case DataType::Int64:
      return integerOp<std::int64_t>(op);
    case DataType::UInt8:
      return integerOp<std::uint8_t>(op);
    case DataType::UInt16:
      return integerOp<std::uint16_t>(op);
    case DataType::UInt32:
      return integerOp<std::uint32_t>(op);
    case DataType::UInt64:
      return integerOp<std::uint64_t>(op);
    case DataType::Float16:
    case DataType::BFloat16:
    case DataType::Float32:
    case DataType::Float64:
    case DataType::LongDouble:
      return floatOp(t, op);
    case DataType::ComplexFloat:
      return op == ReduceOp::Sum ? complex64Fn<ReduceOp::Sum> : complex64Fn<ReduceOp::Prod>;
    case DataType::ComplexDouble:
      return op == ReduceOp::Sum ? complex128Fn<ReduceOp::Sum> : complex128Fn<ReduceOp::Prod>;
    case DataType::Bool:
    case DataType::Byte:
      switch (op) {
        case ReduceOp::LAnd:
          return byteFn<ReduceOp::LAnd>;
        case ReduceOp::LOr:
          return byteFn<ReduceOp::LOr>;
        case ReduceOp::LXor:
          return byteFn<ReduceOp::LXor>;
        case ReduceOp::BAnd:
          return byteFn<ReduceOp::BAnd>;
        case ReduceOp::BOr:
          return byteFn<ReduceOp::BOr>;
        case ReduceOp::BXor:
          return byteFn<ReduceOp::BXor>;
        default:
          return nullptr;
      }
  }
  return nullptr;
}

// The type of each pick op's operands, addressable for the lifetime of the program.
constexpr std::array<DataType, kNumDataTypes> kTypeTags = [] {
  std::array<DataType, kNumDataTypes> a{};
  for (int i = 0; i < kNumDataTypes; ++i) a[static_cast<std::size_t>(i)] = static_cast<DataType>(i);
  return a;
}();

}  // namespace

ElementOp scalarOp(DataType t, ReduceOp op) {
  if (!defined(op, t))
    throw std::invalid_argument(fmt::format("{} is not defined on {}", name(op), name(t)));
  return {lookup(t, op), &kTypeTags[static_cast<std::size_t>(t)]};
}

std::size_t significantBytes(DataType t) {
  return t == DataType::LongDouble ? 10 : sizeOf(t);
}

long double fp16Value(std::uint16_t bits) {
  return static_cast<long double>(std::bit_cast<_Float16>(bits));
}

long double bf16Value(std::uint16_t bits) {
  // bf16 is the top half of a float by definition.
  return static_cast<long double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16));
}

std::uint16_t fp16Bits(long double exactlyRepresentable) {
  return std::bit_cast<std::uint16_t>(
      static_cast<_Float16>(static_cast<float>(exactlyRepresentable)));
}

std::uint16_t bf16Round(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isinf(x)) return static_cast<std::uint16_t>(sign | 0x7f80);
  if (x == 0) return sign;
  // 8 significant bits: the quantum is 2^(e-7) for |x| in [2^e, 2^(e+1)), and 2^-133 below the
  // smallest normal 2^-126. nearbyint rounds ties to even in the default rounding mode.
  const int e = std::max(std::ilogb(x), -126);
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, 7 - e)), e - 7);
  if (std::fabs(r) >= 0x1p128) return static_cast<std::uint16_t>(sign | 0x7f80);
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(r)) >> 16);
}

long double realValue(DataType t, const std::byte* p) {
  switch (t) {
    case DataType::Float16:
      return fp16Value(load<std::uint16_t>(p));
    case DataType::BFloat16:
      return bf16Value(load<std::uint16_t>(p));
    case DataType::Float32:
      return static_cast<long double>(load<float>(p));
    case DataType::Float64:
      return static_cast<long double>(load<double>(p));
    case DataType::LongDouble:
      return load<long double>(p);
    default:
      throw std::invalid_argument(fmt::format("{} is not a real floating type", name(t)));
  }
}

int significandBits(DataType t) {
  switch (t) {
    case DataType::Float16:
      return 11;
    case DataType::BFloat16:
      return 8;
    case DataType::Float32:
    case DataType::ComplexFloat:
      return 24;
    case DataType::Float64:
    case DataType::ComplexDouble:
      return 53;
    default:
      return 64;
  }
}

}  // namespace hccl::reference
