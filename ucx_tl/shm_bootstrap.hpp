// What each rank publishes to set up a ShmLink, and the all-gather of records of any length.
// Internal to ucx_tl (tests use it to forge records).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ucx_tl/ucx_liveness.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::tl::shm {

struct Record {
  std::string error;  // non-empty: this rank's set-up failed, and why (nothing else is sent)
  ucx::ProcessId process;
  std::vector<std::byte> address;  // UCX worker address (ranks with same-server peers)
  std::uint64_t probeAddress = 0;  // a word of this rank's memory, for the CMA check
  std::uint64_t probeValue = 0;    // what it holds
  std::uint8_t source = 0;         // SegmentSource: how the server's segment is made
  // The server's leader only: its segment.
  std::array<std::uint8_t, 16> token{};
  std::uint64_t segmentBase = 0;  // in the leader's address space
  std::uint64_t segmentBytes = 0;
  std::vector<std::byte> rkey;  // UcxPosix: the packed rkey; Memfd: the file descriptor
  // The set-up status round only: this rank's timeCopies (shm_cma.hpp; 0: not measured), and
  // whether it yields (ShmOptions::yield).
  std::uint64_t cmaNanos = 0, copyNanos = 0;
  std::uint8_t yields = 0;
};

std::vector<std::byte> encode(const Record& r);
// Throws UcxError naming the rank when the bytes are not a record.
Record decode(std::span<const std::byte> bytes, int rank);

// Every rank's blob, indexed by rank: a round with the lengths, then one with the blobs padded
// to the longest. Throws UcxError naming `what` when the caller's all-gather fails.
std::vector<std::vector<std::byte>> gatherBlobs(const AllGather& allGather, int size,
                                                std::span<const std::byte> mine, const char* what);

}  // namespace hccl::tl::shm
