#include "coll_hccl/engine/host_views.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

namespace hccl::engine {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMagic = 0x48434456;  // "HCDV"
constexpr std::uint16_t kVersion = 2;         // 2: records carry their culprit
constexpr std::size_t kHeaderBytes = 24;
constexpr std::size_t kEntryBytes = 52;
// A lost peer its host still shows running is asked about again this often, for this long.
constexpr auto kRequeryEvery = std::chrono::milliseconds(20);
constexpr auto kAwaitExit = std::chrono::milliseconds(250);
// How long views still waiting to leave (to a stopped peer, or over a side link being wired up)
// may hold the failing rank after the answers are in.
constexpr auto kLinger = std::chrono::milliseconds(100);

class Writer {
 public:
  explicit Writer(std::vector<std::byte>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    const std::size_t at = out_.size();
    out_.resize(at + sizeof v);
    std::memcpy(out_.data() + at, &v, sizeof v);
  }

 private:
  std::vector<std::byte>& out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  T get() {
    T v{};
    std::memcpy(&v, in_.data() + at_, sizeof v);  // sizes are checked before reading
    at_ += sizeof v;
    return v;
  }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

bool exitedState(char state) {
  return state == '\0' || state == 'Z' || state == 'X';
}

}  // namespace

std::vector<std::byte> encode(const HostView& v) {
  std::vector<std::byte> out;
  out.reserve(kHeaderBytes + kEntryBytes * v.ranks.size());
  Writer w(out);
  w.put(kMagic);
  w.put(kVersion);
  w.put(static_cast<std::uint8_t>((v.wantsReply ? 1 : 0) | (v.board ? 2 : 0)));
  w.put(std::uint8_t{0});
  w.put(v.comm);
  w.put(v.seq);
  w.put(static_cast<std::int32_t>(v.from));
  w.put(static_cast<std::uint32_t>(v.ranks.size()));
  for (const RankView& r : v.ranks) {
    w.put(static_cast<std::int32_t>(r.worldRank));
    w.put(static_cast<std::uint8_t>(r.state));
    w.put(static_cast<std::uint8_t>((r.hasRecord ? 1 : 0) | (r.torn ? 2 : 0)));
    w.put(std::uint16_t{0});
    const CallProgress& p = r.record;
    w.put(p.comm);
    w.put(p.seq);
    w.put(p.coll);
    w.put(static_cast<std::uint8_t>(p.state));
    w.put(static_cast<std::uint8_t>(p.waitRecv ? 1 : 0));
    w.put(std::uint8_t{0});
    w.put(p.wait);
    w.put(p.bytes);
    w.put(p.chunk);
    w.put(p.chunks);
    w.put(p.step);
    w.put(p.steps);
    w.put(p.culprit);
  }
  return out;
}

std::optional<HostView> decode(std::span<const std::byte> bytes, std::string* why) {
  const auto fail = [why](std::string m) -> std::optional<HostView> {
    if (why) *why = std::move(m);
    return std::nullopt;
  };
  if (bytes.size() < kHeaderBytes)
    return fail(
        fmt::format("{} bytes, shorter than a view's {}-byte header", bytes.size(), kHeaderBytes));
  Reader r(bytes);
  if (r.get<std::uint32_t>() != kMagic) return fail("not a host view (bad magic)");
  if (const auto version = r.get<std::uint16_t>(); version != kVersion)
    return fail(fmt::format("host view version {}, this build reads {}", version, kVersion));
  HostView v;
  const auto flags = r.get<std::uint8_t>();
  v.wantsReply = (flags & 1) != 0;
  v.board = (flags & 2) != 0;
  (void)r.get<std::uint8_t>();
  v.comm = r.get<std::uint32_t>();
  v.seq = r.get<std::uint32_t>();
  v.from = r.get<std::int32_t>();
  const auto count = r.get<std::uint32_t>();
  if (bytes.size() != kHeaderBytes + kEntryBytes * std::size_t{count})
    return fail(fmt::format("{} bytes for {} ranks, expected {}", bytes.size(), count,
                            kHeaderBytes + kEntryBytes * std::size_t{count}));
  v.ranks.resize(count);
  for (RankView& e : v.ranks) {
    e.worldRank = r.get<std::int32_t>();
    e.state = static_cast<char>(r.get<std::uint8_t>());
    const auto f = r.get<std::uint8_t>();
    e.hasRecord = (f & 1) != 0;
    e.torn = (f & 2) != 0;
    e.recordKnown = v.board;
    (void)r.get<std::uint16_t>();
    CallProgress& p = e.record;
    p.comm = r.get<std::uint32_t>();
    p.seq = r.get<std::uint32_t>();
    p.coll = r.get<std::uint8_t>();
    const auto state = r.get<std::uint8_t>();
    if (state < 1 || state > 3) {
      if (e.hasRecord) return fail(fmt::format("record state {} (valid: 1..3)", state));
      p.state = CallProgress::State::Running;
    } else {
      p.state = static_cast<CallProgress::State>(state);
    }
    p.waitRecv = r.get<std::uint8_t>() != 0;
    (void)r.get<std::uint8_t>();
    p.wait = r.get<std::int32_t>();
    p.bytes = r.get<std::uint64_t>();
    p.chunk = r.get<std::uint32_t>();
    p.chunks = r.get<std::uint32_t>();
    p.step = r.get<std::uint32_t>();
    p.steps = r.get<std::uint32_t>();
    p.culprit = r.get<std::int32_t>();
  }
  return v;
}

HostView localView(const ProgressBoard* board, std::span<const PeerProcess> world, int worldRank,
                   std::uint32_t comm, std::uint32_t seq) {
  HostView v;
  v.comm = comm;
  v.seq = seq;
  v.from = worldRank;
  v.board = board != nullptr;
  for (std::size_t w = 0; w < world.size(); ++w) {
    const bool self = static_cast<int>(w) == worldRank;
    if (!self && !world[w].sameHost) continue;
    RankView e;
    e.worldRank = static_cast<int>(w);
    e.recordKnown = v.board;
    if (self)
      e.state = 'R';
    else if (world[w].process.startTime != 0)
      e.state = tl::ucx::processState(world[w].process);
    else
      e.state = '?';
    if (board) {
      bool torn = false;
      if (const std::optional<CallProgress> p = board->read(static_cast<int>(w), comm, &torn)) {
        e.hasRecord = true;
        e.record = *p;
      }
      e.torn = torn;
    }
    v.ranks.push_back(e);
  }
  return v;
}

std::vector<int> viewPartners(std::span<const int> hostRanks, std::size_t askerIndex,
                              int lostWorldRank) {
  constexpr std::size_t kPartners = 2;
  std::vector<int> out;
  const std::size_t n = hostRanks.size();
  for (std::size_t k = 0; k < n && out.size() < kPartners; ++k) {
    const int w = hostRanks[(askerIndex + k) % n];
    if (w != lostWorldRank) out.push_back(w);
  }
  if (out.empty() && n > 0) out.push_back(hostRanks[askerIndex % n]);
  return out;
}

DiagnosisChannel::DiagnosisChannel(tl::Transport& link, const ProgressBoard* board,
                                   std::span<const PeerProcess> world, int worldRank,
                                   bool yieldWhenIdle)
    : link_(link), board_(board), world_(world), worldRank_(worldRank), yield_(yieldWhenIdle) {
  link_.setSideHandler(
      [this](int peer, std::span<const std::byte> bytes) { onMessage(peer, bytes); });
}

DiagnosisChannel::~DiagnosisChannel() {
  link_.setSideHandler({});
}

void DiagnosisChannel::forget(std::uint32_t comm) {
  inbox_.erase(comm);
}

void DiagnosisChannel::onMessage(int peer, std::span<const std::byte> bytes) {
  std::optional<HostView> v = decode(bytes);
  // Only views about the sender's own host are kept: anything else is not from a peer of ours.
  if (!v || v->from != peer || peer < 0 || static_cast<std::size_t>(peer) >= world_.size()) return;
  if (v->wantsReply) {
    HostView mine = localView(board_, world_, worldRank_, v->comm, v->seq);
    (void)link_.sideSend(peer, encode(mine));
  }
  v->wantsReply = false;
  Received& r = inbox_[v->comm][peer];
  r.view = std::move(*v);
  r.arrival = ++arrivals_;
}

bool DiagnosisChannel::reportsExited(const HostView& v, int worldRank) const {
  for (const RankView& e : v.ranks)
    if (e.worldRank == worldRank) return exitedState(e.state);
  return true;  // the view does not cover it: nothing to wait for
}

std::vector<std::optional<RankView>> DiagnosisChannel::gather(std::uint32_t comm, std::uint32_t seq,
                                                              std::span<const int> members,
                                                              int lostWorldRank,
                                                              std::chrono::milliseconds budget,
                                                              std::string& note) {
  std::vector<std::optional<RankView>> out(world_.size());
  // The other hosts of the communicator and their members, and this rank's index among its own
  // host's members (which picks its partners on every other host).
  std::map<std::string, std::vector<int>> hosts;
  std::size_t myIndex = 0;
  for (const int w : members) {
    if (w < 0 || static_cast<std::size_t>(w) >= world_.size()) continue;
    if (w == worldRank_) break;
    if (world_[static_cast<std::size_t>(w)].sameHost) ++myIndex;
  }
  for (const int w : members) {
    if (w < 0 || static_cast<std::size_t>(w) >= world_.size() || w == worldRank_ ||
        world_[static_cast<std::size_t>(w)].sameHost)
      continue;
    hosts[world_[static_cast<std::size_t>(w)].host].push_back(w);
  }
  if (hosts.empty()) return out;
  std::map<std::string, std::vector<int>> partners;
  for (const auto& [host, ranks] : hosts)
    partners[host] = viewPartners(ranks, myIndex, lostWorldRank);
  HostView mine = localView(board_, world_, worldRank_, comm, seq);
  mine.wantsReply = true;
  const std::vector<std::byte> query = encode(mine);
  for (const auto& [host, asked] : partners)
    for (const int w : asked) (void)link_.sideSend(w, query);

  const auto hostOf = [this](int w) -> const std::string& {
    return world_[static_cast<std::size_t>(w)].host;
  };
  const std::string* lostHost = lostWorldRank >= 0 &&
                                        static_cast<std::size_t>(lostWorldRank) < world_.size() &&
                                        !world_[static_cast<std::size_t>(lostWorldRank)].sameHost
                                    ? &hostOf(lostWorldRank)
                                    : nullptr;
  // The latest view from each host, by arrival.
  const auto latest = [&](const std::string& host) -> const Received* {
    const auto it = inbox_.find(comm);
    if (it == inbox_.end()) return nullptr;
    const Received* best = nullptr;
    for (const auto& [from, r] : it->second)
      if (hostOf(from) == host && (!best || r.arrival > best->arrival)) best = &r;
    return best;
  };
  const auto start = Clock::now();
  auto requeried = start;
  for (;;) {
    std::size_t answered = 0;
    bool awaitingExit = false;
    for (const auto& [host, ranks] : hosts) {
      const Received* r = latest(host);
      if (!r) continue;
      ++answered;
      if (lostHost && *lostHost == host && !reportsExited(r->view, lostWorldRank))
        awaitingExit = true;
    }
    const auto now = Clock::now();
    if (now - start >= budget) break;
    if (answered == hosts.size() && (!awaitingExit || now - start >= kAwaitExit)) break;
    if (awaitingExit && now - requeried >= kRequeryEvery) {
      requeried = now;
      for (const int w : partners[*lostHost])
        if (w != lostWorldRank) (void)link_.sideSend(w, query);
    }
    link_.progress();
    if (yield_) std::this_thread::yield();
  }
  // This rank may stop progressing once it returns (an application that waits, or exits): let
  // its views leave first (a new side link's wire-up needs this end too), for a bounded time.
  const auto linger = Clock::now();
  while (link_.sidePending() > 0 && Clock::now() - start < budget &&
         Clock::now() - linger < kLinger) {
    link_.progress();
    if (yield_) std::this_thread::yield();
  }
  std::vector<std::string> silent;
  for (const auto& [host, ranks] : hosts) {
    const Received* r = latest(host);
    if (!r) {
      silent.push_back(host);
      continue;
    }
    for (const RankView& e : r->view.ranks)
      if (e.worldRank >= 0 && static_cast<std::size_t>(e.worldRank) < out.size() &&
          hostOf(e.worldRank) == host)
        out[static_cast<std::size_t>(e.worldRank)] = e;
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  note = fmt::format("{} of {} other hosts answered in {} ms", hosts.size() - silent.size(),
                     hosts.size(), ms);
  if (!silent.empty()) {
    std::string list;
    for (const std::string& h : silent) list += (list.empty() ? "" : ", ") + h;
    note += fmt::format(" (no answer from {})", list);
  }
  return out;
}

}  // namespace hccl::engine
