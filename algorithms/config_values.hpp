// The scalar settings next to HCCL_ALGO: HCCL_BUFFSIZE, HCCL_DETERMINISTIC, the selection mode and
// the tuning file. Each parser takes the value as written and returns it or a ConfigError naming
// the offending token, its 1-based position and what is valid.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "algorithms/config_result.hpp"

namespace hccl::algo {

// HCCL_BUFFSIZE: an integer number of MB, >= 1. HcclCommConfig.hcclBufferSize is a uint32_t, so
// that is the range. Each communicator holds twice this (send + receive).
inline constexpr std::uint32_t kDefaultBuffSizeMB = 200;
inline constexpr std::uint32_t kMaxBuffSizeMB = UINT32_MAX;
inline constexpr std::uint64_t kBytesPerMB = std::uint64_t{1} << 20;
// Surrounding spaces are ignored; signs, decimals, units and anything else are rejected.
ConfigResult<std::uint32_t> parseBuffSize(std::string_view value);

// HCCL_DETERMINISTIC.
enum class Determinism : std::uint8_t {
  Off,     // "false": any reduction order
  On,      // "true": same inputs and hardware give the same result
  Strict,  // "strict": same reduction order, bit for bit, on every run
};
std::string_view name(Determinism d);  // "false", "true", "strict"
// Case-insensitive false/true/strict; surrounding spaces ignored.
ConfigResult<Determinism> parseDeterministic(std::string_view value);

// How the selector chooses when HCCL_ALGO leaves a level automatic.
enum class SelectionMode : std::uint8_t {
  Model,      // "model": argmin of the alpha-beta-gamma cost model
  HcclRules,  // "hccl_rules": HCCL's documented defaults
};
std::string_view name(SelectionMode m);  // "model", "hccl_rules"
// Case-insensitive model/hccl_rules; surrounding spaces ignored.
ConfigResult<SelectionMode> parseSelectionMode(std::string_view value);

// A tuning file path, taken as written (paths may contain spaces); only a blank value is rejected.
// Whether the file exists and parses is the tuning loader's business.
ConfigResult<std::string> parseTuningFile(std::string_view value);

}  // namespace hccl::algo
