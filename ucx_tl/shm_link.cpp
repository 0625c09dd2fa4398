// ShmLink: set-up (bootstrap, segment, single-copy mode) and the slot protocol; see shm_link.hpp.
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

const char* name(SingleCopy s) {
  switch (s) {
    case SingleCopy::Auto:
      return "auto";
    case SingleCopy::Cma:
      return "cma";
    case SingleCopy::UcxRma:
      return "ucx-rma";
    case SingleCopy::None:
      return "none";
  }
  return "?";
}

namespace {

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

std::size_t descriptorBytes(std::size_t segments, std::size_t rkeyBytes, std::size_t metaBytes) {
  return sizeof(BlockDescriptor) + segments * sizeof(BlockSegment) + rkeyBytes + metaBytes;
}

// Posts a reader may hold through take(): the window's bit mask has one bit per slot.
constexpr std::size_t kMaxSlotsPerChannel = 64;

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::array<std::uint8_t, 16> randomToken() {
  std::array<std::uint8_t, 16> t{};
  std::size_t got = 0;
  while (got < t.size()) {
    const ssize_t n = ::getrandom(t.data() + got, t.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw UcxError("shared-memory link: getrandom failed: no job token");
    got += static_cast<std::size_t>(n);
  }
  return t;
}

std::size_t roundUp(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// The file backing the mapping that holds `address`, from /proc/self/maps.
std::string mappingPath(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  while (std::getline(maps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || a < lo || a >= hi) continue;
    const auto slash = line.find('/');
    return slash == std::string::npos ? std::string() : line.substr(slash);
  }
  return {};
}

}  // namespace

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

  // This rank's channels as a writer (index: reader's local index; me: broadcast) and as a
  // reader (index: writer's local index, twice: pair then broadcast).
  struct Writing {
    std::uint64_t published = 0;
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
  shm::SlotControl& control(std::size_t w, std::size_t r, std::uint64_t post) const {
    return *reinterpret_cast<shm::SlotControl*>(base + layout.slotOffset(w, r, post));
  }
  std::byte* payload(std::size_t w, std::size_t r, std::uint64_t post) const {
    return base + layout.slotOffset(w, r, post) + sizeof(shm::SlotControl);
  }
  shm::AckLine& ack(std::size_t reader, std::size_t writer, bool broadcast) const {
    return *reinterpret_cast<shm::AckLine*>(base + layout.ackOffset(reader, writer, broadcast));
  }
  // Readers of this rank's channel r (local indices).
  template <typename F>
  void forReaders(std::size_t r, F&& f) const {
    if (r != me) return f(r, false);
    for (std::size_t j = 0; j < localRanks.size(); ++j) {
      if (j != me) f(j, true);
    }
  }
  bool releasedBy(std::size_t r, std::uint64_t number) const {
    bool all = true;
    forReaders(r, [&](std::size_t j, bool broadcast) {
      all = all && ack(j, me, broadcast).released.load(std::memory_order_acquire) >= number;
    });
    return all;
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
    Clock::time_point start{}, nextLiveness{};
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
        pause();
      }
      if (ucxServes && (spin & 15) == 0) ucx->progress();
      if ((spin & (options.yield ? 15u : 1023u)) != 0) continue;
      const auto now = Clock::now();
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
  std::uint64_t commit(std::size_t r, std::size_t bytes, shm::PostKind kind) {
    auto& w = writing[r];
    const std::uint64_t number = ++w.published;
    auto& ctl = control(me, r, number);
    ctl.bytes = bytes;
    ctl.kind = kind;
    ctl.revoked.store(0, std::memory_order_relaxed);
    ctl.seq.store(number, std::memory_order_release);
    w.acquired = false;
    return number;
  }

  Completion copy(const Post& post, std::size_t offset, void* local, std::size_t bytes,
                  bool toPeer);
  void setUp(const std::vector<int>& serverOf, const AllGather& allGather);
  // Maps the leader's segment and checks it is this job's; "" or why not.
  std::string mapLeaderSegment(const std::vector<shm::Record>& records);
};

// ---- set-up -------------------------------------------------------------------------------------

ShmLink::ShmLink(int rank, std::vector<int> serverOf, const AllGather& allGather,
                 ShmOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (serverOf.empty()) throw UcxError("ShmLink: empty group (no server map)");
  if (rank < 0 || static_cast<std::size_t>(rank) >= serverOf.size()) {
    throw UcxError(
        fmt::format("ShmLink: rank {} is out of range (0..{})", rank, serverOf.size() - 1));
  }
  if (!allGather) throw UcxError("ShmLink: no all-gather callback to bootstrap with");
  auto& s = *impl_;
  s.rank = rank;
  s.size = static_cast<int>(serverOf.size());
  s.options = options;
  s.setUp(serverOf, allGather);
}

void ShmLink::Impl::setUp(const std::vector<int>& serverOf, const AllGather& allGather) {
  localIndexOf.assign(serverOf.size(), -1);
  const int server = serverOf[static_cast<std::size_t>(rank)];
  for (std::size_t q = 0; q < serverOf.size(); ++q) {
    if (serverOf[q] != server) continue;
    localIndexOf[q] = static_cast<int>(localRanks.size());
    localRanks.push_back(static_cast<int>(q));
  }
  me = static_cast<std::size_t>(localIndexOf[static_cast<std::size_t>(rank)]);
  const std::size_t L = localRanks.size();
  const bool leader = me == 0;
  layout.localSize = L;
  layout.slotsPerChannel = options.slotsPerChannel;
  layout.slotBytes =
      roundUp(std::max<std::size_t>(options.slotBytes, descriptorBytes(1, 0, 0) + 64), shm::kLine);
  const bool viaUcx = options.segment == SegmentSource::UcxPosix;

  // Round 1: every rank's record; the leader's carries the segment.
  shm::Record mine;
  mine.process = ucx::thisProcess();
  mine.source = static_cast<std::uint8_t>(options.segment);
  try {
    if (options.slotsPerChannel == 0 || options.slotsPerChannel > kMaxSlotsPerChannel) {
      throw UcxError(fmt::format("ShmLink: slotsPerChannel {} (1 to {} slots per channel)",
                                 options.slotsPerChannel, kMaxSlotsPerChannel));
    }
    if (options.liveness.count() <= 0 || options.timeout.count() < 0) {
      throw UcxError(fmt::format(
          "ShmLink: liveness {} ms must be positive and timeout {} ms not negative (0: none)",
          options.liveness.count(), options.timeout.count()));
    }
    if (L > 1) {
      if (viaUcx || options.singleCopy == SingleCopy::UcxRma) {
        ucx = std::make_unique<shm::ShmUcx>(L);
        const auto a = ucx->address();
        mine.address.assign(a.begin(), a.end());
      }
      const auto t = randomToken();
      std::memcpy(&probe, t.data(), sizeof probe);
      probe |= 1;  // never zero
      mine.probeAddress = reinterpret_cast<std::uint64_t>(&probe);
      mine.probeValue = probe;
      if (leader) {
        if (viaUcx) {
          const auto a = ucx->allocate(layout.bytes());
          base = static_cast<std::byte*>(a.base);
          mine.rkey = a.rkey;
        } else {
          memfd = shm::createMemfd(layout.bytes());
          base = static_cast<std::byte*>(memfd.base);
          const auto* fd = reinterpret_cast<const std::byte*>(&memfd.fd);
          mine.rkey.assign(fd, fd + sizeof memfd.fd);
        }
        std::memset(base, 0, layout.bytes());
        auto& h = *reinterpret_cast<shm::Header*>(base);
        h.magic = shm::kMagic;
        h.version = shm::kVersion;
        h.localSize = static_cast<std::uint32_t>(L);
        h.slotsPerChannel = layout.slotsPerChannel;
        h.slotBytes = layout.slotBytes;
        mine.token = randomToken();
        std::memcpy(h.token, mine.token.data(), sizeof h.token);
        mine.segmentBase = reinterpret_cast<std::uint64_t>(base);
        mine.segmentBytes = layout.bytes();
      }
    }
  } catch (const UcxError& e) {
    mine = shm::Record{};
    mine.error = e.what();
  }
  const auto blobs = shm::gatherBlobs(allGather, size, shm::encode(mine), "records");
  std::vector<shm::Record> records;
  for (std::size_t q = 0; q < blobs.size(); ++q) {
    records.push_back(shm::decode(blobs[q], static_cast<int>(q)));
  }
  for (int q : localRanks) processes.push_back(records[static_cast<std::size_t>(q)].process);
  if (leader && base != nullptr) {
    // The processes this job's bootstrap named: a peer maps the segment only if it is listed.
    auto* members = reinterpret_cast<shm::Member*>(base + layout.membersOffset());
    for (std::size_t j = 0; j < L; ++j) members[j] = {processes[j].pid, processes[j].startTime};
    reinterpret_cast<shm::Header*>(base)->membersReady.store(1, std::memory_order_release);
  }

  // Locally: endpoints, the leader's segment, the CMA check of every peer.
  std::string failure;
  bool cmaWorks = true;
  if (L > 1 && mine.error.empty()) {
    for (std::size_t j = 0; j < L && failure.empty(); ++j) {
      const shm::Record& r = records[static_cast<std::size_t>(localRanks[j])];
      if (!r.error.empty()) {
        failure = fmt::format("rank {} on this server failed first", localRanks[j]);
      } else if (r.source != mine.source) {
        failure = fmt::format(
            "rank {} builds its segment another way (every rank must pass the "
            "same options)",
            localRanks[j]);
      } else if (j != me && ucx) {
        const std::string why = ucx->connect(static_cast<int>(j), r.address);
        if (!why.empty()) failure = fmt::format("to rank {}: {}", localRanks[j], why);
      }
    }
    if (failure.empty() && !leader) failure = mapLeaderSegment(records);
    for (std::size_t j = 0; j < L && failure.empty(); ++j) {
      if (j == me) continue;
      const shm::Record& r = records[static_cast<std::size_t>(localRanks[j])];
      std::uint64_t seen = 0;
      const std::string why =
          shm::cmaCopy(r.process.pid, &seen, r.probeAddress, sizeof seen, false);
      if (!why.empty() || seen != r.probeValue) cmaWorks = false;
    }
  }

  // Round 2: who failed, and whether CMA works everywhere; every rank decides alike.
  shm::Record status;
  status.error = !mine.error.empty() ? mine.error : failure;
  status.probeValue = cmaWorks ? 1 : 0;
  const auto statusBlobs = shm::gatherBlobs(allGather, size, shm::encode(status), "set-up status");
  // Every peer has mapped the segment (or failed): its file descriptor is no longer needed.
  shm::closeFd(memfd);
  std::vector<std::string> failed;
  bool serverCma = true;
  for (std::size_t q = 0; q < statusBlobs.size(); ++q) {
    const shm::Record r = shm::decode(statusBlobs[q], static_cast<int>(q));
    if (!r.error.empty()) failed.push_back(fmt::format("rank {}: {}", q, r.error));
    if (localIndexOf[q] >= 0 && r.error.empty()) serverCma = serverCma && r.probeValue == 1;
  }
  if (!failed.empty()) {
    throw UcxError(fmt::format("shared-memory link set-up failed on {} of {} ranks: {}",
                               failed.size(), size, fmt::join(failed, "; ")));
  }
  switch (options.singleCopy) {
    case SingleCopy::Auto:
      // Not UCX RMA: on UCX 1.13.1 it is software emulation, slower than sending through slots.
      singleCopy = L > 1 && serverCma ? SingleCopy::Cma : SingleCopy::None;
      break;
    case SingleCopy::Cma:
      if (L > 1 && !serverCma) {
        throw UcxError(
            "shared-memory link: single copy 'cma' requested, but the kernel refuses "
            "cross-memory attach between ranks of this server (ptrace access; "
            "/proc/sys/kernel/yama/ptrace_scope); 'auto' falls back to none");
      }
      singleCopy = SingleCopy::Cma;
      break;
    default:
      singleCopy = options.singleCopy;
      break;
  }
  writing.resize(L);
  readingPair.assign(L, {});
  readingBroadcast.assign(L, {});
}

std::string ShmLink::Impl::mapLeaderSegment(const std::vector<shm::Record>& records) {
  const int leaderRank = localRanks[0];
  const shm::Record& lead = records[static_cast<std::size_t>(leaderRank)];
  if (lead.segmentBytes != layout.bytes()) {
    return fmt::format(
        "rank {}'s segment has {} bytes where this rank's layout needs {} (every rank must "
        "pass the same options)",
        leaderRank, lead.segmentBytes, layout.bytes());
  }
  // The leader's process must still be the one that published the record (a reused pid would
  // lead to another process's descriptor).
  if (!ucx::isRunning(lead.process)) {
    return fmt::format("rank {} (pid {}), which holds the segment, has exited", leaderRank,
                       lead.process.pid);
  }
  std::string why;
  void* mapped = nullptr;
  if (options.segment == SegmentSource::UcxPosix) {
    mapped = ucx->map(0, lead.rkey, lead.segmentBase, &why);
  } else if (lead.rkey.size() == sizeof(int)) {
    int fd = -1;
    std::memcpy(&fd, lead.rkey.data(), sizeof fd);
    mapped = shm::attachMemfd(lead.process.pid, fd, layout.bytes(), &why);
  } else {
    why = "its record carries no segment";
  }
  if (mapped == nullptr) {
    return fmt::format("the segment of rank {} could not be mapped: {}", leaderRank, why);
  }
  base = static_cast<std::byte*>(mapped);
  const auto& h = *static_cast<const shm::Header*>(mapped);
  if (h.magic != shm::kMagic || h.version != shm::kVersion ||
      std::memcmp(h.token, lead.token.data(), sizeof h.token) != 0) {
    return fmt::format(
        "the segment offered by rank {} is not this job's (its header or token differs from "
        "the one rank {} published): refusing it",
        leaderRank, leaderRank);
  }
  if (h.localSize != layout.localSize || h.slotsPerChannel != layout.slotsPerChannel ||
      h.slotBytes != layout.slotBytes) {
    return fmt::format(
        "rank {}'s segment is laid out for {} ranks, {} slots of {} bytes; this rank expects {} "
        "ranks, {} slots of {} bytes (every rank must pass the same options)",
        leaderRank, h.localSize, h.slotsPerChannel, h.slotBytes, layout.localSize,
        layout.slotsPerChannel, layout.slotBytes);
  }
  // The leader lists the processes it heard from right after the first round: a segment that
  // does not list this process belongs to another job, whatever record pointed here.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (h.membersReady.load(std::memory_order_acquire) == 0) {
    if (Clock::now() > deadline || !ucx::isRunning(lead.process)) {
      return fmt::format("rank {} never listed the members of its segment", leaderRank);
    }
    ::sched_yield();
  }
  const auto& listed = reinterpret_cast<const shm::Member*>(base + layout.membersOffset())[me];
  const ucx::ProcessId self = ucx::thisProcess();
  if (listed.pid != self.pid || listed.startTime != self.startTime) {
    return fmt::format(
        "the segment offered as rank {}'s does not list this process (pid {}) as rank {}: it "
        "belongs to another job; refusing it",
        leaderRank, self.pid, rank);
  }
  return {};
}

ShmLink::~ShmLink() = default;

ShmLink::Impl::~Impl() {
  for (auto& w : writing) {
    for (auto& [number, reg] : w.registered) ucx->unregister(reg);
  }
  shm::closeFd(memfd);
  if (options.segment == SegmentSource::Memfd && base != nullptr) shm::unmap(base, layout.bytes());
  // A UCX segment goes with ucx (its rkey, or the leader's allocation).
}

// ---- queries ------------------------------------------------------------------------------------

int ShmLink::rank() const {
  return impl_->rank;
}
int ShmLink::size() const {
  return impl_->size;
}
const std::vector<int>& ShmLink::localRanks() const {
  return impl_->localRanks;
}
bool ShmLink::local(int peer) const {
  return peer >= 0 && peer < impl_->size &&
         impl_->localIndexOf[static_cast<std::size_t>(peer)] >= 0;
}
std::size_t ShmLink::slotBytes() const {
  return impl_->layout.slotBytes;
}
std::size_t ShmLink::slotsPerChannel() const {
  return impl_->layout.slotsPerChannel;
}
SingleCopy ShmLink::singleCopy() const {
  return impl_->singleCopy;
}
std::size_t ShmLink::segmentBytes() const {
  return impl_->base == nullptr ? 0 : impl_->layout.bytes();
}
void ShmLink::setYield(bool yield) {
  impl_->options.yield = yield;
}
std::string ShmLink::segmentPath() const {
  return impl_->base == nullptr ? std::string() : mappingPath(impl_->base);
}
const void* ShmLink::segmentBase() const {
  return impl_->base;
}

std::string ShmLink::describe() const {
  const auto& s = *impl_;
  if (s.base == nullptr)
    return fmt::format("shared-memory link: rank {} has no peer on its server\n", s.rank);
  return fmt::format(
      "shared-memory link: ranks {} on one segment of {} bytes ({} slots of {} bytes per "
      "channel; {}: {}), single copy: {}\n",
      fmt::join(s.localRanks, ","), s.layout.bytes(), s.layout.slotsPerChannel, s.layout.slotBytes,
      s.options.segment == SegmentSource::Memfd ? "memfd" : "UCX posix", segmentPath(),
      name(s.singleCopy));
}

void ShmLink::progress() {
  if (impl_->ucx) impl_->ucx->progress();
}

// ---- writer side --------------------------------------------------------------------------------

std::span<std::byte> ShmLink::tryAcquire(int reader) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "tryAcquire");
  auto& w = s.writing[r];
  const std::uint64_t next = w.published + 1;
  if (next > s.layout.slotsPerChannel && !s.releasedBy(r, next - s.layout.slotsPerChannel)) {
    return {};
  }
  w.acquired = true;
  return {s.payload(s.me, r, next), s.layout.slotBytes};
}

Completion ShmLink::acquire(int reader, std::span<std::byte>* slot) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "acquire");
  const std::uint64_t next = s.writing[r].published + 1;
  Completion c =
      s.waitFor([&] { return !(*slot = tryAcquire(reader)).empty(); }, s.readersOfChannel(r),
                [&] {
                  return fmt::format(
                      "post {} on the {} over the HCCS class (shared memory): post {} "
                      "not yet released by its readers",
                      next, s.channelName(s.me, r), next - s.layout.slotsPerChannel);
                });
  return c;
}

std::uint64_t ShmLink::publish(int reader, std::size_t bytes) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "publish");
  auto& w = s.writing[r];
  if (!w.acquired) {
    throw std::logic_error(fmt::format("ShmLink::publish on the {} without acquiring its slot",
                                       s.channelName(s.me, r)));
  }
  if (bytes > s.layout.slotBytes) {
    throw std::invalid_argument(
        fmt::format("ShmLink::publish: {} bytes exceed the slot's {}", bytes, s.layout.slotBytes));
  }
  const std::uint64_t number = s.commit(r, bytes, shm::PostKind::Inline);
  if (!w.registered.empty()) s.unregisterReleased(r);
  return number;
}

Completion ShmLink::post(int reader, std::span<const std::byte> bytes, std::uint64_t* number) {
  auto& s = *impl_;
  if (bytes.size() > s.layout.slotBytes) {
    throw std::invalid_argument(fmt::format(
        "ShmLink::post: {} bytes exceed the slot's {} (use publishBlock for larger blocks)",
        bytes.size(), s.layout.slotBytes));
  }
  std::span<std::byte> slot;
  Completion c = acquire(reader, &slot);
  if (c.state != Completion::State::Done) return c;
  if (!bytes.empty()) std::memcpy(slot.data(), bytes.data(), bytes.size());
  const std::uint64_t n = publish(reader, bytes.size());
  if (number != nullptr) *number = n;
  c.bytes = bytes.size();
  return c;
}

Completion ShmLink::publishBlock(int reader, void* data, std::size_t bytes, std::uint64_t* number) {
  const IoVec one{data, bytes};
  return publishBlock(reader, Segments(&one, 1), {}, number);
}

bool ShmLink::blockFits(std::size_t segments, std::size_t metaBytes) const {
  return descriptorBytes(segments, 0, metaBytes) <= impl_->layout.slotBytes;
}

Completion ShmLink::publishBlock(int reader, Segments segments, std::span<const std::byte> meta,
                                 std::uint64_t* number) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "publishBlock");
  if (s.singleCopy == SingleCopy::None) {
    throw std::logic_error(
        "ShmLink::publishBlock: this link has no single copy (SingleCopy::None): send the block "
        "through slots");
  }
  if (segments.size() != 1 && s.singleCopy != SingleCopy::Cma) {
    throw std::invalid_argument(
        fmt::format("ShmLink::publishBlock: a block of {} ranges needs CMA (single copy here: {})",
                    segments.size(), name(s.singleCopy)));
  }
  if (!blockFits(segments.size(), meta.size())) {
    throw std::invalid_argument(fmt::format(
        "ShmLink::publishBlock: {} ranges and {} meta bytes do not fit in a slot of {} bytes",
        segments.size(), meta.size(), s.layout.slotBytes));
  }
  std::span<std::byte> slot;
  Completion c = acquire(reader, &slot);
  if (c.state != Completion::State::Done) return c;
  BlockDescriptor d{0, static_cast<std::uint32_t>(segments.size()), 0,
                    static_cast<std::uint32_t>(meta.size()), 0};
  std::byte* at = slot.data() + sizeof d;
  for (const IoVec& v : segments) {
    const BlockSegment seg{reinterpret_cast<std::uint64_t>(v.base), v.length};
    std::memcpy(at, &seg, sizeof seg);
    at += sizeof seg;
    d.bytes += v.length;
  }
  if (s.singleCopy == SingleCopy::UcxRma) {
    std::string why;
    auto reg = s.ucx->registerBlock(segments[0].base, segments[0].length, &why);
    if (!why.empty() ||
        descriptorBytes(segments.size(), reg.rkey.size(), meta.size()) > slot.size()) {
      s.writing[r].acquired = false;
      if (reg.memh != nullptr) s.ucx->unregister(reg);
      c.state = Completion::State::Failed;
      c.fault = Fault::Transport;
      c.error = fmt::format("block of {} bytes on the {}: {}", d.bytes, s.channelName(s.me, r),
                            why.empty() ? "its rkey does not fit in a slot" : why);
      return c;
    }
    d.rkeyBytes = static_cast<std::uint32_t>(reg.rkey.size());
    std::memcpy(at, reg.rkey.data(), reg.rkey.size());
    at += reg.rkey.size();
    s.writing[r].registered.emplace_back(s.writing[r].published + 1, std::move(reg));
  }
  if (!meta.empty()) std::memcpy(at, meta.data(), meta.size());
  at += meta.size();
  std::memcpy(slot.data(), &d, sizeof d);
  const std::uint64_t n =
      s.commit(r, static_cast<std::size_t>(at - slot.data()), shm::PostKind::Block);
  if (number != nullptr) *number = n;
  c.bytes = d.bytes;
  return c;
}

void ShmLink::revoke(int reader, std::uint64_t number) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "revoke");
  if (number == 0 || number > s.writing[r].published) {
    throw std::invalid_argument(fmt::format("ShmLink::revoke: post {} of the {} is not published",
                                            number, s.channelName(s.me, r)));
  }
  if (s.releasedBy(r, number)) return;
  s.control(s.me, r, number).revoked.store(1, std::memory_order_seq_cst);
}

bool ShmLink::released(int reader, std::uint64_t number) const {
  auto& s = *impl_;
  return s.releasedBy(s.readerIndex(reader, "released"), number);
}

Completion ShmLink::waitReleased(int reader, std::uint64_t number) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "waitReleased");
  Completion c = s.waitFor(
      [&] { return s.releasedBy(r, number); }, s.readersOfChannel(r),
      [&] {
        return fmt::format("post {} on the {} over the HCCS class (shared memory): not released",
                           number, s.channelName(s.me, r));
      });
  if (c.state == Completion::State::Done && !s.writing[r].registered.empty()) {
    s.unregisterReleased(r);
  }
  return c;
}

// ---- reader side --------------------------------------------------------------------------------

bool ShmLink::Impl::postAt(std::size_t w, bool broadcast, std::uint64_t number, Post* post) const {
  const std::size_t r = broadcast ? w : me;
  const auto& ctl = control(w, r, number);
  if (ctl.seq.load(std::memory_order_acquire) != number) return false;
  post->number = number;
  post->writer = localRanks[w];
  post->broadcast = broadcast;
  post->block = ctl.kind == shm::PostKind::Block;
  post->data = {payload(w, r, number), static_cast<std::size_t>(ctl.bytes)};
  post->blockBytes = 0;
  post->meta = {};
  if (post->block) {
    BlockDescriptor d;
    std::memcpy(&d, post->data.data(), sizeof d);
    post->blockBytes = d.bytes;
    post->meta = post->data.subspan(descriptorBytes(d.segments, d.rkeyBytes, 0), d.metaBytes);
  }
  return true;
}

void ShmLink::Impl::releaseNumber(std::size_t w, bool broadcast, std::uint64_t number) {
  Reading& g = reading(w, broadcast);
  if (number <= g.released || number > g.taken || ((g.done >> (number - g.released - 1)) & 1)) {
    const std::size_t r = broadcast ? w : me;
    throw std::logic_error(
        fmt::format("ShmLink::release: post {} of the {} is not held", number, channelName(w, r)));
  }
  g.done |= std::uint64_t{1} << (number - g.released - 1);
  if ((g.done & 1) == 0) return;
  while (g.done & 1) {
    g.done >>= 1;
    ++g.released;
  }
  ack(me, w, broadcast).released.store(g.released, std::memory_order_release);
}

bool ShmLink::tryPeek(int writer, bool broadcast, Post* post) {
  auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "tryPeek");
  return s.postAt(w, broadcast, s.reading(w, broadcast).released + 1, post);
}

Completion ShmLink::peek(int writer, bool broadcast, Post* post) {
  auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "peek");
  const std::uint64_t next = s.reading(w, broadcast).released + 1;
  Completion c = s.waitFor(
      [&] { return tryPeek(writer, broadcast, post); }, [w](const auto& f) { f(w); },
      [&] {
        return fmt::format("post {} on the {} over the HCCS class (shared memory): not published",
                           next, s.channelName(w, broadcast ? w : s.me));
      });
  if (c.state == Completion::State::Done)
    c.bytes = post->block ? post->blockBytes : post->data.size();
  return c;
}

void ShmLink::release(int writer, bool broadcast) {
  auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "release");
  Impl::Reading& g = s.reading(w, broadcast);
  const std::uint64_t next = g.released + 1;
  const std::size_t r = broadcast ? w : s.me;
  if (s.control(w, r, next).seq.load(std::memory_order_acquire) != next) {
    throw std::logic_error(fmt::format("ShmLink::release: the {} has no unreleased post {}",
                                       s.channelName(w, r), next));
  }
  g.taken = std::max(g.taken, next);
  if (g.done == 0) {  // nothing released out of order: the oldest post alone is acknowledged
    g.released = next;
    s.ack(s.me, w, broadcast).released.store(next, std::memory_order_release);
    return;
  }
  s.releaseNumber(w, broadcast, next);
}

ShmLink::Flag ShmLink::nextFlag(int writer, bool broadcast) const {
  const auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "nextFlag");
  const std::uint64_t next = s.reading(w, broadcast).released + 1;
  return {&s.control(w, broadcast ? w : s.me, next).seq, next};
}

bool ShmLink::tryTake(int writer, bool broadcast, Post* post) {
  auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "tryTake");
  Impl::Reading& g = s.reading(w, broadcast);
  if (g.taken - g.released >= s.layout.slotsPerChannel) return false;
  if (!s.postAt(w, broadcast, g.taken + 1, post)) return false;
  ++g.taken;
  return true;
}

void ShmLink::releasePost(const Post& post) {
  auto& s = *impl_;
  s.releaseNumber(s.writerIndex(post.writer, "releasePost"), post.broadcast, post.number);
}

std::size_t ShmLink::held(int writer, bool broadcast) const {
  const auto& s = *impl_;
  const Impl::Reading& g = s.reading(s.writerIndex(writer, "held"), broadcast);
  return static_cast<std::size_t>(g.taken - g.released) -
         static_cast<std::size_t>(std::popcount(g.done));
}

bool ShmLink::windowFull(int writer, bool broadcast) const {
  const auto& s = *impl_;
  const Impl::Reading& g = s.reading(s.writerIndex(writer, "windowFull"), broadcast);
  return g.taken - g.released >= s.layout.slotsPerChannel;
}

bool ShmLink::peerRunning(int peer) const {
  const auto& s = *impl_;
  const ucx::ProcessId& p = s.processes[s.localOf(peer, "peerRunning")];
  return p.startTime == 0 || ucx::isRunning(p);
}

std::string ShmLink::channelState(int peer) const {
  const auto& s = *impl_;
  const std::size_t j = s.localOf(peer, "channelState");
  const Impl::Reading& g = s.reading(j, false);
  const std::uint64_t acked = s.ack(j, s.me, false).released.load(std::memory_order_acquire);
  return fmt::format(
      "to rank {}: {} posts published, {} released by it; from rank {}: {} taken, {} released "
      "({} out of order)",
      peer, s.writing[j].published, acked, peer, g.taken, g.released, std::popcount(g.done));
}

const ShmOptions& ShmLink::options() const {
  return impl_->options;
}

// ---- single copy --------------------------------------------------------------------------------

namespace {

struct BlockRef {
  BlockDescriptor d;
  std::span<const std::byte> segments;  // d.segments BlockSegments
  std::span<const std::byte> rkey;
  BlockSegment segment(std::size_t i) const {
    BlockSegment g;
    std::memcpy(&g, segments.data() + i * sizeof g, sizeof g);
    return g;
  }
};

BlockRef blockOf(const ShmLink::Post& post, std::size_t offset, std::size_t bytes,
                 const char* what) {
  if (!post.block) {
    throw std::invalid_argument(
        fmt::format("ShmLink::{}: post {} of rank {} carries inline bytes, not a block", what,
                    post.number, post.writer));
  }
  BlockRef b;
  std::memcpy(&b.d, post.data.data(), sizeof b.d);
  if (offset > b.d.bytes || bytes > b.d.bytes - offset) {
    throw std::invalid_argument(
        fmt::format("ShmLink::{}: range [{}, {}) outside post {}'s block of {} bytes", what, offset,
                    offset + bytes, post.number, b.d.bytes));
  }
  b.segments = post.data.subspan(sizeof b.d, b.d.segments * sizeof(BlockSegment));
  b.rkey = post.data.subspan(sizeof b.d + b.segments.size(), b.d.rkeyBytes);
  return b;
}

}  // namespace

Completion ShmLink::Impl::copy(const Post& post, std::size_t offset, void* local, std::size_t bytes,
                               bool toPeer) {
  const char* what = toPeer ? "write" : "read";
  const std::size_t w = writerIndex(post.writer, what);
  const BlockRef b = blockOf(post, offset, bytes, what);
  std::string why;
  if (singleCopy == SingleCopy::Cma) {
    // The block's ranges that [offset, offset + bytes) covers, as the peer's side of one call.
    auto* at = static_cast<std::byte*>(local);
    std::size_t skip = offset, left = bytes;
    for (std::size_t i = 0; i < b.d.segments && left > 0 && why.empty(); ++i) {
      const BlockSegment g = b.segment(i);
      if (skip >= g.bytes) {
        skip -= g.bytes;
        continue;
      }
      const std::size_t n = std::min<std::size_t>(g.bytes - skip, left);
      why = shm::cmaCopy(processes[w].pid, at, g.address + skip, n, toPeer);
      at += n;
      left -= n;
      skip = 0;
    }
  } else {
    const BlockSegment g = b.segment(0);
    const auto start = Clock::now();
    const auto abort = [&] {
      if (!ucx::isRunning(processes[w])) {
        return fmt::format("the peer's process (pid {}) on this server has exited",
                           processes[w].pid);
      }
      if (options.timeout.count() > 0 && Clock::now() - start > options.timeout) {
        return fmt::format("no progress on this link for {} ms (the transport's timeout)",
                           options.timeout.count());
      }
      return std::string();
    };
    const auto peer = static_cast<int>(w);
    why = toPeer ? ucx->put(peer, b.rkey, g.address + offset, local, bytes, abort)
                 : ucx->get(peer, b.rkey, g.address + offset, local, bytes, abort);
  }
  Fault fault = Fault::Transport;
  if (why.empty()) {
    // After the copy: a withdrawal that came before its end may have changed what it read.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const auto& ctl = control(w, post.broadcast ? w : me, post.number);
    if (ctl.revoked.load(std::memory_order_acquire) != 0) {
      why = "the writer withdrew the block (its call failed or was abandoned)";
      fault = Fault::Withdrawn;
    }
  }
  Completion c;
  if (why.empty()) {
    c.state = Completion::State::Done;
    c.bytes = bytes;
  } else {
    c.state = Completion::State::Failed;
    c.fault = fault;
    c.error = fmt::format("{} of {} bytes {} post {} of rank {} over the HCCS class ({}): {}", what,
                          bytes, toPeer ? "into" : "from", post.number, post.writer,
                          name(singleCopy), why);
  }
  return c;
}

Completion ShmLink::read(const Post& post, std::size_t offset, void* dst, std::size_t bytes) {
  return impl_->copy(post, offset, dst, bytes, false);
}

Completion ShmLink::write(const Post& post, std::size_t offset, const void* src,
                          std::size_t bytes) {
  return impl_->copy(post, offset, const_cast<void*>(src), bytes, true);
}

Completion ShmLink::stream(
    const Post& post, std::size_t offset, std::size_t bytes, std::size_t piece,
    const std::function<void(std::span<const std::byte>, std::size_t)>& consume) {
  auto& s = *impl_;
  if (piece == 0) throw std::invalid_argument("ShmLink::stream: piece of 0 bytes");
  blockOf(post, offset, bytes, "stream");
  if (s.bounce.size() < std::min(piece, bytes)) s.bounce.resize(std::min(piece, bytes));
  Completion c;
  c.state = Completion::State::Done;
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(piece, bytes - done);
    c = read(post, offset + done, s.bounce.data(), n);
    if (c.state != Completion::State::Done) return c;
    consume({s.bounce.data(), n}, done);
    done += n;
  }
  c.bytes = bytes;
  return c;
}

}  // namespace hccl::tl
