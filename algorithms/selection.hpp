// What every plan consults when it decides: the communicator's shape, the configuration, the cost
// model, and the per-level choice that compositions of level algorithms share.
//
// The per-level choice, for each level a plan runs phases on, in this order:
//   1. forced: HCCL_ALGO (or the MCA parameter / info key carrying the same syntax) names an
//      algorithm for the op and level, and it can serve the level's phases;
//   2. fallback: it cannot; the first algorithm of HCCL's fallback chain that can;
//   3. a size rule of the tuning file;
//   3b. a sequence rule (generators.hpp's SequenceRule: the gathered Barrier right after a
//      Broadcast), where the call before this one and the level meet every condition of it;
//   4. automatic: `hccl_rules` = HCCL's documented default for the level; `model` (or a default
//      that cannot serve) = argmin of the alpha-beta-gamma prediction computed from each
//      candidate's schedule, ties going to the earlier algorithm (ring, H-D_R, fullmesh, NHR, ...).
//      Candidates are the algorithms HCCL documents for the level, or, when none of them can
//      serve the call (rank-local GatherV between servers, AllToAll between pods), all of them
//      (not for AllReduce, ReduceScatter, AllGather: those decline instead).
// "Can serve" is the capability filter: a generator for every phase collective, rank-order
// reduction when the op is not commutative or HCCL_DETERMINISTIC=strict, uneven blocks when the
// call has them. An algorithm that only a whole plan runs (pipeline, AHC) cannot serve one level.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/config_settings.hpp"
#include "algorithms/cost_model.hpp"
#include "algorithms/decision.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/phases.hpp"
#include "algorithms/rank_cost.hpp"
#include "algorithms/schedule.hpp"
#include "algorithms/write_contract.hpp"  // RankGenerator

namespace hccl::algo {

struct GeneratorSpec;

struct Candidate {
  Algorithm algorithm;
  bool capable = false;
  std::string whyNot;    // when not capable
  double predicted = 0;  // when capable
};

// Phases per shape level (phasesPerLevel() for the hierarchical orders).
using LevelPhases = std::vector<std::vector<Phase>>;

class Selection {
 public:
  Selection(CommShape shape, Settings settings, CostModel model);

  const CommShape& shape() const { return shape_; }
  const Settings& settings() const { return settings_; }
  const CostModel& model() const { return model_; }

  // Where `level` sits in shape().levels, if the communicator uses it, and its group size (1 when
  // it is not used).
  std::optional<std::size_t> levelIndex(int level) const;
  std::uint32_t groupSize(int level) const;
  bool modelSelection() const { return settings_.selection.value == SelectionMode::Model; }

  // Non-commutative ops and HCCL_DETERMINISTIC=strict need reductions in rank order; the cause,
  // for messages ("non-commutative op", "HCCL_DETERMINISTIC=strict").
  bool needsRankOrder(const CallInfo& call) const;
  std::string_view rankOrderCause(const CallInfo& call) const;

  // The algorithm HCCL_ALGO forces for the call at `level`, and where it was set ("by env
  // HCCL_ALGO").
  std::optional<Algorithm> forced(const CallInfo& call, int level) const;
  std::string forcedBy() const;
  // The tuning file's size rule for the call at `level`, and its origin ("size rule of FILE").
  std::optional<Algorithm> sizeRule(const CallInfo& call, int level) const;
  std::string sizeRuleOf() const;
  // HCCL's default (the cost model's hccl_rules rows, hccl_rules.hpp) for `level` of the call
  // whose groups have `members` ranks, answering `scope`: the algorithm, and what it is the
  // default for ("server-count groups of 4"). With `wholePlans` the answer may be a whole plan's
  // word (level1 pipeline for large messages); otherwise it is a level algorithm.
  struct Default {
    Algorithm algorithm;
    std::string why;
  };
  std::optional<Default> hcclDefault(const CallInfo& call, int level, std::uint32_t members,
                                     RuleScope scope = RuleScope::Level,
                                     bool wholePlans = false) const;

  // The per-level choice (see above) over `phases`, one list per shape level; an error decision
  // naming the level when nothing can serve one.
  Decision chooseLevels(const CallInfo& call, const LevelPhases& phases) const;
  // Every algorithm considered for shape level `levelIndex`, with capability and prediction.
  std::vector<Candidate> candidates(const CallInfo& call, std::size_t levelIndex,
                                    const std::vector<Phase>& phases) const;
  // Empty when `a` can run every phase of the level for this call; otherwise why not.
  std::string incapable(Algorithm a, const CallInfo& call, const std::vector<Phase>& phases) const;

  // The model's time for the call run by `rankSchedule` on every rank of `layout` (a plan spanning
  // levels; its transfers tagged with the levels whose links carry them): the critical path of
  // every rank's schedule replayed, or with `representatives` (planRepresentatives(), for a plan
  // whose ranks run in lockstep) the slowest of those ranks' schedules (rank_cost.hpp).
  double predict(const CallInfo& call, const Layout& layout, const RankGenerator& rankSchedule,
                 std::span<const std::uint32_t> representatives = {}) const;
  // The same on `ranks` ranks from `representatives`' paths computed without their schedules (a
  // closed form whose result is rankPath() of the schedule, pipelineRankPath()).
  double predictFromPaths(const CallInfo& call, std::uint32_t ranks, const RankPathFn& rankPath,
                          std::span<const std::uint32_t> representatives) const;

  // The same communicator seen as one flat group over its outermost level.
  Selection flattened() const;

 private:
  std::optional<LevelChoice> chooseLevel(const CallInfo& call, std::size_t levelIndex,
                                         const std::vector<Phase>& phases,
                                         std::string& error) const;
  // The generator whose sequence rule the call meets at shape level `levelIndex` (nullptr: none).
  const GeneratorSpec* sequenceRule(const CallInfo& call, std::size_t levelIndex,
                                    const std::vector<Phase>& phases) const;
  double predictLevel(Algorithm a, const CallInfo& call, std::size_t levelIndex,
                      const std::vector<Phase>& phases) const;

  CommShape shape_;
  Settings settings_;
  CostModel model_;
};

}  // namespace hccl::algo
