// Hierarchical composition: a collective over a multi-level communicator as a sequence of
// per-level collectives, each run by the algorithm the selector chose for its level, on groups
// whose peers map to communicator ranks (reference section 2; levels innermost first):
//
//   AllReduce      L0 RS -> L1 RS -> ... -> top AR -> ... -> L1 AG -> L0 AG
//                  Each level splits its region evenly among its group; a rank carries on with
//                  its own piece, so the heavy phases run on the fast inner links and the outer
//                  links move only 1/(inner group size) of the data.
//   ReduceScatter  top RS -> ... -> L0 RS. A member's share at level l is the data of the ranks
//                  it stands for (its supernode at level 2, its server at level 1), so the blocks
//                  that cross servers stay whole and rank i ends with block i.
//   AllGather      L0 AG -> ... -> top AG, the mirror image.
//   Scatter        top Sc -> ... -> L0 Sc: the root scatters server-sized units between servers,
//                  each receiving rank (same local index as the root) within its server.
//   Gather         the Scatter composition run backwards (reverse.hpp).
//   Broadcast      L0 Bc on the root's server -> L1 Bc of one piece per server rank -> ... ->
//                  top Bc -> ... -> L0 AG on the other servers (hier_broadcast.cpp: HCCL's
//                  intra Scatter, inter Broadcast, intra AllGather, nested, the root receiving
//                  nothing).
//   Barrier        L0 Barrier -> L1 Barrier -> ... (hier_barrier.cpp).
//   Scan, Exscan   L0 Scan -> L1 Exscan of server totals -> ... -> L1 Bc -> L0 Bc and combine
//                  (hier_scan.cpp); servers in rank order only, else flat.
//   Reduce         L0 RS -> ... -> top Reduce -> ... -> L0 Gather (hier_reduce.cpp): HCCL's intra
//                  RS, inter Reduce, intra Gather; each Gather only in the root's unit.
//   AllToAll       L0 AllToAll -> L1 AllToAll -> L2 AllToAll, each fixing one more coordinate of
//                  the destination, so each byte crosses each level's links at most once
//                  (hier_alltoall.cpp).
//   Others (AllToAllV): not split by
//                  level yet; the outermost level's algorithm over every rank.
//
// Data is laid out server by server. When servers do not hold consecutive rank ranges (MPI rank
// order is arbitrary) ReduceScatter first copies its input blocks into that order in scratch and
// AllGather gathers there and copies out; AllReduce needs no reordering.
//
// Rank order: the composition reduces in rank order when every level's algorithm does and the
// layout is in block order (each server a consecutive rank range, servers ascending).
// Asymmetric layouts (servers of unequal size) cannot be split level by level: they run the
// outermost level's algorithm flat over all ranks (Layout::shape() presents them so to the
// selector), unless a whole plan such as AHC serves them (plan.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "algorithms/generators.hpp"
#include "algorithms/layout.hpp"

namespace hccl::algo {

// The levels the layout's shape uses, innermost first (0, 1, 2 or a subset).
std::vector<int> levelsInUse(const Layout& layout);
// Rank `rank`'s schedule for `pb` (a Problem over layout.ranks() ranks), each level running its
// phases with algs[level] (the per-level plan). Throws std::invalid_argument when the collective
// cannot be composed or a level's algorithm has no generator for a phase it must run.
RankSchedule composeLevels(const Layout& layout, const LevelAlgorithms& algs, const Problem& pb,
                           std::uint32_t rank);
// True when composeLevels() reduces in rank order for this layout and these algorithms.
bool levelsRankOrdered(const Layout& layout, const LevelAlgorithms& algs, Collective c);

// Rank `rank`'s schedule running `a` over every rank of the layout as one group, on the links of
// `level`.
RankSchedule composeFlat(const Layout& layout, Algorithm a, int level, const Problem& pb,
                         std::uint32_t rank);

// For callers that name the level algorithms themselves (tests, hccl_sim): the schedule of the
// plan they name (plan.hpp, planKeyFor()): with algs[1] = pipeline on a layout it runs on, the
// pipeline; with AHC or AHC_BROKE, AHC (algs[0] inside the servers, `ahcInter` among the logical
// same-index cards, default HCCL's rule); otherwise composeLevels(). And whether it reduces in
// rank order.
RankSchedule composeHierarchical(const Layout& layout, const LevelAlgorithms& algs,
                                 const Problem& pb, std::uint32_t rank,
                                 std::optional<Algorithm> ahcInter = std::nullopt);
bool composedRankOrdered(const Layout& layout, const LevelAlgorithms& algs, Collective c);

}  // namespace hccl::algo
