#include "coll_hccl/engine/setup.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "topology/error.hpp"
#include "topology/records.hpp"
#include "ucx_tl/shm_transport.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::engine::setup {
namespace {

std::uint64_t fnv(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

// The environment the hierarchy is built from (a rank table's contents are compared through the
// hierarchy it yields).
std::string topologyInputs() {
  std::string out;
  for (const char* var : {topo::kEnvRankTable, topo::kEnvEmulate, topo::kEnvSupernodes}) {
    const char* v = std::getenv(var);
    out += fmt::format("{}={}|", var, v ? v : "");
  }
  return out;
}

// What every rank tells the others when MPI_COMM_WORLD is created.
struct Hello {
  char magic[4];
  std::int32_t status;  // this rank's set-up so far (hccl_status_t)
  std::int32_t worldRank;
  std::int32_t pad;
  std::uint64_t config;     // hash of everything the ranks must agree on to decide alike
  std::uint64_t hierarchy;  // hash of the rank table's or spec's hierarchy; 0 for discovery
  std::int64_t pid;         // this rank's process, for fault diagnosis
  std::uint64_t startTime;
  std::byte record[topo::RankRecord::kSize];
  std::uint64_t errorBytes;  // length of why this rank's set-up failed (sent in a second round)
};
constexpr char kMagic[4] = {'H', 'C', 'E', '4'};

std::string rankList(const std::vector<std::uint32_t>& ranks) {
  return topo::formatRankList(ranks);
}

}  // namespace

Failure configure(
    const hccl_setting_t (&layers)[HCCL_SETTING_COUNT],
    const std::function<const algo::CostModel*(const std::string&, std::string&)>& loadModel,
    Configuration& out) {
  auto opts = optionsFromLayers(layers);
  if (!opts.ok()) return {HCCL_ERR_CONFIG, opts.error().message};
  out.options = std::move(opts).value();
  std::string modelErr;
  out.model = loadModel(out.options.settings.tuningFile.value, modelErr);
  if (!modelErr.empty() || out.model == nullptr) return {HCCL_ERR_CONFIG, modelErr};
  out.fingerprint =
      fmt::format("{}|{}|{}", fingerprint(out.options), out.model->fingerprint(), topologyInputs());
  return {};
}

Failure agreeOnWorld(const Exchange& exchange, int worldRank, int worldSize, const Failure& local,
                     const std::string& fingerprint, const topo::Hierarchy* declaredHierarchy,
                     std::span<const std::byte> record, WorldView& out) {
  Hello mine{};
  std::memcpy(mine.magic, kMagic, sizeof kMagic);
  mine.status = local.status;
  mine.worldRank = worldRank;
  mine.config = fnv(fingerprint);
  mine.hierarchy = declaredHierarchy ? fnv(declaredHierarchy->describe()) : 0;
  const tl::ucx::ProcessId self = tl::ucx::thisProcess();
  mine.pid = self.pid;
  mine.startTime = self.startTime;
  std::memcpy(mine.record, record.data(), std::min(record.size(), sizeof mine.record));
  mine.errorBytes = local.failed() ? local.message.size() : 0;

  std::vector<Hello> all(static_cast<std::size_t>(worldSize));
  if (!exchange(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))))
    return {HCCL_ERR_BOOTSTRAP, "the bootstrap all-gather over MPI_COMM_WORLD failed"};

  for (std::uint32_t r = 0; r < all.size(); ++r)
    if (std::memcmp(all[r].magic, kMagic, sizeof kMagic) != 0)
      return {HCCL_ERR_BOOTSTRAP,
              fmt::format("rank {} runs a different coll_hccl engine version", r)};
  // A failure's reason travels whole in a second round, which every rank runs alike: they all
  // see the same hellos. Each sends the longest reason's length (its own padded with zeros).
  std::size_t longest = 0;
  for (const Hello& h : all)
    if (h.status != HCCL_SUCCESS)
      longest = std::max(longest, static_cast<std::size_t>(std::min<std::uint64_t>(
                                      h.errorBytes, std::uint64_t{1} << 20)));
  std::vector<char> reasons;
  if (longest > 0) {
    std::vector<char> own(longest, '\0');
    if (local.failed())
      std::memcpy(own.data(), local.message.data(), std::min(longest, local.message.size()));
    reasons.resize(longest * all.size());
    if (!exchange(std::as_bytes(std::span(own)), std::as_writable_bytes(std::span(reasons))))
      return {HCCL_ERR_BOOTSTRAP, "the bootstrap all-gather over MPI_COMM_WORLD failed"};
  }
  std::vector<std::uint32_t> configDiffers, hierarchyDiffers;
  for (std::uint32_t r = 0; r < all.size(); ++r) {
    const Hello& h = all[r];
    if (h.status != HCCL_SUCCESS) {  // the first failing rank's reason, on every rank
      const char* why = reasons.data() + r * longest;
      return {static_cast<hccl_status_t>(h.status),
              fmt::format("rank {}: {}", r, std::string(why, strnlen(why, longest)))};
    }
    if (h.config != all[0].config) configDiffers.push_back(r);
    if (h.hierarchy != all[0].hierarchy) hierarchyDiffers.push_back(r);
  }
  if (!configDiffers.empty())
    return {HCCL_ERR_CONFIG,
            fmt::format("ranks {} resolved a different configuration than rank 0 (this rank: {}); "
                        "every rank must see the same HCCL_ALGO, HCCL_BUFFSIZE, "
                        "HCCL_DETERMINISTIC, selection mode, tuning file, level0 link, "
                        "shared-memory slot size and topology inputs",
                        rankList(configDiffers), fingerprint)};
  if (!hierarchyDiffers.empty())
    return {HCCL_ERR_CONFIG,
            fmt::format("ranks {} read a different hierarchy than rank 0 from the same rank table "
                        "or emulation spec (this rank: {})",
                        rankList(hierarchyDiffers),
                        declaredHierarchy ? declaredHierarchy->describe() : "discovery")};

  std::vector<std::byte> gathered(all.size() * topo::RankRecord::kSize);
  for (std::size_t r = 0; r < all.size(); ++r)
    std::memcpy(gathered.data() + r * topo::RankRecord::kSize, all[r].record,
                topo::RankRecord::kSize);
  try {
    out.records = topo::deserializeRecords(gathered);
  } catch (const topo::TopologyError& e) {
    return {HCCL_ERR_BOOTSTRAP, e.what()};
  }
  out.processes.clear();
  for (const Hello& h : all) out.processes.push_back({h.pid, h.startTime});
  return {};
}

std::vector<PeerProcess> peerProcesses(const WorldView& world, int worldRank) {
  std::vector<PeerProcess> out;
  const topo::RankRecord& me = world.records.at(static_cast<std::size_t>(worldRank));
  for (std::size_t r = 0; r < world.records.size(); ++r)
    out.push_back(
        {world.records[r].hostname, world.processes.at(r), world.records[r].sameHost(me)});
  return out;
}

std::unique_ptr<ProgressBoard> openProgressBoard(const std::vector<PeerProcess>& world,
                                                 int worldRank, std::string& why) {
  // Named after the job (world rank 0's process) and this host: hosts that share /dev/shm (the
  // emulated cluster's namespaces) still get a board each, as separate machines would.
  const PeerProcess& first = world.at(0);
  const std::string name =
      fmt::format("/coll_hccl.{}.{}.{:x}", first.process.pid, first.process.startTime,
                  fnv(world.at(static_cast<std::size_t>(worldRank)).host));
  return ProgressBoard::open(name, static_cast<int>(world.size()), worldRank, why);
}

std::optional<topo::Hierarchy> declaredWorldHierarchy(const topo::TopologySource& source,
                                                      std::uint32_t worldSize) {
  if (source.rankTableFile.empty() && source.emulationSpec.empty()) return std::nullopt;
  return topo::resolveHierarchy(source, worldSize, {}, {}).hierarchy;
}

topo::Hierarchy discoveredWorldHierarchy(const topo::TopologySource& source,
                                         const WorldView& world) {
  return topo::resolveHierarchy(source, static_cast<std::uint32_t>(world.records.size()), {},
                                world.records)
      .hierarchy;
}

topo::Hierarchy memberHierarchy(const topo::Hierarchy& world, std::span<const int> members) {
  std::vector<std::uint32_t> ranks(members.begin(), members.end());
  return world.subset(ranks);
}

tl::ShmOptions shmOptions(std::size_t largestServer, const tl::UcxOptions& ucx, bool oversubscribed,
                          std::size_t slotBytes) {
  tl::ShmOptions o;
  constexpr std::size_t kSegmentBudget = std::size_t{64} << 20;
  const std::size_t L = std::max<std::size_t>(largestServer, 1);
  // Slots per channel: a 1 MiB window at two ranks (a 4 MiB segment), where every schedule's large
  // posts stream through the slots (stream_from_bytes): a streamed post's writer then runs 1 MiB
  // ahead of a reader whose core is busy elsewhere, where 4 stalled the pipeline at every
  // descheduling of the peer (OSU 5.7 np=2 AllReduce, 4 alternating rounds at load 20-23, medians:
  // 64 slots 1.3-1.9x faster than 4 from 2 MiB to 64 MiB). Larger servers keep 4: their large calls
  // run on the executor (measured at np=4, load 53-58, 2 rounds: 16 slots 0.69-0.75x at 4-8 MiB).
  // At two ranks the same 1 MiB window is 16 slots of 64 KiB rather than 64 of 16 KiB: a
  // streamed post pays a flag, a release and a call header per slot. OSU 5.7 np=2 AllReduce, one
  // binary, 4 alternating rounds at load ~22 (autogroup -20), medians: 256 KiB-8 MiB 1.20-1.53x
  // faster, 16-64 MiB 1.01-1.06x; 1-16 KiB AllReduce and Bcast within 5% (1000 calls after 100).
  // 256 KiB slots, 4 a channel, were slower; 32 or 128 KiB, or 32-64 slots, no better.
  struct Slots {
    std::size_t perChannel, maxBytes;
  };
  Slots slots = L <= 2 ? Slots{16, 65536} : Slots{o.slotsPerChannel, 16384};
  // coll_hccl_shm_slot_bytes / HCCL_SHM_SLOT_BYTES (settings_bridge): another payload, the
  // window kept at 1 MiB at two ranks (4 to 64 slots). For tests that need posts of several
  // slots at small sizes (tests/mpi: reductions_np2_stream runs with 16 KiB slots).
  if (slotBytes > 0) {
    slots.maxBytes = slotBytes;
    if (L <= 2)
      slots.perChannel = std::clamp<std::size_t>((std::size_t{1} << 20) / slotBytes, 4, 64);
  }
  o.slotsPerChannel = slots.perChannel;
  const std::size_t perSlot = kSegmentBudget / (L * L * o.slotsPerChannel);
  o.slotBytes = std::clamp<std::size_t>(perSlot / 64 * 64, 1024, slots.maxBytes) + 64;
  o.timeout = ucx.timeout;
  if (ucx.keepalive.count() > 0) o.liveness = ucx.keepalive;
  o.yield = oversubscribed;
  return o;
}

WorldTransport openWorldTransport(const Exchange& exchange, int worldRank,
                                  const topo::Hierarchy& world, const EngineOptions& options,
                                  bool oversubscribed) {
  std::vector<int> serverOf(world.size());
  std::map<int, std::size_t> perServer;
  for (std::uint32_t r = 0; r < world.size(); ++r) {
    serverOf[r] = static_cast<int>(world.serverOf(r));
    ++perServer[serverOf[r]];
  }
  const tl::AllGather gather = [&](std::span<const std::byte> m, std::span<std::byte> a) {
    if (!exchange(m, a)) throw tl::UcxError("the bootstrap all-gather over MPI_COMM_WORLD failed");
  };
  tl::UcxOptions ucx = options.ucx;
  ucx.oversubscribed = oversubscribed;
  WorldTransport out;
  auto base = std::make_shared<tl::UcxTransport>(worldRank, serverOf, gather, ucx);
  out.transport = base;
  if (options.level0Link == Level0Link::Tagged) return out;
  if (ucx.intraRoce) {  // same-server traffic rides the RoCE class: nothing for the link
    out.note = "level0 stays on UCX tagged messages: intra_roce=1 sends it over the RoCE class";
    return out;
  }
  std::size_t largest = 1;
  for (const auto& [server, n] : perServer) largest = std::max(largest, n);
  try {
    auto link = std::make_shared<tl::ShmLink>(
        worldRank, serverOf, gather,
        shmOptions(largest, ucx, oversubscribed, options.shmSlotBytes));
    out.transport = std::make_shared<tl::ShmTransport>(base, std::move(link));
  } catch (const tl::UcxError& e) {
    if (options.level0Link == Level0Link::Shm) throw;
    out.note = fmt::format(
        "level0 stays on UCX tagged messages: the shared-memory link could not be set up ({})",
        e.what());
  }
  return out;
}

}  // namespace hccl::engine::setup
