// Gather as a Scatter run backwards (HCCL's Gather is the reverse of its Scatter: the same tree,
// every edge carrying the same block the other way).
//
// A Scatter schedule only copies: each block travels from the root along a path to its rank.
// Reversing it moves every block back along the same path: the forward steps in reverse order,
// each transfer with its direction flipped, each copy dst <- a turned into a <- dst and run before
// the step's transfers (forward they ran after them). Buffers swap roles: the Scatter root's
// Input (in place: Output) is the Gather root's Output, every Scatter Output[count(r)] is the
// Gather's Input[count(r)] (in place at the root: the block already in Output, left alone);
// Scratch stays Scratch, so a Gather needs what its Scatter needs. Steps, peers and volumes are
// the Scatter's, so is the cost formula.
#pragma once

#include <cstdint>

#include "algorithms/generators.hpp"
#include "algorithms/write_contract.hpp"  // RankGenerator

namespace hccl::algo {

// Rank r's schedule for the Gather problem `pb`, from `scatter` run on the same blocks and root
// (a generator, or a whole composed Scatter: hierarchical.cpp). Throws std::logic_error if the
// Scatter schedule reduces (it never should).
RankSchedule gatherByReversing(const Problem& pb, std::uint32_t r, const RankGenerator& scatter);

}  // namespace hccl::algo
