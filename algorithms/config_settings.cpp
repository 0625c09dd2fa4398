#include "algorithms/config_settings.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <utility>

#include "algorithms/config_text.hpp"

namespace hccl::algo {
namespace {

constexpr std::array<SettingKeys, 5> kAllKeys = {kAlgoKeys, kBuffSizeKeys, kDeterministicKeys,
                                                 kSelectionKeys, kTuningFileKeys};

struct Candidate {
  std::string value;
  Provenance from;
};

// The highest layer holding a non-blank value for `keys`, or nullopt when none does.
std::optional<Candidate> winningLayer(const SettingKeys& keys, const ConfigSources& sources) {
  const std::array<std::pair<Layer, const Lookup*>, 3> layers = {{
      {Layer::InfoKey, &sources.info},
      {Layer::Mca, &sources.mca},
      {Layer::Env, &sources.env},
  }};
  for (const auto& [layer, lookup] : layers) {
    const std::string_view key = layer == Layer::InfoKey ? keys.infoKey
                                 : layer == Layer::Mca   ? keys.mcaParam
                                                         : keys.envVar;
    if (key.empty() || !*lookup) continue;
    std::optional<std::string> value = (*lookup)(key);
    if (value && !isBlank(*value)) return Candidate{std::move(*value), {layer, std::string(key)}};
  }
  return std::nullopt;
}

// Resolves one setting into `out`; returns the error of an invalid winning value.
template <typename T, typename Parse>
std::optional<ConfigError> resolve(const SettingKeys& keys, const ConfigSources& sources,
                                   Parse parse, Sourced<T>& out) {
  std::optional<Candidate> candidate = winningLayer(keys, sources);
  if (!candidate) return std::nullopt;  // keep the default already in `out`
  auto parsed = parse(candidate->value);
  if (!parsed) {
    ConfigError error = parsed.error();
    error.source = candidate->from.str();
    error.message += fmt::format(" (from {})", error.source);
    return error;
  }
  out = Sourced<T>{std::move(parsed).value(), std::move(candidate->from)};
  return std::nullopt;
}

}  // namespace

std::string Provenance::str() const {
  switch (layer) {
    case Layer::InfoKey:
      return "info key " + key;
    case Layer::Mca:
      return "MCA " + key;
    case Layer::Env:
      return "env " + key;
    case Layer::Default:
      break;
  }
  return "default";
}

std::span<const SettingKeys> settingKeys() {
  return kAllKeys;
}

Lookup environmentLookup() {
  return [](std::string_view key) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(key).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Lookup mapLookup(std::map<std::string, std::string, std::less<>> values) {
  return [values = std::move(values)](std::string_view key) -> std::optional<std::string> {
    const auto it = values.find(key);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

ConfigResult<Settings> resolveSettings(const ConfigSources& sources) {
  Settings s;
  if (auto e = resolve(kAlgoKeys, sources, parseHcclAlgo, s.algo)) return *e;
  if (auto e = resolve(kBuffSizeKeys, sources, parseBuffSize, s.buffSizeMB)) return *e;
  if (auto e = resolve(kDeterministicKeys, sources, parseDeterministic, s.deterministic)) return *e;
  if (auto e = resolve(kSelectionKeys, sources, parseSelectionMode, s.selection)) return *e;
  if (auto e = resolve(kTuningFileKeys, sources, parseTuningFile, s.tuningFile)) return *e;
  return s;
}

std::string SettingLine::str() const {
  return fmt::format("{} = {} ({})", name, value, from.str());
}

std::vector<SettingLine> describe(const Settings& s) {
  const std::string algo = s.algo.value.form() == AlgoConfig::Form::Automatic
                               ? std::string("automatic")
                               : s.algo.value.str();
  const std::string file = s.tuningFile.value.empty() ? std::string("none") : s.tuningFile.value;
  return {
      {kAlgoKeys.name, algo, s.algo.from},
      {kBuffSizeKeys.name, fmt::format("{} MB", s.buffSizeMB.value), s.buffSizeMB.from},
      {kDeterministicKeys.name, std::string(name(s.deterministic.value)), s.deterministic.from},
      {kSelectionKeys.name, std::string(name(s.selection.value)), s.selection.from},
      {kTuningFileKeys.name, file, s.tuningFile.from},
  };
}

std::string canonical(const Settings& s) {
  return fmt::format("algo={}|buffsize={}|deterministic={}|selection={}|tuning_file={}",
                     s.algo.value.str(), s.buffSizeMB.value, name(s.deterministic.value),
                     name(s.selection.value), s.tuningFile.value);
}

}  // namespace hccl::algo
