// Schedule generators: one function per (algorithm, collective), one file per algorithm, and the
// registry that says what each can do. A generator builds one rank's schedule from the Problem
// alone, so every rank computes its own part independently and identically.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "algorithms/algorithm.hpp"
#include "algorithms/rank_cost.hpp"
#include "algorithms/schedule.hpp"

namespace hccl::algo {

struct CallInfo;  // decision.hpp

using Generator = RankSchedule (*)(const Problem&, std::uint32_t rank);
// scratchCount(generate(pb, rank)) without building the schedule (GeneratorSpec::scratch).
using ScratchFn = std::uint64_t (*)(const Problem&, std::uint32_t rank);

// Schedules that never touch Scratch (ScratchFn): their entries say so, for the formulas of the
// compositions that run them as phases.
std::uint64_t noScratch(const Problem& pb, std::uint32_t rank);

// ring.cpp
RankSchedule ringAllReduce(const Problem& pb, std::uint32_t rank);
RankSchedule ringReduceScatter(const Problem& pb, std::uint32_t rank);
RankSchedule ringAllGather(const Problem& pb, std::uint32_t rank);
RankSchedule ringBroadcast(const Problem& pb, std::uint32_t rank);
RankSchedule ringReduce(const Problem& pb, std::uint32_t rank);
RankSchedule ringScatter(const Problem& pb, std::uint32_t rank);
RankSchedule ringGather(const Problem& pb, std::uint32_t rank);
// Scratch (ScratchFn): ReduceScatter's two partial-sum slots (out of place) or its landing slot
// (in place); Scatter's two slots of blocks in transit, and Gather's (its Scatter reversed keeps
// the Scratch slices).
std::uint64_t ringReduceScatterScratch(const Problem& pb, std::uint32_t rank);
// AllReduce's landing slot in place (none out of place); Reduce's accumulator past the chain's
// first rank.
std::uint64_t ringAllReduceScratch(const Problem& pb, std::uint32_t rank);
std::uint64_t ringReduceScratch(const Problem& pb, std::uint32_t rank);
std::uint64_t ringScatterScratch(const Problem& pb, std::uint32_t rank);
// AllReduce's cost: lockstep, or with empty blocks (fewer elements than ranks) the chain of one
// element through every rank twice.
Metrics ringAllReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                          const CostParams& params);

// Rank paths (rank_cost.hpp, PathFn).
Metrics ringAllReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                          const CostParams& params);
Metrics ringReduceScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                              const CostParams& params);
Metrics ringAllGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                          const CostParams& params);
Metrics ringScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                        const CostParams& params);
Metrics ringGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                       const CostParams& params);

// rhd.cpp
RankSchedule rhdAllReduce(const Problem& pb, std::uint32_t rank);
RankSchedule rhdReduceScatter(const Problem& pb, std::uint32_t rank);
RankSchedule rhdAllGather(const Problem& pb, std::uint32_t rank);
RankSchedule rhdBroadcast(const Problem& pb, std::uint32_t rank);
RankSchedule rhdReduce(const Problem& pb, std::uint32_t rank);
// Scratch (ScratchFn): the fold's landing and the first round's kept range (the rounds nest),
// O(1); Reduce's non-roots land it past their partial sums at Scratch[0, n).
std::uint64_t rhdAllReduceScratch(const Problem& pb, std::uint32_t rank);
std::uint64_t rhdReduceScatterScratch(const Problem& pb, std::uint32_t rank);
std::uint64_t rhdReduceScratch(const Problem& pb, std::uint32_t rank);
// Reduce's cost: the replay's rules on every rank's per-step counts, O(p log p), no schedule.
Metrics rhdReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                      const CostParams& params);

// The binomial tree's rounds and the unfold, each a whole-buffer step (rhd.cpp), O(log p).
Metrics rhdBroadcastCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                         const CostParams& params);

// rhd_scan.cpp
RankSchedule rhdScan(const Problem& pb, std::uint32_t rank);
RankSchedule rhdExscan(const Problem& pb, std::uint32_t rank);
// Their scratch (ScratchFn): every rank but 0 receives at step 0 into its landing slot, Scan's
// Scratch[0, n), Exscan's Scratch[n, 2n) (past x_r's copy); O(1).
std::uint64_t rhdScanScratch(const Problem& pb, std::uint32_t rank);
std::uint64_t rhdExscanScratch(const Problem& pb, std::uint32_t rank);
// rhdExscan's critical path by the replay's rules from every rank's per-step counts, O(p log p)
// with no schedule built.
Metrics rhdExscanCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                      const CostParams& params);

// mesh.cpp
RankSchedule meshAllReduce(const Problem& pb, std::uint32_t rank);
RankSchedule meshReduceScatter(const Problem& pb, std::uint32_t rank);
RankSchedule meshAllGather(const Problem& pb, std::uint32_t rank);
RankSchedule meshBroadcast(const Problem& pb, std::uint32_t rank);
RankSchedule meshScatter(const Problem& pb, std::uint32_t rank);
RankSchedule meshGather(const Problem& pb, std::uint32_t rank);
RankSchedule meshBarrier(const Problem& pb, std::uint32_t rank);
// gathered_barrier.cpp: the root (pb.root) leaves first; chosen by its sequence rule only
// (registry.cpp: right after a Broadcast, at its root).
RankSchedule gatheredBarrier(const Problem& pb, std::uint32_t rank);
RankSchedule meshScan(const Problem& pb, std::uint32_t rank);
RankSchedule meshExscan(const Problem& pb, std::uint32_t rank);
// Their scratch (ScratchFn, both): rank r receives each lower rank's vector into its own slot,
// Scratch[0, r n); O(1).
std::uint64_t meshScanScratch(const Problem& pb, std::uint32_t rank);
RankSchedule meshAllToAll(const Problem& pb, std::uint32_t rank);
// Rank path (PathFn): its one step of p-1 blocks each way, no schedule built.
Metrics meshAllToAllPath(const Problem& pb, std::uint32_t rank, std::size_t elemSize,
                         const CostParams& params);
RankSchedule meshAllToAllV(const Problem& pb, std::uint32_t rank);
// meshBroadcast's critical path from its blocks' counts, O(p) with no schedule built (the
// replay's rules: the Scatter's ends, then every AllGather step from the latest post).
Metrics meshBroadcastCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                          const CostParams& params);
// Scratch (ScratchFn): none out of place; in place every peer's block lands in a slot first.
std::uint64_t meshAllToAllScratch(const Problem& pb, std::uint32_t rank);
// ReduceScatter's scratch (ScratchFn): the p-1 peers' contributions to the rank's block, and in
// place where the result half-covers the own block one more block to reduce into.
std::uint64_t meshReduceScatterScratch(const Problem& pb, std::uint32_t rank);
// One step in which rank r sends contribution(j) (c elements) to every peer j, receives every
// peer's contribution to its own part into Scratch[0, (p-1)c) in rank order, and reduces the p
// of them left to right into dst. dst may be contribution(r) itself, not partly overlap it.
void meshReduceStep(RankSchedule& out, std::uint32_t p, std::uint32_t r, std::uint64_t c, Slice dst,
                    const std::function<Slice(std::uint32_t)>& contribution);
// Mesh AllReduce: meshReduceStep, then an AllGather step of sends, or of pushes (push).
RankSchedule meshAllReduceGathering(const Problem& pb, std::uint32_t rank, bool push);
// meshReduce's critical path from its blocks' counts, O(p) (rs_gather_reduce.cpp).
Metrics meshReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                       const CostParams& params);

// mesh_oneshot.cpp
RankSchedule meshOneShotAllReduce(const Problem& pb, std::uint32_t rank);
RankSchedule meshOneShotBroadcast(const Problem& pb, std::uint32_t rank);
// meshOneShotBroadcast's critical path: the root's one post or the readers' copy, O(1).
Metrics meshOneShotBroadcastCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                                 const CostParams& params);

// mesh_push.cpp
RankSchedule meshPushAllReduce(const Problem& pb, std::uint32_t rank);

// nhr.cpp
RankSchedule nhrAllReduce(const Problem& pb, std::uint32_t rank);
RankSchedule nhrReduceScatter(const Problem& pb, std::uint32_t rank);
RankSchedule nhrAllGather(const Problem& pb, std::uint32_t rank);
RankSchedule nhrBroadcast(const Problem& pb, std::uint32_t rank);
RankSchedule nhrScatter(const Problem& pb, std::uint32_t rank);
RankSchedule nhrGather(const Problem& pb, std::uint32_t rank);
RankSchedule nhrBarrier(const Problem& pb, std::uint32_t rank);
// ReduceScatter's scratch (ScratchFn, tree::reduceScatterCollectiveScratch).
std::uint64_t nhrReduceScatterScratch(const Problem& pb, std::uint32_t rank);
// Scatter's scratch (ScratchFn, tree::scatterScratch), and Gather's: its Scatter reversed keeps
// the Scratch slices.
std::uint64_t nhrScatterScratch(const Problem& pb, std::uint32_t rank);
// AllReduce's cost: lockstep, or with empty blocks the tree phases' critical path from per-step
// counts (tree::phasesPath).
Metrics nhrAllReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                         const CostParams& params);
// Broadcast's: the same, with the Scatter and the AllGather that skips the root.
Metrics nhrBroadcastCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                         const CostParams& params);

// Rank paths (rank_cost.hpp, PathFn); Reduce's is its ReduceScatter then its Gather
// (rs_gather_reduce.cpp).
Metrics nhrAllReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                         const CostParams& params);
Metrics nhrReduceScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                             const CostParams& params);
Metrics nhrAllGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                         const CostParams& params);
Metrics nhrBroadcastPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                         const CostParams& params);
Metrics nhrScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                       const CostParams& params);
Metrics nhrGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                      const CostParams& params);
Metrics nhrReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                      const CostParams& params);

// nb.cpp
RankSchedule nbAllReduce(const Problem& pb, std::uint32_t rank);
RankSchedule nbReduceScatter(const Problem& pb, std::uint32_t rank);
RankSchedule nbAllGather(const Problem& pb, std::uint32_t rank);
RankSchedule nbBroadcast(const Problem& pb, std::uint32_t rank);
RankSchedule nbScatter(const Problem& pb, std::uint32_t rank);
RankSchedule nbGather(const Problem& pb, std::uint32_t rank);
RankSchedule nbBarrier(const Problem& pb, std::uint32_t rank);
std::uint64_t nbScatterScratch(const Problem& pb, std::uint32_t rank);
// AllReduce's scratch (its ReduceScatter's receives past step 0, tree::reduceScatterScratch; the
// Bruck AllGather needs none) and ReduceScatter's.
std::uint64_t nbAllReduceScratch(const Problem& pb, std::uint32_t rank);
std::uint64_t nbReduceScatterScratch(const Problem& pb, std::uint32_t rank);
// As nhrAllReduceCost, with NB's Bruck AllGather.
Metrics nbAllReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                        const CostParams& params);
Metrics nbBroadcastCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                        const CostParams& params);

// Rank paths, as NHR's.
Metrics nbAllReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                        const CostParams& params);
Metrics nbReduceScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                            const CostParams& params);
Metrics nbAllGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                        const CostParams& params);
Metrics nbBroadcastPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                        const CostParams& params);
Metrics nbScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                      const CostParams& params);
Metrics nbGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                     const CostParams& params);
Metrics nbReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                     const CostParams& params);

// rs_gather_reduce.cpp: Reduce as the algorithm's ReduceScatter then its Gather to the root
RankSchedule nhrReduce(const Problem& pb, std::uint32_t rank);
RankSchedule nbReduce(const Problem& pb, std::uint32_t rank);
RankSchedule meshReduce(const Problem& pb, std::uint32_t rank);
// Their scratch (ScratchFn) from the ReduceScatter's and the Gather's formulas.
std::uint64_t nhrReduceScratch(const Problem& pb, std::uint32_t rank);
std::uint64_t nbReduceScratch(const Problem& pb, std::uint32_t rank);
std::uint64_t meshReduceScratch(const Problem& pb, std::uint32_t rank);
// Lockstep, or with empty blocks the ReduceScatter and Gather from per-step counts
// (tree::phasesPath).
Metrics nhrReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                      const CostParams& params);
Metrics nbReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                     const CostParams& params);

// pairwise.cpp
RankSchedule pairwiseAllToAll(const Problem& pb, std::uint32_t rank);
RankSchedule pairwiseAllToAllV(const Problem& pb, std::uint32_t rank);
// Scratch (ScratchFn): none out of place; in place the slots of steps 1..floor(p/2).
std::uint64_t pairwiseAllToAllScratch(const Problem& pb, std::uint32_t rank);
// Rank path (PathFn): p-1 steps of one block each way, no schedule built.
Metrics pairwiseAllToAllPath(const Problem& pb, std::uint32_t rank, std::size_t elemSize,
                             const CostParams& params);

// When a generator is the choice for a call because of the call before it, not because of its
// cost (a level's choice, selection.hpp): where no configuration forces an algorithm at the
// level and no size rule names one, before HCCL's defaults and the model. Every condition must
// hold. The call's Problem carries the previous call's root (Problem::root).
struct SequenceRule {
  // The previous call on the communicator was a Broadcast (CallInfo::afterBroadcastFrom).
  bool afterBroadcast = false;
  // At most this many ranks in the whole communicator, which is then the level's one group.
  std::uint32_t maxRanks = 0;
  // Above anySizeRanks ranks, only after a Broadcast of at most maxBroadcastBytes
  // (CallInfo::afterBroadcastBytes).
  std::uint32_t anySizeRanks = 0;
  std::uint64_t maxBroadcastBytes = 0;
  // Only at level0 on the shared-memory link (CostModel::level0SharedMemory: where the engine
  // runs blocking calls on its slots).
  bool sharedMemory = false;
  // What it is for.
  std::string_view why;

  // The whole reason, for the decision's "sequence rule: <reason>": what each condition saw in
  // this call (e.g. "after a broadcast from rank 1 of 8 B (above 2 ranks at most 16 KiB)"), then
  // `why`. The rule words its own conditions, so the selector needs no change when a rule of
  // another kind comes.
  std::string reason(const CallInfo& call) const;
};

// What a generator can serve. The selector filters on these before costing anything.
struct GeneratorSpec {
  Algorithm algorithm;
  Collective coll;
  Generator generate;
  // Every reduction combines lower ranks on the left: safe for non-commutative user ops, and
  // the same bits on every run for a given rank count.
  bool rankOrdered;
  // Handles blocks of unequal size (the V variants: ReduceScatter, AllGatherV, ScatterV,
  // GatherV).
  bool unevenBlocks;
  // Serves rank-local problems (Problem::rankLocal(): GatherV, ScatterV, AllToAllV), using only
  // what the rank knows; its schedule from localView(r) equals the one from the whole problem.
  bool rankLocal = false;
  // How the selector costs its schedule without building every rank's (rank_cost.hpp); nullptr
  // is lockstepCost. tests/algorithms/rank_cost_test.cpp checks it against the replay.
  CostFn cost = nullptr;
  // A rank's path without building its schedule (rank_cost.hpp, PathFn); lockstepCost and
  // chainCost use it where set, else they build the representative ranks' schedules.
  PathFn path = nullptr;
  // The largest scratch of any rank is an edge rank's (scratch_ranks.hpp: the first and last few
  // ranks and those next to the root), so chunk sizing builds those schedules only, not every
  // rank's. False where it is not (NHR's AllReduce and Reduce: their slice runs give the largest
  // scratch to ranks in the middle). tests/algorithms/scratch_ranks_test.cpp checks every entry
  // that sets it against every rank's scratch.
  bool edgeScratch = true;
  // A rank's scratch without building its schedule, where the entry has a formula; chunk sizing
  // asks it (through Plan::scratchOf) of every rank it would otherwise build.
  // tests/algorithms/scratch_formula_test.cpp holds every entry that sets it to scratchCount() of
  // the schedule, rank by rank.
  ScratchFn scratch = nullptr;
  // Chosen by what came before the call rather than by cost (SequenceRule), or nullptr.
  const SequenceRule* rule = nullptr;
};

std::span<const GeneratorSpec> generatorSpecs();
const GeneratorSpec* findGenerator(Algorithm a, Collective c);
// The generator of `a` for `c`, to run as a phase of `of` (a composition, named in errors).
// Throws std::invalid_argument naming the algorithm and the collective when there is none, or when
// `unevenBlocks` are asked of one that needs equal blocks.
Generator phaseGenerator(Algorithm a, Collective c, std::string_view of, bool unevenBlocks = false);

// Every rank's schedule for the problem, honouring the write contract (write_contract.hpp).
Schedule buildSchedule(Generator g, const Problem& pb);

}  // namespace hccl::algo
