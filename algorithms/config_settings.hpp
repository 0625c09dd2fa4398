// Layered configuration with provenance.
//
// Every setting is looked up, in precedence order, as a communicator info key, an MCA parameter, an
// environment variable, and finally its default; the first layer that has a non-blank value wins,
// and the result remembers which layer that was, so hccl_info and verbose logs can print
// "value (source)". An invalid value at the winning layer is an error that names its source; it
// is never skipped in favour of a lower layer.
//
// Lookups are injected: the engine passes the communicator's info keys, the MCA parameters the
// user actually set, and environmentLookup(); tests pass maps. A blank value (empty or only
// spaces) counts as not set at that layer, as HCCL treats an empty environment variable.
//
// The MCA lookup must answer only for parameters whose value did not come from their registered
// default (mca_base_var source != MCA_BASE_VAR_SOURCE_DEFAULT); otherwise an MCA default would
// hide the environment variable below it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/config_algo.hpp"
#include "algorithms/config_result.hpp"
#include "algorithms/config_values.hpp"

namespace hccl::algo {

enum class Layer : std::uint8_t { InfoKey, Mca, Env, Default };

struct Provenance {
  Layer layer = Layer::Default;
  std::string key;  // the info key, MCA parameter or environment variable; empty for Default

  // "info key hccl_algo", "MCA coll_hccl_algorithm", "env HCCL_ALGO" or "default".
  std::string str() const;
  bool operator==(const Provenance&) const = default;
};

template <typename T>
struct Sourced {
  T value{};
  Provenance from;
};

// Where one setting is read at each layer; an empty name means the setting has no such layer.
struct SettingKeys {
  std::string_view name;  // short name for listings: "algo", "buffsize", ...
  std::string_view infoKey;
  std::string_view mcaParam;  // full name, with the coll_hccl_ prefix
  std::string_view envVar;
};

inline constexpr SettingKeys kAlgoKeys{"algo", "hccl_algo", "coll_hccl_algorithm", "HCCL_ALGO"};
inline constexpr SettingKeys kBuffSizeKeys{"buffsize", "hccl_buffsize", "coll_hccl_buffsize_mb",
                                           "HCCL_BUFFSIZE"};
inline constexpr SettingKeys kDeterministicKeys{"deterministic", "hccl_deterministic",
                                                "coll_hccl_deterministic", "HCCL_DETERMINISTIC"};
// Not HCCL settings, so their environment variables carry this component's own prefix.
inline constexpr SettingKeys kSelectionKeys{"selection", "hccl_selection", "coll_hccl_selection",
                                            "COLL_HCCL_SELECTION"};
inline constexpr SettingKeys kTuningFileKeys{"tuning_file", "hccl_tuning_file",
                                             "coll_hccl_tuning_file", "COLL_HCCL_TUNING_FILE"};

// Every setting Settings resolves, in listing order (the adapter registers MCA parameters and
// reads info keys from it).
std::span<const SettingKeys> settingKeys();

// Returns the value of a key at one layer, nullopt when it is not set there.
using Lookup = std::function<std::optional<std::string>(std::string_view key)>;

// getenv. Strings are copied, so later setenv calls do not change what was returned.
Lookup environmentLookup();
Lookup mapLookup(std::map<std::string, std::string, std::less<>> values);

struct ConfigSources {
  Lookup info;  // empty: the layer is absent
  Lookup mca;
  Lookup env;  // pass environmentLookup() in production; empty keeps tests hermetic
};

struct Settings {
  Sourced<AlgoConfig> algo;
  Sourced<std::uint32_t> buffSizeMB{kDefaultBuffSizeMB, {}};
  Sourced<Determinism> deterministic{Determinism::Off, {}};
  Sourced<SelectionMode> selection{SelectionMode::Model, {}};
  Sourced<std::string> tuningFile;  // empty: the built-in defaults

  std::uint64_t buffSizeBytes() const { return buffSizeMB.value * kBytesPerMB; }
};

// Resolves every setting; the first invalid value (in settingKeys() order) is the error, with
// ConfigError::source set and the message ending in "(from <source>)".
ConfigResult<Settings> resolveSettings(const ConfigSources& sources);

// One row of an effective-configuration listing.
struct SettingLine {
  std::string_view name;
  std::string value;  // "automatic" for an HCCL_ALGO that forces nothing, "none" for no file
  Provenance from;
  std::string str() const;  // "algo = level0:NA;level1:ring (env HCCL_ALGO)"
};
std::vector<SettingLine> describe(const Settings& settings);

// Every value in one line, independent of where it came from: ranks that compare it (or a hash of
// it) find out whether they would decide alike.
std::string canonical(const Settings& settings);

}  // namespace hccl::algo
