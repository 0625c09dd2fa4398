#include "coll_hccl/engine/settings_bridge.hpp"

#include <fmt/format.h>

#include "algorithms/config_values.hpp"

#include <charconv>
#include <map>
#include <vector>

namespace hccl::engine {
namespace {

using algo::ConfigError;
using Map = std::map<std::string, std::string, std::less<>>;

// The settings algo::Settings resolves, by adapter id.
struct Known {
  hccl_setting_id_t id;
  const algo::SettingKeys& keys;
};
const Known kKnown[] = {
    {HCCL_SETTING_ALGORITHM, algo::kAlgoKeys},
    {HCCL_SETTING_SELECTION, algo::kSelectionKeys},
    {HCCL_SETTING_BUFFSIZE_MB, algo::kBuffSizeKeys},
    {HCCL_SETTING_DETERMINISTIC, algo::kDeterministicKeys},
    {HCCL_SETTING_TUNING_FILE, algo::kTuningFileKeys},
};

const hccl_setting_layer_t* top(const hccl_setting_t& s) {
  return s.num_layers > 0 ? &s.layers[0] : nullptr;
}

// A parser's error, with where the value came from, as resolveSettings reports its own.
ConfigError fromLayer(ConfigError e, const hccl_setting_layer_t& l) {
  e.source = l.source;
  e.message += fmt::format(" (from {})", l.source);
  return e;
}

// The MPI calls the adapter takes over; an HCCL_ALGO entry for any other op configures schedules
// (hccl_info, hccl_sim) but never runs through MPI.
bool servedThroughMpi(algo::OpType op) {
  switch (algo::configuredBy(op)) {
    case algo::OpType::AllReduce:
    case algo::OpType::AllGather:
    case algo::OpType::ReduceScatter:
    case algo::OpType::Broadcast:
    case algo::OpType::Reduce:
    case algo::OpType::Scatter:
    case algo::OpType::AllToAll:
    case algo::OpType::Gather:
    case algo::OpType::Barrier:
    case algo::OpType::Scan:
    case algo::OpType::Exscan:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> notesOf(const algo::Settings& s) {
  std::vector<std::string> notes = s.algo.value.notes();
  for (int i = 0; i < algo::kNumOpKeys; ++i) {
    const auto op = static_cast<algo::OpType>(i);
    if (!s.algo.value.hasOwnEntry(op) || servedThroughMpi(op) || !algo::collective(op)) continue;
    notes.push_back(fmt::format(
        "HCCL_ALGO: the entry for op \"{}\" has no effect through MPI: coll_hccl takes over "
        "MPI_Allreduce, MPI_Allgather(v), MPI_Reduce_scatter(_block), MPI_Bcast, MPI_Reduce, "
        "MPI_Scatter, MPI_Gather, MPI_Alltoall, MPI_Barrier, MPI_Scan and MPI_Exscan only ({})",
        algo::name(op), s.algo.from.str()));
  }
  return notes;
}

}  // namespace

algo::ConfigResult<EngineOptions> optionsFromLayers(
    const hccl_setting_t (&layers)[HCCL_SETTING_COUNT]) {
  // Re-create the three lookup layers under the names algo::resolveSettings knows.
  Map info, mca, env;
  for (const Known& k : kKnown) {
    const hccl_setting_t& s = layers[k.id];
    for (int i = 0; i < s.num_layers && i < HCCL_MAX_SETTING_LAYERS; ++i) {
      const std::string_view src = s.layers[i].source;
      const std::string value = s.layers[i].value;
      if (src.starts_with("info key") && !k.keys.infoKey.empty())
        info.emplace(std::string(k.keys.infoKey), value);
      else if (src.starts_with("MCA") && !k.keys.mcaParam.empty())
        mca.emplace(std::string(k.keys.mcaParam), value);
      else if (src.starts_with("env") && !k.keys.envVar.empty())
        env.emplace(std::string(k.keys.envVar), value);
    }
  }
  auto resolved =
      algo::resolveSettings({algo::mapLookup(info), algo::mapLookup(mca), algo::mapLookup(env)});
  if (!resolved.ok()) return resolved.error();
  EngineOptions o;
  o.settings = std::move(resolved).value();

  o.notes = notesOf(o.settings);

  std::string sources;
  if (const auto* l = top(layers[HCCL_SETTING_HCCS_TLS])) {
    auto tls = algo::parseTransportList("hccs_tls", l->value);
    if (!tls.ok()) return fromLayer(tls.error(), *l);
    o.ucx.hccs.tls = tls.value();
    sources += fmt::format(" hccs_tls={} ({})", o.ucx.hccs.tls, l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_ROCE_TLS])) {
    auto tls = algo::parseTransportList("roce_tls", l->value);
    if (!tls.ok()) return fromLayer(tls.error(), *l);
    o.ucx.roce.tls = tls.value();
    sources += fmt::format(" roce_tls={} ({})", o.ucx.roce.tls, l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_INTRA_ROCE])) {
    auto on = algo::parseIntraRoce(l->value);
    if (!on.ok()) return fromLayer(on.error(), *l);
    o.ucx.intraRoce = on.value();
    sources += fmt::format(" intra_roce={} ({})", on.value() ? 1 : 0, l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_TIMEOUT])) {
    auto timeout = algo::parseTimeout(l->value);
    if (!timeout.ok()) return fromLayer(timeout.error(), *l);
    o.ucx.timeout = timeout.value();
    sources += fmt::format(" timeout={} ms ({})", o.ucx.timeout.count(), l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_VERBOSE])) {
    auto level = algo::parseVerbose(l->value);
    if (!level.ok()) return fromLayer(level.error(), *l);
    o.verbose = level.value();
  }
  if (const auto* l = top(layers[HCCL_SETTING_LEVEL0_LINK])) {
    auto link = algo::parseLevel0Link(l->value);
    if (!link.ok()) return fromLayer(link.error(), *l);
    o.level0Link = link.value();
    o.level0LinkSource = l->source;
    sources += fmt::format(" level0_link={} ({})", name(o.level0Link), l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_TRACE])) o.trace = l->value;
  if (const auto* l = top(layers[HCCL_SETTING_TRACE_EVENTS])) {
    const std::string_view v = l->value;
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n == 0)
      return ConfigError{"trace_events", std::string(v), 0,
                         fmt::format("trace_events: invalid value \"{}\" (from {}); valid: an "
                                     "integer >= 1, the records the trace keeps per process",
                                     v, l->source),
                         l->source};
    o.traceEvents = n;
  }
  if (const auto* l = top(layers[HCCL_SETTING_SHM_SLOT_BYTES])) {
    auto bytes = algo::parseShmSlotBytes(l->value);
    if (!bytes.ok()) return fromLayer(bytes.error(), *l);
    o.shmSlotBytes = static_cast<std::size_t>(bytes.value());
    sources += fmt::format(" shm_slot_bytes={} ({})", o.shmSlotBytes, l->source);
  }
  if (o.level0Link == Level0Link::Shm && o.ucx.intraRoce)
    return ConfigError{"level0_link", "shm", 0,
                       fmt::format("level0_link: \"shm\" (from {}) contradicts intra_roce=1, "
                                   "which sends same-server traffic over the RoCE class",
                                   o.level0LinkSource),
                       o.level0LinkSource};
  o.ucxSources = sources.empty() ? " defaults" : sources;
  return o;
}

std::string fingerprint(const EngineOptions& o) {
  return fmt::format("{}|level0_link={}|shm_slot_bytes={}", algo::canonical(o.settings),
                     name(o.level0Link), o.shmSlotBytes);
}

}  // namespace hccl::engine
