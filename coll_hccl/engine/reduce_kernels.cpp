#include "coll_hccl/engine/reduce_kernels.hpp"

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "coll_hccl/engine/float16.hpp"
#include "coll_hccl/engine/reduce_kernels_half.hpp"

// This file is built with -O3 (see coll_hccl/meson.build): GCC 12's -O2 cost model does not
// vectorise loops of unknown trip count. The build targets baseline x86-64, so each loop is also
// compiled for AVX2, which kernel() picks when the CPU runs it. Not AVX-512: on this machine (AMD
// EPYC) its 64-byte vectors ran a 16 MiB fp32 sum at about 15 GB/s against about 24 for AVX2 and
// 20 for SSE2 (malloc'd buffers are 16-byte aligned: every 64-byte access splits a cache line).
// The choice is made by ordinary code at lookup rather than by ifunc (target_clones), whose
// resolvers run before sanitizer runtimes start and crash them.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HCCL_X86_WIDE 1
#define HCCL_TARGET_AVX2 [[gnu::target("avx2")]]
#else
#define HCCL_X86_WIDE 0
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
// Floating max/min: a NaN operand wins (the left one if both are NaN), and +0 > -0. Written as one
// select on a flag so GCC if-converts and vectorises it; the sign test reads the bits for float and
// double because std::signbit blocks vectorisation of the double loop.
template <typename T>
bool negative(T x) {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<std::uint32_t>(x) >> 31;
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<std::uint64_t>(x) >> 63;
  else
    return std::signbit(x);
}
template <typename T>
struct FMax {
  T operator()(T a, T b) const {
    const bool left = a > b || a != a || (a == b && !negative(a));
    return left ? a : b;
  }
};
template <typename T>
struct FMin {
  T operator()(T a, T b) const {
    const bool left = a < b || a != a || (a == b && negative(a));
    return left ? a : b;
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
template <typename Format, typename Op>
struct ViaFloat {
  std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return Format::narrow(Op{}(Format::widen(a), Format::widen(b)));
  }
};

// ---- loops --------------------------------------------------------------------------------------
// One loop per aliasing form, with restrict on what the form guarantees, so the compiler vectorises
// without runtime overlap checks. Contract: dst is a, b, both, or neither, never a partial overlap.

enum class Isa : std::uint8_t { Base, Avx2 };

#define HCCL_DEFINE_LOOPS(Suffix, Target)                                                    \
  template <typename T, typename Op>                                                         \
  Target void disjointLoop##Suffix(T* __restrict d, const T* a, const T* b, std::size_t n) { \
    const Op op;                                                                             \
    for (std::size_t i = 0; i < n; ++i) d[i] = op(a[i], b[i]);                               \
  }                                                                                          \
  template <typename T, typename Op>                                                         \
  Target void intoLeftLoop##Suffix(T* __restrict d, const T* __restrict b, std::size_t n) {  \
    const Op op;                                                                             \
    for (std::size_t i = 0; i < n; ++i) d[i] = op(d[i], b[i]);                               \
  }                                                                                          \
  template <typename T, typename Op>                                                         \
  Target void intoRightLoop##Suffix(T* __restrict d, const T* __restrict a, std::size_t n) { \
    const Op op;                                                                             \
    for (std::size_t i = 0; i < n; ++i) d[i] = op(a[i], d[i]);                               \
  }

HCCL_DEFINE_LOOPS(Base, )
#if HCCL_X86_WIDE
HCCL_DEFINE_LOOPS(Avx2, HCCL_TARGET_AVX2)
#endif
#undef HCCL_DEFINE_LOOPS

template <typename T, typename Op, Isa isa>
void disjointLoop(T* d, const T* a, const T* b, std::size_t n) {
#if HCCL_X86_WIDE
  if constexpr (isa == Isa::Avx2) return disjointLoopAvx2<T, Op>(d, a, b, n);
#endif
  disjointLoopBase<T, Op>(d, a, b, n);
}
template <typename T, typename Op, Isa isa>
void intoLeftLoop(T* d, const T* b, std::size_t n) {
#if HCCL_X86_WIDE
  if constexpr (isa == Isa::Avx2) return intoLeftLoopAvx2<T, Op>(d, b, n);
#endif
  intoLeftLoopBase<T, Op>(d, b, n);
}
template <typename T, typename Op, Isa isa>
void intoRightLoop(T* d, const T* a, std::size_t n) {
#if HCCL_X86_WIDE
  if constexpr (isa == Isa::Avx2) return intoRightLoopAvx2<T, Op>(d, a, n);
#endif
  intoRightLoopBase<T, Op>(d, a, n);
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
template <typename T, typename Op, Isa isa>
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
    intoLeftLoop<T, Op, isa>(x, y, m);
    std::memcpy(d + off, x, m * sizeof(T));
  }
}

template <typename T, typename Op, Isa isa>
void reduceKernel(void* dst, const void* a, const void* b, std::size_t n) {
  if (!aligned<T>(dst) || !aligned<T>(a) || !aligned<T>(b))
    return unalignedReduce<T, Op, isa>(dst, a, b, n);
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  if (d == x && d == y)
    selfLoop<T, Op>(d, n);
  else if (d == x)
    intoLeftLoop<T, Op, isa>(d, y, n);
  else if (d == y)
    intoRightLoop<T, Op, isa>(d, x, n);
  else
    disjointLoop<T, Op, isa>(d, x, y, n);
}

// ---- tables
// ---------------------------------------------------------------------------------------

template <Isa isa, typename T>
ReduceFn integerKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return &reduceKernel<T, Sum<T>, isa>;
    case ReduceOp::Prod:
      return &reduceKernel<T, Prod<T>, isa>;
    case ReduceOp::Max:
      return &reduceKernel<T, IMax<T>, isa>;
    case ReduceOp::Min:
      return &reduceKernel<T, IMin<T>, isa>;
    case ReduceOp::LAnd:
      return &reduceKernel<T, LAnd<T>, isa>;
    case ReduceOp::LOr:
      return &reduceKernel<T, LOr<T>, isa>;
    case ReduceOp::LXor:
      return &reduceKernel<T, LXor<T>, isa>;
    case ReduceOp::BAnd:
      return &reduceKernel<T, BAnd<T>, isa>;
    case ReduceOp::BOr:
      return &reduceKernel<T, BOr<T>, isa>;
    case ReduceOp::BXor:
      return &reduceKernel<T, BXor<T>, isa>;
  }
  return nullptr;
}

template <Isa isa, typename T>
ReduceFn floatKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return &reduceKernel<T, Sum<T>, isa>;
    case ReduceOp::Prod:
      return &reduceKernel<T, Prod<T>, isa>;
    case ReduceOp::Max:
      return &reduceKernel<T, FMax<T>, isa>;
    case ReduceOp::Min:
      return &reduceKernel<T, FMin<T>, isa>;
    default:
      return nullptr;
  }
}

// fp16 and bf16: the AVX2 variant is hand-written (reduce_kernels_half.cpp), since GCC leaves the
// conversions scalar-like; it computes what these loops compute, so the CPU it runs on never
// shows in a result. Where the CPU lacks F16C, fp16 keeps these loops compiled for AVX2.
template <Isa isa, typename Format>
ReduceFn float16Kernel(ReduceOp op) {
  if constexpr (isa == Isa::Avx2) {
    const DataType t = std::is_same_v<Format, Fp16> ? DataType::Float16 : DataType::BFloat16;
    if (detail::halfKernelsRun(t)) return detail::halfKernelAvx2(t, op);
  }
  switch (op) {
    case ReduceOp::Sum:
      return &reduceKernel<std::uint16_t, ViaFloat<Format, HalfSum>, isa>;
    case ReduceOp::Prod:
      return &reduceKernel<std::uint16_t, ViaFloat<Format, HalfProd>, isa>;
    case ReduceOp::Max:
      return &reduceKernel<std::uint16_t, ViaFloat<Format, HalfMax>, isa>;
    case ReduceOp::Min:
      return &reduceKernel<std::uint16_t, ViaFloat<Format, HalfMin>, isa>;
    default:
      return nullptr;
  }
}

template <Isa isa, typename T>
ReduceFn complexKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return &reduceKernel<std::complex<T>, Sum<std::complex<T>>, isa>;
    case ReduceOp::Prod:
      return &reduceKernel<std::complex<T>, Prod<std::complex<T>>, isa>;
    default:
      return nullptr;
  }
}

// Bool is a byte where any non-zero value is true: the integer logical ops on uint8 do exactly
// that.
template <Isa isa>
ReduceFn boolKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::LAnd:
    case ReduceOp::LOr:
    case ReduceOp::LXor:
      return integerKernel<isa, std::uint8_t>(op);
    default:
      return nullptr;
  }
}

template <Isa isa>
ReduceFn byteKernel(ReduceOp op) {
  switch (op) {
    case ReduceOp::BAnd:
    case ReduceOp::BOr:
    case ReduceOp::BXor:
      return integerKernel<isa, std::uint8_t>(op);
    default:
      return nullptr;
  }
}

static_assert(sizeof(bool) == 1, "Bool kernels treat bool as one byte");
static_assert(sizeof(std::complex<float>) == 8 && sizeof(std::complex<double>) == 16);

template <Isa isa>
ReduceFn kernelFor(DataType t, ReduceOp op) {
  if (!defined(op, t)) return nullptr;
  switch (t) {
    case DataType::Int8:
      return integerKernel<isa, std::int8_t>(op);
    case DataType::Int16:
      return integerKernel<isa, std::int16_t>(op);
    case DataType::Int32:
      return integerKernel<isa, std::int32_t>(op);
    case DataType::Int64:
      return integerKernel<isa, std::int64_t>(op);
    case DataType::UInt8:
      return integerKernel<isa, std::uint8_t>(op);
    case DataType::UInt16:
      return integerKernel<isa, std::uint16_t>(op);
    case DataType::UInt32:
      return integerKernel<isa, std::uint32_t>(op);
    case DataType::UInt64:
      return integerKernel<isa, std::uint64_t>(op);
    case DataType::Float16:
      return float16Kernel<isa, Fp16>(op);
    case DataType::BFloat16:
      return float16Kernel<isa, Bf16>(op);
    case DataType::Float32:
      return floatKernel<isa, float>(op);
    case DataType::Float64:
      return floatKernel<isa, double>(op);
    case DataType::LongDouble:
      return floatKernel<isa, long double>(op);
    case DataType::ComplexFloat:
      return complexKernel<isa, float>(op);
    case DataType::ComplexDouble:
      return complexKernel<isa, double>(op);
    case DataType::Bool:
      return boolKernel<isa>(op);
    case DataType::Byte:
      return byteKernel<isa>(op);
  }
  return nullptr;
}

Isa bestIsa() {
#if HCCL_X86_WIDE
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return Isa::Avx2;
#endif
  return Isa::Base;
}

bool runs(Isa isa) {
  return isa <= bestIsa();
}

ReduceFn kernelFor(Isa isa, DataType t, ReduceOp op) {
  switch (isa) {
#if HCCL_X86_WIDE
    case Isa::Avx2:
      return kernelFor<Isa::Avx2>(t, op);
#endif
    default:
      return kernelFor<Isa::Base>(t, op);
  }
}

}  // namespace

ReduceFn kernel(DataType t, ReduceOp op) {
  static const Isa best = bestIsa();
  return kernelFor(best, t, op);
}

ReduceFn kernel(DataType t, ReduceOp op, KernelVariant v) {
  switch (v) {
    case KernelVariant::Best:
      return kernel(t, op);
    case KernelVariant::Baseline:
      return kernelFor(Isa::Base, t, op);
    case KernelVariant::Avx2:
      return HCCL_X86_WIDE && runs(Isa::Avx2) ? kernelFor(Isa::Avx2, t, op) : nullptr;
  }
  return nullptr;
}

const char* name(KernelVariant v) {
  switch (v) {
    case KernelVariant::Best:
      return bestIsa() == Isa::Avx2 ? "avx2" : "baseline";
    case KernelVariant::Baseline:
      return "baseline";
    case KernelVariant::Avx2:
      return "avx2";
  }
  return "?";
}

}  // namespace hccl::engine
