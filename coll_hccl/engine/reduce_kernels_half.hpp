// Hand-vectorised fp16 and bf16 kernels (x86-64 AVX2, and F16C for fp16), internal to
// reduce_kernels.cpp, which picks them when the CPU runs them.
//
// GCC does not vectorise the scalar widen-op-narrow loop well: its fp16 conversions are a dozen
// integer operations per element and it never uses F16C's one-instruction conversions for them.
// These loops compute, element by element, exactly what the scalar kernels compute (the same
// float operation on the same widened operands, the same NaN rule, the same round to nearest
// even), so every variant gives bitwise the same results.
#pragma once

#include "algorithms/types.hpp"
#include "coll_hccl/engine/reduce_kernels.hpp"

namespace hccl::engine::detail {

// The AVX2 kernel for (t, op) on fp16 or bf16 with sum, prod, max or min; nullptr for any other
// pair, or when this build has no x86 kernels. The caller checks that the CPU runs AVX2 (and
// F16C for fp16): see halfKernelsRun().
ReduceFn halfKernelAvx2(DataType t, ReduceOp op);
bool halfKernelsRun(DataType t);

}  // namespace hccl::engine::detail
