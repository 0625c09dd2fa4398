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

namespace {

// Whether `op` may run before `st`'s transfers complete: it writes nothing a transfer reads or
// writes, and reads nothing a receive writes.
bool independentOfTransfers(const algo::LocalOp& op, const algo::Step& st) {
  const bool reduce = op.kind == algo::OpKind::Reduce;
  for (const algo::Transfer& x : st.xfers) {
    if (op.dst.overlaps(x.slice)) return false;
    if (x.dir == algo::Dir::Recv && (op.a.overlaps(x.slice) || (reduce && op.b.overlaps(x.slice))))
      return false;
  }
  return true;
}

}  // namespace

void Executor::plan(MessageCounters& counters, std::uint32_t comm, std::uint32_t seq) {
  transfers_.clear();
  stepFirst_.clear();
  earlyOps_.clear();
  iovs_.clear();
  std::size_t widest = 0;
  for (std::size_t s = 0; s < schedule_->steps.size(); ++s) {
    const algo::Step& st = schedule_->steps[s];
    stepFirst_.push_back(transfers_.size());
    widest = std::max(widest, st.xfers.size());
    for (std::size_t i = 0; i < st.xfers.size(); ++i)
      planTransfer(s, i, st.xfers[i], counters, comm, seq);
    for (std::size_t j = 0; j < st.ops.size(); ++j) checkOp(s, j, st.ops[j]);
    std::size_t early = 0;
    while (early < st.ops.size() && !st.xfers.empty() && independentOfTransfers(st.ops[early], st))
      ++early;
    earlyOps_.push_back(early);
  }
  stepFirst_.push_back(transfers_.size());
  // Completion records must not move while a transfer is pending: size them before posting.
  if (completions_.size() < widest) completions_.resize(widest);
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

void Executor::postStep() {
  const std::size_t first = stepFirst_[step_];
  const std::size_t n = stepFirst_[step_ + 1] - first;
  const algo::Step& st = schedule_->steps[step_];
  for (std::size_t i = 0; i < n; ++i) {
    const PlannedTransfer& t = transfers_[first + i];
    const algo::Transfer& x = st.xfers[i];
    tl::Completion& c = completions_[i];
    c.state = tl::Completion::State::Pending;
    c.bytes = 0;
    c.error.clear();
    const std::span<const tl::IoVec> iov(iovs_.data() + t.iovBegin, t.iovCount);
    postedCount_ = i + 1;
    if (x.dir == algo::Dir::Send)
      transport_.send(static_cast<int>(x.peer), iov, t.tag, &c);
    else
      transport_.recv(static_cast<int>(x.peer), iov, t.tag, &c);
  }
}

bool Executor::advance() {
  const std::size_t steps = schedule_->steps.size();
  while (step_ < steps) {
    if (!posted_) {
      postStep();
      posted_ = true;
      if (postedCount_ > 0) transport_.progress();
      const algo::Step& st = schedule_->steps[step_];
      for (std::size_t j = 0; j < earlyOps_[step_]; ++j) runOp(j, st.ops[j]);
    }
    bool pending = false;
    for (std::size_t i = 0; i < postedCount_; ++i) {
      const tl::Completion& c = completions_[i];
      if (c.state == tl::Completion::State::Failed) {
        const algo::Transfer& x = schedule_->steps[step_].xfers[i];
        failedPeer_ = static_cast<int>(x.peer);
        failedRecv_ = x.dir == algo::Dir::Recv;
        fail(kindOf(c.fault), fmt::format("{}: {}", whereTransfer(step_, i), c.error));
        return true;
      }
      pending = pending || c.pending();
    }
    if (pending) return false;

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
    }
    for (std::size_t j = earlyOps_[step_]; j < st.ops.size(); ++j) runOp(j, st.ops[j]);
    ++stats_.steps;
    ++step_;
    posted_ = false;
    postedCount_ = 0;
  }
  state_ = State::Done;
  return true;
}

// Splits the op at every piece boundary of its three slices.
void Executor::runOp(std::size_t index, const algo::LocalOp& op) {
  if (op.dst.count == 0) return;
  const bool reduce = op.kind == algo::OpKind::Reduce;
  Cursor d(bindings_->of(op.dst.buf), op.dst.offset, elemSize_);
  Cursor a(bindings_->of(op.a.buf), op.a.offset, elemSize_);
  Cursor b = reduce ? Cursor(bindings_->of(op.b.buf), op.b.offset, elemSize_) : a;
  for (std::uint64_t left = op.dst.count; left > 0;) {
    std::uint64_t n = std::min({left, d.run(), a.run()});
    if (reduce) n = std::min(n, b.run());
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
    d.advance(n);
    a.advance(n);
    left -= n;
  }
}

int Executor::waitingFor(bool& recv) const {
  recv = failedRecv_;
  if (state_ == State::Failed) return failedPeer_;
  if (state_ != State::Running || !posted_) return -1;
  const algo::Step& st = schedule_->steps[step_];
  for (std::size_t i = 0; i < postedCount_; ++i) {
    if (!completions_[i].pending()) continue;
    recv = st.xfers[i].dir == algo::Dir::Recv;
    return static_cast<int>(st.xfers[i].peer);
  }
  return -1;
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

void Executor::cancelPending() noexcept {
  for (std::size_t i = 0; i < postedCount_; ++i) {
    if (!completions_[i].pending()) continue;
    try {
      transport_.cancel(&completions_[i]);
    } catch (...) {
      // Nothing more to do: the contract makes cancel safe; a transport that throws anyway
      // must not take the process down from a noexcept path.
    }
  }
  postedCount_ = 0;
}

}  // namespace hccl::engine
