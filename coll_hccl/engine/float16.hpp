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

inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in float.
  const float mag = static_cast<float>(man) * 0x1p-24f;
  return sign ? -mag : mag;
}

inline std::uint16_t floatToHalf(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  std::uint32_t h;
  if (ax > 0x7f800000u) {
    h = 0x7e00u | ((ax >> 13) & 0x3ffu);  // NaN: quiet bit set, so the mantissa is never zero
  } else if (ax >= 0x477ff000u) {
    h = 0x7c00u;  // >= 65520 = 65504 + half an ulp: rounds (ties to even) to infinity
  } else if (ax < 0x38800000u) {
    // Below 2^-14, fp16 is subnormal with a fixed quantum of 2^-24. Adding 0.5 (float ulp 2^-24
    // in [0.5, 1)) makes the FPU round to that quantum, to nearest even.
    const float shifted = std::bit_cast<float>(ax) + 0.5f;
    h = std::bit_cast<std::uint32_t>(shifted) - 0x3f000000u;
  } else {
    const std::uint32_t rebased = ax - 0x38000000u;  // exponent bias 127 -> 15
    const std::uint32_t odd = (rebased >> 13) & 1u;
    h = (rebased + 0xfffu + odd) >> 13;  // a carry out of the mantissa bumps the exponent
  }
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

}  // namespace hccl::engine
