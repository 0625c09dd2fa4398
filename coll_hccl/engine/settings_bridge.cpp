#include "coll_hccl/engine/settings_bridge.hpp"

#include <fmt/format.h>

#include <charconv>
#include <map>

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

ConfigError bad(const char* setting, const hccl_setting_layer_t& l, const std::string& valid) {
  return {setting, l.value, 0,
          fmt::format("{}: invalid value \"{}\"; expected {} (from {})", setting, l.value, valid,
                      l.source),
          l.source};
}

std::optional<ConfigError> parseSeconds(const hccl_setting_layer_t& l, tl::UcxOptions& ucx) {
  const std::string_view v = l.value;
  double seconds = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (ec != std::errc() || end != v.data() + v.size() || !(seconds >= 0) || seconds > 1e7)
    return bad("timeout", l, "a number of seconds >= 0 (0 = never)");
  ucx.timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  return std::nullopt;
}

std::optional<ConfigError> parseLevel0Link(const hccl_setting_layer_t& l, EngineOptions& o) {
  const std::string_view v = l.value;
  if (v == "auto")
    o.level0Link = Level0Link::Auto;
  else if (v == "shm")
    o.level0Link = Level0Link::Shm;
  else if (v == "tagged")
    o.level0Link = Level0Link::Tagged;
  else
    return ConfigError{"level0_link", l.value, 0,
                       fmt::format("level0_link: invalid value \"{}\"; expected auto, shm or "
                                   "tagged (from {})",
                                   l.value, l.source),
                       l.source};
  o.level0LinkSource = l.source;
  return std::nullopt;
}

}  // namespace

const char* name(Level0Link l) {
  switch (l) {
    case Level0Link::Auto:
      return "auto";
    case Level0Link::Shm:
      return "shm";
    case Level0Link::Tagged:
      return "tagged";
  }
  return "?";
}

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

  std::string sources;
  if (const auto* l = top(layers[HCCL_SETTING_HCCS_TLS])) {
    o.ucx.hccs.tls = l->value;
    sources += fmt::format(" hccs_tls={} ({})", l->value, l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_ROCE_TLS])) {
    o.ucx.roce.tls = l->value;
    sources += fmt::format(" roce_tls={} ({})", l->value, l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_INTRA_ROCE])) {
    const std::string_view v = l->value;
    if (v != "0" && v != "1") return bad("intra_roce", *l, "0 or 1");
    o.ucx.intraRoce = v == "1";
    sources += fmt::format(" intra_roce={} ({})", v, l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_TIMEOUT])) {
    if (auto e = parseSeconds(*l, o.ucx)) return *e;
    sources += fmt::format(" timeout={}s ({})", l->value, l->source);
  }
  if (const auto* l = top(layers[HCCL_SETTING_VERBOSE])) {
    const std::string_view v = l->value;
    int level = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), level);
    if (ec != std::errc() || end != v.data() + v.size() || level < 0)
      return bad("verbose", *l, "an integer >= 0");
    o.verbose = level;
  }
  if (const auto* l = top(layers[HCCL_SETTING_LEVEL0_LINK])) {
    if (auto e = parseLevel0Link(*l, o)) return *e;
    sources += fmt::format(" level0_link={} ({})", name(o.level0Link), l->source);
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
  return fmt::format("{}|level0_link={}", algo::canonical(o.settings), name(o.level0Link));
}

}  // namespace hccl::engine
