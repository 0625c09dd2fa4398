// The scalar settings next to HCCL_ALGO: HCCL_BUFFSIZE, HCCL_DETERMINISTIC, the selection mode and
// the tuning file. Each parser takes the value as written and returns it or a ConfigError naming
// the offending token, its 1-based position and what is valid.
#pragma once

#include <chrono>
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

// A byte size as the tools take it ("4096", "64K", "16MiB", "1G"): a decimal integer with an
// optional unit B, K/KiB, M/MiB or G/GiB (binary multiples, case-sensitive), surrounding spaces
// ignored; at most UINT64_MAX after the unit is applied. `setting` names the option in messages.
ConfigResult<std::uint64_t> parseByteSize(std::string_view setting, std::string_view value);

// The engine's own settings, beside the ones Settings resolves (the adapter passes them to the
// engine the same way; settings_bridge applies them).

// HCCL_EXEC_TIMEOUT / coll_hccl_timeout: how long a call may go without progress before it fails.
// A decimal number of seconds ("30", "0.5", "2e3"); "0" disables the timeout. The transport
// counts whole milliseconds, so anything between 0 and 1 ms would silently mean "never": the
// valid range is 0, or kMinTimeoutSeconds to kMaxTimeoutSeconds (rounded down to whole ms).
// Units, signs, "inf" and "nan" are rejected.
inline constexpr double kMinTimeoutSeconds = 0.001;
inline constexpr double kMaxTimeoutSeconds = 604800;  // one week; beyond that, use 0
ConfigResult<std::chrono::milliseconds> parseTimeout(std::string_view value);

// HCCL_INTRA_ROCE_ENABLE: "0" or "1" (surrounding spaces ignored).
ConfigResult<bool> parseIntraRoce(std::string_view value);

// The engine's verbosity: an integer from 0 to kMaxVerbose.
inline constexpr int kMaxVerbose = 100;
ConfigResult<int> parseVerbose(std::string_view value);

// coll_hccl_level0_link / COLL_HCCL_LEVEL0_LINK: what carries level0 (same-server) traffic.
enum class Level0Link : std::uint8_t {
  Auto,    // "auto": the shared-memory link where it can be set up, else tagged messages
  Shm,     // "shm": the shared-memory link; set-up fails without it
  Tagged,  // "tagged": UCX tagged messages over the HCCS class
};
std::string_view name(Level0Link l);  // "auto", "shm", "tagged"
// Case-insensitive auto/shm/tagged; surrounding spaces ignored.
ConfigResult<Level0Link> parseLevel0Link(std::string_view value);

// coll_hccl_shm_slot_bytes / HCCL_SHM_SLOT_BYTES: the payload of a shared-memory slot, fixed when
// MPI_COMM_WORLD sets its segment up (equal on every rank). A byte size as parseByteSize takes it
// ("16384", "16K"), a multiple of kShmSlotAlign from kMinShmSlotBytes to kMaxShmSlotBytes.
inline constexpr std::uint64_t kMinShmSlotBytes = 1024;
inline constexpr std::uint64_t kMaxShmSlotBytes = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kShmSlotAlign = 64;  // a cache line: slots start on lines
ConfigResult<std::uint64_t> parseShmSlotBytes(std::string_view value);

// A UCX transport list for one link class (coll_hccl_hccs_tls, coll_hccl_roce_tls), as UCX_TLS
// spells it: names separated by ",", optionally "^" first (all but these), a name may carry
// ":aux". Returns it with the spaces around names removed. Whether UCX knows the names is
// checked when the transport opens them. `setting` names the parameter in messages.
ConfigResult<std::string> parseTransportList(std::string_view setting, std::string_view value);

}  // namespace hccl::algo
