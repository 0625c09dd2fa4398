// The layout of a server's shared segment (see shm_link.hpp): where each channel's slots and each
// reader's acknowledgements live. Pure arithmetic, internal to ucx_tl.
//
//   header                                   one cache line: magic, version, job token, shape
//   members                                  the process of each rank, as the leader received
//                                            it in the bootstrap (lines rounded up)
//   channel (w -> r), w, r local indices,    slotsPerChannel slots, each a control line (sequence
//     r = w meaning "every other rank"       flag, length, kind) followed by slotBytes of payload
//   acknowledgement lines of reader r        one cache line per (writer, pair/broadcast): the last
//                                            post of that channel r has released
//
// Every line has exactly one writer: a channel's control lines and payloads belong to its writer,
// an acknowledgement line to its reader. Nothing shares a cache line with another writer's data.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hccl::tl::shm {

inline constexpr std::size_t kLine = 64;
inline constexpr std::uint64_t kMagic = 0x314d48534c434348ull;  // "HCCLSHM1"
inline constexpr std::uint32_t kVersion = 2;

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "slot flags are atomics shared between processes: they must be lock-free");

enum class PostKind : std::uint32_t { Inline = 1, Block = 2 };

struct alignas(kLine) Header {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t localSize;
  std::uint64_t slotsPerChannel;
  std::uint64_t slotBytes;
  std::uint8_t token[16];  // the job's: the leader draws it and publishes it in the bootstrap
  // Set (release) once the leader has written the member list.
  std::atomic<std::uint64_t> membersReady;
};

// A rank's process, as ucx::ProcessId: pid and start time.
struct Member {
  std::int64_t pid;
  std::uint64_t startTime;
};

// A slot's control line. The writer fills the payload, length and kind, then stores `seq` (the
// post's number) with release; a reader that loads the number with acquire sees the rest.
// A block's writer may withdraw it (revoked, set with release) before the post is released: a
// reader checks it after copying, so a copy that ends after the withdrawal fails instead of
// delivering whatever the buffer holds by then.
struct alignas(kLine) SlotControl {
  std::atomic<std::uint64_t> seq;
  std::uint64_t bytes;
  PostKind kind;
  std::atomic<std::uint32_t> revoked;
};

// A reader's acknowledgement of one channel: the number of the last post it released.
struct alignas(kLine) AckLine {
  std::atomic<std::uint64_t> released;
};

static_assert(sizeof(Header) == kLine && sizeof(SlotControl) == kLine && sizeof(AckLine) == kLine);

struct Layout {
  std::size_t localSize = 1;
  std::size_t slotsPerChannel = 1;
  std::size_t slotBytes = kLine;  // a multiple of kLine

  std::size_t slotStride() const { return sizeof(SlotControl) + slotBytes; }
  std::size_t channelStride() const { return slotsPerChannel * slotStride(); }
  std::size_t membersOffset() const { return kLine; }
  std::size_t channelsOffset() const {
    return kLine + (localSize * sizeof(Member) + kLine - 1) / kLine * kLine;
  }
  // Channel (w -> r) for r != w; (w -> w) is w's broadcast channel.
  std::size_t channelOffset(std::size_t writer, std::size_t reader) const {
    return channelsOffset() + (writer * localSize + reader) * channelStride();
  }
  std::size_t slotOffset(std::size_t writer, std::size_t reader, std::uint64_t post) const {
    return channelOffset(writer, reader) + ((post - 1) % slotsPerChannel) * slotStride();
  }
  std::size_t acksOffset() const {
    return channelsOffset() + localSize * localSize * channelStride();
  }
  // Reader r's acknowledgement of channel (w -> r) (broadcast: of w's broadcast channel).
  std::size_t ackOffset(std::size_t reader, std::size_t writer, bool broadcast) const {
    return acksOffset() + ((reader * localSize + writer) * 2 + (broadcast ? 1 : 0)) * kLine;
  }
  std::size_t bytes() const { return acksOffset() + localSize * localSize * 2 * kLine; }
};

}  // namespace hccl::tl::shm
