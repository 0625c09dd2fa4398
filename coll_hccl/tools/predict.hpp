// hccl_info predict: what the selector's choice for each call is predicted to take on a modelled
// cluster (algorithms/simulator.hpp), beside the cost formula's figure, and a timeline to look at.
#pragma once

#include <string>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/decision.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/selector.hpp"
#include "algorithms/simulator.hpp"

namespace hccl::tools {

struct PredictOptions {
  bool sharedNic = true;    // a server's ranks share one NIC for inter-server traffic
  bool halfDuplex = false;  // the NIC's directions share its bandwidth
  std::string trace;        // write the last call's timeline here (Chrome trace-event JSON)
  bool json = false;
};

// The cluster the cost model describes: each level's alpha, beta and links, gamma for the call's
// type and op, and, when shared, one NIC per server at level1's bandwidth.
algo::ClusterModel clusterModel(const algo::CostModel& m, const algo::CallInfo& call,
                                const PredictOptions& o);

// One row per call: the decision, the formula's prediction, the simulated time with and without
// NIC sharing, and each level's busy time. Returns false if a schedule could not be simulated
// or was refused (servers not alike above 4096 ranks).
bool printPredictions(const algo::Layout& lay, algo::Selector& sel,
                      const std::vector<algo::CallInfo>& calls, const PredictOptions& o);

}  // namespace hccl::tools
