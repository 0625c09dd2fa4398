// hccl_info: what coll_hccl knows and would do, without running MPI.
//
//   hccl_info algorithms                 every algorithm, what it serves and where
//   hccl_info config                     the effective configuration and where each value came from
//   hccl_info table --shape "4x8"        the decision table for a layout (or --rank-table FILE)
//   hccl_info predict --shape "4x8"      each decision simulated on the modelled cluster, with a
//                                        timeline (--trace FILE, Chrome trace-event JSON)
//   hccl_info tuning [--tuning FILE]     the cost model and HCCL's default rules as a tuning
//                                        document
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include "algorithms/catalog.hpp"
#include "algorithms/config_settings.hpp"
#include "algorithms/config_values.hpp"
#include "algorithms/cost_model.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/scratch_ranks.hpp"
#include "algorithms/selector.hpp"
#include "coll_hccl/engine/hierarchy_layout.hpp"
#include "coll_hccl/tools/predict.hpp"
#include "coll_hccl/tools/size_option.hpp"
#include "topology/emulation.hpp"
#include "topology/error.hpp"
#include "topology/rank_table.hpp"

namespace {

using namespace hccl;
using namespace hccl::algo;

// KEY=VALUE options collected into a lookup layer.
std::map<std::string, std::string, std::less<>> pairs(const std::vector<std::string>& kv,
                                                      const char* what) {
  std::map<std::string, std::string, std::less<>> out;
  for (const std::string& s : kv) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw CLI::ValidationError(what, fmt::format("expected KEY=VALUE, got \"{}\"", s));
    out[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return out;
}

struct ConfigOptions {
  std::vector<std::string> mca, info;
  std::string tuning;
  std::string level0Link;  // as coll_hccl_level0_link; empty: COLL_HCCL_LEVEL0_LINK, else auto

  void add(CLI::App* app) {
    app->add_option("--mca", mca,
                    "Set an MCA parameter as mpirun --mca would, e.g. "
                    "coll_hccl_algorithm=level0:NA;level1:ring");
    app->add_option("--info", info, "Set a communicator info key, e.g. hccl_algo=level1:NHR");
    app->add_option("--tuning", tuning, "Tuning file (overrides coll_hccl_tuning_file)");
    app->add_option("--level0-link", level0Link,
                    "What carries level0, as coll_hccl_level0_link: auto or shm (the "
                    "shared-memory link's costs, as where it sets up), tagged (UCX tagged "
                    "messages); default COLL_HCCL_LEVEL0_LINK, else auto");
  }

  Settings settings() const {
    ConfigSources src;
    if (!info.empty()) src.info = mapLookup(pairs(info, "--info"));
    if (!mca.empty()) src.mca = mapLookup(pairs(mca, "--mca"));
    src.env = environmentLookup();
    auto r = resolveSettings(src);
    if (!r.ok()) throw std::runtime_error(r.error().message);
    return r.value();
  }

  // The model as loaded (defaults and tuning file), as `tuning` prints it.
  CostModel loadedModel(const Settings& s) const {
    const std::string path = !tuning.empty() ? tuning : s.tuningFile.value;
    CostModel m = defaultCostModel();
    if (!path.empty()) {
      std::vector<std::string> warnings;
      auto r = loadTuningFile(defaultCostModel(), path, warnings);
      for (const auto& w : warnings) fmt::print(stderr, "hccl_info: warning: {}\n", w);
      if (!r.ok()) throw std::runtime_error(r.error().message);
      m = std::move(r).value();
    }
    return m;
  }

  // The model decisions use: level0 priced as the link that carries it.
  CostModel model(const Settings& s) const {
    const CostModel m = loadedModel(s);
    const char* env = std::getenv("COLL_HCCL_LEVEL0_LINK");
    const std::string text = !level0Link.empty() ? level0Link : env ? env : "auto";
    auto link = parseLevel0Link(text);
    if (!link.ok()) throw std::runtime_error(link.error().message);
    return link.value() == Level0Link::Tagged ? m : m.withLevel0OnSharedMemory();
  }
};

void listAlgorithms(bool json) {
  nlohmann::json out = nlohmann::json::array();
  for (const AlgorithmInfo& ai : algorithmCatalog()) {
    std::vector<std::string> levels, colls;
    for (int l = 0; l < kNumLevels; ++l)
      if (ai.hcclLevels[static_cast<std::size_t>(l)]) levels.push_back(fmt::format("level{}", l));
    for (const GeneratorSpec& g : generatorSpecs()) {
      if (g.algorithm != ai.id) continue;
      std::string c(name(g.coll));
      if (reduces(g.coll)) c += g.rankOrdered ? " (rank order)" : "";
      colls.push_back(c);
    }
    if (const Plan* whole = planOwning(ai.id)) {  // a whole plan serves what it lists
      colls.clear();
      for (Collective c : whole->collectives()) colls.emplace_back(name(c));
    }
    if (json) {
      out.push_back({{"name", std::string(hcclName(ai.id))},
                     {"summary", std::string(ai.summary)},
                     {"hccl_levels", levels},
                     {"collectives", colls}});
      continue;
    }
    fmt::print("{:<10} {}\n", hcclName(ai.id), ai.summary);
    fmt::print("{:<10}   HCCL levels: {}; collectives: {}\n", "",
               levels.empty() ? "-" : fmt::format("{}", fmt::join(levels, ", ")),
               colls.empty() ? "none yet" : fmt::format("{}", fmt::join(colls, ", ")));
  }
  if (json) fmt::print("{}\n", out.dump(2));
}

void printConfig(const ConfigOptions& co) {
  const Settings s = co.settings();
  for (const SettingLine& line : describe(s)) fmt::print("{}\n", line.str());
  for (const std::string& note : s.algo.value.notes()) fmt::print("  note: {}\n", note);
  const CostModel m = co.model(s);
  fmt::print("cost model = {}\n", m.source);
}

topo::Hierarchy hierarchyFrom(const std::string& shape, const std::string& rankTable) {
  if (!rankTable.empty()) return topo::hierarchyFromRankTable(topo::loadRankTable(rankTable, {}));
  return topo::Hierarchy::fromSpec(topo::parseEmulationSpec(shape));
}

struct TableOptions {
  std::string shape, rankTable, collectives = "allreduce,reducescatter,allgather", dtype = "fp32",
                                op = "sum", minSize = "4", maxSize = "64M";
  unsigned factor = 4;
  std::uint32_t timingRank = 0;
  // The previous call was a Broadcast from this root (-1: not): what a Barrier's sequence rule
  // reads (CallInfo::afterBroadcastFrom).
  int afterBcast = -1;
  bool why = false, json = false, timing = false, distinct = false;
};

// The calls of a table: every collective of --coll at every size from --min to --max.
std::vector<CallInfo> callsOf(const TableOptions& to) {
  const auto type = parseDataType(to.dtype);
  if (!type) throw CLI::ValidationError("--dtype", "unknown datatype \"" + to.dtype + "\"");
  const auto op = parseReduceOp(to.op);
  if (!op) throw CLI::ValidationError("--op", "unknown op \"" + to.op + "\"");
  const std::uint64_t lo = tools::parseSizeOption(to.minSize),
                      hi = tools::parseSizeOption(to.maxSize);
  std::vector<CallInfo> calls;
  std::string_view rest = to.collectives;
  while (!rest.empty()) {
    const std::string_view part = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(rest.size(), part.size() + 1));
    const auto c = parseCollective(part);
    if (!c) throw CLI::ValidationError("--coll", fmt::format("unknown collective \"{}\"", part));
    for (std::uint64_t b = lo; b <= hi; b *= to.factor) {
      CallInfo call;
      call.coll = *c;
      call.elemSize = sizeOf(*type);
      call.count = std::max<std::uint64_t>(1, b / call.elemSize);
      call.type = *type;
      if (reduces(*c)) call.op = *op;
      if (*c == Collective::Barrier && to.afterBcast >= 0)
        call.afterBroadcastFrom = static_cast<std::uint32_t>(to.afterBcast);
      calls.push_back(call);
    }
  }
  return calls;
}

// --distinct: every rank's block a different size, the call's total kept (count x p): rank i
// holds 2 x count x (i+1) / (p+1) elements (distinct while count >= (p+1)/2), spread over every
// chunk boundary, so a chunked call has as many runs of equal chunks as a V form can.
Blocks distinctBlocks(std::uint64_t count, std::uint32_t p) {
  std::vector<std::uint64_t> counts(p);
  for (std::uint32_t i = 0; i < p; ++i) counts[i] = 2 * count * (i + 1) / (std::uint64_t{p} + 1);
  return Blocks::of(counts);
}

void printTable(const ConfigOptions& co, const TableOptions& to) {
  const topo::Hierarchy h = hierarchyFrom(to.shape, to.rankTable);
  const Layout lay = engine::layoutOf(h);
  const Settings settings = co.settings();
  Selector sel(lay.shape(), settings, co.model(settings));
  const std::vector<CallInfo> calls = callsOf(to);
  if (to.afterBcast >= 0 && static_cast<std::uint32_t>(to.afterBcast) >= lay.ranks())
    throw CLI::ValidationError(
        "--after-bcast", fmt::format("rank {} outside the {} ranks", to.afterBcast, lay.ranks()));

  nlohmann::json rows = nlohmann::json::array();
  const CommShape& shape = sel.shape();
  if (!to.json) {
    fmt::print("Decision table for {} ({})\n", h.describe(), shape.describe());
    for (const SettingLine& line : describe(settings)) fmt::print("  {}\n", line.str());
    fmt::print("  cost model = {}\n", sel.model().source);
    if (to.afterBcast >= 0)
      fmt::print("  previous call = a broadcast from rank {} (--after-bcast: barrier rows)\n",
                 to.afterBcast);
    fmt::print("\n{:<14} {:>9}", "collective", "bytes");
    for (const LevelGroup& g : shape.levels)
      fmt::print("  {:<16}", fmt::format("level{} ({})", g.level, g.size));
    fmt::print("  {:>10}\n", "predicted");
  }
  // --timing: each call is new to the selector, so each decide() is a first decision. Wall
  // time as a caller sees it, and this thread's CPU time, which other processes' load on a shared
  // machine does not inflate. The first call also sizes the chunks and builds the rank's chunk
  // schedules (Communicator::planFor): timed as CPU, from the same functions.
  double totalMs = 0, slowestMs = 0, totalCpuMs = 0, slowestCpuMs = 0, totalCallMs = 0,
         slowestCallMs = 0;
  std::string slowest, slowestCpu, slowestCall;
  const auto cpuMs = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
  };
  // Minor page faults of this thread: first touches of fresh memory, which cost ~12 us each on the
  // 2-core development VM and were most of a 4096-rank schedule's CPU time.
  const auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return static_cast<long>(u.ru_minflt);
  };
  const std::uint32_t timedRank = std::min(to.timingRank, shape.ranks - 1);
  // Chunk sizing, the cut and the planned runs' schedules, as planFor does them; CPU ms of each.
  const auto firstCall = [&](const CallInfo& call, const Decision& d) {
    Problem pb = Problem::fromMpiCount(call.coll, shape.ranks, call.count, false);
    if (call.uneven) pb.blocks = distinctBlocks(call.count, shape.ranks);
    if (call.afterBroadcastFrom) pb.root = *call.afterBroadcastFrom;  // where it gathers
    if (pb.rankLocal() || call.countsRankLocal()) pb = pb.localView(timedRank);
    const long f0 = faults();
    const double c0 = cpuMs();
    const std::uint64_t budget =
        std::max<std::uint64_t>(1, settings.buffSizeBytes() / call.elemSize);
    const std::uint64_t chunk = engineChunkSize(lay, d.plan, pb, false, budget);
    const double c1 = cpuMs();
    const long f1 = faults();
    const ChunkPlan chunks(pb, timedRank, chunk);
    const double c2 = cpuMs();
    const long f2 = faults();
    const RankGenerator gen = composedGenerator(lay, d.plan);
    // The runs the engine's plan builds (the others' schedules are made as the call reaches them).
    const std::size_t planned = std::min(chunks.runs(), kRunsPlanned);
    for (std::size_t run = 0; run < planned; ++run) (void)gen(chunks.runProblem(run), timedRank);
    const double c3 = cpuMs();
    return std::array<double, 8>{c1 - c0,
                                 c2 - c1,
                                 c3 - c2,
                                 double(planned),
                                 double(chunks.size()),
                                 double(chunk),
                                 double(f1 - f0),
                                 double(faults() - f2)};
  };
  const auto row = [&](CallInfo call) {
    const Collective c = call.coll;
    // As the engine describes a V form whose counts differ (setPerRankCounts).
    if (to.distinct && (c == Collective::AllGather || c == Collective::ReduceScatter))
      call.uneven = true;
    const long f0 = faults();
    const double c0 = cpuMs();
    const auto t0 = std::chrono::steady_clock::now();
    const Decision& d = sel.decide(call);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double cms = cpuMs() - c0;
    const long decisionFaults = faults() - f0;
    totalMs += ms;
    totalCpuMs += cms;
    if (ms >= slowestMs) {
      slowestMs = ms;
      slowest = fmt::format("{} {}", name(c), bytesText(call.bytes()));
    }
    if (cms >= slowestCpuMs) {
      slowestCpuMs = cms;
      slowestCpu = fmt::format("{} {}", name(c), bytesText(call.bytes()));
    }
    if (to.timing && d.ok()) {
      const auto [chunkMs, cutMs, schedMs, schedules, chunks, chunkElems, chunkFaults,
                  schedFaults] = firstCall(call, d);
      const double all = cms + chunkMs + cutMs + schedMs;
      totalCallMs += all;
      if (all >= slowestCallMs) {
        slowestCallMs = all;
        slowestCall = fmt::format("{} {}", name(c), bytesText(call.bytes()));
      }
      fmt::print(stderr,
                 "timing {} {}: CPU ms: decision {:.3f}, chunk sizing {:.3f}, {} chunk(s) cut "
                 "{:.3f}, rank {}'s {} schedule(s) {:.3f}, first call {:.3f} (chunk {} "
                 "elements); page faults: decision {}, chunk sizing {}, schedule(s) {}\n",
                 name(c), bytesText(call.bytes()), cms, chunkMs, chunks, cutMs, timedRank,
                 schedules, schedMs, all, chunkElems, decisionFaults, chunkFaults, schedFaults);
    }
    if (to.json) {
      nlohmann::json levels = nlohmann::json::array();
      for (const LevelChoice& lc : d.levels)
        levels.push_back({{"level", lc.level},
                          {"algorithm", std::string(hcclName(lc.algorithm))},
                          {"reason", std::string(name(lc.reason))},
                          {"detail", lc.detail},
                          {"predicted_s", lc.predicted}});
      rows.push_back(
          {{"collective", std::string(name(c))},
           {"bytes", call.bytes()},
           {"after_broadcast_from",
            call.afterBroadcastFrom ? nlohmann::json(*call.afterBroadcastFrom) : nlohmann::json()},
           {"levels", levels},
           {"error", d.error},
           {"predicted_s", d.predicted},
           {"priced", !call.countsRankLocal()},
           {"summary", d.ok() ? d.summary() : d.error}});
      return;
    }
    fmt::print("{:<14} {:>9}", name(c), bytesText(call.bytes()));
    if (!d.ok()) {
      fmt::print("  declined: {}\n", d.error);
      return;
    }
    // One column per level of the shape, each choice under its own level: a flat decision (one
    // choice over every rank, at the outermost level) leaves the inner columns "-".
    for (const LevelGroup& g : shape.levels) {
      const auto lc = std::find_if(d.levels.begin(), d.levels.end(),
                                   [&](const LevelChoice& x) { return x.level == g.level; });
      if (lc == d.levels.end()) {
        fmt::print("  {:<16}", "-");
        continue;
      }
      const char* mark = lc->reason == Reason::Forced     ? "*"
                         : lc->reason == Reason::Fallback ? "!"
                         : lc->reason == Reason::Sequence ? "+"
                                                          : "";
      fmt::print("  {:<16}", fmt::format("{}{}", hcclName(lc->algorithm), mark));
    }
    // rank-local counts (alltoallv) are decided without sizes: no time to print
    fmt::print("  {:>10}\n", call.countsRankLocal() ? "rank-local" : secondsText(d.predicted));
    if (to.why) fmt::print("{:>25}{}\n", "", d.summary());
  };
  for (std::size_t i = 0; i < calls.size(); ++i) {
    row(calls[i]);
    if (!to.json && (i + 1 == calls.size() || calls[i + 1].coll != calls[i].coll)) fmt::print("\n");
  }
  if (to.json)
    fmt::print("{}\n", rows.dump(2));
  else
    fmt::print(
        "* forced by configuration, ! fallback from a forced algorithm that cannot serve,\n"
        "+ a sequence rule's, chosen by the call before (--after-bcast),\n"
        "- no algorithm of its own at this level (flat: one algorithm over every rank, at the "
        "outermost level)\n");
  // The path, not an algorithm: on one server the engine runs a blocking call on the
  // shared-memory slots when every step sends one slice to every peer (any two-rank schedule,
  // Mesh one-shot, AllGather, Bcast), and from stream_from_bytes streams its posts there.
  const std::optional<LinkParams>& shm = sel.model().sharedMemory;
  if (!to.json && shm && shm->streamFrom > 0 && shape.levels.size() == 1)
    fmt::print(
        "on the shared-memory slots (blocking calls whose every step sends one slice to every "
        "peer), posts from {} (stream_from_bytes) stream through them instead of the executor's "
        "single copy{}\n",
        bytesText(shm->streamFrom),
        shm->fastSingleCopy.belowRatio > 0 && shm->fastSingleCopy.streamFrom
            ? fmt::format("; from {} where the link finds its single copy at most {} times a "
                          "memcpy (fast_single_copy)",
                          bytesText(*shm->fastSingleCopy.streamFrom),
                          shm->fastSingleCopy.belowRatio)
            : std::string());
  // Why the one-shot Broadcast wins at more than two ranks: its post is not p-1 sends.
  if (!to.json && shm && shm->posts && shape.levels.size() == 1)
    fmt::print(
        "a post (one slice to several peers, written once into the slots: fullmesh_oneshot's "
        "broadcast at more than two ranks) is priced as one write and each reader's copy, its "
        "round above {} {:.1f} us (post_step_us) instead of the executor's {:.1f} us (step_us)\n",
        bytesText(shm->stepFrom), shm->postStep * 1e6, shm->step * 1e6);
  if (to.timing) {
    const double n = double(std::max<std::size_t>(1, calls.size()));
    fmt::print(stderr,
               "hccl_info: {} first decisions on {} ranks: {:.3f} ms in all, {:.3f} ms mean, "
               "slowest {:.3f} ms ({}); CPU {:.3f} ms in all, {:.3f} ms mean, slowest {:.3f} ms "
               "({})\n",
               calls.size(), shape.ranks, totalMs, totalMs / n, slowestMs, slowest, totalCpuMs,
               totalCpuMs / n, slowestCpuMs, slowestCpu);
    fmt::print(
        stderr,
        "hccl_info: first calls (decision, chunk sizing, cutting, rank {}'s schedules), CPU {:.3f} "
        "ms in all, {:.3f} ms mean, slowest {:.3f} ms ({})\n",
        timedRank, totalCallMs, totalCallMs / n, slowestCallMs, slowestCall);
  }
}

bool printPrediction(const ConfigOptions& co, const TableOptions& to,
                     const tools::PredictOptions& po) {
  const topo::Hierarchy h = hierarchyFrom(to.shape, to.rankTable);
  const Layout lay = engine::layoutOf(h);
  const Settings settings = co.settings();
  Selector sel(lay.shape(), settings, co.model(settings));
  if (!po.json)
    fmt::print("Predictions for {} ({})\n  cost model = {}\n\n", h.describe(),
               sel.shape().describe(), sel.model().source);
  return tools::printPredictions(lay, sel, callsOf(to), po);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coll_hccl information: algorithms, configuration, decisions, cost model"};
  app.require_subcommand(1);
  bool json = false;

  auto* algs = app.add_subcommand("algorithms", "List every algorithm, its collectives and levels");
  algs->add_flag("--json", json, "Machine-readable output");

  ConfigOptions co;
  auto* cfg =
      app.add_subcommand("config", "Effective configuration and where each value came from");
  co.add(cfg);

  TableOptions to;
  const auto addTableOptions = [&](CLI::App* sub) {
    co.add(sub);
    auto* src = sub->add_option_group("layout");
    src->add_option(
        "--shape", to.shape,
        "Emulation spec: \"4x8\" (servers x ranks), \"2x2x8\" (pods x servers x ranks), \"3+5\"");
    src->add_option("--rank-table", to.rankTable, "HCCL rank table file (v1.0 or v1.2)");
    src->require_option(1);
    sub->add_option("--coll", to.collectives, "Collectives, comma-separated")
        ->capture_default_str();
    sub->add_option("--dtype", to.dtype, "Datatype: fp32, fp16, bf16, int32, fp64, ...")
        ->capture_default_str();
    sub->add_option("--op", to.op, "Reduction op")->capture_default_str();
    sub->add_option("--min", to.minSize, "Smallest size (B, K, M, G)")->capture_default_str();
    sub->add_option("--max", to.maxSize, "Largest size")->capture_default_str();
    sub->add_option("--factor", to.factor, "Size step factor")
        ->capture_default_str()
        ->check(CLI::Range(2u, 1u << 20));
    sub->add_flag("--json", to.json, "Machine-readable output");
    sub->add_option("--after-bcast", to.afterBcast,
                    "Describe every barrier as right after a broadcast from this root (what the "
                    "gathered Barrier's sequence rule reads); default: after anything else")
        ->check(CLI::NonNegativeNumber);
  };
  auto* table =
      app.add_subcommand("table", "Decision table: collective x size x level -> algorithm");
  addTableOptions(table);
  table->add_flag("--why", to.why, "Explain every decision");
  table->add_flag("--timing", to.timing,
                  "Print to stderr how long the decisions took (each row is a call the selector "
                  "has not seen: a first decision), and the CPU time of each first call's chunk "
                  "sizing and schedules, with the minor page faults of each part");
  table->add_option("--timing-rank", to.timingRank, "The rank whose schedules --timing builds")
      ->capture_default_str();
  table->add_flag("--distinct", to.distinct,
                  "AllGather and ReduceScatter as their V forms with every rank's count distinct "
                  "(the same total; --timing's first call cuts and plans those counts)");

  tools::PredictOptions po;
  auto* predict =
      app.add_subcommand("predict",
                         "Each decision's schedule simulated over the modelled cluster (event by "
                         "event: every rank, or one server where all are alike)");
  addTableOptions(predict);
  predict->add_flag("!--own-nic", po.sharedNic,
                    "Give every rank its own NIC (default: a server's ranks share one)");
  predict->add_flag("--half-duplex", po.halfDuplex, "A NIC's two directions share its bandwidth");
  predict->add_option("--trace", po.trace,
                      "Write the last row's timeline here (Chrome trace-event JSON: Perfetto, "
                      "chrome://tracing)");

  auto* tuning = app.add_subcommand(
      "tuning", "Print the cost model and HCCL's default rules (hccl_rules) as a tuning document");
  co.add(tuning);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*algs) listAlgorithms(json);
    if (*cfg) printConfig(co);
    if (*table) printTable(co, to);
    if (*predict) {
      po.json = to.json;
      if (!printPrediction(co, to, po)) return 1;
    }
    if (*tuning) {
      const Settings s = co.settings();
      fmt::print("{}\n", co.loadedModel(s).toJson());
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "hccl_info: error: {}\n", e.what());
    return 2;
  }
  return 0;
}
