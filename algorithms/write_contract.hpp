// The write contract (coll_hccl/hccl_engine.h): a schedule writes only the part of Output that
// the collective defines as rank r's result (Problem::writableOutput); intermediate data lives in
// Scratch. The symbolic verifier checks it for every schedule.
//
// Generators honour it by construction except for in-place ReduceScatter, where the input fills
// Output and the algorithms accumulate partial sums in the blocks that belong to other ranks.
// There the out-of-place schedule runs instead, on a private copy of the input in Scratch: one
// local copy of the input per call (per chunk), as Open MPI's own in-place reduce_scatter does.
// The variant that hierarchical AllReduce composes with (resultInBlock) is internal to a call
// whose whole Output is result, and keeps working in place.
#pragma once

#include <cstdint>
#include <functional>

#include "algorithms/schedule.hpp"

namespace hccl::algo {

bool needsPrivateInput(const Problem& pb);

using RankGenerator = std::function<RankSchedule(const Problem&, std::uint32_t rank)>;

// gen(pb, rank), or for a problem that needsPrivateInput: a first step copying Output[0, total)
// to fresh Scratch, then gen's out-of-place schedule reading that copy as its Input.
RankSchedule withPrivateInput(const Problem& pb, std::uint32_t rank, const RankGenerator& gen);

}  // namespace hccl::algo
