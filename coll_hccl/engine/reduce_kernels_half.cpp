#include "coll_hccl/engine/reduce_kernels_half.hpp"

#include <cstdint>
#include <cstring>

#include "coll_hccl/engine/float16.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HCCL_HALF_X86 1
#include <immintrin.h>
#else
#define HCCL_HALF_X86 0
#endif

namespace hccl::engine::detail {

#if HCCL_HALF_X86
namespace {

// Sixteen 16-bit elements per step: one 256-bit load per operand, widened into two vectors of
// eight floats, combined, narrowed and stored. A remainder of fewer than sixteen goes through the
// scalar element operation of float16.hpp, which the vector steps reproduce bit for bit.

#define HCCL_HALF_TARGET [[gnu::target("avx2,f16c")]]

// ---- float operations: float16.hpp's HalfSum .. HalfMin on eight lanes
// ---------------------------
struct VSum {
  using Scalar = HalfSum;
  HCCL_HALF_TARGET static __m256 apply(__m256 a, __m256 b) {
    return _mm256_blendv_ps(_mm256_add_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
};
struct VProd {
  using Scalar = HalfProd;
  HCCL_HALF_TARGET static __m256 apply(__m256 a, __m256 b) {
    return _mm256_blendv_ps(_mm256_mul_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
};
// blendv reads only each lane's top bit, so andnot(a, eq) is "equal and a positive", and(a, eq)
// "equal and a negative".
struct VMax {
  using Scalar = HalfMax;
  HCCL_HALF_TARGET static __m256 apply(__m256 a, __m256 b) {
    const __m256 eq = _mm256_cmp_ps(a, b, _CMP_EQ_OQ);
    const __m256 left = _mm256_or_ps(
        _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q)),
        _mm256_andnot_ps(a, eq));
    return _mm256_blendv_ps(b, a, left);
  }
};
struct VMin {
  using Scalar = HalfMin;
  HCCL_HALF_TARGET static __m256 apply(__m256 a, __m256 b) {
    const __m256 eq = _mm256_cmp_ps(a, b, _CMP_EQ_OQ);
    const __m256 left = _mm256_or_ps(
        _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q)),
        _mm256_and_ps(a, eq));
    return _mm256_blendv_ps(b, a, left);
  }
};

// ---- formats
// -------------------------------------------------------------------------------------

// fp16 through F16C: conversions to float are exact, conversions back round to nearest even
// (the immediate, not MXCSR) with overflow to infinity, gradual underflow, and NaNs quieted with
// their top payload bits kept: what floatToHalf() computes.
struct Fp16 {
  HCCL_HALF_TARGET static void widen(__m256i h, __m256& lo, __m256& hi) {
    lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
    hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
  }
  HCCL_HALF_TARGET static __m256i narrow(__m256 lo, __m256 hi) {
    return _mm256_set_m128i(_mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT),
                            _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
  }
  static float widen1(std::uint16_t h) { return halfToFloat(h); }
  static std::uint16_t narrow1(float f) { return floatToHalf(f); }
};

// bf16 is the top half of a float. Widening interleaves zeros below each element; unpacklo and
// unpackhi work per 128-bit lane, so the two vectors hold elements {0-3, 8-11} and {4-7, 12-15},
// and packus (also per lane) puts the narrowed results back in order. Narrowing is
// floatToBf16()'s arithmetic on eight lanes: NaN keeps its top bits and gains the quiet bit,
// everything else rounds to nearest even, overflow carrying into infinity.
struct Bf16 {
  HCCL_HALF_TARGET static void widen(__m256i h, __m256& lo, __m256& hi) {
    const __m256i zero = _mm256_setzero_si256();
    lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, h));
    hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, h));
  }
  HCCL_HALF_TARGET static __m256i narrow8(__m256 f) {
    const __m256i x = _mm256_castps_si256(f);
    const __m256i top = _mm256_srli_epi32(x, 16);
    const __m256i odd = _mm256_and_si256(top, _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd), 16);
    const __m256i nan = _mm256_or_si256(top, _mm256_set1_epi32(0x40));
    const __m256i isNan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                             _mm256_set1_epi32(0x7f800000));
    return _mm256_blendv_epi8(rounded, nan, isNan);
  }
  HCCL_HALF_TARGET static __m256i narrow(__m256 lo, __m256 hi) {
    return _mm256_packus_epi32(narrow8(lo), narrow8(hi));
  }
  static float widen1(std::uint16_t h) { return bf16ToFloat(h); }
  static std::uint16_t narrow1(float f) { return floatToBf16(f); }
};

// dst may be exactly a or b: each step loads both operands before it stores. Any alignment.
template <typename Format, typename Op>
HCCL_HALF_TARGET void halfKernel(void* dst, const void* a, const void* b, std::size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  constexpr std::size_t kStep = 16;
  std::size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    const std::size_t off = i * 2;
    __m256 alo, ahi, blo, bhi;
    Format::widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + off)), alo, ahi);
    Format::widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + off)), blo, bhi);
    const __m256i r = Format::narrow(Op::apply(alo, blo), Op::apply(ahi, bhi));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + off), r);
  }
  for (; i < n; ++i) {
    std::uint16_t u, v;
    std::memcpy(&u, x + i * 2, 2);
    std::memcpy(&v, y + i * 2, 2);
    const std::uint16_t r =
        Format::narrow1(typename Op::Scalar{}(Format::widen1(u), Format::widen1(v)));
    std::memcpy(d + i * 2, &r, 2);
  }
}

template <typename Format>
ReduceFn forOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return &halfKernel<Format, VSum>;
    case ReduceOp::Prod:
      return &halfKernel<Format, VProd>;
    case ReduceOp::Max:
      return &halfKernel<Format, VMax>;
    case ReduceOp::Min:
      return &halfKernel<Format, VMin>;
    default:
      return nullptr;
  }
}

}  // namespace

ReduceFn halfKernelAvx2(DataType t, ReduceOp op) {
  if (t == DataType::Float16) return forOp<Fp16>(op);
  if (t == DataType::BFloat16) return forOp<Bf16>(op);
  return nullptr;
}

bool halfKernelsRun(DataType t) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) return false;
  return t != DataType::Float16 || __builtin_cpu_supports("f16c");
}

#else

ReduceFn halfKernelAvx2(DataType, ReduceOp) {
  return nullptr;
}
bool halfKernelsRun(DataType) {
  return false;
}

#endif

}  // namespace hccl::engine::detail
