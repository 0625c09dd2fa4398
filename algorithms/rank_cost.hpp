// Costing a generator's schedule without building every rank's: what the selector predicts with.
//
// The cost of a schedule is its critical path under the alpha-beta-gamma rules of metrics.hpp, as
// the whole-communicator replay computes it (criticalPath()). Replaying every rank takes time and
// memory proportional to the whole communicator (p ranks x their steps, p^2 for a ring), which at
// thousands of ranks is seconds and gigabytes per candidate. Every generator therefore names, in
// its registry entry (GeneratorSpec::cost), how to cost it:
//   lockstepCost  the default: its ranks run in lockstep (every step meets partners at the same
//                 point of their own schedules, and ranks differ at most in which blocks they
//                 carry), so the critical path is the slowest of a few representative ranks'
//                 schedules run step after step (rankPath()): rank 0, p-1, the root and its
//                 neighbours. Time and memory: one rank's schedule, five times; with the entry's
//                 `path` (PathFn: Ring's, NHR's and NB's) not even that is built, the path is
//                 summed from the rank's per-step element counts.
//   chainCost     a chain from the root (ring Broadcast and Reduce): p-1 hops, each the root's
//                 one step (alpha + n beta [+ n gamma]).
//   replayCost    the whole-group replay, for schedules whose ranks wait on each other in ways
//                 one rank cannot show (trees over ranks that are not a power of two); these are
//                 O(log p) steps per rank, so the replay is p log p. No entry uses it now: the
//                 last ones, Mesh's Broadcast (p^2 to replay, 1.7 s a decision at 2048 ranks)
//                 and its one-shot, apply the replay's rules to their block counts
//                 (meshBroadcastCost, meshOneShotBroadcastCost); a new schedule whose ranks wait
//                 on each other starts here until it has its own.
// A generator's own closed form is a function of the same type in its file (ringAllReduceCost;
// the NHR and NB AllReduce, Broadcast and Reduce costs: lockstep, or with empty blocks
// tree::phasesPath, the replay's rules applied to every rank's per-step element counts without
// building a schedule; Mesh's Reduce and Broadcast, the same rules on every rank's block count).
// tests/algorithms/rank_cost_test.cpp checks every entry against the replayed critical path for
// every p <= 256 and a spread to 1024, every collective, root and several counts, so the fast
// path cannot drift from the schedules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "algorithms/layout.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/schedule.hpp"
#include "algorithms/write_contract.hpp"

namespace hccl::algo {

struct GeneratorSpec;

// The predicted critical path of `g`'s schedule for `pb` (every rank, honouring the write
// contract as buildSchedule does).
using CostFn = Metrics (*)(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                           const CostParams& params);
// Rank `rank`'s path through g's schedule, rankPath() of withPrivateInput(pb, rank, generate), from
// the rank's per-step element counts without building the schedule (O(steps) or O(p) a rank where
// the schedule lists p blocks a rank). lockstepCost uses it when the entry has one;
// tests/algorithms/rank_path_test.cpp checks it equals rankPath() of the built schedule, to the
// last bit, for every rank.
using PathFn = Metrics (*)(const Problem& pb, std::uint32_t rank, std::size_t elemSize,
                           const CostParams& params);

Metrics lockstepCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                     const CostParams& params);
Metrics chainCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                  const CostParams& params);
Metrics replayCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                   const CostParams& params);

// The slowest of `ranks`' schedules run step after step (rankPath()), for any rank generator
// (plans spanning levels use it with their representative ranks).
Metrics slowestRank(const RankGenerator& gen, const Problem& pb,
                    std::span<const std::uint32_t> ranks, std::size_t elemSize,
                    const CostParams& params);
// A rank's path through its schedule (rankPath() of it) without building it: a closed form
// (pipelineRankPath()).
using RankPathFn = std::function<Metrics(const Problem& pb, std::uint32_t rank,
                                         std::size_t elemSize, const CostParams& params)>;
// The slowest of `ranks`' paths by `path`; the first of equal ones, as slowestRank().
Metrics slowestRankPath(const RankPathFn& path, const Problem& pb,
                        std::span<const std::uint32_t> ranks, std::size_t elemSize,
                        const CostParams& params);
// A rank's path through steps of a flat schedule in which it sends `sent` elements to one peer,
// receives `got` from one (the same or another) and reduces `reduced`: each step added by the
// rules of metrics.hpp (addStepLoad()) as rankPath() adds the built step, nothing for a step that
// moves and reduces nothing (a pruned step). The PathFn closed forms are made of these. A step
// with the same counts as the one before (every step of a ring on equal blocks) reuses its cost:
// the same additions, so the same bits, at a few instructions a step.
class PairPath {
 public:
  PairPath(std::size_t elemSize, const CostParams& params) : elem_(elemSize), params_(params) {}
  void step(std::uint64_t sent, std::uint64_t got, std::uint64_t reduced);
  const Metrics& path() const { return path_; }

 private:
  std::size_t elem_;
  const CostParams& params_;
  Metrics path_;
  bool known_ = false;
  std::uint64_t sent_ = 0, got_ = 0, reduced_ = 0;
  Metrics delta_;  // the last step's addition (its time in delta_.time)
};

// Rank 0, p-1, the root and its neighbours (distinct, in [0, p)).
std::vector<std::uint32_t> representativeRanks(const Problem& pb);

// For a plan spanning levels (pipeline, AHC): the first, second and last rank of the first, second
// and last server, and of every server of a size no earlier server had (servers of equal size run
// alike). tests/algorithms/rank_cost_test.cpp checks the plans' cost from these against the
// replay.
std::vector<std::uint32_t> planRepresentatives(const Layout& layout);
// The same for `servers` servers of `perServer` ranks in block placement
// (Layout::servers(servers, perServer)), without building the layout.
std::vector<std::uint32_t> planRepresentatives(std::uint32_t servers, std::uint32_t perServer);

// Some block holds no element while others do (fewer elements than ranks).
bool someBlockEmpty(const Problem& pb);

// `pb`, or when some block is empty (fewer elements than ranks) the same problem with one element
// in every block: pruned transfers of empty blocks leave ranks waiting on chains that a block of
// one element shows in lockstep.
Problem withoutEmptyBlocks(const Problem& pb);

// g's cost by its entry's method.
Metrics predictedPath(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                      const CostParams& params);

}  // namespace hccl::algo
