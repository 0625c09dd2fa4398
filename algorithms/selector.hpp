// Algorithm selection for a communicator: per call, the plan that serves it and the algorithm of
// every level (plan.hpp describes the order: forced, then a size rule, then the model or HCCL's
// defaults over the plan table; selection.hpp the per-level choice inside a plan).
//
// A decision depends only on the shape, the call's arguments that MPI requires to match on every
// rank (op, count, datatype, in-place-ness of the collective) and configuration that the engine
// checks is identical everywhere, so every rank decides alike without communicating.
#pragma once

#include <map>
#include <vector>

#include "algorithms/config_settings.hpp"
#include "algorithms/cost_model.hpp"
#include "algorithms/decision.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/phases.hpp"
#include "algorithms/plan.hpp"  // compose(): a rank's schedule for a decision
#include "algorithms/selection.hpp"

namespace hccl::algo {

class Selector {
 public:
  Selector(CommShape shape, Settings settings, CostModel model);

  const CommShape& shape() const { return selection_.shape(); }
  const Settings& settings() const { return selection_.settings(); }
  const CostModel& model() const { return selection_.model(); }

  // Cached per distinct call.
  const Decision& decide(const CallInfo& call);

  // Every algorithm considered for shape level `levelIndex` by the per-level plan, with
  // capability and prediction.
  std::vector<Candidate> candidates(const CallInfo& call, std::size_t levelIndex) const;

 private:
  Selection selection_;
  std::map<CallInfo, Decision> cache_;
};

}  // namespace hccl::algo
