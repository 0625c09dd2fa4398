// The layout of a server's shared segment (see shm_link.hpp): where each channel's slots and each
// reader's acknowledgements live. Pure arithmetic, internal to ucx_tl.
//
//   header                                   one cache line: magic, version, job token, shape
//   members                                  the process of each rank, as the leader received
//                                            it in the bootstrap (lines rounded up)
//   channel (w -> r), w, r local indices,    slotsPerChannel slots, each a 16-byte control word
//     r = w meaning "every other rank"       (sequence flag, length, kind) and slotBytes of payload
//                                            right behind it, in the same first line
//   acknowledgement lines of reader r        one cache line per (writer, pair/broadcast): the last
//                                            post of that channel r has released
//
// Every line has exactly one writer: a channel's slots belong to its writer, an acknowledgement
// line to its reader. Nothing shares a cache line with another writer's data.
//
// Why the payload starts in the flag's line: a reader spins on the flag, and once it reads the
// post's number it loads the payload. With flag and payload on separate lines that is two cache
// line transfers from the writer's core one after the other (the payload load waits for the
// flag's acquire), and the writer's two lines two ownership requests before the flag's store
// drains. A post of up to kInlineBytes (a small call's header and data: 8 B of call header and
// 40 B of data) now moves as one line: one transfer, the latency of a small collective.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hccl::tl::shm {

inline constexpr std::size_t kLine = 64;
inline constexpr std::uint64_t kMagic = 0x314d48534c434348ull;  // "HCCLSHM1"
inline constexpr std::uint32_t kVersion = 3;

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "slot flags are atomics shared between processes: they must be lock-free");

enum class PostKind : std::uint16_t { Inline = 1, Block = 2 };

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

// A slot's control word, at the start of the slot's first line, the payload right behind it. The
// writer fills the payload, length and kind, then stores `seq` (the post's number) with release;
// a reader that loads the number with acquire sees the rest. A block's writer may withdraw it
// (revoked, set with release) before the post is released: a reader checks it after copying, so
// a copy that ends after the withdrawal fails instead of delivering whatever the buffer holds by
// then.
struct alignas(16) SlotControl {
  std::atomic<std::uint64_t> seq;
  std::uint32_t bytes;  // <= Layout::slotBytes (set-up caps it at kMaxSlotBytes)
  PostKind kind;
  std::atomic<std::uint16_t> revoked;
};
static_assert(std::atomic<std::uint16_t>::is_always_lock_free);

// The payload's offset in its slot (16-byte aligned), and the bytes of payload that share the
// flag's line.
inline constexpr std::size_t kPayloadOffset = sizeof(SlotControl);
inline constexpr std::size_t kInlineBytes = kLine - kPayloadOffset;
inline constexpr std::size_t kMaxSlotBytes = std::size_t{1} << 30;
// Lines of its next slot (the control word's and the payload's first ones) a writer takes into
// its cache right after a post, while no one waits (ShmLink's commit): posts of up to
// kOwnedLines * kLine - kPayloadOffset bytes then find every line they write already owned.
inline constexpr std::size_t kOwnedLines = 8;

// A reader's acknowledgement of one channel: the number of the last post it released.
struct alignas(kLine) AckLine {
  std::atomic<std::uint64_t> released;
};

static_assert(sizeof(Header) == kLine && sizeof(SlotControl) == 16 && sizeof(AckLine) == kLine);

struct Layout {
  std::size_t localSize = 1;
  std::size_t slotsPerChannel = 1;
  std::size_t slotBytes = kLine;  // a multiple of kLine

  // The control word and slotBytes of payload, rounded up to whole lines (slotBytes is a
  // multiple of kLine): slots never share a line.
  std::size_t slotStride() const { return kLine + slotBytes; }
  std::size_t channelStride() const { return slotsPerChannel * slotStride(); }
  std::size_t membersOffset() const { return kLine; }
  std::size_t channelsOffset() const {
    return kLine + (localSize * sizeof(Member) + kLine - 1) / kLine * kLine;
  }
  // Channel (w -> r) for r != w; (w -> w) is w's broadcast channel.
  std::size_t channelOffset(std::size_t writer, std::size_t reader) const {
    return channelsOffset() + (writer * localSize + reader) * channelStride();
  }
  // Post `post`'s slot in its channel's ring. A mask where the ring is a power of two (the
  // default 4): this runs several times per post, and a 64-bit division costs tens of cycles.
  std::size_t slotIndex(std::uint64_t post) const {
    // Not std::has_single_bit: without -mpopcnt that is a libgcc call (measured 126 instructions
    // per 8 B AllReduce in callgrind).
    return (slotsPerChannel & (slotsPerChannel - 1)) == 0 ? (post - 1) & (slotsPerChannel - 1)
                                                          : (post - 1) % slotsPerChannel;
  }
  std::size_t slotOffset(std::size_t writer, std::size_t reader, std::uint64_t post) const {
    return channelOffset(writer, reader) + slotIndex(post) * slotStride();
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
