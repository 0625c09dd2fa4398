// How the UCX transport packs a transfer's identity into UCX's 64-bit tag.
//
// Bit layout, most significant first:
//
//   63           44 43      32 31           16 15            0
//   | source rank  |  comm    |     seq      |     msg      |
//   |   20 bits    | 12 bits  |   16 bits    |   16 bits    |
//
// The source rank is in the tag because UCX matches tags per worker, not per endpoint: one worker
// receives from every peer of its link class, so a receive matches the exact sender only if the
// sender is part of the tag. Receives use a full mask: every bit must match.
//
// Wrap-around: comm, seq and msg are taken modulo 2^12, 2^16 and 2^16. Transfers whose tags are
// equal are still matched in posting order between one ordered pair of ranks (UCX keeps the order
// of one endpoint's messages), so wrapping is harmless as long as transfers that may be posted in
// different orders on the two sides differ in the kept bits:
//  - msg: a rank would have to keep 65536 messages to one peer of one collective outstanding and
//    post them out of order;
//  - seq: 65536 collectives on one communicator would have to be in flight at once;
//  - comm: two communicators whose ids are equal modulo 4096 would have to run collectives of equal
//    seq between the same pair at the same time. The engine keeps its comm ids dense (below 4096
//    live communicators per transport), which rules that out.
// The source rank never wraps: the transport refuses groups of more than 2^20 ranks.
//
// Side messages (Transport::sideSend) use comm = kSideComm, the highest comm value, which no
// communicator may use (the engine declines ids from kSideComm up); seq and msg are 0. They are
// found by probing with kSideMask (only the comm field must match), never by a posted receive.
#pragma once

#include <cstdint>

#include "ucx_tl/transport.hpp"

namespace hccl::tl::ucx {

inline constexpr unsigned kMsgBits = 16;
inline constexpr unsigned kSeqBits = 16;
inline constexpr unsigned kCommBits = 12;
inline constexpr unsigned kSrcBits = 20;
static_assert(kMsgBits + kSeqBits + kCommBits + kSrcBits == 64);

inline constexpr unsigned kMsgShift = 0;
inline constexpr unsigned kSeqShift = kMsgShift + kMsgBits;
inline constexpr unsigned kCommShift = kSeqShift + kSeqBits;
inline constexpr unsigned kSrcShift = kCommShift + kCommBits;

inline constexpr std::uint64_t kMaxRanks = std::uint64_t{1} << kSrcBits;

constexpr std::uint64_t fieldMask(unsigned bits) {
  return (std::uint64_t{1} << bits) - 1;
}

// The bits that name the sender (UCX's tag_sender_mask).
inline constexpr std::uint64_t kSenderMask = fieldMask(kSrcBits) << kSrcShift;
// Receives match every bit: exact source, comm, seq and msg.
inline constexpr std::uint64_t kFullMask = ~std::uint64_t{0};

constexpr std::uint64_t packTag(std::uint32_t src, Tag t) {
  return (std::uint64_t{src} & fieldMask(kSrcBits)) << kSrcShift |
         (std::uint64_t{t.comm} & fieldMask(kCommBits)) << kCommShift |
         (std::uint64_t{t.seq} & fieldMask(kSeqBits)) << kSeqShift |
         (std::uint64_t{t.msg} & fieldMask(kMsgBits)) << kMsgShift;
}

inline constexpr std::uint32_t kSideComm = static_cast<std::uint32_t>(fieldMask(kCommBits));
inline constexpr std::uint64_t kSideMask = fieldMask(kCommBits) << kCommShift;
constexpr std::uint64_t sideTag(std::uint32_t src) {
  return packTag(src, Tag{kSideComm, 0, 0});
}

struct UnpackedTag {
  std::uint32_t src = 0;
  Tag tag;  // each field reduced modulo its width
  bool operator==(const UnpackedTag&) const = default;
};

constexpr UnpackedTag unpackTag(std::uint64_t bits) {
  auto field = [bits](unsigned shift, unsigned width) {
    return static_cast<std::uint32_t>((bits >> shift) & fieldMask(width));
  };
  return {field(kSrcShift, kSrcBits), Tag{field(kCommShift, kCommBits), field(kSeqShift, kSeqBits),
                                          field(kMsgShift, kMsgBits)}};
}

}  // namespace hccl::tl::ucx
