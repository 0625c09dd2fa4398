// ShmTransport: tagged messages over the shared-memory link; see shm_transport.hpp.
#include "ucx_tl/shm_transport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace hccl::tl {
namespace {

using Clock = std::chrono::steady_clock;

// What precedes a message's bytes in its slot (inline), or rides as a block's meta.
struct Header {
  std::uint32_t comm;
  std::uint32_t seq;
  std::uint32_t msg;
  std::uint32_t flags;  // kExposed: a receiver's buffer for its sender to write (a push)
  std::uint64_t bytes;
};
static_assert(sizeof(Header) == 24);
constexpr std::uint32_t kExposed = 1;

Header headerOf(Tag tag, std::size_t bytes, bool exposed = false) {
  return {tag.comm, tag.seq, tag.msg, exposed ? kExposed : 0, bytes};
}

std::size_t total(std::span<const IoVec> iov) {
  std::size_t n = 0;
  for (const IoVec& v : iov) n += v.length;
  return n;
}

// Progress calls between two looks at the clock (timeouts, liveness), and between two looks at
// a link peer that nothing waits for (so that a sender never stalls on a full channel).
constexpr unsigned kClockEvery = 256;
constexpr unsigned kIdlePeerEvery = 64;
constexpr unsigned kBaseIdleEvery = 16;

}  // namespace

// A post taken off a channel: in its slot (held) until released, or copied out.
struct ShmTransport::Message {
  ShmLink::Post post;
  Tag tag;
  std::size_t bytes = 0;
  bool inSlot = true;
  std::vector<std::byte> copy;  // when copied out of its slot
  std::string error;            // copying it out failed: its receive fails with this
  Fault fault = Fault::None;
  // A receiver's exposed buffer (a push): matched by the sender's sendPushed, never copied out
  // of its slot (the copy would be of nothing: the bytes are to be written into the receiver).
  bool exposed = false;

  bool block() const { return inSlot && post.block; }
  const std::byte* bytesInline() const {
    return inSlot ? post.data.data() + sizeof(Header) : copy.data();
  }
};

struct ShmTransport::Op {
  enum class Kind : std::uint8_t { Send, Recv, Direct };
  Kind kind = Kind::Send;
  Completion* done = nullptr;
  int peer = 0;
  Tag tag;
  std::size_t bytes = 0;
  std::vector<IoVec> iov;
  std::uint64_t number = 0;        // a published block send: its post
  std::vector<std::byte> staging;  // a block send whose ranges do not fit in a slot, packed
  Message msg;                     // a direct receive: what it matched
  // Send: a receiver exposing its iov for a push (recvPushed), complete when the pusher releases
  // it. Direct: a pushed send (sendPushed), matching only exposures.
  bool exposed = false;
};

struct ShmTransport::Peer {
  int rank = 0;
  std::deque<Op*> sends;           // not yet published, in posting order
  std::vector<Op*> blocks;         // published block sends, until their post is released
  std::vector<Op*> recvs;          // posted receives not yet matched, in posting order
  std::deque<Message> unexpected;  // taken posts without a receive yet, in arrival order
  Clock::time_point lastProgress;
  bool active = false;

  bool waiting() const { return !sends.empty() || !blocks.empty() || !recvs.empty(); }
  bool busy() const { return waiting() || !unexpected.empty(); }
};

ShmTransport::ShmTransport(std::shared_ptr<Transport> base, std::shared_ptr<ShmLink> link)
    : base_(std::move(base)), link_(std::move(link)) {
  if (!base_ || !link_) throw std::invalid_argument("ShmTransport: no base transport or link");
  if (base_->size() != link_->size() || base_->rank() != link_->rank())
    throw std::invalid_argument(
        fmt::format("ShmTransport: the link is rank {} of {}, the base transport rank {} of {}",
                    link_->rank(), link_->size(), base_->rank(), base_->size()));
  rank_ = base_->rank();
  inlineBytes_ = link_->slotBytes() - sizeof(Header);
  blocks_ = link_->singleCopy() == SingleCopy::Cma;
  peers_.resize(static_cast<std::size_t>(base_->size()));
  for (int q : link_->localRanks()) {
    if (q == rank_) continue;
    auto p = std::make_unique<Peer>();
    p->rank = q;
    peers_[static_cast<std::size_t>(q)] = std::move(p);
  }
}

ShmTransport::~ShmTransport() = default;

int ShmTransport::rank() const {
  return rank_;
}
int ShmTransport::size() const {
  return base_->size();
}
LinkClass ShmTransport::linkClass(int peer) const {
  return base_->linkClass(peer);
}

bool ShmTransport::onLink(int peer, std::size_t bytes) const {
  return peer >= 0 && peer < size() && peers_[static_cast<std::size_t>(peer)] &&
         (bytes <= inlineBytes_ || blocks_);
}

bool ShmTransport::direct(int peer, std::size_t bytes) const {
  return onLink(peer, bytes);
}

ShmTransport::Peer* ShmTransport::peerOf(int peer) {
  Peer* p = peers_[static_cast<std::size_t>(peer)].get();
  if (!p->active) {
    p->active = true;
    p->lastProgress = coarseNow_;
    active_.push_back(p);
  }
  return p;
}

ShmTransport::Op* ShmTransport::newOp() {
  if (freeOps_.empty()) {
    ops_.push_back(std::make_unique<Op>());
    return ops_.back().get();
  }
  Op* op = freeOps_.back();
  freeOps_.pop_back();
  return op;
}

void ShmTransport::freeOp(Op* op) {
  op->done = nullptr;
  op->iov.clear();
  op->staging.clear();
  op->msg = Message{};
  op->exposed = false;
  freeOps_.push_back(op);
}

void ShmTransport::complete(Op& op, Completion::State state, std::string error, Fault f) {
  Completion* c = op.done;
  c->bytes = state == Completion::State::Done ? op.bytes : 0;
  c->error = std::move(error);
  c->fault = f;
  c->state = state;
  if (op.kind == Op::Kind::Direct && state == Completion::State::Done) {
    direct_.push_back(&op);
    return;
  }
  freeOp(&op);
}

std::string ShmTransport::describe(const Op& op) const {
  // An exposure is the receiving end of a push, a pushed Direct op its sending end.
  const bool sending = (op.kind == Op::Kind::Send) != op.exposed;
  return fmt::format(
      "{}{} of {} bytes {} rank {} (tag {{comm {}, seq {}, msg {}}}) over the HCCS class "
      "(shared-memory link)",
      op.exposed ? "pushed " : "", sending ? "send" : "receive", op.bytes, sending ? "to" : "from",
      op.peer, op.tag.comm, op.tag.seq, op.tag.msg);
}

// ---- sending ------------------------------------------------------------------------------------

void ShmTransport::send(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) {
  const std::size_t bytes = total(iov);
  if (!onLink(peer, bytes)) {
    ++counters_.viaBase;
    base_->send(peer, iov, tag, done);
    if (done->pending()) basePending_.push_back(done);
    return;
  }
  queueSend(peer, iov, tag, bytes, /*exposed=*/false, done);
}

// A send over the link (exposed: a push exposure): posted now if nothing waits before it.
void ShmTransport::queueSend(int peer, std::span<const IoVec> iov, Tag tag, std::size_t bytes,
                             bool exposed, Completion* done) {
  Op* op = newOp();
  op->kind = Op::Kind::Send;
  op->exposed = exposed;
  op->done = done;
  op->peer = peer;
  op->tag = tag;
  op->bytes = bytes;
  op->iov.assign(iov.begin(), iov.end());
  done->state = Completion::State::Pending;
  Peer* p = peerOf(peer);
  if (p->sends.empty() && trySend(*p, *op)) return;
  p->sends.push_back(op);
}

bool ShmTransport::trySend(Peer& p, Op& op) {
  const std::span<std::byte> slot = link_->tryAcquire(p.rank);
  if (slot.empty()) return false;
  const Header h = headerOf(op.tag, op.bytes, op.exposed);
  if (op.bytes <= inlineBytes_ && !op.exposed) {
    std::memcpy(slot.data(), &h, sizeof h);
    std::byte* at = slot.data() + sizeof h;
    for (const IoVec& v : op.iov) {
      if (v.length > 0) std::memcpy(at, v.base, v.length);
      at += v.length;
    }
    link_->publish(p.rank, sizeof h + op.bytes);
    ++counters_.inlineSends;
    p.lastProgress = coarseNow_;
    complete(op, Completion::State::Done);
    return true;
  }
  std::erase_if(op.iov, [](const IoVec& v) { return v.length == 0; });
  if (!link_->blockFits(op.iov.size(), sizeof h)) {
    // An exposure is staged too: the pusher writes the staging buffer, unpacked on completion.
    op.staging.resize(op.bytes);
    std::byte* at = op.staging.data();
    for (const IoVec& v : op.iov) {
      std::memcpy(at, v.base, v.length);
      at += v.length;
    }
    op.iov.assign(1, IoVec{op.staging.data(), op.bytes});
  }
  const Completion c =
      link_->publishBlock(p.rank, op.iov, std::as_bytes(std::span(&h, 1)), &op.number);
  if (c.state != Completion::State::Done) {
    complete(op, Completion::State::Failed, fmt::format("{}: {}", describe(op), c.error), c.fault);
    return true;
  }
  ++counters_.blockSends;
  p.lastProgress = coarseNow_;
  p.blocks.push_back(&op);
  return true;
}

// ---- receiving ----------------------------------------------------------------------------------

void ShmTransport::recv(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) {
  const std::size_t bytes = total(iov);
  if (!onLink(peer, bytes)) {
    ++counters_.viaBase;
    base_->recv(peer, iov, tag, done);
    if (done->pending()) basePending_.push_back(done);
    return;
  }
  Op* op = newOp();
  op->kind = Op::Kind::Recv;
  op->done = done;
  op->peer = peer;
  op->tag = tag;
  op->bytes = bytes;
  op->iov.assign(iov.begin(), iov.end());
  done->state = Completion::State::Pending;
  Peer* p = peerOf(peer);
  p->recvs.push_back(op);
  pump(*p);
}

void ShmTransport::recvDirect(int peer, std::size_t bytes, Tag tag, Completion* done) {
  if (!onLink(peer, bytes))
    throw std::logic_error(
        fmt::format("ShmTransport::recvDirect: {} bytes from rank {} do not travel over the link",
                    bytes, peer));
  queueDirect(peer, bytes, tag, /*exposed=*/false, done);
}

// A direct receive (exposed: of a push exposure), matched in posting order.
void ShmTransport::queueDirect(int peer, std::size_t bytes, Tag tag, bool exposed,
                               Completion* done) {
  Op* op = newOp();
  op->kind = Op::Kind::Direct;
  op->exposed = exposed;
  op->done = done;
  op->peer = peer;
  op->tag = tag;
  op->bytes = bytes;
  done->state = Completion::State::Pending;
  Peer* p = peerOf(peer);
  p->recvs.push_back(op);
  pump(*p);
}

// A post just taken off peer p's channel: its receive's, or an unexpected message.
void ShmTransport::take(Peer& p, const ShmLink::Post& post) {
  Message m;
  m.post = post;
  Header h;
  if (post.block) {
    if (post.meta.size() != sizeof h)
      throw std::runtime_error(fmt::format(
          "shared-memory link: block post {} from rank {} carries {} meta bytes, not a message "
          "header",
          post.number, p.rank, post.meta.size()));
    std::memcpy(&h, post.meta.data(), sizeof h);
  } else {
    if (post.data.size() < sizeof h)
      throw std::runtime_error(fmt::format(
          "shared-memory link: post {} from rank {} has {} bytes, less than a message header",
          post.number, p.rank, post.data.size()));
    std::memcpy(&h, post.data.data(), sizeof h);
  }
  m.tag = {h.comm, h.seq, h.msg};
  m.bytes = static_cast<std::size_t>(h.bytes);
  m.exposed = (h.flags & kExposed) != 0;
  if (m.exposed && !post.block)
    throw std::runtime_error(
        fmt::format("shared-memory link: post {} from rank {} exposes a buffer but is not a block",
                    post.number, p.rank));
  p.lastProgress = coarseNow_;
  if (!match(p, m)) p.unexpected.push_back(std::move(m));
}

// Earlier posts first: a receive meets the unexpected messages before the channel's new posts.
void ShmTransport::pump(Peer& p) {
  for (auto it = p.unexpected.begin(); it != p.unexpected.end() && !p.recvs.empty();) {
    if (match(p, *it))
      it = p.unexpected.erase(it);
    else
      ++it;
  }
  ShmLink::Post post;
  while (link_->tryTake(p.rank, false, &post)) take(p, post);
  // A full window stops the sender: free the oldest slot, whatever holds it (a post nobody waits
  // for yet, or one a direct receive keeps), by copying its message out, then take on.
  while (link_->windowFull(p.rank, false)) {
    Message* oldest = nullptr;
    // Exposures stay: their pusher releases them once it wrote (at most a step's pushes are
    // exposed ahead of their sends, fewer than a window).
    for (Message& m : p.unexpected)
      if (m.inSlot && !m.exposed && (!oldest || m.post.number < oldest->post.number)) oldest = &m;
    for (Op* d : direct_)
      if (d->peer == p.rank && d->msg.inSlot && !d->msg.exposed &&
          (!oldest || d->msg.post.number < oldest->post.number))
        oldest = &d->msg;
    if (!oldest) break;
    copyOut(p, *oldest);
    while (link_->tryTake(p.rank, false, &post)) take(p, post);
  }
}

void ShmTransport::copyOut(Peer& p, Message& m) {
  ++counters_.unexpected;
  if (m.post.block) {
    m.copy.resize(m.bytes);
    const Completion c = link_->read(m.post, 0, m.copy.data(), m.bytes);
    if (c.state != Completion::State::Done) {
      m.error = c.error;
      m.fault = link_->peerRunning(p.rank) ? c.fault : Fault::PeerLost;
    }
  } else {
    m.copy.assign(m.post.data.begin() + sizeof(Header), m.post.data.end());
  }
  link_->releasePost(m.post);
  m.inSlot = false;
}

bool ShmTransport::match(Peer& p, Message& m) {
  const auto it = std::find_if(p.recvs.begin(), p.recvs.end(), [&](const Op* op) {
    return op->tag == m.tag && op->exposed == m.exposed;
  });
  if (it == p.recvs.end()) return false;
  Op* op = *it;
  p.recvs.erase(it);
  deliver(p, *op, m);
  return true;
}

void ShmTransport::deliver(Peer& p, Op& op, Message& m) {
  const auto releaseIt = [&] {
    if (m.inSlot) link_->releasePost(m.post);
    m.inSlot = false;
  };
  if (m.bytes != op.bytes) {
    // A mismatched exposure stays held: releasing it would complete its receive.
    if (!m.exposed) releaseIt();
    complete(op, Completion::State::Failed,
             fmt::format("{}: rank {} sent {} bytes, this rank expects {}", describe(op), p.rank,
                         m.bytes, op.bytes),
             Fault::Mismatch);
    return;
  }
  if (!m.error.empty()) {
    const Fault f = m.fault;
    std::string why = fmt::format("{}: {}", describe(op), m.error);
    complete(op, Completion::State::Failed, std::move(why), f);
    return;
  }
  if (op.kind == Op::Kind::Direct) {
    op.msg = std::move(m);
    m.inSlot = false;  // the direct receive holds the slot now
    complete(op, Completion::State::Done);
    return;
  }
  if (!m.block()) {
    const std::byte* from = m.bytesInline();
    for (const IoVec& v : op.iov) {
      if (v.length > 0) std::memcpy(v.base, from, v.length);
      from += v.length;
    }
    releaseIt();
    complete(op, Completion::State::Done);
    return;
  }
  std::size_t offset = 0;
  for (const IoVec& v : op.iov) {
    if (v.length == 0) continue;
    const Completion c = link_->read(m.post, offset, v.base, v.length);
    if (c.state != Completion::State::Done) {
      releaseIt();
      const Fault f = link_->peerRunning(p.rank) ? c.fault : Fault::PeerLost;
      complete(op, Completion::State::Failed, fmt::format("{}: {}", describe(op), c.error), f);
      return;
    }
    offset += v.length;
  }
  releaseIt();
  complete(op, Completion::State::Done);
}

// ---- receiving in place -------------------------------------------------------------------------

ShmTransport::Op* ShmTransport::findDirect(const Completion* done) const {
  for (Op* op : direct_)
    if (op->done == done) return op;
  return nullptr;
}

Completion ShmTransport::readDirect(const Completion* done, std::size_t offset,
                                    std::span<std::byte> into, std::span<const std::byte>* view) {
  Op* op = findDirect(done);
  if (!op || op->exposed)
    throw std::logic_error("ShmTransport::readDirect: not a completed direct receive");
  const Message& m = op->msg;
  if (offset > m.bytes || into.size() > m.bytes - offset)
    throw std::invalid_argument(
        fmt::format("ShmTransport::readDirect: bytes [{}, {}) outside a message of {}", offset,
                    offset + into.size(), m.bytes));
  Completion c;
  if (!m.block()) {
    *view = {m.bytesInline() + offset, into.size()};
    c.state = Completion::State::Done;
    c.bytes = into.size();
    return c;
  }
  c = link_->read(m.post, offset, into.data(), into.size());
  *view = into;
  if (c.state != Completion::State::Done) {
    if (!link_->peerRunning(op->peer)) c.fault = Fault::PeerLost;
    c.error = fmt::format("{}: {}", describe(*op), c.error);
  }
  return c;
}

void ShmTransport::finishDirect(Completion* done) {
  const auto it =
      std::find_if(direct_.begin(), direct_.end(), [&](const Op* op) { return op->done == done; });
  if (it == direct_.end()) return;
  Op* op = *it;
  direct_.erase(it);
  if (op->msg.inSlot) link_->releasePost(op->msg.post);
  freeOp(op);
}

// ---- pushing -----------------------------------------------------------------------------------

bool ShmTransport::pushable(int peer, std::size_t bytes) const {
  return blocks_ && bytes > inlineBytes_ && onLink(peer, bytes);
}

// The receiving end is a block send of the receiver's iov, flagged: it completes when the pusher
// releases it, which it does once it wrote every byte.
void ShmTransport::recvPushed(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) {
  const std::size_t bytes = total(iov);
  if (!pushable(peer, bytes))
    throw std::logic_error(
        fmt::format("ShmTransport::recvPushed: {} bytes from rank {} are not pushed over the link",
                    bytes, peer));
  queueSend(peer, iov, tag, bytes, /*exposed=*/true, done);
}

// The sending end is a direct receive of the exposure: Done once it is there.
void ShmTransport::sendPushed(int peer, std::size_t bytes, Tag tag, Completion* done) {
  if (!pushable(peer, bytes))
    throw std::logic_error(fmt::format(
        "ShmTransport::sendPushed: {} bytes to rank {} are not pushed over the link", bytes, peer));
  queueDirect(peer, bytes, tag, /*exposed=*/true, done);
}

Completion ShmTransport::writeDirect(const Completion* done, std::size_t offset,
                                     std::span<const std::byte> from) {
  Op* op = findDirect(done);
  if (!op || !op->exposed)
    throw std::logic_error("ShmTransport::writeDirect: not a pushed send whose receiver is known");
  const Message& m = op->msg;
  if (offset > m.bytes || from.size() > m.bytes - offset)
    throw std::invalid_argument(
        fmt::format("ShmTransport::writeDirect: bytes [{}, {}) outside a message of {}", offset,
                    offset + from.size(), m.bytes));
  Completion c = link_->write(m.post, offset, from.data(), from.size());
  if (c.state != Completion::State::Done) {
    if (!link_->peerRunning(op->peer)) c.fault = Fault::PeerLost;
    c.error = fmt::format("{}: {}", describe(*op), c.error);
  }
  return c;
}

// ---- progress, failure, cancellation ------------------------------------------------------------

int ShmTransport::progress() {
  // The other transport only carries messages to other servers (and this rank's own): when none
  // of those is in flight it needs progress only now and then (connections being set up, peers'
  // messages to buffer), not on every call of a small collective's critical path.
  int n = 0;
  if (!basePending_.empty() || ticks_ % kBaseIdleEvery == 0) {
    n = base_->progress();
    std::erase_if(basePending_, [](const Completion* c) { return !c->pending(); });
  }
  for (std::size_t i = 0; i < active_.size();) {
    Peer& p = *active_[i];
    while (!p.sends.empty() && trySend(p, *p.sends.front())) {
      p.sends.pop_front();
      ++n;
    }
    for (auto it = p.blocks.begin(); it != p.blocks.end();) {
      if (!link_->released(p.rank, (*it)->number)) {
        ++it;
        continue;
      }
      p.lastProgress = coarseNow_;
      Op& op = **it;
      if (op.exposed && !op.staging.empty()) {  // a staged exposure: what the pusher wrote
        const std::byte* from = op.staging.data();
        for (const IoVec& v : op.iov) {
          std::memcpy(v.base, from, v.length);
          from += v.length;
        }
      }
      complete(op, Completion::State::Done);
      it = p.blocks.erase(it);
      ++n;
    }
    pump(p);
    if (p.busy() || link_->held(p.rank, false) > 0) {
      ++i;
      continue;
    }
    p.active = false;
    active_[i] = active_.back();
    active_.pop_back();
  }
  ++ticks_;
  if (ticks_ % kIdlePeerEvery == 0) {
    // A peer nothing waits for may still fill its channel (calls this rank has not reached yet).
    const auto& local = link_->localRanks();
    const int q = local[(ticks_ / kIdlePeerEvery) % local.size()];
    if (q != rank_ && !peers_[static_cast<std::size_t>(q)]->active) pump(*peerOf(q));
  }
  if (ticks_ % kClockEvery == 0) checkStale();
  return n;
}

void ShmTransport::checkStale() {
  const auto now = Clock::now();
  coarseNow_ = now;
  const ShmOptions& o = link_->options();
  // Time in which nobody progressed this transport (the caller computed) is no link's fault.
  if (now - lastCheck_ > std::chrono::seconds(1))
    for (Peer* p : active_) p->lastProgress = now;
  lastCheck_ = now;
  const bool liveness = now >= nextLiveness_;
  if (liveness) nextLiveness_ = now + o.liveness;
  for (Peer* p : active_) {
    if (!p->waiting()) continue;
    std::string why;
    Fault f = Fault::None;
    if (o.timeout.count() > 0 && now - p->lastProgress > o.timeout) {
      why = fmt::format(
          "no progress on this link for {} ms (the transport's timeout; {}; {} "
          "messages of that rank wait for a receive here)",
          o.timeout.count(), link_->channelState(p->rank), p->unexpected.size());
      f = Fault::Timeout;
    } else if (liveness && !link_->peerRunning(p->rank)) {
      pump(*p);  // what it posted before it went still counts
      why = "the peer's process on this server has exited";
      f = Fault::PeerLost;
    }
    if (f == Fault::None) continue;
    const auto fail = [&](Op* op) {
      complete(*op, Completion::State::Failed, fmt::format("{}: {}", describe(*op), why), f);
    };
    for (Op* op : p->sends) fail(op);
    p->sends.clear();
    for (Op* op : p->blocks) {
      link_->revoke(p->rank, op->number);
      fail(op);
    }
    p->blocks.clear();
    for (Op* op : p->recvs) fail(op);
    p->recvs.clear();
  }
}

void ShmTransport::cancel(Completion* done) {
  for (Peer* p : active_) {
    const auto cancelled = [&](Op* op) {
      complete(*op, Completion::State::Failed, fmt::format("{}: cancelled", describe(*op)),
               Fault::Cancelled);
    };
    for (auto it = p->sends.begin(); it != p->sends.end(); ++it) {
      if ((*it)->done != done) continue;
      Op* op = *it;
      p->sends.erase(it);
      cancelled(op);
      return;
    }
    for (auto it = p->blocks.begin(); it != p->blocks.end(); ++it) {
      if ((*it)->done != done) continue;
      Op* op = *it;
      p->blocks.erase(it);
      link_->revoke(p->rank, op->number);  // the reader's copy, if it still runs, fails
      cancelled(op);
      return;
    }
    for (auto it = p->recvs.begin(); it != p->recvs.end(); ++it) {
      if ((*it)->done != done) continue;
      Op* op = *it;
      p->recvs.erase(it);
      cancelled(op);
      return;
    }
  }
  if (Op* op = findDirect(done)) {
    if (op->exposed) {
      // A push begun but not finished: releasing the exposure would tell the receiver its bytes
      // are there. It stays held (its slot with it; the call has failed): the receiver's receive
      // fails by its own waits (the peer's failure, or the timeout).
      std::erase(direct_, op);
      abandoned_.push_back(op);
      return;
    }
    finishDirect(done);
    return;
  }
  base_->cancel(done);
  std::erase(basePending_, done);
}

}  // namespace hccl::tl
