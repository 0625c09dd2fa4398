// Real data through the executor, checked two ways:
//  1. same order: every rank's whole Output equals, bit for bit, what the sequential reference
//     interpreter (interpreter.hpp) leaves after running the same schedule with the
//     reference's own scalar reductions (scalar.hpp);
//  2. semantics: the collective's result, computed from the inputs alone in rank order
//     (in_0 (+) in_1 (+) ... (+) in_{p-1}), equals the output bitwise for integers, bool, byte,
//     max/min and every copy; float sums and products must lie within floatTolerance() of the
//     rank-order value computed in long double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "coll_hccl/engine/reduction.hpp"
#include "coll_hccl/reference/scalar.hpp"

namespace hccl::reference {

using Bytes = std::vector<std::byte>;

// What rank r contributes, laid out as its out-of-place Input would be: the whole vector for
// AllReduce, ReduceScatter, Reduce and AllToAll, its own block for AllGather, the root's data for
// Broadcast and Scatter (nothing on other ranks).
std::uint64_t contributionCount(const algo::Problem& pb, std::uint32_t r);

// Checks a predefined (type, op) with inputs from contribution(type, op, seed, ...). Copy-only
// schedules ignore op. Returns "" when both checks hold, else what failed, naming the problem.
// corruptOne flips a bit of the engine's first output before checking (to show a failure).
std::string checkRealData(const algo::Schedule& s, DataType type, ReduceOp op, std::uint64_t seed,
                          bool corruptOne = false);

// A user op: `engineOp` runs in the executor, `referenceOp` (the same function, written for the
// interpreter) in the reference. `error` covers engine failures and check 1; check 2 is only
// counted, so a test can show a schedule that is not rank-ordered giving another answer.
struct UserOpOutcome {
  std::string error;
  std::size_t rankOrderMismatches =
      0;  // result elements whose bits differ from the rank-order fold
  std::string firstMismatch;
};
UserOpOutcome runUserOp(const algo::Schedule& s, const engine::Reduction& engineOp,
                        const ElementOp& referenceOp, std::size_t elemSize,
                        const std::vector<Bytes>& contributions);

// The bound on |computed - exact| for a float reduction of p operands with unit roundoff u
// (see check.cpp for the derivation): gammaBound(p-1, u) * magnitude, where magnitude is
// sum |x_r| for sums and prod |x_r| for products.
long double gammaBound(std::uint32_t n, long double u);

}  // namespace hccl::reference
