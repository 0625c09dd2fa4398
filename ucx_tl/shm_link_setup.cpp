// ShmLink's set-up: the bootstrap among a server's ranks, the segment, the single-copy mode.
#include <fmt/format.h>
#include <sys/random.h>

#include <cstring>
#include <stdexcept>

#include "ucx_tl/shm_link_impl.hpp"

namespace hccl::tl {

using namespace shm_detail;

namespace {

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

// Once per process: the machine's copy speed does not change while it runs, and a process that
// sets up many links (the engine's tests: one per run of rank threads) pays ~30 ms once, not per
// link. Thread-safe: rank threads of one process set up links at once.
shm::CopySpeed processCopySpeed() {
  constexpr int kReps = 6;
  static const shm::CopySpeed speed = shm::timeCopies(ShmLink::kCopyProbeBytes, kReps);
  return speed;
}

}  // namespace

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
    if (options.slotBytes > shm::kMaxSlotBytes) {
      throw UcxError(fmt::format("ShmLink: slotBytes {} (at most {}: a post's length is 32 bits)",
                                 options.slotBytes, shm::kMaxSlotBytes));
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

  // Round 2: who failed, whether CMA works everywhere and how fast; every rank decides alike.
  shm::Record status;
  status.error = !mine.error.empty() ? mine.error : failure;
  status.probeValue = cmaWorks ? 1 : 0;
  status.yields = options.yield ? 1 : 0;
  // The server's leader alone times the copies, while its peers wait in the all-gather below: a
  // clean measurement, and no 32 MiB on every rank of a large server. Not where ranks outnumber
  // cores (there copies above a slot are blocks whatever it says, and ranks taking turns on a
  // core would time each other), nor where UCX RMA or nothing carries the single copy.
  if (L > 1 && me == 0 && status.error.empty() && cmaWorks && !options.yield &&
      (options.singleCopy == SingleCopy::Auto || options.singleCopy == SingleCopy::Cma)) {
    const shm::CopySpeed speed = processCopySpeed();
    status.cmaNanos = speed.cmaNanos;
    status.copyNanos = speed.copyNanos;
  }
  const auto statusBlobs = shm::gatherBlobs(allGather, size, shm::encode(status), "set-up status");
  // Every peer has mapped the segment (or failed): its file descriptor is no longer needed.
  shm::closeFd(memfd);
  std::vector<std::string> failed;
  bool serverCma = true, serverYields = options.yield;
  std::uint64_t leaderCma = 0, leaderCopy = 0;
  for (std::size_t q = 0; q < statusBlobs.size(); ++q) {
    const shm::Record r = shm::decode(statusBlobs[q], static_cast<int>(q));
    if (!r.error.empty()) failed.push_back(fmt::format("rank {}: {}", q, r.error));
    if (localIndexOf[q] >= 0 && r.error.empty()) {
      serverCma = serverCma && r.probeValue == 1;
      serverYields = serverYields || r.yields != 0;
      if (localIndexOf[q] == 0) {
        leaderCma = r.cmaNanos;
        leaderCopy = r.copyNanos;
      }
    }
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
  // Every rank of the server from the same records: one ratio, and one yield setting (which
  // decides the slots' paths too), so that every rank compiles the same programs.
  options.yield = serverYields;
  if (singleCopy == SingleCopy::Cma && !serverYields && leaderCma > 0 && leaderCopy > 0)
    copyRatio = static_cast<double>(leaderCma) / static_cast<double>(leaderCopy);
  writing.resize(L);
  readingPair.assign(L, {});
  readingBroadcast.assign(L, {});
  if (base != nullptr) mapChannels();
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
}  // namespace hccl::tl
