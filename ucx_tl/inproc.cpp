#include "ucx_tl/inproc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace hccl::tl {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t totalBytes(std::span<const IoVec> iov) {
  std::size_t n = 0;
  for (const IoVec& v : iov) n += v.length;
  return n;
}

// Copies between two fragmentations of the same number of bytes.
void copyIov(std::span<const IoVec> from, std::span<const IoVec> to) {
  std::size_t fi = 0, fo = 0, ti = 0, too = 0;
  while (fi < from.size() && ti < to.size()) {
    const std::size_t fleft = from[fi].length - fo;
    const std::size_t tleft = to[ti].length - too;
    if (fleft == 0) {
      ++fi, fo = 0;
      continue;
    }
    if (tleft == 0) {
      ++ti, too = 0;
      continue;
    }
    const std::size_t n = std::min(fleft, tleft);
    std::memcpy(static_cast<std::byte*>(to[ti].base) + too,
                static_cast<const std::byte*>(from[fi].base) + fo, n);
    fo += n;
    too += n;
  }
}

std::string tagString(Tag t) {
  return fmt::format("tag {{comm {}, seq {}, msg {}}}", t.comm, t.seq, t.msg);
}

void fail(Completion* c, Fault fault, std::string error) {
  c->bytes = 0;
  c->error = std::move(error);
  c->fault = fault;
  c->state = Completion::State::Failed;
}

}  // namespace

// ---- fabric
// ---------------------------------------------------------------------------------------

InProcFabric::InProcFabric(int size, InProcOptions options) : size_(size), options_(options) {
  if (size <= 0)
    throw std::invalid_argument(fmt::format("InProcFabric: size {} (must be >= 1)", size));
  if (options.timeout.count() < 0)
    throw std::invalid_argument(
        fmt::format("InProcFabric: timeout {} ms (must be >= 0)", options.timeout.count()));
  const auto n = static_cast<std::size_t>(size);
  channels_ = std::make_unique<Channel[]>(n * n);
  inboxes_ = std::make_unique<Inbox[]>(n);
  dead_ = std::make_unique<std::atomic<bool>[]>(n);
  links_.assign(n * n, LinkClass::Hccs);
  for (std::size_t r = 0; r < n; ++r) {
    links_[r * n + r] = LinkClass::Self;
    dead_[r] = false;
  }
  endpoints_.reserve(n);
  for (int r = 0; r < size; ++r) endpoints_.push_back(std::make_unique<InProcTransport>(*this, r));
}

InProcFabric::~InProcFabric() = default;

InProcTransport& InProcFabric::endpoint(int rank) {
  if (rank < 0 || rank >= size_)
    throw std::out_of_range(fmt::format("InProcFabric: rank {} outside [0, {})", rank, size_));
  return *endpoints_[static_cast<std::size_t>(rank)];
}

void InProcFabric::setLinkClass(int a, int b, LinkClass c) {
  if (a < 0 || a >= size_ || b < 0 || b >= size_)
    throw std::out_of_range(fmt::format("InProcFabric: link {}-{} outside [0, {})", a, b, size_));
  const auto n = static_cast<std::size_t>(size_);
  links_[static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b)] = c;
  links_[static_cast<std::size_t>(b) * n + static_cast<std::size_t>(a)] = c;
}

LinkClass InProcFabric::linkClass(int a, int b) const {
  if (a < 0 || a >= size_ || b < 0 || b >= size_) return LinkClass::Hccs;
  return links_[static_cast<std::size_t>(a * size_ + b)];
}

void InProcFabric::markDead(int rank) {
  if (rank < 0 || rank >= size_)
    throw std::out_of_range(fmt::format("InProcFabric: rank {} outside [0, {})", rank, size_));
  dead_[static_cast<std::size_t>(rank)] = true;
  ++generation_;
  wakeAll();
}

bool InProcFabric::dead(int rank) const {
  return rank >= 0 && rank < size_ && dead_[static_cast<std::size_t>(rank)].load();
}

void InProcFabric::abort(const std::string& reason) {
  {
    std::lock_guard lk(abortMu_);
    if (aborted_.load()) return;
    abortReason_ = reason;
    aborted_ = true;
  }
  ++generation_;
  wakeAll();
}

std::string InProcFabric::abortReason() const {
  std::lock_guard lk(abortMu_);
  return abortReason_;
}

void InProcFabric::deliver(int rank, Event ev) {
  Inbox& box = inbox(rank);
  {
    std::lock_guard lk(box.mu);
    box.events.push_back(std::move(ev));
  }
  box.cv.notify_all();
}

void InProcFabric::wakeAll() {
  // Taking each inbox lock orders the generation bump before a waiter's predicate check.
  for (int r = 0; r < size_; ++r) {
    Inbox& box = inbox(r);
    { std::lock_guard lk(box.mu); }
    box.cv.notify_all();
  }
}

// ---- endpoint
// -------------------------------------------------------------------------------------

InProcTransport::InProcTransport(InProcFabric& fabric, int rank) : fabric_(fabric), rank_(rank) {}

LinkClass InProcTransport::linkClass(int peer) const {
  return fabric_.linkClass(rank_, peer);
}

std::string InProcTransport::describe(Dir dir, int peer, Tag tag, std::size_t bytes) const {
  return fmt::format("rank {} {} rank {} ({}), {}, {} bytes", rank_,
                     dir == Dir::Send ? "send to" : "recv from", peer, name(linkClass(peer)),
                     tagString(tag), bytes);
}

void InProcTransport::send(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) {
  post(Dir::Send, peer, iov, tag, done);
}

void InProcTransport::recv(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) {
  post(Dir::Recv, peer, iov, tag, done);
}

void InProcTransport::post(Dir dir, int peer, std::span<const IoVec> iov, Tag tag,
                           Completion* done) {
  const std::size_t bytes = totalBytes(iov);
  done->state = Completion::State::Pending;
  done->bytes = 0;
  done->error.clear();
  done->fault = Fault::None;
  if (peer < 0 || peer >= fabric_.size())
    return fail(done, Fault::Transport,
                fmt::format("rank {} {} rank {}: not a rank of this fabric (ranks 0..{})", rank_,
                            dir == Dir::Send ? "send to" : "recv from", peer, fabric_.size() - 1));
  if (fabric_.aborted())
    return fail(done, Fault::Cancelled,
                describe(dir, peer, tag, bytes) + ": aborted: " + fabric_.abortReason());
  if (fabric_.dead(rank_))
    return fail(done, Fault::PeerLost,
                describe(dir, peer, tag, bytes) +
                    fmt::format(": rank {} itself is dead (fault injection)", rank_));
  if (fabric_.dead(peer))
    return fail(done, Fault::PeerLost,
                describe(dir, peer, tag, bytes) +
                    fmt::format(": peer rank {} is dead (fault injection)", peer));

  const int src = dir == Dir::Send ? rank_ : peer;
  const int dst = dir == Dir::Send ? peer : rank_;
  InProcFabric::Channel& ch = fabric_.channel(src, dst);
  // The copy and the delivery to the peer's inbox happen under the channel lock, so a concurrent
  // cancel by the peer finds its transfer either still queued or already in its inbox.
  std::lock_guard lk(ch.mu);
  std::deque<InProcFabric::Op>& mine = dir == Dir::Send ? ch.sends : ch.recvs;
  std::deque<InProcFabric::Op>& theirs = dir == Dir::Send ? ch.recvs : ch.sends;
  auto it = std::find_if(theirs.begin(), theirs.end(),
                         [&](const InProcFabric::Op& op) { return op.tag == tag; });
  if (it == theirs.end()) {
    mine.push_back(
        {rank_, peer, tag, std::vector<IoVec>(iov.begin(), iov.end()), bytes, done, Clock::now()});
    return;
  }
  InProcFabric::Op other = std::move(*it);
  theirs.erase(it);

  if (other.bytes != bytes) {
    const std::size_t sendBytes = dir == Dir::Send ? bytes : other.bytes;
    const std::size_t recvBytes = dir == Dir::Send ? other.bytes : bytes;
    const std::string why = fmt::format(
        "length mismatch: rank {} sends {} bytes to rank {}, which posted a receive of {} bytes "
        "({})",
        src, sendBytes, dst, recvBytes, tagString(tag));
    fabric_.deliver(peer, {other.done, Completion::State::Failed, 0, why, Fault::Mismatch});
    return fail(done, Fault::Mismatch, why);
  }
  if (dir == Dir::Send)
    copyIov(iov, other.iov);
  else
    copyIov(other.iov, iov);
  fabric_.bytesMoved_ += bytes;
  fabric_.deliver(peer, {other.done, Completion::State::Done, bytes, {}});
  done->bytes = bytes;
  done->state = Completion::State::Done;
}

int InProcTransport::progress() {
  int delivered = 0;
  {
    InProcFabric::Inbox& box = fabric_.inbox(rank_);
    std::lock_guard lk(box.mu);
    drained_.swap(box.events);
  }
  for (InProcFabric::Event& ev : drained_) {
    ev.done->bytes = ev.bytes;
    ev.done->error = std::move(ev.error);
    ev.done->fault = ev.fault;
    ev.done->state = ev.state;
    ++delivered;
  }
  drained_.clear();
  return delivered + failStale();
}

bool InProcTransport::scanDue(Clock::time_point now) const {
  return fabric_.options().timeout.count() > 0 && now >= nextScan_;
}

// Fails this rank's unmatched transfers that timed out or involve a dead rank, or all of them
// after abort. Runs only when a timeout check is due or a fault was injected since the last scan.
int InProcTransport::failStale() {
  const Clock::time_point now = Clock::now();
  const std::uint64_t gen = fabric_.generation_.load();
  if (!scanDue(now) && gen == seenGeneration_) return 0;
  seenGeneration_ = gen;
  const std::chrono::milliseconds timeout = fabric_.options().timeout;
  if (timeout.count() > 0) nextScan_ = now + std::max(std::chrono::milliseconds(1), timeout / 10);

  const bool aborted = fabric_.aborted();
  const std::string reason = aborted ? fabric_.abortReason() : std::string();
  int failed = 0;
  auto scan = [&](Dir dir, int peer, std::deque<InProcFabric::Op>& queue) {
    for (auto it = queue.begin(); it != queue.end();) {
      std::string why;
      Fault fault = Fault::PeerLost;
      if (aborted) {
        why = "aborted: " + reason;
        fault = Fault::Cancelled;
      } else if (fabric_.dead(rank_)) {
        why = fmt::format("rank {} itself is dead (fault injection)", rank_);
      } else if (fabric_.dead(peer)) {
        why = fmt::format("peer rank {} is dead (fault injection)", peer);
      } else if (timeout.count() > 0 && now - it->posted >= timeout) {
        fault = Fault::Timeout;
        why = fmt::format("no progress for {} ms (rank {} posted no matching {})", timeout.count(),
                          peer, dir == Dir::Send ? "receive" : "send");
      }
      if (why.empty()) {
        ++it;
        continue;
      }
      fail(it->done, fault, describe(dir, peer, it->tag, it->bytes) + ": " + why);
      it = queue.erase(it);
      ++failed;
    }
  };
  for (int peer = 0; peer < fabric_.size(); ++peer) {
    {
      InProcFabric::Channel& out = fabric_.channel(rank_, peer);
      std::lock_guard lk(out.mu);
      scan(Dir::Send, peer, out.sends);
    }
    InProcFabric::Channel& in = fabric_.channel(peer, rank_);
    std::lock_guard lk(in.mu);
    scan(Dir::Recv, peer, in.recvs);
  }
  return failed;
}

void InProcTransport::cancel(Completion* done) {
  if (done == nullptr || !done->pending()) return;
  auto take = [&](std::deque<InProcFabric::Op>& queue) {
    auto it = std::find_if(queue.begin(), queue.end(),
                           [&](const InProcFabric::Op& op) { return op.done == done; });
    if (it == queue.end()) return false;
    queue.erase(it);
    return true;
  };
  bool found = false;
  for (int peer = 0; peer < fabric_.size() && !found; ++peer) {
    {
      InProcFabric::Channel& out = fabric_.channel(rank_, peer);
      std::lock_guard lk(out.mu);
      found = take(out.sends);
    }
    if (found) break;
    InProcFabric::Channel& in = fabric_.channel(peer, rank_);
    std::lock_guard lk(in.mu);
    found = take(in.recvs);
  }
  if (!found) {
    // Matched already: its completion waits in the inbox; drop it so it is never delivered.
    InProcFabric::Inbox& box = fabric_.inbox(rank_);
    std::lock_guard lk(box.mu);
    std::erase_if(box.events, [&](const InProcFabric::Event& ev) { return ev.done == done; });
  }
  fail(done, Fault::Cancelled, fmt::format("rank {}: transfer cancelled", rank_));
}

void InProcTransport::wait(std::chrono::milliseconds max) {
  Clock::time_point deadline = Clock::now() + max;
  if (fabric_.options().timeout.count() > 0) deadline = std::min(deadline, nextScan_);
  InProcFabric::Inbox& box = fabric_.inbox(rank_);
  std::unique_lock lk(box.mu);
  box.cv.wait_until(lk, deadline, [&] {
    return !box.events.empty() || fabric_.generation_.load() != seenGeneration_;
  });
}

}  // namespace hccl::tl
