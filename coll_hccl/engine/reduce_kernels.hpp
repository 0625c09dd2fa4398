// Element-wise reduction kernels for every predefined (DataType, ReduceOp) pair MPI defines.
//
// A kernel computes dst[i] = a[i] (+) b[i] for i < count, `a` being the left operand. dst may be
// exactly a or exactly b (or both may be one buffer), never a partial overlap. Pointers need not be
// aligned to the element type.
//
// Semantics per type group:
//  - integers wrap (two's complement) on sum and product; logical ops yield 0 or 1;
//  - float, double, long double: IEEE arithmetic of that type. MAX and MIN return NaN when either
//    operand is NaN (the left one when both are; IEEE 754-2019 maximum/minimum) and order
//    +0 above -0, so the result never depends on operand order;
//  - fp16, bf16: computed in float and rounded once, to nearest even; NaN payloads follow the
//    rules in float16.hpp (left NaN first, quieted), so every variant agrees bit for bit;
//  - complex: sum component-wise; product as C's `float _Complex` / `double _Complex` multiply
//    (Annex G infinity recovery), which is what Open MPI's own kernels compute;
//  - bool: logical ops on bytes, any non-zero byte is true, results are 0 or 1;
//  - byte: bitwise ops.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/types.hpp"

namespace hccl::engine {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, std::size_t count);

// The kernel for (t, op), or nullptr when MPI does not define op on t (see hccl::defined()).
// Uses the widest instruction set this CPU runs.
ReduceFn kernel(DataType t, ReduceOp op);

// Instruction-set variants of the same kernels (x86-64), for tests and measurements. Every variant
// computes bitwise the same results (no FMA contraction anywhere). Avx2 uses F16C too for fp16
// where the CPU has it.
enum class KernelVariant : std::uint8_t { Best, Baseline, Avx2 };
// nullptr when op is undefined on t or this CPU cannot run the variant.
ReduceFn kernel(DataType t, ReduceOp op, KernelVariant v);
const char* name(KernelVariant v);  // Best names the variant it resolves to

}  // namespace hccl::engine
