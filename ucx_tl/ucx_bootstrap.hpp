// The collective step of set-up: every rank publishes its worker addresses (or why it has none)
// through the caller's equal-size all-gather, with a size exchange first since addresses differ
// in length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ucx_tl/ucx_liveness.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::tl::ucx {

struct RankRecord {
  std::string error;            // non-empty: this rank's UCX set-up failed, and why
  std::vector<std::byte> hccs;  // worker address of each class; empty when the rank has no
  std::vector<std::byte> roce;  // worker of that class
  ProcessId process;            // for the liveness of same-server links
};

// Identifies the group layout every rank must agree on (server map, intraRoce).
std::uint64_t layoutFingerprint(std::span<const int> serverOf, bool intraRoce);

// Returns every rank's record, indexed by rank. Throws UcxError, on every rank alike, when a rank
// failed (naming it and its reason), when ranks disagree on the layout, or when the all-gather
// misplaces records.
std::vector<RankRecord> exchangeRecords(const AllGather& allGather, int rank, int size,
                                        std::uint64_t fingerprint, const RankRecord& mine);

}  // namespace hccl::tl::ucx
