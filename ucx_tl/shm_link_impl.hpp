// ShmLink's private state, shared by its set-up (shm_link_setup.cpp) and its protocol
// (shm_link.cpp). Not part of ucx_tl's interface.
#pragma once

#include "ucx_tl/shm_link.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <sys/random.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "ucx_tl/shm_bootstrap.hpp"
#include "ucx_tl/shm_cma.hpp"
#include "ucx_tl/shm_layout.hpp"
#include "ucx_tl/shm_memfd.hpp"
#include "ucx_tl/shm_ucx.hpp"
#include "ucx_tl/ucx_liveness.hpp"

namespace hccl::tl {

namespace shm_detail {

using Clock = std::chrono::steady_clock;

// What a Block post's payload holds: this header, `segments` BlockSegments (the ranges, read
// as one block in order), then the packed rkey (UcxRma, one segment), then the writer's meta.
struct BlockDescriptor {
  std::uint64_t bytes;  // the block's length: the sum of its segments
  std::uint32_t segments;
  std::uint32_t rkeyBytes;
  std::uint32_t metaBytes;
  std::uint32_t reserved;
};
struct BlockSegment {
  std::uint64_t address;
  std::uint64_t bytes;
};
static_assert(sizeof(BlockDescriptor) % 8 == 0 && sizeof(BlockSegment) == 16);

inline std::size_t descriptorBytes(std::size_t segments, std::size_t rkeyBytes,
                                   std::size_t metaBytes) {
  return sizeof(BlockDescriptor) + segments * sizeof(BlockSegment) + rkeyBytes + metaBytes;
}

// Posts a reader may hold through take(): the window's bit mask has one bit per slot.
constexpr std::size_t kMaxSlotsPerChannel = 64;

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace shm_detail

struct ShmLink::Impl {
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  int rank = 0;
  int size = 0;
  ShmOptions options;
  std::vector<int> localRanks;
  std::vector<int> localIndexOf;          // by group rank: index on this server, or -1
  std::size_t me = 0;                     // this rank's local index
  std::vector<ucx::ProcessId> processes;  // by local index
  shm::Layout layout;
  std::unique_ptr<shm::ShmUcx> ucx;
  std::byte* base = nullptr;
  shm::MemfdSegment memfd;  // the leader's, until every peer has mapped it
  SingleCopy singleCopy = SingleCopy::None;
  std::uint64_t probe = 0;  // read by peers over CMA at set-up
  double copyRatio = 0;     // ShmLink::copyRatio

  // This rank's channels as a writer (index: reader's local index; me: broadcast) and as a
  // reader (index: writer's local index, twice: pair then broadcast).
  struct Writing {
    std::uint64_t published = 0;
    // The lowest post number every reader of the channel had released when this rank last
    // loaded their acknowledgement lines. A slot is reused only once that covers its previous
    // post, and the lines are loaded again only when it does not: a reader's acknowledgement is
    // then a store to a line its own cache holds, not a line transfer every post.
    mutable std::uint64_t knownReleased = 0;
    bool acquired = false;
    // UcxRma blocks stay registered until their post is released.
    std::vector<std::pair<std::uint64_t, shm::ShmUcx::Registration>> registered;
  };
  std::vector<Writing> writing;
  // A channel as its reader sees it: posts up to `released` are released (and acknowledged),
  // posts up to `taken` were handed out; bit i of `done` says post released + 1 + i was released
  // out of order.
  struct Reading {
    std::uint64_t released = 0;
    std::uint64_t taken = 0;
    std::uint64_t done = 0;
  };
  std::vector<Reading> readingPair, readingBroadcast;
  Reading& reading(std::size_t w, bool broadcast) {
    return (broadcast ? readingBroadcast : readingPair)[w];
  }
  const Reading& reading(std::size_t w, bool broadcast) const {
    return (broadcast ? readingBroadcast : readingPair)[w];
  }
  // Marks post `number` of channel (w, broadcast) released and acknowledges every post up to
  // the first one still held.
  void releaseNumber(std::size_t w, bool broadcast, std::uint64_t number);
  // The post `number` of a channel as its reader sees it (published: its flag reads number).
  bool postAt(std::size_t w, bool broadcast, std::uint64_t number, Post* post) const;
  std::vector<std::byte> bounce;  // stream()'s buffer

  // ---- addressing ----
  // Checked on every call, so the checks stay inline and the errors out of line.
  [[noreturn, gnu::cold, gnu::noinline]] void notLocal(int peer, const char* what) const {
    throw std::invalid_argument(
        fmt::format("ShmLink::{}: rank {} is not on rank {}'s server (the ranks there: {})", what,
                    peer, rank, fmt::join(localRanks, ", ")));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void ownChannel(const char* what, bool writer) const {
    if (writer)
      throw std::invalid_argument(fmt::format(
          "ShmLink::{}: rank {} has no channel to itself (kEveryPeer is its broadcast channel)",
          what, rank));
    throw std::invalid_argument(
        fmt::format("ShmLink::{}: rank {} reads no channel of its own", what, rank));
  }
  std::size_t localOf(int peer, const char* what) const {
    if (peer < 0 || peer >= size || localIndexOf[static_cast<std::size_t>(peer)] < 0) [[unlikely]]
      notLocal(peer, what);
    return static_cast<std::size_t>(localIndexOf[static_cast<std::size_t>(peer)]);
  }
  // A writer's channel index: the reader's local index, or `me` for kEveryPeer.
  std::size_t readerIndex(int reader, const char* what) const {
    if (reader == kEveryPeer) return me;
    const std::size_t r = localOf(reader, what);
    if (r == me) [[unlikely]]
      ownChannel(what, true);
    return r;
  }
  std::size_t writerIndex(int writer, const char* what) const {
    const std::size_t w = localOf(writer, what);
    if (w == me) [[unlikely]]
      ownChannel(what, false);
    return w;
  }
  // Where each channel's ring (w -> r, at w * localSize + r) and its acknowledgement lines start
  // in this process, filled once the segment is mapped (mapChannels): the slot protocol finds a
  // slot several times per post, and the layout's offset arithmetic (measured in callgrind at
  // np=2: ~20 instructions each, over 100 per 8 B AllReduce) is then one multiply-add.
  std::vector<std::byte*> rings;
  std::byte* acks = nullptr;
  std::size_t stride = 0;      // layout.slotStride()
  std::size_t ownedLines = 1;  // lines of a slot commit() takes ahead: kOwnedLines, or fewer
  void mapChannels() {
    const std::size_t L = layout.localSize;
    rings.assign(L * L, nullptr);
    for (std::size_t w = 0; w < L; ++w)
      for (std::size_t r = 0; r < L; ++r) rings[w * L + r] = base + layout.channelOffset(w, r);
    acks = base + layout.acksOffset();
    stride = layout.slotStride();
    ownedLines = std::min(shm::kOwnedLines, stride / shm::kLine);
  }
  std::byte* slot(std::size_t w, std::size_t r, std::uint64_t post) const {
    return rings[w * layout.localSize + r] + layout.slotIndex(post) * stride;
  }
  shm::SlotControl& control(std::size_t w, std::size_t r, std::uint64_t post) const {
    return *reinterpret_cast<shm::SlotControl*>(slot(w, r, post));
  }
  std::byte* payload(std::size_t w, std::size_t r, std::uint64_t post) const {
    return slot(w, r, post) + shm::kPayloadOffset;
  }
  shm::AckLine& ack(std::size_t reader, std::size_t writer, bool broadcast) const {
    return *reinterpret_cast<shm::AckLine*>(
        acks + ((reader * layout.localSize + writer) * 2 + (broadcast ? 1 : 0)) * shm::kLine);
  }
  // Readers of this rank's channel r (local indices).
  template <typename F>
  void forReaders(std::size_t r, F&& f) const {
    if (r != me) return f(r, false);
    for (std::size_t j = 0; j < localRanks.size(); ++j) {
      if (j != me) f(j, true);
    }
  }
  // Acknowledgements only grow, so a number once seen released stays released (and the acquire
  // load that saw it already ordered the readers' last reads before what follows).
  bool releasedBy(std::size_t r, std::uint64_t number) const {
    std::uint64_t& known = writing[r].knownReleased;
    if (known >= number) return true;
    std::uint64_t low = ~std::uint64_t{0};
    forReaders(r, [&](std::size_t j, bool broadcast) {
      low = std::min(low, ack(j, me, broadcast).released.load(std::memory_order_acquire));
    });
    known = low;
    return low >= number;
  }
  std::string channelName(std::size_t w, std::size_t r) const {
    if (w == r) return fmt::format("rank {}'s broadcast channel", localRanks[w]);
    return fmt::format("channel rank {} -> rank {}", localRanks[w], localRanks[r]);
  }

  // ---- waiting ----
  // Polls until ready(); fails after the timeout, or when one of the peers exits: peers(f)
  // calls f with each peer's local index. Nothing is allocated and the clock is not read
  // before the wait has lasted a round of spins (1024, or 16 when yielding: tens of
  // microseconds), so a wait that ends at once costs its polls alone; the timeout counts from
  // that first look at the clock, late by that round.
  template <typename Ready, typename Peers, typename What>
  Completion waitFor(const Ready& ready, const Peers& peers, const What& what) {
    Completion c;
    if (ready()) {
      c.state = Completion::State::Done;
      return c;
    }
    shm_detail::Clock::time_point start{}, nextLiveness{};
    bool clocked = false;
    const bool ucxServes = singleCopy == SingleCopy::UcxRma;
    for (unsigned spin = 1;; ++spin) {
      if (ready()) {
        c.state = Completion::State::Done;
        return c;
      }
      if (options.yield) {
        ::sched_yield();
      } else {
        shm_detail::pause();
      }
      if (ucxServes && (spin & 15) == 0) ucx->progress();
      if ((spin & (options.yield ? 15u : 1023u)) != 0) continue;
      const auto now = shm_detail::Clock::now();
      if (!clocked) {
        clocked = true;
        start = now;
        nextLiveness = now + options.liveness;
        continue;
      }
      if (options.timeout.count() > 0 && now - start > options.timeout) {
        c.state = Completion::State::Failed;
        c.fault = Fault::Timeout;
        c.error = fmt::format("{}: no progress on this link for {} ms (the transport's timeout)",
                              what(), options.timeout.count());
        return c;
      }
      if (now < nextLiveness) continue;
      nextLiveness = now + options.liveness;
      std::size_t lost = processes.size();
      peers([&](std::size_t p) {
        if (lost == processes.size() && processes[p].startTime != 0 &&
            !ucx::isRunning(processes[p]))
          lost = p;
      });
      if (lost == processes.size() || ready()) continue;  // it finished its part before it went
      c.state = Completion::State::Failed;
      c.fault = Fault::PeerLost;
      c.error = fmt::format("{}: the peer's process (pid {}) on this server has exited", what(),
                            processes[lost].pid);
      return c;
    }
  }
  // The readers of channel r, for waitFor.
  auto readersOfChannel(std::size_t r) const {
    return [this, r](const auto& f) { forReaders(r, [&](std::size_t j, bool) { f(j); }); };
  }

  void unregisterReleased(std::size_t r) {
    auto& regs = writing[r].registered;
    std::erase_if(regs, [&](auto& entry) {
      if (!releasedBy(r, entry.first)) return false;
      ucx->unregister(entry.second);
      return true;
    });
  }

  // Publishes the acquired slot of channel r: its payload's first `bytes` as post `number`.
  std::uint64_t commit(std::size_t r, std::size_t bytes, shm::PostKind kind, bool fence = false) {
    auto& w = writing[r];
    const std::uint64_t number = ++w.published;
    auto& ctl = control(me, r, number);
    ctl.bytes = static_cast<std::uint32_t>(bytes);
    ctl.kind = kind;
    ctl.revoked.store(0, std::memory_order_relaxed);
    ctl.seq.store(number, std::memory_order_release);
    if (fence) std::atomic_thread_fence(std::memory_order_seq_cst);  // ShmLink::publish
    w.acquired = false;
    // Takes the next slot's line into this core's cache now, while no one waits: a reader last
    // read it K posts ago and still holds a copy, so the next post's store would first have to
    // invalidate that copy (one cache-line transfer) before a waiting reader can fetch the line
    // (a second one). A store to a field no reader looks at once its post is released (a
    // released slot is not withdrawn), and only when this rank already knows every reader
    // released the slot's previous post: no acknowledgement line is loaded for it.
    // The same for the slot's next payload lines (shm::kOwnedLines in all): a small call's post
    // of 41-488 B of data spans two to eight lines, and every line the writer does not own
    // delays its flag's store by one more invalidation (the flag drains behind it). Lines a
    // reader never read (those of larger posts only) are still this core's: those stores hit.
    // Measured at np=2 (OSU 5.7, 4-10 alternating rounds, medians): AllReduce 64-256 B
    // 0.55-0.59 -> 0.26-0.28 us, Allgather 64-256 B 0.60-0.635 -> 0.28-0.315 us, 8-32 B and
    // 512 B unchanged. Nothing reads a released slot's payload.
    const std::uint64_t next = number + 1;
    if (next <= layout.slotsPerChannel || w.knownReleased >= next - layout.slotsPerChannel) {
      std::byte* const at = slot(me, r, next);
      reinterpret_cast<shm::SlotControl*>(at)->revoked.store(0, std::memory_order_relaxed);
      for (std::size_t l = 1; l < ownedLines; ++l)
        std::atomic_ref<std::byte>(at[l * shm::kLine])
            .store(std::byte{0}, std::memory_order_relaxed);
    }
    return number;
  }

  Completion copy(const Post& post, std::size_t offset, void* local, std::size_t bytes,
                  bool toPeer);
  void setUp(const std::vector<int>& serverOf, const AllGather& allGather);
  // Maps the leader's segment and checks it is this job's; "" or why not.
  std::string mapLeaderSegment(const std::vector<shm::Record>& records);
};

}  // namespace hccl::tl
