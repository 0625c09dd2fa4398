#include "coll_hccl/engine/reduce_kernels.hpp"

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "coll_hccl/engine/float16.hpp"

// This file is built with -O3 (see coll_hccl/meson.build): GCC 12's -O2 cost model does not
// vectorise loops of unknown trip count. Each loop is also cloned for AVX-512 and AVX2 and picked
// at load time, since the build targets baseline x86-64 and a memory-bound sum needs wide loads to
// approach memory bandwidth.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HCCL_VECTOR_CLONES [[gnu::target_clones("avx512f", "avx2", "default")]]
#else
#define HCCL_VECTOR_CLONES
#endif

namespace hccl::engine {
namespace {

// ---- element operations -----------------------------------------------------------------------

// Integer arithmetic in an unsigned type at least as wide as int, so overflow wraps instead of
// being undefined (and narrow types are not promoted to signed int).
template <typename T>
using Wrap = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
struct Sum {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Wrap<T>>(a) + static_cast<Wrap<T>>(b));
    else
      return a + b;
  }
};
template <typename T>
struct Prod {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Wrap<T>>(a) * static_cast<Wrap<T>>(b));
    else
      return a * b;
  }
};
template <typename T>
struct IMax {
  T operator()(T a, T b) const { return a > b ? a : b; }
};
template <typename T>
struct IMin {
  T operator()(T a, T b) const { return a < b ? a : b; }
};
// Floating max/min: a NaN operand wins (the left one if both are NaN), and +0 > -0.
template <typename T>
struct FMax {
  T operator()(T a, T b) const {
    return a > b ? a : b > a ? b : a != a ? a : b != b ? b : std::signbit(a) ? b : a;
  }
};
template <typename T>
struct FMin {
  T operator()(T a, T b) const {
    return a < b ? a : b < a ? b : a != a ? a : b != b ? b : std::signbit(a) ? a : b;
  }
};
template <typename T>
struct LAnd {
  T operator()(T a, T b) const { return static_cast<T>((a != 0) & (b != 0)); }
};
template <typename T>
struct LOr {
  T operator()(T a, T b) const { return static_cast<T>((a != 0) | (b != 0)); }
};
template <typename T>
struct LXor {
  T operator()(T a, T b) const { return static_cast<T>((a != 0) != (b != 0)); }
};
template <typename T>
struct BAnd {
  T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
template <typename T>
struct BOr {
  T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
template <typename T>
struct BXor {
  T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};

// A 16-bit float type: widen both operands to float, apply the float op, round once.
struct Fp16 {
  static float widen(std::uint16_t h) { return halfToFloat(h); }
  static std::uint16_t narrow(float f) { return floatToHalf(f); }
};
struct Bf16 {
  static float widen(std::uint16_t h) { return bf16ToFloat(h); }
  static std::uint16_t narrow(float f) { return floatToBf16(f); }
};
template <typename Format, template <typename> class Op>
struct ViaFloat {
  std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return Format::narrow(Op<float>{}(Format::widen(a), Format::widen(b)));
  }
};

// ---- loops --------------------------------------------------------------------------------------
// One loop per aliasing form, with restrict on what the form guarantees, so the compiler vectorises
// without runtime overlap checks. Contract: dst is a, b, both, or neither, never a partial overlap.

template <typename T, typename Op>
HCCL_VECTOR_CLONES void disjointLoop(T* __restrict d, const T* a, const T* b, std::size_t n) {
  const Op op;
  for (std::size_t i = 0; i < n; ++i) d[i] = op(a[i], b[i]);
}
template <typename T, typename Op>
HCCL_VECTOR_CLONES void intoLeftLoop(T* __restrict d, const T* __restrict b, std::size_t n) {
  const Op op;
  for (std::size_t i = 0; i < n; ++i) d[i] = op(d[i], b[i]);
}
template <typename T, typename Op>
HCCL_VECTOR_CLONES void intoRightLoop(T* __restrict d, const T* __restrict a, std::size_t n) {
  const Op op;
  for (std::size_t i = 0; i < n; ++i) d[i] = op(a[i], d[i]);
}
template <typename T, typename Op>
void selfLoop(T* d, std::size_t n) {
  const Op op;
  for (std::size_t i = 0; i < n; ++i) d[i] = op(d[i], d[i]);
}

template <typename T>
bool aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0;
}

// Misaligned buffers (legal in MPI) go through aligned blocks on the stack. Each block is read
// completely before dst is written, so exact aliasing stays correct.
template <typename T, typename Op>
void unalignedReduce(void* dst, const void* a, const void* b, std::size_t n) {
  constexpr std::size_t kBlock = 4096 / sizeof(T);
  T x[kBlock];
  T y[kBlock];
  auto* d = static_cast<unsigned char*>(dst);
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  for (std::size_t done = 0; done < n; done += kBlock) {
    const std::size_t m = n - done < kBlock ? n - done : kBlock;
    const std::size_t off = done * sizeof(T);
    std::memcpy(x, pa + off, m * sizeof(T));
    std::memcpy(y, pb + off, m * sizeof(T));
    intoLeftLoop<T, Op>(x, y, m);
    std::memcpy(d + off, x, m * sizeof(T));
  }
}

template <typename T, typename Op>
void reduceKernel(void* dst, const void* a, const void* b, std::size_t n) {
  if (!aligned<T>(dst) || !aligned<T>(a) || !aligned<T>(b))
    return unalignedReduce<T, Op>(dst, a, b, n);
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  if (d == x && d == y)
    selfLoop<T, Op>(d, n);
  else if (d == x)
    intoLeftLoop<T, Op>(d, y, n);
  else if (d == y)
    intoRightLoop<T, Op>(d, x, n);
  else
    disjointLoop<T, Op>(d, x, y, n);
}

// ---- tables
// ---------------------------------------------------------------------------------------

template <typename T>
ReduceFn integerKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return &reduceKernel<T, Sum<T>>;
    case ReduceOp::Prod:
      return &reduceKernel<T, Prod<T>>;
    case ReduceOp::Max:
      return &reduceKernel<T, IMax<T>>;
    case ReduceOp::Min:
      return &reduceKernel<T, IMin<T>>;
    case ReduceOp::LAnd:
      return &reduceKernel<T, LAnd<T>>;
    case ReduceOp::LOr:
      return &reduceKernel<T, LOr<T>>;
    case ReduceOp::LXor:
      return &reduceKernel<T, LXor<T>>;
    case ReduceOp::BAnd:
      return &reduceKernel<T, BAnd<T>>;
    case ReduceOp::BOr:
      return &reduceKernel<T, BOr<T>>;
    case ReduceOp::BXor:
      return &reduceKernel<T, BXor<T>>;
  }
  return nullptr;
}

template <typename T>
ReduceFn floatKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return &reduceKernel<T, Sum<T>>;
    case ReduceOp::Prod:
      return &reduceKernel<T, Prod<T>>;
    case ReduceOp::Max:
      return &reduceKernel<T, FMax<T>>;
    case ReduceOp::Min:
      return &reduceKernel<T, FMin<T>>;
    default:
      return nullptr;
  }
}

template <typename Format>
ReduceFn float16Kernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return &reduceKernel<std::uint16_t, ViaFloat<Format, Sum>>;
    case ReduceOp::Prod:
      return &reduceKernel<std::uint16_t, ViaFloat<Format, Prod>>;
    case ReduceOp::Max:
      return &reduceKernel<std::uint16_t, ViaFloat<Format, FMax>>;
    case ReduceOp::Min:
      return &reduceKernel<std::uint16_t, ViaFloat<Format, FMin>>;
    default:
      return nullptr;
  }
}

template <typename T>
ReduceFn complexKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return &reduceKernel<std::complex<T>, Sum<std::complex<T>>>;
    case ReduceOp::Prod:
      return &reduceKernel<std::complex<T>, Prod<std::complex<T>>>;
    default:
      return nullptr;
  }
}

// Bool is a byte where any non-zero value is true: the integer logical ops on uint8 do exactly
// that.
ReduceFn boolKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::LAnd:
    case ReduceOp::LOr:
    case ReduceOp::LXor:
      return integerKernel<std::uint8_t>(op);
    default:
      return nullptr;
  }
}

ReduceFn byteKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::BAnd:
    case ReduceOp::BOr:
    case ReduceOp::BXor:
      return integerKernel<std::uint8_t>(op);
    default:
      return nullptr;
  }
}

static_assert(sizeof(bool) == 1, "Bool kernels treat bool as one byte");
static_assert(sizeof(std::complex<float>) == 8 && sizeof(std::complex<double>) == 16);

}  // namespace

ReduceFn kernel(DataType t, ReduceOp op) {
  if (!defined(op, t)) return nullptr;
  switch (t) {
    case DataType::Int8:
      return integerKernel<std::int8_t>(op);
    case DataType::Int16:
      return integerKernel<std::int16_t>(op);
    case DataType::Int32:
      return integerKernel<std::int32_t>(op);
    case DataType::Int64:
      return integerKernel<std::int64_t>(op);
    case DataType::UInt8:
      return integerKernel<std::uint8_t>(op);
    case DataType::UInt16:
      return integerKernel<std::uint16_t>(op);
    case DataType::UInt32:
      return integerKernel<std::uint32_t>(op);
    case DataType::UInt64:
      return integerKernel<std::uint64_t>(op);
    case DataType::Float16:
      return float16Kernel<Fp16>(op);
    case DataType::BFloat16:
      return float16Kernel<Bf16>(op);
    case DataType::Float32:
      return floatKernel<float>(op);
    case DataType::Float64:
      return floatKernel<double>(op);
    case DataType::LongDouble:
      return floatKernel<long double>(op);
    case DataType::ComplexFloat:
      return complexKernel<float>(op);
    case DataType::ComplexDouble:
      return complexKernel<double>(op);
    case DataType::Bool:
      return boolKernel(op);
    case DataType::Byte:
      return byteKernel(op);
  }
  return nullptr;
}

}  // namespace hccl::engine
