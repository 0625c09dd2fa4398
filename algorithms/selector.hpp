// Per-level algorithm selection.
//
// For each level a communicator uses, the selector picks the algorithm that runs that level's
// phases (see phases.hpp), in this order:
//   1. forced: HCCL_ALGO (or the MCA parameter / info key carrying the same syntax) names one for
//      the op and level, and it can serve the call;
//   2. fallback: it cannot; the first algorithm of HCCL's fallback chain that can;
//   3. a size rule of the tuning file;
//   4. automatic: `model` = argmin of the alpha-beta-gamma prediction computed from each
//      candidate's schedule (ties go to the earlier algorithm: ring, H-D_R, fullmesh, NHR, ...);
//      `hccl_rules` = HCCL's documented defaults.
// "Can serve" is the capability filter: a generator for every phase collective, rank-order
// reduction when the op is not commutative or HCCL_DETERMINISTIC=strict, uneven blocks when the
// call has them.
//
// A decision depends only on the shape, the call's arguments that MPI requires to match on every
// rank (op, count, datatype, in-place-ness of the collective) and configuration that the engine
// checks is identical everywhere, so every rank decides alike without communicating.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/config_settings.hpp"
#include "algorithms/cost_model.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/phases.hpp"

namespace hccl::algo {

struct CallInfo {
  Collective coll = Collective::AllReduce;
  std::uint64_t count = 0;  // MPI count: per rank for ReduceScatter/AllGather, total otherwise
  std::size_t elemSize = 1;
  std::optional<DataType> type;  // nullopt for opaque bytes of a derived type
  std::optional<ReduceOp> op;    // nullopt: no reduction, or a user op
  bool commutative = true;
  bool inPlace = false;
  bool uneven = false;  // ReduceScatter with unequal per-rank counts

  std::uint64_t bytes() const;  // the size that selection and tables are keyed by
  std::string describe() const;
};

enum class Reason : std::uint8_t { Forced, Fallback, Rule, Model, HcclRules };
std::string_view name(Reason r);

struct LevelChoice {
  int level = 0;
  Algorithm algorithm = Algorithm::Ring;
  Reason reason = Reason::Model;
  std::string detail;    // why, in words
  double predicted = 0;  // seconds for this level's phases
};

struct Decision {
  std::vector<LevelChoice> levels;  // one per shape level, inner first
  std::string error;                // non-empty: nothing can serve the call (the engine declines)
  double predicted = 0;             // sum over levels
  // Run the single level's algorithm over every rank instead of composing levels: a rank-order
  // reduction on a layout whose servers do not hold consecutive ranks cannot be split by server.
  bool flat = false;
  // Set when level1 runs AHC (levels then name AHC or AHC_BROKE at level1 and the algorithm
  // inside the servers at level0): the algorithm among the logical same-index cards.
  std::optional<Algorithm> ahcInter;

  bool ok() const { return error.empty(); }
  // "level0 fullmesh (model: 12.1 us; ring 20.3 us), level1 H-D_R (forced by env HCCL_ALGO)"
  std::string summary() const;
};

struct Candidate {
  Algorithm algorithm;
  bool capable = false;
  std::string whyNot;    // when not capable
  double predicted = 0;  // when capable
};

class Selector {
 public:
  Selector(CommShape shape, Settings settings, CostModel model);

  const CommShape& shape() const { return shape_; }
  const Settings& settings() const { return settings_; }
  const CostModel& model() const { return model_; }

  // Cached per distinct call.
  const Decision& decide(const CallInfo& call);

  // Every algorithm considered for shape level `levelIndex`, with capability and prediction.
  std::vector<Candidate> candidates(const CallInfo& call, std::size_t levelIndex) const;

 private:
  Decision compute(const CallInfo& call) const;
  Decision perLevel(const CallInfo& call) const;
  bool needsRankOrder(const CallInfo& call) const;
  std::optional<std::size_t> levelIndex(int level) const;
  std::string pipelineWhyNot(const CallInfo& call) const;
  double pipelinePredict(const CallInfo& call) const;
  bool hcclPipelineRule(const CallInfo& call) const;
  Decision pipelineDecision(Reason why, std::string detail, double predicted) const;
  // AHC, weighed as a whole plan like pipeline: the servers it runs on (empty: not applicable),
  // why it cannot serve a call, its algorithms and prediction, and the decision naming it.
  struct AhcPlan {
    Algorithm intra = Algorithm::Ring, inter = Algorithm::Ring;
    Reason intraReason = Reason::Model;
    std::string intraNote;
    double predicted = 0;
  };
  std::vector<std::uint32_t> ahcServers() const;
  std::string ahcWhyNot(const CallInfo& call) const;
  double ahcPredict(const CallInfo& call, Algorithm intra, Algorithm inter) const;
  AhcPlan ahcPlan(const CallInfo& call) const;
  Decision ahcDecision(Algorithm named, Reason why, std::string detail, const AhcPlan& plan) const;
  std::optional<LevelChoice> chooseLevel(const CallInfo& call, std::size_t levelIndex,
                                         std::string& error) const;
  // Empty when `a` can run every phase of the level for this call; otherwise why not.
  std::string incapable(Algorithm a, const CallInfo& call, const std::vector<Phase>& phases) const;
  double predict(Algorithm a, const CallInfo& call, std::size_t levelIndex,
                 const std::vector<Phase>& phases) const;
  std::optional<Algorithm> hcclRule(const CallInfo& call, std::size_t levelIndex) const;

  CommShape shape_;
  Settings settings_;
  CostModel model_;
  using Key = std::tuple<int, std::uint64_t, std::size_t, int, int, bool, bool, bool>;
  std::map<Key, Decision> cache_;
  mutable std::unique_ptr<Selector> flat_;  // the same communicator seen as one flat group
};

}  // namespace hccl::algo
