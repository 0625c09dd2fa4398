#include "coll_hccl/tools/predict.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "algorithms/plan.hpp"
#include "algorithms/sim_symmetry.hpp"

namespace hccl::tools {

using namespace hccl::algo;

namespace {

// Where the servers are not alike (sim_symmetry.hpp) every rank's schedule is simulated; beyond
// this the run takes minutes and gigabytes. Symmetric calls simulate one server, to kMaxRanks.
constexpr std::uint32_t kMaxWholeRanks = 4096;
constexpr std::uint32_t kMaxRanks = 65536;

std::vector<std::uint32_t> serversOf(const Layout& lay) {
  std::vector<std::uint32_t> server(lay.ranks(), 0);
  const Layout::Groups& servers = lay.groups(0);
  for (std::uint32_t s = 0; s < servers.size(); ++s)
    for (std::uint32_t r : servers[s]) server[r] = s;
  return server;
}

struct Prediction {
  const Decision* decision = nullptr;
  std::string refused;  // why the call is not simulated
  std::size_t simulatedRanks = 0;
  SimResult shared, alone;  // with the model's NIC sharing, and with a NIC per rank
};

Prediction predict(const Layout& lay, Selector& sel, const CallInfo& call, const PredictOptions& o,
                   bool timeline) {
  Prediction out;
  out.decision = &sel.decide(call);
  if (!out.decision->ok()) return out;
  Problem pb = Problem::fromMpiCount(call.coll, lay.ranks(), call.count, call.inPlace);
  if (call.afterBroadcastFrom) pb.root = *call.afterBroadcastFrom;  // where a Barrier gathers
  // A timeline shows every rank where the whole simulation is affordable.
  const SimPlan plan =
      simPlan(lay, out.decision->plan, pb, timeline && lay.ranks() <= kMaxWholeRanks);
  out.simulatedRanks = plan.ranks.simulated.size();
  if (plan.simulatedServers > 1 && lay.ranks() > kMaxWholeRanks) {
    out.refused = fmt::format(
        "refused: {} ranks and the servers are not alike ({}), so every rank would be simulated: "
        "at most {} ranks",
        lay.ranks(), plan.why, kMaxWholeRanks);
    return out;
  }
  const ClusterModel model = clusterModel(sel.model(), call, o);
  out.shared =
      simulateRepresentatives(plan.ranks, call.elemSize, model, {.recordTimeline = timeline});
  ClusterModel alone = model;
  alone.nicBandwidth = std::numeric_limits<double>::infinity();
  out.alone = simulateRepresentatives(plan.ranks, call.elemSize, alone);
  return out;
}

}  // namespace

ClusterModel clusterModel(const CostModel& m, const CallInfo& call, const PredictOptions& o) {
  ClusterModel c;
  for (std::size_t l = 0; l < c.level.size(); ++l)
    c.level[l] = {m.level[l].alpha, m.level[l].beta,     m.level[l].links,
                  m.level[l].step,  m.level[l].stepFrom, m.level[l].halfDuplex};
  if (call.type && call.op) c.gamma = m.gamma(*call.type, *call.op);
  if (o.sharedNic && m.level[1].beta > 0) c.nicBandwidth = 1.0 / m.level[1].beta;
  c.fullDuplex = !o.halfDuplex;
  return c;
}

bool printPredictions(const Layout& lay, Selector& sel, const std::vector<CallInfo>& calls,
                      const PredictOptions& o) {
  if (lay.ranks() > kMaxRanks)
    throw std::invalid_argument(fmt::format(
        "{} ranks: predict simulates at most {} (and at most {} where every server must run)",
        lay.ranks(), kMaxRanks, kMaxWholeRanks));
  const std::vector<std::uint32_t> servers = serversOf(lay);
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json)
    fmt::print("{:<14} {:>9}  {:<32} {:>10} {:>10} {:>10}  {}\n", "collective", "bytes", "plan",
               "formula", "simulated", "own NIC", "busy per level");
  bool ok = true;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const CallInfo& call = calls[i];
    const bool last = i + 1 == calls.size();
    const Prediction p = predict(lay, sel, call, o, last && !o.trace.empty());
    const Decision& d = *p.decision;
    const std::string error = !d.ok()              ? "declined: " + d.error
                              : !p.refused.empty() ? p.refused
                                                   : p.shared.error;
    ok = ok && p.shared.error.empty() && p.refused.empty();
    std::string busy;
    for (std::size_t l = 0; l < kNumLevels; ++l)
      if (p.shared.busy[l] > 0)
        busy += fmt::format("{}L{} {}", busy.empty() ? "" : ", ", l, secondsText(p.shared.busy[l]));
    if (o.json) {
      rows.push_back({{"collective", std::string(name(call.coll))},
                      {"bytes", call.bytes()},
                      {"plan", d.ok() ? toString(d.plan) : ""},
                      {"formula_s", d.predicted},
                      {"simulated_s", p.shared.time},
                      {"own_nic_s", p.alone.time},
                      {"busy_s", p.shared.busy},
                      {"simulated_ranks", p.simulatedRanks},
                      {"error", error}});
    } else if (!error.empty()) {
      fmt::print("{:<14} {:>9}  {}\n", name(call.coll), bytesText(call.bytes()), error);
    } else {
      fmt::print("{:<14} {:>9}  {:<32} {:>10} {:>10} {:>10}  {}\n", name(call.coll),
                 bytesText(call.bytes()), toString(d.plan),
                 // rank-local counts (alltoallv) are decided without sizes: no formula time
                 call.countsRankLocal() ? "rank-local" : secondsText(d.predicted),
                 secondsText(p.shared.time), secondsText(p.alone.time), busy);
    }
    if (last && !o.trace.empty() && error.empty()) {
      std::ofstream f(o.trace);
      f << chromeTrace(
          p.shared, servers,
          fmt::format("{} {} on {}", name(call.coll), bytesText(call.bytes()), lay.describe()));
      if (!f) throw std::runtime_error(fmt::format("cannot write the trace to {}", o.trace));
    }
  }
  if (o.json) {
    fmt::print("{}\n", rows.dump(2));
  } else {
    fmt::print(
        "\nformula: the cost model's per-level prediction (what selection compares); simulated: "
        "the schedules run event by event (every rank's, or one server's where every server's "
        "timeline is alike), flows sharing links, ports and {}; own NIC: "
        "the same with a NIC per rank{}\n",
        o.sharedNic ? "each server's one NIC" : "(no NIC sharing asked)",
        o.trace.empty() ? "" : fmt::format("; timeline of the last row in {}", o.trace));
  }
  return ok;
}

}  // namespace hccl::tools
