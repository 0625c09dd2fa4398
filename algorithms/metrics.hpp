// Schedule metrics, computed from the schedule itself by replaying it: the critical path's
// sequential steps (alpha count), bytes (beta volume) and reduced bytes (gamma volume), per
// hierarchy level, and its predicted time under an alpha-beta-gamma model.
//
// Timing rules of the replay (Hockney, as HCCL's cost formulas assume):
//  - a step starts when its rank posts it and every partner has posted the matching transfer;
//  - transfers of one step run concurrently; on each level the step moves the largest amount any
//    single peer-direction carries (links are full duplex, peers are reached over separate links),
//    or, when a rank can drive only `links_l` peers at full speed, its total per direction (both
//    directions' sum on a half-duplex level) divided by links_l if that is more; it costs alpha_l +
//    beta_l * bytes_l; levels overlap, so the step costs the largest of them;
//  - on a level with a memory term (the shared-memory link's memory_GBps), a step whose pushed
//    sends the executor streams from the cache of the op that computed them is credited
//    memory_l per streamed byte, at most beta_l: only one pushed send per step is streamed (one
//    per reducing op, and a Mesh rank reduces one block), the largest one above stepFrom_l
//    (smaller messages travel inline and are not pushed);
//  - on a level whose link has broadcast slots (CostParams::posts, the shared-memory link's
//    post_step_us), a post (Transfer::post: one slice to several peers, written once into the
//    writer's slot and copied out by every reader) counts once in the sender's load, not once per
//    reader; and a step whose transfers on the level are all posts adds postStep_l instead of
//    step_l when its largest message exceeds stepFrom_l (the slots' round for a post larger than
//    a slot: a descriptor every reader copies from once, no request);
//  - the step's reductions then cost gamma per byte reduced; copies are free.
// The critical path is the chain of steps that determines the last rank's finish time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm.hpp"
#include "algorithms/schedule.hpp"

namespace hccl::algo {

struct CostParams {
  std::array<double, kNumLevels> alpha{};  // seconds per step
  std::array<double, kNumLevels> beta{};   // seconds per byte
  double gamma = 0;                        // seconds per byte reduced
  // Peers a rank drives at full speed at once, per level; infinity = one link per peer, as HCCL's
  // formulas assume.
  std::array<double, kNumLevels> links{kUnlimited, kUnlimited, kUnlimited};
  static constexpr double kUnlimited = 1e300;
  // Seconds a step adds, per level, when its largest peer-direction carries more than
  // stepFrom bytes: the round a link runs for a message it does not carry inline (the
  // shared-memory link's block: descriptor, single copy, release; cost_model.hpp's step_us).
  std::array<double, kNumLevels> step{};
  std::array<std::uint64_t, kNumLevels> stepFrom{kNever, kNever, kNever};
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  // Per level, whether a rank's sends and receives share its links' bandwidth (they add up before
  // the division over `links`) instead of each direction having its own: on the shared-memory
  // link both directions are copies through one memory system (cost_model.hpp's half_duplex).
  std::array<bool, kNumLevels> halfDuplex{};
  // Per level, seconds per byte of memory traffic a pushed send streamed from the cache saves
  // (cost_model.hpp's memory_GBps, LinkParams::memory; 0: no such term).
  std::array<double, kNumLevels> memory{};
  // Per level, whether its link writes a post (Transfer::post) once for all readers, and the
  // seconds a step of posts adds above stepFrom instead of `step` (cost_model.hpp's post_step_us).
  std::array<bool, kNumLevels> posts{};
  std::array<double, kNumLevels> postStep{};

  // Gives level 0 every link parameter of `level`: a flat schedule (its transfers all on level 0)
  // costed as one level of a hierarchy. Every per-level field above is listed here.
  void levelAsFirst(std::size_t level) {
    alpha[0] = alpha[level];
    beta[0] = beta[level];
    links[0] = links[level];
    step[0] = step[level];
    stepFrom[0] = stepFrom[level];
    halfDuplex[0] = halfDuplex[level];
    memory[0] = memory[level];
    posts[0] = posts[level];
    postStep[0] = postStep[level];
  }

  // One step's time on `level` for a rank whose largest peer-direction carries `largest` bytes
  // and whose link moves `busiest` (largest, or more when the rank's links are shared).
  double linkTime(std::size_t level, std::uint64_t largest, std::uint64_t busiest) const {
    return alpha[level] + beta[level] * static_cast<double>(busiest) +
           (largest > stepFrom[level] ? step[level] : 0.0);
  }

  // Same link everywhere: alpha = 1 us, beta = 0.1 ns/B (10 GB/s), gamma = 0.1 ns/B. Used to pick
  // the critical path when only the metrics are wanted.
  static CostParams uniform(double alpha = 1e-6, double beta = 1e-10, double gamma = 1e-10);
};

struct LevelCost {
  std::uint64_t steps = 0;
  std::uint64_t bytes = 0;
  bool operator==(const LevelCost&) const = default;
};

struct Metrics {
  std::array<LevelCost, kNumLevels> level{};
  std::uint64_t reducedBytes = 0;
  double time = 0;  // predicted seconds under the parameters used

  std::uint64_t steps() const;
  std::uint64_t bytes() const;
};

Metrics criticalPath(const Schedule& s, std::size_t elemSize,
                     const CostParams& params = CostParams::uniform());

// One step's cost under the rules above (its slowest level, then its reductions), added to `path`
// (that level's step and bytes, the reduced bytes); returns the seconds it adds.
double addStep(const Step& step, std::size_t elemSize, const CostParams& params, Metrics& path);

// What the rules above read of a step: per level, its busiest peer-direction's bytes and the
// bytes per direction, and the bytes reduced. addStep() sums a step's transfers into one; a
// closed form that knows a step's loads without building it (pipeline_cost.cpp) fills it directly
// and costs it by the same rules (addStepLoad()), to the last bit.
struct StepLoad {
  std::array<std::uint64_t, kNumLevels> busiest{};
  std::array<std::array<std::uint64_t, 2>, kNumLevels> total{};  // per direction: send, recv
  std::array<bool, kNumLevels> used{};
  std::uint64_t reduced = 0;  // bytes
  // Per level, the largest pushed send (bytes to one peer): what the memory term credits.
  std::array<std::uint64_t, kNumLevels> pushed{};
  // Per level, every transfer is one of a post (Transfer::post) and the link has posts: the
  // step's round above stepFrom is postStep (total[l][0] already counts each posted slice once).
  std::array<bool, kNumLevels> postsOnly{};

  // All a step's transfers to one peer in one direction on `level`: `bytes` in all.
  void add(std::uint8_t level, Dir dir, std::uint64_t bytes);
  // A pushed send of `bytes` to one peer on `level`, also add()ed.
  void addPushed(std::uint8_t level, std::uint64_t bytes);
  bool operator==(const StepLoad&) const = default;
};
double addStepLoad(const StepLoad& load, const CostParams& params, Metrics& path);
// A step's addition alone: what addStepLoad() adds to a path, its seconds in time. Closed forms
// whose steps repeat (PairPath, pipeline_cost.cpp) build it once and add it per step by
// addStepDelta(): the same additions, so the same bits as addStepLoad() on the path.
Metrics stepDelta(const StepLoad& load, const CostParams& params);
inline void addStepDelta(const Metrics& delta, Metrics& path) {
  for (std::size_t l = 0; l < path.level.size(); ++l) {
    path.level[l].steps += delta.level[l].steps;
    path.level[l].bytes += delta.level[l].bytes;
  }
  path.reducedBytes += delta.reducedBytes;
  path.time += delta.time;
}
// One rank's steps one after the other, as if every partner were always ready: the critical path
// of a schedule whose ranks all run in lockstep, from that rank's schedule alone (rank_cost.hpp).
Metrics rankPath(const RankSchedule& rs, std::size_t elemSize, const CostParams& params);

}  // namespace hccl::algo
