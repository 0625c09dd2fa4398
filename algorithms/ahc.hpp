// AHC (HCCL "AHC", and "AHC_BROKE" when every server has the same number of ranks): AllReduce,
// ReduceScatter and AllGather over servers of unequal size (see ahc.cpp for the schedule and its
// cost). Like Pipeline it spans level0 and level1, so it takes the layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/layout.hpp"
#include "algorithms/schedule.hpp"

namespace hccl::algo {

// Both names run the same AHC schedule.
inline bool isAhc(Algorithm a) {
  return a == Algorithm::AHC || a == Algorithm::AHC_Broke;
}

// HCCL's algorithm between logical same-index cards by the built-in rules document
// (hccl_rules.hpp): ring up to 3 servers, NHR above (AHC_LEVEL0_GROUP_SIZE_THRESHOLD = 3); ring
// when no row answers.
Algorithm ahcDefaultInter(std::uint32_t servers);

// Empty when AHC can run `c` over servers of these sizes (one supernode); otherwise why not.
std::string ahcWhyNot(const std::vector<std::uint32_t>& serverSizes, Collective c);

// Rank `rank`'s AHC schedule for `pb` over `lay` (one supernode, servers = level0 groups).
// `intra` runs the ReduceScatter/AllGather inside each server, `inter` the collective among the
// logical same-index cards of the servers; both need generators that take uneven blocks. Throws
// std::invalid_argument (naming the value) when the layout, the collective or an algorithm does
// not fit.
RankSchedule ahcSchedule(const Layout& lay, Algorithm intra, Algorithm inter, const Problem& pb,
                         std::uint32_t rank);

}  // namespace hccl::algo
