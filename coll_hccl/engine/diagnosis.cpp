#include "coll_hccl/engine/diagnosis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "algorithms/types.hpp"

namespace hccl::engine {
namespace {

const PeerProcess* processOf(const DiagnosisInput& in, int rank) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= in.members.size()) return nullptr;
  const int w = in.members[static_cast<std::size_t>(rank)];
  if (w < 0 || static_cast<std::size_t>(w) >= in.world.size()) return nullptr;
  return &in.world[static_cast<std::size_t>(w)];
}

}  // namespace

std::string describeRank(const DiagnosisInput& in, int rank) {
  const PeerProcess* p = processOf(in, rank);
  if (!p) return fmt::format("rank {}", rank);
  return fmt::format("rank {} (world rank {}, host {}, pid {})", rank,
                     in.members[static_cast<std::size_t>(rank)], p->host, p->process.pid);
}

std::string describeCall(const CallProgress& p) {
  return fmt::format("call {} ({}, {} bytes)", p.seq + 1,
                     hccl::name(static_cast<Collective>(p.coll)), p.bytes);
}

std::string describeStep(const CallProgress& p) {
  std::string s;
  if (p.chunks > 1) s += fmt::format("chunk {}/{} ", p.chunk + 1, p.chunks);
  s += fmt::format("step {}/{}", p.step + 1, p.steps);
  if (p.wait >= 0)
    s += fmt::format(", waiting to {} rank {}", p.waitRecv ? "receive from" : "send to", p.wait);
  return s;
}

namespace {

const RankView* remoteOf(const DiagnosisInput& in, int rank) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= in.members.size()) return nullptr;
  const int w = in.members[static_cast<std::size_t>(rank)];
  if (w < 0 || static_cast<std::size_t>(w) >= in.remote.size()) return nullptr;
  const std::optional<RankView>& v = in.remote[static_cast<std::size_t>(w)];
  return v ? &*v : nullptr;
}

// Whether this rank's state can be seen: on this host, or through its host's view.
bool inspectable(const DiagnosisInput& in, int rank) {
  const PeerProcess* p = processOf(in, rank);
  if (!p) return false;
  if (p->sameHost) return p->process.startTime != 0;
  return remoteOf(in, rank) != nullptr;
}

// Whether its record can be known (a board on its host), so that having none means something.
bool recordKnown(const DiagnosisInput& in, int rank) {
  const PeerProcess* p = processOf(in, rank);
  if (!p) return false;
  if (p->sameHost) return in.board != nullptr;
  const RankView* v = remoteOf(in, rank);
  return v && v->recordKnown;
}

char stateOf(const DiagnosisInput& in, int rank) {
  const PeerProcess* p = processOf(in, rank);
  if (p && p->sameHost) return tl::ucx::processState(p->process);
  const RankView* v = remoteOf(in, rank);
  return v ? v->state : '?';
}

std::optional<CallProgress> recordOf(const DiagnosisInput& in, int rank) {
  if (rank == in.rank) return in.failed;
  const PeerProcess* p = processOf(in, rank);
  if (!p) return std::nullopt;
  if (p->sameHost) {
    if (!in.board) return std::nullopt;
    return in.board->read(in.members[static_cast<std::size_t>(rank)], in.failed.comm);
  }
  const RankView* v = remoteOf(in, rank);
  if (!v || !v->hasRecord) return std::nullopt;
  return v->record;
}

std::string activity(const DiagnosisInput& in, int rank) {
  const std::optional<CallProgress> r = recordOf(in, rank);
  if (!r) return "no call on this communicator yet";
  if (r->state == CallProgress::State::Running)
    return fmt::format("in {} {}", describeCall(*r), describeStep(*r));
  return fmt::format("after call {} ({})", r->seq + 1,
                     r->state == CallProgress::State::Done ? "done" : "failed");
}

bool exited(char state) {
  return state == '\0' || state == 'Z' || state == 'X';
}

// A killed process closes its sockets and shared-memory links before the kernel shows it as
// exited, so a lost link is reported a little before its process is gone: give it that time.
void awaitExit(const DiagnosisInput& in) {
  const PeerProcess* p = processOf(in, in.failed.wait);
  if (!in.peerLost || !p || !p->sameHost || p->process.startTime == 0) return;
  for (int i = 0; i < 50 && !exited(tl::ucx::processState(p->process)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace

std::optional<Culprit> culpritByState(const DiagnosisInput& in) {
  const int n = static_cast<int>(in.members.size());
  awaitExit(in);
  // 1 and 2: the kernel's view of the host's processes. A rank that failed a call first and
  // then exited or stopped is a consequence: ranks whose record does not say Failed come first.
  for (const bool consequence : {false, true}) {
    for (const char* kind : {"exited", "stopped"}) {
      for (int r = 0; r < n; ++r) {
        if (r == in.rank || !inspectable(in, r)) continue;
        const std::optional<CallProgress> rec = recordOf(in, r);
        if ((rec && rec->state == CallProgress::State::Failed) != consequence) continue;
        const char state = stateOf(in, r);
        if (kind[0] == 'e' && exited(state))
          return Culprit{r,
                         fmt::format("{} has exited ({})", describeRank(in, r), activity(in, r))};
        if (kind[0] == 's' && (state == 'T' || state == 't'))
          return Culprit{r,
                         fmt::format("{} is stopped (process state {}: SIGSTOP or a debugger), {}",
                                     describeRank(in, r), state, activity(in, r))};
      }
    }
  }
  if (!in.board) return Culprit{};  // rules 3 to 4 read the board
  // 3: a rank that has not entered this call.
  for (int r = 0; r < n; ++r) {
    if (r == in.rank || !recordKnown(in, r)) continue;
    const std::optional<CallProgress> rec = recordOf(in, r);
    if (!rec || rec->seq < in.failed.seq)
      return Culprit{r, fmt::format("{} has not entered call {} ({})", describeRank(in, r),
                                    in.failed.seq + 1, activity(in, r))};
  }
  return std::nullopt;
}

std::optional<Culprit> culpritNamedByPeer(const DiagnosisInput& in) {
  // 3b: a peer gave the exchange up because its own call failed first; what it named is the
  // cause. It withdraws as soon as its call fails and publishes what it named only after its own
  // diagnosis: the caller looks again until kVerdictWait has passed.
  if (!in.peerFailed || !in.board) return std::nullopt;
  const int n = static_cast<int>(in.members.size());
  for (int r = 0; r < n; ++r) {
    if (r == in.rank || !recordKnown(in, r)) continue;
    const std::optional<CallProgress> rec = recordOf(in, r);
    if (!rec || rec->state != CallProgress::State::Failed || rec->seq != in.failed.seq ||
        rec->culprit < 0 || rec->culprit >= n || rec->culprit == in.rank)
      continue;
    return Culprit{rec->culprit,
                   fmt::format("{} (named by {}, whose call {} failed first)",
                               describeRank(in, rec->culprit), describeRank(in, r), rec->seq + 1)};
  }
  return std::nullopt;
}

Culprit culpritByChain(const DiagnosisInput& in) {
  const int n = static_cast<int>(in.members.size());
  // 4: the wait-for chain.
  std::vector<int> chain{in.rank};
  for (int at = in.rank;;) {
    const std::optional<CallProgress> rec = recordOf(in, at);
    if (!rec) {
      if (inspectable(in, at))
        return {at, fmt::format("the wait-for chain from rank {} ends at {}, whose record of "
                                "this communicator cannot be read",
                                in.rank, describeRank(in, at))};
      return {at, fmt::format("the wait-for chain from rank {} ends at {}, on another host, "
                              "which did not answer",
                              in.rank, describeRank(in, at))};
    }
    // This rank's own record says Failed, but where it waited is what counts.
    const bool waiting = at == in.rank || rec->state == CallProgress::State::Running;
    if (!waiting || rec->wait < 0 || rec->wait >= n) {
      if (at == in.rank) return {};
      return {at, fmt::format("the wait-for chain from rank {} ends at {}, which waits for no "
                              "peer ({})",
                              in.rank, describeRank(in, at), activity(in, at))};
    }
    const int next = rec->wait;
    if (const auto loop = std::find(chain.begin(), chain.end(), next); loop != chain.end()) {
      // No rank of a cycle is behind the others: name its lowest, as every member would.
      std::string cycle;
      for (auto c = loop; c != chain.end(); ++c) cycle += fmt::format("{} -> ", *c);
      const int lowest = *std::min_element(loop, chain.end());
      return {lowest, fmt::format("ranks {}{} wait for each other (the ranks' calls do not "
                                  "match?), the lowest being {}",
                                  cycle, next, describeRank(in, lowest))};
    }
    chain.push_back(next);
    at = next;
  }
}

Culprit findCulprit(const DiagnosisInput& in) {
  if (std::optional<Culprit> c = culpritByState(in)) return *std::move(c);
  if (in.peerFailed) {
    const auto until = std::chrono::steady_clock::now() + kVerdictWait;
    for (;;) {
      if (std::optional<Culprit> c = culpritNamedByPeer(in)) return *std::move(c);
      if (std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return culpritByChain(in);
}

}  // namespace hccl::engine
