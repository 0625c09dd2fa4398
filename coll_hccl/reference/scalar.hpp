// Plain scalar reductions, one element at a time, written without the engine's kernels or its
// fp16/bf16 conversions: integers in 64-bit unsigned arithmetic reduced modulo 2^bits; fp32 and
// complex64 through long double, rounded once to float; fp64, complex128 and long double in their
// own IEEE arithmetic; fp16 through GCC's _Float16; bf16 through double and an explicit
// round-to-nearest-even at 8 significant bits. One rounding per operation, so these give the bits
// IEEE arithmetic of the type gives (a long double or double intermediate holds at least 2p+2
// bits of a p-bit type, so rounding it again is innocuous for + and *).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/types.hpp"

namespace hccl::reference {

// dst = a (+) b for one element; dst may be a or b. ctx is the op's own state (user ops).
using ElementFn = void (*)(std::byte* dst, const std::byte* a, const std::byte* b, const void* ctx);

struct ElementOp {
  ElementFn fn = nullptr;
  const void* ctx = nullptr;

  void operator()(std::byte* dst, const std::byte* a, const std::byte* b) const {
    fn(dst, a, b, ctx);
  }
};

// The reference for a predefined pair; throws std::invalid_argument when op is not defined on t.
ElementOp scalarOp(DataType t, ReduceOp op);

// Bytes of an element that carry its value (long double: the 10 bytes of the x87 format; the
// rest is padding that stores do not define).
std::size_t significantBytes(DataType t);

// fp16 and bf16 bit patterns from and to values, independently of coll_hccl/engine/float16.hpp.
long double fp16Value(std::uint16_t bits);
long double bf16Value(std::uint16_t bits);
std::uint16_t fp16Bits(long double exactlyRepresentable);
// Rounds to the nearest bf16, ties to even (overflow to infinity, gradual underflow).
std::uint16_t bf16Round(double x);

// Significant bits of a floating type (of each part for complex types); 64 for the others.
int significandBits(DataType t);

// The real value of a real floating element (fp16, bf16, fp32, fp64, long double).
long double realValue(DataType t, const std::byte* p);

}  // namespace hccl::reference
