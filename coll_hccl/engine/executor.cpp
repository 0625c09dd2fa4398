#include "coll_hccl/engine/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

namespace hccl::engine {
namespace {

// A schedule or binding problem found while planning or running; the message names the place.
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

FailKind kindOf(tl::Fault f) {
  switch (f) {
    case tl::Fault::Timeout:
      return FailKind::Timeout;
    case tl::Fault::PeerLost:
      return FailKind::PeerLost;
    case tl::Fault::Mismatch:
      return FailKind::Mismatch;
    case tl::Fault::Withdrawn:
      return FailKind::PeerFailed;
    case tl::Fault::None:
    case tl::Fault::Cancelled:
    case tl::Fault::Transport:
      break;
  }
  return FailKind::Transport;
}

std::string tagString(tl::Tag t) {
  return fmt::format("tag {{comm {}, seq {}, msg {}}}", t.comm, t.seq, t.msg);
}

// Walks a validated, fully bound logical range piece by piece.
class Cursor {
 public:
  Cursor(const Binding& b, std::uint64_t offset, std::size_t elemSize)
      : segs_(b.segments()), k_(b.find(offset)), pos_(offset), elemSize_(elemSize) {}
  std::byte* ptr() const {
    return static_cast<std::byte*>(segs_[k_].data) + (pos_ - segs_[k_].start) * elemSize_;
  }
  std::uint64_t run() const { return segs_[k_].start + segs_[k_].count - pos_; }
  void advance(std::uint64_t n) {
    pos_ += n;
    if (pos_ == segs_[k_].start + segs_[k_].count) ++k_;
  }

 private:
  std::span<const Segment> segs_;
  std::size_t k_;
  std::uint64_t pos_;
  std::size_t elemSize_;
};

bool memOverlap(const std::byte* x, const std::byte* y, std::size_t bytes) {
  return bytes > 0 && x < y + bytes && y < x + bytes;
}

// Pieces of a peer's buffer a fed Reduce reads at a time: they stay in the cache between the
// copy that brings them and the reduction that reads them (a piece, the local operand's and the
// destination's: 768 KiB, within a 1 MiB L2). Each piece is one CMA call, whose fixed cost
// (the system call, the peer's page-table walk: about 2 us on the 2-core VM) 64 KiB pieces paid
// 16 times per MiB: one call took 4.3 us for 64 KiB and 9.6 us for 256 KiB, so a 1 MiB read
// costs 69 us in 64 KiB pieces against 38 us in 256 KiB ones.
constexpr std::size_t kPieceBytes = 256 * 1024;

bool covers(const algo::Slice& outer, const algo::Slice& inner) {
  return outer.buf == inner.buf && outer.offset <= inner.offset && inner.end() <= outer.end();
}

// Whether what slice `s` holds after op `op` of step `step` is never read again: every later
// read of it comes after a write that covers it whole, or there is none and it is Scratch (the
// user's buffers are read after the call). Later steps' transfers come before their ops.
bool deadAfter(const algo::RankSchedule& rs, std::size_t step, std::size_t op,
               const algo::Slice& s) {
  const auto readsOp = [&](const algo::LocalOp& o) {
    return o.a.overlaps(s) || (o.kind == algo::OpKind::Reduce && o.b.overlaps(s));
  };
  for (std::size_t t = step; t < rs.steps.size(); ++t) {
    const algo::Step& st = rs.steps[t];
    if (t > step) {
      for (const algo::Transfer& x : st.xfers)
        if (x.dir == algo::Dir::Send && x.slice.overlaps(s)) return false;
      for (const algo::Transfer& x : st.xfers)
        if (x.dir == algo::Dir::Recv && covers(x.slice, s)) return true;
    }
    for (std::size_t j = t == step ? op + 1 : 0; j < st.ops.size(); ++j) {
      if (readsOp(st.ops[j])) return false;
      if (covers(st.ops[j].dst, s)) return true;
    }
  }
  return s.buf == algo::Buf::Scratch;
}

}  // namespace

void MessageCounters::reset(int ranks) {
  sends_.assign(static_cast<std::size_t>(std::max(ranks, 0)), 0);
  recvs_.assign(static_cast<std::size_t>(std::max(ranks, 0)), 0);
}

Executor::Executor(tl::Transport& transport, std::size_t elemSize, Reduction* reduction)
    : transport_(transport),
      elemSize_(elemSize),
      reduction_(reduction),
      rank_(transport.rank()),
      size_(transport.size()) {}

Executor::~Executor() {
  if (state_ == State::Running) cancelPending();
}

std::string Executor::where(std::size_t step) const {
  return fmt::format("rank {} step {}", rank_, step);
}

std::string Executor::whereTransfer(std::size_t step, std::size_t index) const {
  const algo::Transfer& x = schedule_->steps[step].xfers[index];
  std::string s = fmt::format("{} transfer {} ({}", where(step), index, algo::toString(x));
  if (stepFirst_.size() > step && stepFirst_[step] + index < transfers_.size())
    s += ", " + tagString(transfers_[stepFirst_[step] + index].tag);
  return s + ")";
}

std::string Executor::whereOp(std::size_t step, std::size_t index) const {
  return fmt::format("{} op {} ({})", where(step), index,
                     algo::toString(schedule_->steps[step].ops[index]));
}

const char* name(FailKind k) {
  switch (k) {
    case FailKind::None:
      return "none";
    case FailKind::Timeout:
      return "timeout";
    case FailKind::PeerLost:
      return "peer lost";
    case FailKind::PeerFailed:
      return "peer failed";
    case FailKind::Mismatch:
      return "mismatch";
    case FailKind::Transport:
      return "transport error";
    case FailKind::Invalid:
      return "invalid schedule";
  }
  return "?";
}

bool Executor::start(const algo::RankSchedule& schedule, const Bindings& bindings,
                     MessageCounters& counters, std::uint32_t comm, std::uint32_t seq) noexcept {
  if (state_ == State::Running) cancelPending();
  schedule_ = &schedule;
  bindings_ = &bindings;
  error_.clear();
  failKind_ = FailKind::None;
  stats_ = {};
  step_ = 0;
  failedPeer_ = -1;
  failedRecv_ = false;
  posted_ = false;
  postedCount_ = 0;
  sinkWait_ = -1;
  state_ = State::Running;
  try {
    if (elemSize_ == 0) throw RunError(fmt::format("rank {}: element size 0", rank_));
    if (counters.ranks() != size_)
      throw RunError(
          fmt::format("rank {}: message counters sized for {} ranks, the transport has {}", rank_,
                      counters.ranks(), size_));
    plan(counters, comm, seq);
  } catch (const std::exception& e) {
    fail(FailKind::Invalid, e.what());
    return false;
  }
  return true;
}

void Executor::plan(MessageCounters& counters, std::uint32_t comm, std::uint32_t seq) {
  transfers_.clear();
  stepFirst_.clear();
  stepOpFirst_.clear();
  feeds_.clear();
  iovs_.clear();
  for (std::size_t s = 0; s < schedule_->steps.size(); ++s) {
    const algo::Step& st = schedule_->steps[s];
    stepFirst_.push_back(transfers_.size());
    for (std::size_t i = 0; i < st.xfers.size(); ++i)
      planTransfer(s, i, st.xfers[i], counters, comm, seq);
    for (std::size_t j = 0; j < st.ops.size(); ++j) checkOp(s, j, st.ops[j]);
    stepOpFirst_.push_back(feeds_.size());
    feeds_.resize(feeds_.size() + st.ops.size());
    if (directReads_) planDirect(s);
  }
  stepFirst_.push_back(transfers_.size());
  stepOpFirst_.push_back(feeds_.size());
  for (std::size_t s = 1; s < schedule_->steps.size(); ++s) planEarly(s);
  // Completion records must not move while a transfer is pending: size them before posting.
  const std::size_t n = transfers_.size();
  if (completions_.size() < n) completions_.resize(n);
  open_.assign(n, false);
  live_.assign(n, false);
}

// Pushed transfers of step `step` start with the step before (see the header). A receive's
// slice must be untouched by that step (Transfer::push); a send's peer is written by the op of
// that step that writes its slice whole, if one does and no later op of the step writes any of it.
void Executor::planEarly(std::size_t step) {
  const algo::Step& prev = schedule_->steps[step - 1];
  const algo::Step& st = schedule_->steps[step];
  for (std::size_t i = 0; i < st.xfers.size(); ++i) {
    PlannedTransfer& t = transfers_[stepFirst_[step] + i];
    if (!t.push) continue;
    const algo::Slice& x = st.xfers[i].slice;
    if (st.xfers[i].dir == algo::Dir::Recv) {
      bool untouched = true;
      for (const algo::Transfer& y : prev.xfers) untouched = untouched && !y.slice.overlaps(x);
      for (const algo::LocalOp& op : prev.ops)
        untouched = untouched && !op.dst.overlaps(x) && !op.a.overlaps(x) &&
                    !(op.kind == algo::OpKind::Reduce && op.b.overlaps(x));
      if (!untouched)
        throw RunError(fmt::format("{}: a pushed receive whose slice step {} touches",
                                   whereTransfer(step, i), step - 1));
      t.early = true;
      continue;
    }
    t.early = true;
    std::size_t last = prev.ops.size();
    for (std::size_t j = 0; j < prev.ops.size(); ++j)
      if (prev.ops[j].dst.overlaps(x)) last = j;
    if (last == prev.ops.size() || prev.ops[last].dst != x) continue;
    Feed& f = feeds_[stepOpFirst_[step - 1] + last];
    if (f.sink < 0) f.sink = static_cast<std::int32_t>(stepFirst_[step] + i);  // one peer an op
  }
}

// Receives of step `step` that one op reads in place (see the header): the op reads exactly the
// received slice, nothing before it in the step touches that slice, no other transfer of the
// step overlaps it, and it is dead after the op.
void Executor::planDirect(std::size_t step) {
  const algo::Step& st = schedule_->steps[step];
  for (std::size_t i = 0; i < st.xfers.size(); ++i) {
    const algo::Transfer& x = st.xfers[i];
    PlannedTransfer& t = transfers_[stepFirst_[step] + i];
    if (x.dir != algo::Dir::Recv || t.push || !transport_.direct(static_cast<int>(x.peer), t.bytes))
      continue;
    bool sends = false;
    for (const algo::Transfer& y : st.xfers) sends = sends || y.dir == algo::Dir::Send;
    bool alone = true;
    for (std::size_t k = 0; k < st.xfers.size() && alone; ++k)
      alone = k == i || !st.xfers[k].slice.overlaps(x.slice);
    if (!alone) continue;
    for (std::size_t j = 0; j < st.ops.size(); ++j) {
      const algo::LocalOp& op = st.ops[j];
      const bool reduce = op.kind == algo::OpKind::Reduce;
      const bool asA = op.a == x.slice, asB = reduce && op.b == x.slice;
      const bool touches =
          op.a.overlaps(x.slice) || op.dst.overlaps(x.slice) || (reduce && op.b.overlaps(x.slice));
      if (!asA && !asB) {
        if (touches) break;  // something else reads or writes it first
        continue;
      }
      if (asA && asB) break;
      // A reduction of several pieces in a step where this rank sends nothing: its sender
      // waits for nothing but this message's release, which reading in place gives only after
      // the last piece is read, so behind all but one piece's reduction. Received whole (one
      // copy, released at once), the sender goes on after the copy; the reduction then reads
      // the copy back from memory instead of from the cache.
      if (reduce && !sends && t.bytes > kPieceBytes) break;
      Feed& f = feeds_[stepOpFirst_[step] + j];
      const bool inPlace = reduce && op.dst == x.slice;
      if (!inPlace && op.dst.overlaps(x.slice)) break;
      if (!inPlace && !deadAfter(*schedule_, step, j, x.slice)) break;
      (asA ? f.a : f.b) = static_cast<std::int32_t>(i);
      t.direct = true;
      break;
    }
  }
}

void Executor::planTransfer(std::size_t step, std::size_t index, const algo::Transfer& x,
                            MessageCounters& counters, std::uint32_t comm, std::uint32_t seq) {
  const std::string_view bufName = algo::name(x.slice.buf);
  auto error = [&](const std::string& cause) {
    return RunError(
        fmt::format("{} transfer {} ({}): {}", where(step), index, algo::toString(x), cause));
  };
  if (x.peer >= static_cast<std::uint32_t>(size_))
    throw error(fmt::format("peer {} is not a rank of this group of {}", x.peer, size_));
  if (x.dir == algo::Dir::Recv && x.slice.buf == algo::Buf::Input)
    throw error("receives into the read-only Input buffer");
  if (x.slice.count > std::numeric_limits<std::size_t>::max() / elemSize_)
    throw error(
        fmt::format("{} elements of {} bytes overflow a byte count", x.slice.count, elemSize_));

  PlannedTransfer t;
  t.iovBegin = iovs_.size();
  t.bytes = static_cast<std::size_t>(x.slice.count) * elemSize_;
  if (x.slice.count > 0) {
    const Binding& b = bindings_->of(x.slice.buf);
    const std::span<const Segment> segs = b.segments();
    std::size_t k = b.find(x.slice.offset);
    std::uint64_t pos = x.slice.offset;
    while (pos < x.slice.end()) {
      if (k >= segs.size() || segs[k].start > pos)  // unbound, or a gap after a segment
        throw error(fmt::format("element {} of {} is not bound ({} is bound at {})", pos, bufName,
                                bufName, b.describe()));
      const std::uint64_t take = std::min(x.slice.end(), segs[k].start + segs[k].count) - pos;
      iovs_.push_back({static_cast<std::byte*>(segs[k].data) + (pos - segs[k].start) * elemSize_,
                       static_cast<std::size_t>(take) * elemSize_});
      pos += take;
      ++k;
    }
  }
  t.iovCount = iovs_.size() - t.iovBegin;
  const int peer = static_cast<int>(x.peer);
  t.push = x.push && t.bytes > 0 && transport_.pushable(peer, t.bytes);
  t.tag = {comm, seq, x.dir == algo::Dir::Send ? counters.nextSend(peer) : counters.nextRecv(peer)};
  transfers_.push_back(t);
}

// Only ops are checked here (transfers resolve their iovs in planTransfer); the message is built
// only on failure, so planning a valid schedule does not allocate.
void Executor::checkBound(const algo::Slice& s, std::size_t step, std::size_t index) const {
  if (s.count == 0) return;
  const Binding& b = bindings_->of(s.buf);
  const std::span<const Segment> segs = b.segments();
  std::size_t k = b.find(s.offset);
  std::uint64_t pos = s.offset;
  while (pos < s.end()) {
    if (k >= segs.size() || segs[k].start > pos)  // unbound, or a gap after a segment
      throw RunError(fmt::format("{}: element {} of {} is not bound ({} is bound at {})",
                                 whereOp(step, index), pos, algo::name(s.buf), algo::name(s.buf),
                                 b.describe()));
    pos = std::min(s.end(), segs[k].start + segs[k].count);
    ++k;
  }
}

void Executor::checkOp(std::size_t step, std::size_t index, const algo::LocalOp& op) const {
  auto error = [&](const std::string& cause) {
    return RunError(fmt::format("{}: {}", whereOp(step, index), cause));
  };
  if (op.dst.buf == algo::Buf::Input) throw error("writes the read-only Input buffer");
  if (op.a.count != op.dst.count)
    throw error(fmt::format("source has {} elements, destination {}", op.a.count, op.dst.count));
  if (op.kind == algo::OpKind::Copy) {
    if (op.dst.overlaps(op.a)) throw error("copy between overlapping slices");
  } else {
    if (reduction_ == nullptr) throw error("a Reduce op, but the run has no reduction");
    if (op.b.count != op.dst.count)
      throw error(fmt::format("operands have {} and {} elements, destination {}", op.a.count,
                              op.b.count, op.dst.count));
    if (op.dst != op.a && op.dst.overlaps(op.a))
      throw error("destination partially overlaps the left operand");
    if (op.dst != op.b && op.dst.overlaps(op.b))
      throw error("destination partially overlaps the right operand");
    checkBound(op.b, step, index);
  }
  checkBound(op.dst, step, index);
  checkBound(op.a, step, index);
}

void Executor::post(std::size_t g, const algo::Transfer& x) {
  const PlannedTransfer& t = transfers_[g];
  tl::Completion& c = completions_[g];
  c.state = tl::Completion::State::Pending;
  c.bytes = 0;
  c.error.clear();
  const std::span<const tl::IoVec> iov(iovs_.data() + t.iovBegin, t.iovCount);
  const int peer = static_cast<int>(x.peer);
  live_[g] = true;
  open_[g] = t.direct || (t.push && x.dir == algo::Dir::Send);
  if (x.dir == algo::Dir::Send) {
    if (t.push)
      transport_.sendPushed(peer, t.bytes, t.tag, &c);
    else
      transport_.send(peer, iov, t.tag, &c);
  } else if (t.push) {
    transport_.recvPushed(peer, iov, t.tag, &c);
  } else if (t.direct) {
    transport_.recvDirect(peer, t.bytes, t.tag, &c);
  } else {
    transport_.recv(peer, iov, t.tag, &c);
  }
}

void Executor::postStep() {
  const std::size_t first = stepFirst_[step_];
  const std::size_t n = stepFirst_[step_ + 1] - first;
  const algo::Step& st = schedule_->steps[step_];
  for (std::size_t i = 0; i < n; ++i) {
    postedCount_ = i + 1;
    if (trace_) [[unlikely]] {
      tracePosted_[i] = TraceLog::now();
      traceDone_[i] = 0;
    }
    if (!transfers_[first + i].early) post(first + i, st.xfers[i]);
  }
  // The next step's pushes after this step's messages: the link releases a channel's posts in
  // order, so an exposure held until the next step must not come before a message of this one.
  if (step_ + 1 < schedule_->steps.size()) {
    const algo::Step& next = schedule_->steps[step_ + 1];
    const std::size_t nextFirst = stepFirst_[step_ + 1];
    for (std::size_t i = 0; i < next.xfers.size(); ++i)
      if (transfers_[nextFirst + i].early) post(nextFirst + i, next.xfers[i]);
  }
}

// Ops run in order as soon as no transfer still in flight conflicts with them: an op must not
// read or write what a pending receive writes, nor write what a pending send reads, and an op
// fed in place waits for its receive. Ops independent of every transfer run while the step's
// transfers fly; an op fed in place runs as soon as its message is there, so that the peer's
// buffer it reads is released without waiting for this rank's other transfers.
bool Executor::ready(const algo::Step& st, const algo::LocalOp& op, const Feed& feed) const {
  const bool reduce = op.kind == algo::OpKind::Reduce;
  for (std::size_t i = 0; i < postedCount_; ++i) {
    if (!comp(i).pending()) continue;
    const auto fed = static_cast<std::int32_t>(i);
    if (feed.a == fed || feed.b == fed) return false;
    const algo::Slice& x = st.xfers[i].slice;
    if (op.dst.overlaps(x)) return false;
    if (st.xfers[i].dir == algo::Dir::Recv && (op.a.overlaps(x) || (reduce && op.b.overlaps(x))))
      return false;
  }
  return true;
}

bool Executor::runReadyOps(bool all) {
  const algo::Step& st = schedule_->steps[step_];
  const Feed* feeds = feeds_.data() + stepOpFirst_[step_];
  sinkWait_ = -1;
  for (; nextOp_ < st.ops.size(); ++nextOp_) {
    const algo::LocalOp& op = st.ops[nextOp_];
    const Feed& f = feeds[nextOp_];
    if (!all && !ready(st, op, f)) break;
    // An op producing a push waits for its receiver's buffer, which the receiver exposes as it
    // starts this step (Transfer::push): its result then goes to the peer from the cache.
    if (f.sink >= 0 && completions_[static_cast<std::size_t>(f.sink)].pending()) {
      sinkWait_ = f.sink;
      break;
    }
    const std::size_t first = stepFirst_[step_];
    const auto open = [&](std::int32_t t) {
      return t >= 0 && open_[first + static_cast<std::size_t>(t)];
    };
    // The next step's pushed send this op produces (unless its exposure failed: the next step
    // reports that).
    std::int32_t sink = f.sink;
    if (sink >= 0 &&
        (!open_[static_cast<std::size_t>(sink)] ||
         completions_[static_cast<std::size_t>(sink)].state != tl::Completion::State::Done))
      sink = -1;
    if (!open(f.a) && !open(f.b)) {
      if (!runOp(nextOp_, op, sink)) return false;
    } else if (!runFed(nextOp_, op, f, sink)) {
      return false;
    }
    if (sink >= 0) {
      open_[static_cast<std::size_t>(sink)] = false;
      transport_.finishDirect(&completions_[static_cast<std::size_t>(sink)]);
      ++stats_.pushesStreamed;
    }
  }
  return true;
}

// Piece [at, at + bytes) of the pushed send `sink`, just computed by op `index`, to its receiver.
bool Executor::pushPiece(std::size_t index, std::int32_t sink, std::size_t at,
                         const std::byte* from, std::size_t bytes) {
  const auto g = static_cast<std::size_t>(sink);
  const tl::Completion c = transport_.writeDirect(&completions_[g], at, {from, bytes});
  if (c.state == tl::Completion::State::Done) return true;
  const algo::Step& next = schedule_->steps[step_ + 1];
  failedPeer_ = static_cast<int>(next.xfers[g - stepFirst_[step_ + 1]].peer);
  failedRecv_ = false;
  fail(kindOf(c.fault), fmt::format("{}: {}", whereOp(step_, index), c.error));
  return false;
}

// A pushed send of the current step whose receiver's buffer is known, written from its slice.
bool Executor::pushWhole(std::size_t g) {
  const PlannedTransfer& t = transfers_[g];
  std::size_t at = 0;
  for (std::size_t k = 0; k < t.iovCount; ++k) {
    const tl::IoVec& v = iovs_[t.iovBegin + k];
    const tl::Completion c = transport_.writeDirect(
        &completions_[g], at, {static_cast<const std::byte*>(v.base), v.length});
    if (c.state != tl::Completion::State::Done) {
      const std::size_t i = g - stepFirst_[step_];
      failedPeer_ = static_cast<int>(schedule_->steps[step_].xfers[i].peer);
      failedRecv_ = false;
      fail(kindOf(c.fault), fmt::format("{}: {}", whereTransfer(step_, i), c.error));
      return false;
    }
    at += v.length;
  }
  open_[g] = false;
  transport_.finishDirect(&completions_[g]);
  ++stats_.pushesWhole;
  return true;
}

// A message received in place whose op cannot run yet is copied into its slice after all (as a
// plain receive would have left it), so that no peer's buffer stays held while this rank waits.
bool Executor::settleDirect() {
  const algo::Step& st = schedule_->steps[step_];
  for (std::size_t i = 0; i < postedCount_; ++i) {
    const std::size_t g = stepFirst_[step_] + i;
    if (!open_[g] || st.xfers[i].dir != algo::Dir::Recv ||
        comp(i).state != tl::Completion::State::Done)
      continue;
    const PlannedTransfer& t = transfers_[g];
    std::size_t at = 0;
    for (std::size_t k = 0; k < t.iovCount; ++k) {
      const tl::IoVec& v = iovs_[t.iovBegin + k];
      std::span<const std::byte> view;
      const std::span<std::byte> into(static_cast<std::byte*>(v.base), v.length);
      const tl::Completion c = transport_.readDirect(&comp(i), at, into, &view);
      if (c.state != tl::Completion::State::Done) {
        fail(kindOf(c.fault), fmt::format("{}: {}", whereTransfer(step_, i), c.error));
        return false;
      }
      if (view.data() != into.data()) std::memcpy(into.data(), view.data(), v.length);
      at += v.length;
    }
    open_[g] = false;
    transport_.finishDirect(&comp(i));
    ++stats_.directSettled;
  }
  return true;
}

bool Executor::advance() {
  const std::size_t steps = schedule_->steps.size();
  while (step_ < steps) {
    if (!posted_) {
      if (trace_) [[unlikely]] {
        traceStepBegin_ = TraceLog::now();
        const std::size_t n = stepFirst_[step_ + 1] - stepFirst_[step_];
        if (tracePosted_.size() < n) {
          tracePosted_.resize(n);
          traceDone_.resize(n);
        }
      }
      postStep();
      posted_ = true;
      nextOp_ = 0;
      sinkWait_ = -1;
      seenDone_ = std::numeric_limits<std::size_t>::max();
      if (postedCount_ > 0) transport_.progress();
    }
    std::size_t done = 0;
    for (std::size_t i = 0; i < postedCount_; ++i) {
      const tl::Completion& c = comp(i);
      if (c.state == tl::Completion::State::Failed) {
        const algo::Transfer& x = schedule_->steps[step_].xfers[i];
        failedPeer_ = static_cast<int>(x.peer);
        failedRecv_ = x.dir == algo::Dir::Recv;
        fail(kindOf(c.fault), fmt::format("{}: {}", whereTransfer(step_, i), c.error));
        return true;
      }
      if (c.pending()) continue;
      // A pushed send not written yet (its op ran before the receiver's buffer was known, or
      // none produced it): written now, before any op of the step may change its slice.
      const std::size_t g = stepFirst_[step_] + i;
      if (open_[g] && transfers_[g].push && !pushWhole(g)) return true;
      ++done;
    }
    const bool sinkKnown =
        sinkWait_ >= 0 && !completions_[static_cast<std::size_t>(sinkWait_)].pending();
    if (done != seenDone_ || sinkKnown) {
      seenDone_ = done;
      if (trace_) [[unlikely]]
        traceCompletions();
      if (!runReadyOps(done == postedCount_)) return true;
      if (done < postedCount_ && !settleDirect()) return true;
    }
    if (done < postedCount_ || sinkWait_ >= 0) return false;

    const algo::Step& st = schedule_->steps[step_];
    for (std::size_t i = 0; i < postedCount_; ++i) {
      const std::size_t bytes = transfers_[stepFirst_[step_] + i].bytes;
      if (st.xfers[i].dir == algo::Dir::Send) {
        ++stats_.sends;
        stats_.bytesSent += bytes;
      } else {
        ++stats_.recvs;
        stats_.bytesReceived += bytes;
      }
      const std::size_t g = stepFirst_[step_] + i;
      live_[g] = false;
      if (open_[g]) {  // a fed op that had nothing to read
        open_[g] = false;
        transport_.finishDirect(&comp(i));
      }
    }
    if (trace_) [[unlikely]]
      traceStep();
    ++stats_.steps;
    ++step_;
    posted_ = false;
    postedCount_ = 0;
  }
  state_ = State::Done;
  return true;
}

void Executor::traceCompletions() noexcept {
  std::uint64_t t = 0;
  for (std::size_t i = 0; i < postedCount_; ++i) {
    if (traceDone_[i] != 0 || comp(i).pending()) continue;
    if (t == 0) t = TraceLog::now();
    traceDone_[i] = t;
  }
}

void Executor::traceStep() noexcept {
  const std::uint64_t end = TraceLog::now();
  const algo::Step& st = schedule_->steps[step_];
  const TraceCall& c = traceCall_;
  TraceLog::Event e;
  e.comm = c.comm;
  e.seq = c.seq;
  e.chunk = c.chunk;
  e.coll = c.coll;
  e.server = c.server;
  e.self = c.self;
  e.step = static_cast<std::uint32_t>(step_);
  e.kind = TraceLog::Kind::Step;
  e.begin = traceStepBegin_;
  e.end = end;
  e.bytes = postedCount_;
  trace_->record(e);
  for (std::size_t i = 0; i < postedCount_; ++i) {
    const algo::Transfer& x = st.xfers[i];
    const auto peer = static_cast<std::size_t>(x.peer);
    e.kind = x.dir == algo::Dir::Send ? TraceLog::Kind::Send : TraceLog::Kind::Recv;
    e.peer = c.world && peer < c.world->size() ? (*c.world)[peer] : static_cast<std::int32_t>(peer);
    e.level = x.level;
    e.bytes = transfers_[stepFirst_[step_] + i].bytes;
    e.begin = tracePosted_[i];
    e.end = traceDone_[i] != 0 ? traceDone_[i] : end;
    trace_->record(e);
  }
}

// Splits the op at every piece boundary of its three slices; with a sink (a pushed send the op
// produces), also into cache-sized pieces, each written to the peer once computed. False when
// that write failed (the run failed).
bool Executor::runOp(std::size_t index, const algo::LocalOp& op, std::int32_t sink) {
  if (op.dst.count == 0) return true;
  const bool reduce = op.kind == algo::OpKind::Reduce;
  Cursor d(bindings_->of(op.dst.buf), op.dst.offset, elemSize_);
  Cursor a(bindings_->of(op.a.buf), op.a.offset, elemSize_);
  Cursor b = reduce ? Cursor(bindings_->of(op.b.buf), op.b.offset, elemSize_) : a;
  const std::uint64_t pieceElems = std::max<std::uint64_t>(1, kPieceBytes / elemSize_);
  std::size_t at = 0;
  for (std::uint64_t left = op.dst.count; left > 0;) {
    std::uint64_t n = std::min({left, d.run(), a.run()});
    if (reduce) n = std::min(n, b.run());
    if (sink >= 0) n = std::min(n, pieceElems);
    const std::size_t bytes = static_cast<std::size_t>(n) * elemSize_;
    std::byte* dp = d.ptr();
    const std::byte* ap = a.ptr();
    if (reduce) {
      const std::byte* bp = b.ptr();
      if ((dp != ap && memOverlap(dp, ap, bytes)) || (dp != bp && memOverlap(dp, bp, bytes)))
        throw RunError(
            fmt::format("{}: the bindings map the destination onto part of an operand's memory",
                        whereOp(step_, index)));
      reduction_->apply(dp, ap, bp, static_cast<std::size_t>(n));
      stats_.elementsReduced += n;
      b.advance(n);
    } else {
      if (dp != ap) {
        if (memOverlap(dp, ap, bytes))
          throw RunError(
              fmt::format("{}: the bindings map source and destination onto "
                          "overlapping memory",
                          whereOp(step_, index)));
        std::memcpy(dp, ap, bytes);
      }
      stats_.elementsCopied += n;
    }
    if (sink >= 0 && !pushPiece(index, sink, at, dp, bytes)) return false;
    at += bytes;
    d.advance(n);
    a.advance(n);
    left -= n;
  }
  return true;
}

int Executor::waitingFor(bool& recv) const {
  recv = failedRecv_;
  if (state_ == State::Failed) return failedPeer_;
  if (state_ != State::Running || !posted_) return -1;
  const algo::Step& st = schedule_->steps[step_];
  for (std::size_t i = 0; i < postedCount_; ++i) {
    if (!comp(i).pending()) continue;
    recv = st.xfers[i].dir == algo::Dir::Recv;
    return static_cast<int>(st.xfers[i].peer);
  }
  return -1;
}

// An op with operands received in place (planDirect; still open: not settled into their
// slices). Walks the op's local slices piece by piece as runOp does; a received operand's bytes
// come from the transport at the matching offset: for a Copy straight into the destination, for
// a Reduce through a cache-sized buffer per operand (or, inline, in place in the slot). False
// when reading them failed (the run failed).
bool Executor::runFed(std::size_t index, const algo::LocalOp& op, const Feed& feed,
                      std::int32_t sink) {
  const bool reduce = op.kind == algo::OpKind::Reduce;
  const std::size_t first = stepFirst_[step_];
  const auto open = [&](std::int32_t t) {
    return t >= 0 && open_[first + static_cast<std::size_t>(t)];
  };
  const bool linkA = open(feed.a), linkB = reduce && open(feed.b);
  Cursor d(bindings_->of(op.dst.buf), op.dst.offset, elemSize_);
  Cursor a = linkA ? d : Cursor(bindings_->of(op.a.buf), op.a.offset, elemSize_);
  Cursor b = !reduce || linkB ? d : Cursor(bindings_->of(op.b.buf), op.b.offset, elemSize_);
  const std::uint64_t pieceElems = std::max<std::uint64_t>(1, kPieceBytes / elemSize_);
  if (reduce && bounce_.size() < 2 * pieceElems * elemSize_)
    bounce_.resize(2 * pieceElems * elemSize_);
  // Bytes [at, at + into.size()) of the message transfer t carries: a view, in place or in `into`.
  const auto read = [&](std::int32_t t, std::size_t at, std::span<std::byte> into,
                        const std::byte** out) {
    std::span<const std::byte> view;
    const tl::Completion c =
        transport_.readDirect(&comp(static_cast<std::size_t>(t)), at, into, &view);
    if (c.state != tl::Completion::State::Done) {
      fail(kindOf(c.fault), fmt::format("{}: {}", whereOp(step_, index), c.error));
      return false;
    }
    *out = view.data();
    return true;
  };
  // Releases a received operand: its bytes are no longer needed from the link.
  const auto finish = [&](std::int32_t t) {
    const std::size_t g = first + static_cast<std::size_t>(t);
    if (!open_[g]) return;
    open_[g] = false;
    transport_.finishDirect(&completions_[g]);
    ++stats_.directReads;
  };
  std::size_t at = 0;  // bytes of the op consumed
  for (std::uint64_t left = op.dst.count; left > 0;) {
    std::uint64_t n = std::min(left, d.run());
    if (!linkA) n = std::min(n, a.run());
    if (reduce) n = std::min({n, linkB ? n : b.run(), pieceElems});
    if (sink >= 0) n = std::min(n, pieceElems);
    const std::size_t bytes = static_cast<std::size_t>(n) * elemSize_;
    std::byte* dp = d.ptr();
    const std::byte* ap = nullptr;
    const std::byte* bp = nullptr;
    // One operand from the peer and a destination apart from the other: the peer's piece is
    // copied straight into the destination and reduced in place there (the kernels take dst equal
    // to an operand), so no bounce buffer is written and read back; the destination is written
    // anyway. An in-place reduction (dst is the local operand) still goes through the bounce.
    const std::byte* local = !reduce || linkA == linkB ? nullptr : linkA ? b.ptr() : a.ptr();
    const bool intoDst = local != nullptr && !memOverlap(dp, local, bytes);
    // The op's last piece: a received operand copied out of the link (not shown in place) is
    // released now, before the reduction of that piece, so that its sender goes on at once.
    const bool last = n == left;
    if (linkA) {
      const std::span<std::byte> into =
          reduce && !intoDst ? std::span(bounce_.data(), bytes) : std::span(dp, bytes);
      if (!read(feed.a, at, into, &ap)) return false;
      if (last && ap == into.data()) finish(feed.a);
    } else {
      ap = a.ptr();
    }
    if (!reduce) {
      if (ap != dp) std::memcpy(dp, ap, bytes);
      stats_.elementsCopied += n;
    } else {
      if (linkB) {
        const std::span<std::byte> into =
            intoDst ? std::span(dp, bytes)
                    : std::span(bounce_.data() + pieceElems * elemSize_, bytes);
        if (!read(feed.b, at, into, &bp)) return false;
        if (last && bp == into.data()) finish(feed.b);
      } else {
        bp = b.ptr();
      }
      if ((!linkA && dp != ap && memOverlap(dp, ap, bytes)) ||
          (!linkB && dp != bp && memOverlap(dp, bp, bytes)))
        throw RunError(
            fmt::format("{}: the bindings map the destination onto part of an operand's memory",
                        whereOp(step_, index)));
      reduction_->apply(dp, ap, bp, static_cast<std::size_t>(n));
      stats_.elementsReduced += n;
      if (!linkB) b.advance(n);
    }
    if (sink >= 0 && !pushPiece(index, sink, at, dp, bytes)) return false;
    if (!linkA) a.advance(n);
    d.advance(n);
    at += bytes;
    left -= n;
  }
  for (const std::int32_t t : {linkA ? feed.a : -1, linkB ? feed.b : -1})
    if (t >= 0) finish(t);
  return true;
}

bool Executor::progress() noexcept {
  if (state_ != State::Running) return true;
  try {
    transport_.progress();
  } catch (const std::exception& e) {
    fail(FailKind::Transport, fmt::format("{}: {}", where(step_), e.what()));
    return true;
  }
  return poll();
}

bool Executor::poll() noexcept {
  if (state_ != State::Running) return true;
  try {
    return advance();
  } catch (const RunError& e) {
    fail(FailKind::Invalid, e.what());
  } catch (const std::exception& e) {
    fail(FailKind::Transport, fmt::format("{}: {}", where(step_), e.what()));
  } catch (...) {
    fail(FailKind::Transport, fmt::format("{}: unknown exception", where(step_)));
  }
  return true;
}

bool Executor::run(const std::function<void()>& idle) noexcept {
  while (!progress()) {
    try {
      if (idle)
        idle();
      else
        std::this_thread::yield();
    } catch (...) {
      // An idle hook is only a way to wait; a failing one must not stop the run.
    }
  }
  return state_ == State::Done;
}

void Executor::fail(FailKind kind, std::string message) noexcept {
  cancelPending();
  state_ = State::Failed;
  failKind_ = kind;
  try {
    error_ = std::move(message);
  } catch (...) {
  }
}

// Transfers posted and not over: the current step's, and the next step's posted early.
void Executor::cancelPending() noexcept {
  const std::size_t steps = schedule_ ? schedule_->steps.size() : 0;
  if (step_ < steps && stepFirst_.size() > steps) {
    const std::size_t end = stepFirst_[std::min(step_ + 2, steps)];
    for (std::size_t g = stepFirst_[step_]; g < end && g < live_.size(); ++g) {
      if (!live_[g]) continue;
      live_[g] = false;
      const bool finish = open_[g] && completions_[g].state == tl::Completion::State::Done;
      open_[g] = false;
      if (!completions_[g].pending() && !finish) continue;
      try {
        transport_.cancel(&completions_[g]);
      } catch (...) {
        // Nothing more to do: the contract makes cancel safe; a transport that throws anyway
        // must not take the process down from a noexcept path.
      }
    }
  }
  postedCount_ = 0;
}

}  // namespace hccl::engine
