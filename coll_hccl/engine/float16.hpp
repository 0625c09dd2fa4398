// IEEE binary16 (fp16) and bfloat16 stored as raw 16-bit patterns, converted through float.
//
// Conversions to float are exact. Conversions from float round to nearest, ties to even, with
// overflow to infinity and gradual underflow; a NaN stays a NaN (quieted, top payload bits kept).
// Reductions on these types compute in float and round once back: float's 24-bit significand is at
// least 2p+2 bits for fp16 (p = 11) and bf16 (p = 8), so rounding the exact result first to float
// and then to 16 bits equals rounding it directly (Figueroa, "When is double rounding
// innocuous?", 1995) for + and *; max and min are exact.
#pragma once

#include <bit>
#include <cstdint>

namespace hccl::engine {

// Both fp16 conversions compute every case and select at the end, without branches, so that
// loops over them vectorise.
inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h & 0x7fffu) << 13;  // exponent, mantissa
  const std::uint32_t exp = bits & 0x0f800000u;
  const std::uint32_t normal = bits + 0x38000000u;    // rebias 15 -> 127
  const std::uint32_t infOrNan = bits + 0x70000000u;  // exponent all ones, mantissa kept
  // Zero or subnormal, man * 2^-24: read the mantissa as 2^-14 * (1 + man/1024), subtract 2^-14.
  const float sub = std::bit_cast<float>(bits + 0x38800000u) - 0x1p-14f;
  const std::uint32_t mag = exp == 0x0f800000u ? infOrNan
                            : exp == 0         ? std::bit_cast<std::uint32_t>(sub)
                                               : normal;
  return std::bit_cast<float>(mag | static_cast<std::uint32_t>(h & 0x8000u) << 16);
}

inline std::uint16_t floatToHalf(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  // NaN: quiet bit set, so the mantissa is never zero; top payload bits kept.
  const std::uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
  // Below 2^-14, fp16 is subnormal with a fixed quantum of 2^-24. Adding 0.5 (float ulp 2^-24 in
  // [0.5, 1)) makes the FPU round to that quantum, to nearest even.
  const std::uint32_t sub =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(ax) + 0.5f) - 0x3f000000u;
  // Normal: rebias 127 -> 15 and round the mantissa to 10 bits, ties to even; a carry out of the
  // mantissa bumps the exponent. (Wraps for small ax, whose result is not selected.)
  const std::uint32_t normal = (ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >> 13;
  const std::uint32_t h = ax > 0x7f800000u    ? nan
                          : ax >= 0x477ff000u ? 0x7c00u  // >= 65520: rounds (to even) to infinity
                          : ax < 0x38800000u  ? sub
                                              : normal;
  return static_cast<std::uint16_t>(sign | h);
}

inline float bf16ToFloat(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

inline std::uint16_t floatToBf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  const std::uint32_t odd = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7fffu + odd) >> 16);  // overflow carries into inf
}

// The float operation of each reduction on these types, applied to the widened operands before
// the result is rounded back once. Every kernel variant (scalar, AVX2/F16C) computes exactly
// these, so they agree bit for bit, NaN payloads included:
//  - sum and product are IEEE in float, except that when both operands are NaN the left one wins.
//    A lone NaN operand comes out of the hardware operation anyway (quieted), but of two the CPU
//    returns whichever the compiler made the first source. An invalid operation (inf - inf,
//    0 x inf) gives the CPU's default NaN (on x86 negative, quiet, zero payload);
//  - max and min return the left operand when it is greater (smaller), NaN, or equal with the
//    sign that orders it first (+0 above -0), else the right one: never a new value.
// Narrowing quiets every NaN and keeps its top payload bits, so whether an operand was quieted
// before (by a hardware conversion, say) never shows in the result.
struct HalfSum {
  float operator()(float a, float b) const { return a != a ? a : a + b; }
};
struct HalfProd {
  float operator()(float a, float b) const { return a != a ? a : a * b; }
};
struct HalfMax {
  float operator()(float a, float b) const {
    const bool negative = std::bit_cast<std::uint32_t>(a) >> 31;
    return a > b || a != a || (a == b && !negative) ? a : b;
  }
};
struct HalfMin {
  float operator()(float a, float b) const {
    const bool negative = std::bit_cast<std::uint32_t>(a) >> 31;
    return a < b || a != a || (a == b && negative) ? a : b;
  }
};

}  // namespace hccl::engine
