// Chunk sizing without every rank's schedule (chunking.hpp, chunkSizeFor): the engine must know the
// largest scratch any rank's schedule needs, and every rank must compute the same number. Building
// every rank's schedule is O(p) schedules, seconds at 4096 ranks for one new size. Where the
// largest scratch is known to sit at an edge rank, only those schedules are built.
//
// Edge ranks: on a symmetric layout, the ranks whose index in their group is, at every level, one
// of the first four, the last four or within three of the root's index (the same index in every
// group of the level), plus the first four, the last four and the root's neighbours by rank. The
// algorithms' scratch depends on a rank's place only near the ends of their rings and trees (the
// fold of the ranks outside a power of two, the ring's last hop, the root's neighbours); their
// middle ranks repeat the pattern of the edges. Where that is not so (NHR's AllReduce and Reduce,
// GeneratorSpec::edgeScratch; AHC's servers of unequal size), every rank is built as before.
// tests/algorithms/scratch_ranks_test.cpp checks the edge maximum against every rank's, for every
// generator and plan that claims it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "algorithms/chunking.hpp"
#include "algorithms/decision.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/write_contract.hpp"

namespace hccl::algo {

// The edge ranks of `layout` for a problem rooted at `root`, ascending; every rank when the layout
// is not symmetric.
std::vector<std::uint32_t> edgeRanks(const Layout& layout, std::uint32_t root);

// Whether a's generator for `c` claims GeneratorSpec::edgeScratch; with no collective, whether
// every generator of `a` does (a level of a hierarchical composition runs several).
bool generatorsAtEdges(Algorithm a, std::optional<Collective> c = std::nullopt);

// Whether `key`'s schedules for collective `c` on `layout` have their largest scratch at an edge
// rank (Plan::scratchAtEdges).
bool scratchAtEdges(const Layout& layout, const PlanKey& key, Collective c);

// The largest scratch of gen's schedules for a problem: over the edge ranks where
// scratchAtEdges() holds, else over every rank. `gen` is what the engine runs (the composed plan
// through withPrivateInput). The function keeps a reference to `layout`, which must outlive it.
ScratchNeed scratchNeed(const Layout& layout, const PlanKey& key, RankGenerator gen);

// What the engine runs for `key`: compose() through withPrivateInput. Keeps a reference to
// `layout`.
RankGenerator composedGenerator(const Layout& layout, const PlanKey& key);

// The chunk size (elements per block, 0 = one chunk) the engine cuts `pb` into for `key` with a
// scratch budget of `budgetElems`. Sized on the out-of-place problem unless in place is shared by
// every rank (`sharedInPlace`): where in place is one rank's choice (a rooted call's root, any rank
// of a Scan or Exscan) the others cannot know it, and an in-place schedule may need other scratch
// (hier_scan's Exscan keeps a copy of its input), yet every rank must cut the same chunks.
std::uint64_t engineChunkSize(const Layout& layout, const PlanKey& key, const Problem& pb,
                              bool sharedInPlace, std::uint64_t budgetElems);

// The largest scratch over every rank, the reference the tests hold scratchNeed() to.
std::uint64_t scratchOfEveryRank(const RankGenerator& gen, const Problem& pb);

}  // namespace hccl::algo
