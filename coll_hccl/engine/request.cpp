#include "coll_hccl/engine/request.hpp"

#include <fmt/format.h>

#include <chrono>

#include "coll_hccl/engine/diagnosis.hpp"
#include "coll_hccl/engine/host_views.hpp"

namespace hccl::engine {

Request::~Request() {
  executor_.reset();  // cancels a run still in flight, which may be writing into the scratch
  if (scratch_) comm_.returnScratch(scratch_);
}

void Request::bind(const algo::BufferMap& map, const std::byte* base, Binding& into) const {
  into.clear();
  for (const algo::Segment& s : map)
    into.add({s.logical, const_cast<std::byte*>(base) + s.physical * elemSize_, s.count});
}

bool Request::start(std::shared_ptr<const Plan> plan, const void* send, void* recv,
                    std::size_t elemSize, std::optional<Reduction> reduction, std::uint32_t seq,
                    Collective coll, std::uint64_t callBytes) {
  plan_ = std::move(plan);
  coll_ = coll;
  bytes_ = callBytes;
  published_.state = CallProgress::State{};  // matches no real record: the first one is written
  send_ = static_cast<const std::byte*>(send);
  recv_ = static_cast<std::byte*>(recv);
  reduction_ = std::move(reduction);
  seq_ = seq;
  chunk_ = 0;
  finished_ = false;
  failKind_ = FailKind::None;
  culprit_ = -1;
  diagnosing_.reset();
  error_.clear();
  counters_.reset(comm_.size());
  if (!executor_ || elemSize_ != elemSize)
    executor_ = std::make_unique<Executor>(comm_.transport(), elemSize);
  elemSize_ = elemSize;
  executor_->setReduction(reduction_ ? &*reduction_ : nullptr);
  scratchElems_ = 0;
  bindings_.scratch.clear();
  fitScratch(plan_->scratchElems);
  run_ = SIZE_MAX;
  if (plan_->chunks.empty()) {
    finish();
    return true;
  }
  // A first chunk that failed at once may still wait for its diagnosis: then it is in flight.
  return startChunk() || !finished_;
}

hccl_status_t Request::status() const {
  switch (failKind_) {
    case FailKind::None:
      return HCCL_SUCCESS;
    case FailKind::Timeout:
      return HCCL_ERR_TIMEOUT;
    case FailKind::PeerLost:
    case FailKind::PeerFailed:  // the call ended because another rank's failed first
      return HCCL_ERR_PEER_LOST;
    case FailKind::Mismatch:
      return HCCL_ERR_MISMATCH;
    case FailKind::Transport:
      return HCCL_ERR_TRANSPORT;
    case FailKind::Invalid:
      return HCCL_ERR_INTERNAL;
  }
  return HCCL_ERR_INTERNAL;
}

CallProgress Request::progressNow(CallProgress::State state) const {
  CallProgress p;
  p.comm = comm_.commTag();
  p.seq = seq_;
  p.coll = static_cast<std::uint8_t>(coll_);
  p.state = state;
  p.bytes = bytes_;
  p.chunks = static_cast<std::uint32_t>(plan_ ? plan_->chunks.size() : 0);
  p.chunk = static_cast<std::uint32_t>(chunk_);
  if (executor_) {
    p.step = static_cast<std::uint32_t>(executor_->step());
    p.steps = static_cast<std::uint32_t>(executor_->steps());
    p.wait = executor_->waitingFor(p.waitRecv);
  }
  if (state == CallProgress::State::Failed) p.culprit = culprit_;
  return p;
}

void Request::publish(CallProgress::State state) {
  ProgressBoard* board = comm_.board();
  if (!board) return;
  const CallProgress p = progressNow(state);
  const CallProgress& l = published_;
  if (p.seq == l.seq && p.state == l.state && p.chunk == l.chunk && p.step == l.step &&
      p.wait == l.wait && p.waitRecv == l.waitRecv && p.comm == l.comm)
    return;
  published_ = p;
  board->publish(p);
}

void Request::finish(FailKind kind, std::string error) {
  failKind_ = kind;
  culprit_ = -1;
  error_ = std::move(error);
  // A timeout, a lost peer or a peer that failed first: the message names the rank behind it.
  if (kind != FailKind::Timeout && kind != FailKind::PeerLost && kind != FailKind::PeerFailed)
    return complete();
  auto d = std::make_unique<Diagnosing>();
  DiagnosisInput& in = d->in;
  in.board = comm_.board();
  in.world = comm_.worldProcesses();
  in.members = comm_.members();
  in.rank = comm_.rank();
  in.failed = progressNow(CallProgress::State::Failed);
  in.peerLost = kind == FailKind::PeerLost;
  in.peerFailed = kind == FailKind::PeerFailed;
  // Other hosts' ranks are seen through their hosts' views (host_views.hpp).
  if (DiagnosisChannel* channel = comm_.diagnosisChannel()) {
    const int lost = in.peerLost && in.failed.wait >= 0 && in.failed.wait < comm_.size()
                         ? in.members[static_cast<std::size_t>(in.failed.wait)]
                         : -1;
    d->remote = channel->gather(in.failed.comm, in.failed.seq, in.members, lost,
                                DiagnosisChannel::kBudget, d->asked);
    in.remote = d->remote;
  }
  std::optional<Culprit> c = culpritByState(in);
  if (!c) c = culpritNamedByPeer(in);
  if (!c && !in.peerFailed) c = culpritByChain(in);
  if (c) return conclude(*d, *c);
  // Rule 3b waits for a verdict: over later progress() calls. The communicator is broken from
  // now (this failure came first); the diagnosis fills in its message when it ends.
  d->until = std::chrono::steady_clock::now() + kVerdictWait;
  comm_.markBroken(seq_, status(), error_);
  diagnosing_ = std::move(d);
}

void Request::conclude(const Diagnosing& d, const Culprit& c) {
  if (c.rank >= 0) {
    culprit_ = c.rank;
    error_ = fmt::format("{} failed: {}. Here, {} in {}: {}{}", describeCall(d.in.failed), c.reason,
                         describeRank(d.in, d.in.rank), describeStep(d.in.failed), error_,
                         d.asked.empty() ? "" : " [diagnosis: " + d.asked + "]");
  }
  complete();
}

bool Request::awaitVerdict() {
  std::optional<Culprit> c = culpritNamedByPeer(diagnosing_->in);
  if (!c && std::chrono::steady_clock::now() >= diagnosing_->until)
    c = culpritByChain(diagnosing_->in);
  if (!c) return false;
  const std::unique_ptr<Diagnosing> d = std::move(diagnosing_);
  conclude(*d, *c);
  return true;
}

void Request::complete() {
  finished_ = true;
  publish(failKind_ == FailKind::None ? CallProgress::State::Done : CallProgress::State::Failed);
  if (failKind_ != FailKind::None) comm_.markBroken(seq_, status(), error_);
  if (scratch_) {  // the executor is not running any more: the scratch can serve another call
    comm_.returnScratch(scratch_);
    scratch_ = nullptr;
    scratchElems_ = 0;
  }
}

void Request::fitScratch(std::uint64_t elems) {
  if (elems <= scratchElems_) return;
  if (scratch_) comm_.returnScratch(scratch_);
  scratch_ = comm_.borrowScratch(elems * elemSize_);
  scratchElems_ = elems;
  bindings_.scratch = Binding::contiguous(scratch_, elems);
}

bool Request::startChunk() {
  if (const std::size_t run = plan_->chunks.runOf(chunk_); run != run_) {
    // A run past the planned ones gets its schedule now (Plan), and the scratch it needs.
    std::shared_ptr<const algo::RankSchedule> next;
    try {
      next = comm_.runSchedule(*plan_, run);
    } catch (const std::exception& e) {
      finish(FailKind::Invalid, fmt::format("chunk {}'s schedule: {}", chunk_ + 1, e.what()));
      return false;
    }
    schedule_ = std::move(next);
    run_ = run;
    fitScratch(algo::scratchCount(*schedule_));
  }
  plan_->chunks.maps(chunk_, inputMap_, outputMap_);
  bind(inputMap_, send_, bindings_.input);
  bind(outputMap_, recv_, bindings_.output);
  if (TraceLog* t = comm_.trace())
    executor_->setTrace(t, comm_.traceCall(seq_, static_cast<std::uint32_t>(chunk_), coll_));
  if (!executor_->start(*schedule_, bindings_, counters_, comm_.commTag(), seq_)) {
    finish(executor_->failKind(), executor_->error());
    return false;
  }
  publish(CallProgress::State::Running);
  return true;
}

bool Request::progress(bool drive) {
  if (diagnosing_) return awaitVerdict();
  while (!finished_) {
    if (!(drive ? executor_->progress() : executor_->poll())) {
      publish(CallProgress::State::Running);
      return false;
    }
    if (executor_->failed()) {
      finish(executor_->failKind(), executor_->error());
      break;
    }
    if (++chunk_ == plan_->chunks.size()) {
      finish();
      break;
    }
    if (!startChunk()) break;
  }
  return finished_;  // a failure may wait for its diagnosis
}

}  // namespace hccl::engine
