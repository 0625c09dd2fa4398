// Runs one rank's schedule over a transport with real memory.
//
// A step posts all of its transfers, waits for all of them, then runs its local operations in
// order (Copy: dst = a; Reduce: dst = a (+) b through the Reduction). An op runs earlier, while
// transfers of its step are still in flight, when none of those touches what it reads or writes
// (ops in order: the first one that must wait holds back the rest): AllGather's copy of its own
// block overlaps the exchange, and a reduction starts once its operands are there.
//
// Reading in place. Where the transport receives in place (Transport::direct: the shared-memory
// link), a receive whose slice feeds exactly one op of its step and is dead after it (read by
// nothing later before being overwritten; Scratch at the end of the schedule) is not copied
// into that slice: the op reads the peer's bytes where they are, a Reduce straight from the
// peer's slot or, piece by cache-sized piece, from the peer's buffer; a Copy copies once from
// there. A message the link copies out of the peer's buffer is released as soon as its last
// piece is read, before that piece is reduced, so that its sender goes on. A Reduce of several
// pieces in a step where this rank sends nothing (its sender waits for this release alone: the
// root of a chain Reduce) receives its message whole instead: one copy, released at once, the
// sender free while the reduction runs. The schedule, and what every named buffer holds
// afterwards that anything reads, stay the same.
//
// Pushing (Transfer::push, where Transport::pushable): the receiver exposes its slice and the
// sender writes it. A pushed message starts with the step before its own: the receiver exposes
// its slice then (the schedule guarantees nothing of that step touches it; planning checks), and
// the op of that step that writes the sender's slice whole (none later writing any of it) waits
// for the receiver's buffer and then writes each cache-sized piece to the peer as soon as it
// computed it: a reduction's result reaches the peer from the cache, not from memory. A push
// that no op produces so is written whole in its own step. Either way the message carries what
// its slice holds when its step begins, as the schedule says.
//
// The executor is a state
// machine without threads: start() validates the schedule against the bindings and resolves every
// transfer to an iov up front; progress() advances as far as it can without blocking and says
// whether the run is over, so MPI's progress loop can drive nonblocking collectives; run() loops on
// progress() for blocking callers. Nothing throws out of start(), progress() or run(): errors
// become the Failed state with a message naming the rank, step, transfer or op, peer and cause,
// and pending transfers are cancelled.
//
// Tags: the caller gives comm and seq; msg numbers the transfers to (and, separately, from) each
// peer in posting order, so the k-th send a->b carries the same tag as the k-th receive on b from
// a. The counters live in MessageCounters, which outlives a run: the chunks of one collective
// continue one numbering under one seq.
//
// Steady state: after the first run of a schedule shape, start() and progress() reuse their
// storage and do not allocate (error messages aside).
//
// Timeline (trace.hpp): with setTrace, every step's start and end and every transfer's post and
// completion (as progress() sees it) go to a TraceLog; without, one null test per step post,
// per transfer posted and per change in the completed count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "coll_hccl/engine/binding.hpp"
#include "coll_hccl/engine/reduction.hpp"
#include "coll_hccl/engine/trace.hpp"
#include "ucx_tl/transport.hpp"

namespace hccl::engine {

class MessageCounters {
 public:
  MessageCounters() = default;
  explicit MessageCounters(int ranks) { reset(ranks); }
  // Back to zero for a new collective (a new seq) on a group of `ranks`.
  void reset(int ranks);
  int ranks() const { return static_cast<int>(sends_.size()); }
  std::uint32_t nextSend(int peer) { return sends_[static_cast<std::size_t>(peer)]++; }
  std::uint32_t nextRecv(int peer) { return recvs_[static_cast<std::size_t>(peer)]++; }

 private:
  std::vector<std::uint32_t> sends_;
  std::vector<std::uint32_t> recvs_;
};

// What went wrong in a failed run, for the caller to act on (never the message's words).
enum class FailKind : std::uint8_t {
  None,
  Timeout,     // a transfer made no progress within the transport's timeout
  PeerLost,    // a peer's process or link went away
  PeerFailed,  // a peer gave the exchange up because its own call failed: find the cause
  Mismatch,    // a peer posted a transfer of another size: the ranks' calls do not match
  Transport,   // any other link-layer failure
  Invalid,     // the schedule does not fit the bindings or the transport (a bug)
};
const char* name(FailKind k);

struct ExecStats {
  std::uint64_t steps = 0;  // steps completed
  std::uint64_t sends = 0;  // transfers completed, by direction
  std::uint64_t recvs = 0;
  std::uint64_t bytesSent = 0;
  std::uint64_t bytesReceived = 0;
  std::uint64_t elementsReduced = 0;  // by Reduce ops
  std::uint64_t elementsCopied = 0;   // by Copy ops
  std::uint64_t directReads = 0;      // receives an op read in place
  std::uint64_t directSettled = 0;    // receives meant for that, copied after all (op not ready)
  std::uint64_t pushesStreamed = 0;  // pushed sends written piece by piece by the op producing them
  std::uint64_t pushesWhole = 0;     // pushed sends written whole from their slice
};

class Executor {
 public:
  enum class State : std::uint8_t { Idle, Running, Done, Failed };

  // elemSize: bytes per element of the schedule's datatype. `reduction` may be null for schedules
  // without Reduce ops; it is used from progress() only and must outlive the executor's runs.
  Executor(tl::Transport& transport, std::size_t elemSize, Reduction* reduction = nullptr);
  ~Executor();  // cancels a run in flight
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Begins running `schedule` (this transport's rank's schedule) with buffers bound by `bindings`.
  // schedule, bindings and counters must stay valid and unchanged until the run is over. Returns
  // false when the run failed already (bad binding, schedule bug, nothing posted); a run still in
  // flight is cancelled first.
  bool start(const algo::RankSchedule& schedule, const Bindings& bindings,
             MessageCounters& counters, std::uint32_t comm, std::uint32_t seq) noexcept;
  // Advances without blocking; true once the run is over (Done or Failed).
  bool progress() noexcept;
  // As progress(), but without driving the transport first: for callers that progress the
  // transport once for many runs sharing it.
  bool poll() noexcept;
  // Drives progress() to the end; `idle` runs after every pass that did not finish (default:
  // yield; the in-process transport's wait() sleeps until something arrives). Returns true on
  // success.
  bool run(const std::function<void()>& idle = {}) noexcept;

  // Rebinds the reduction for the next run (not while one is in flight).
  void setReduction(Reduction* reduction) { reduction_ = reduction; }
  // Whether receives may be read in place (default: yes, where the transport can); for the next
  // run.
  void setDirectReads(bool on) { directReads_ = on; }
  // Records the next run's steps and transfers into `log` (trace.hpp) as part of `call`; null:
  // no trace (the default). `log` must outlive the run.
  void setTrace(TraceLog* log, const TraceCall& call) {
    trace_ = log;
    traceCall_ = call;
  }

  State state() const { return state_; }
  bool done() const { return state_ == State::Done; }
  bool failed() const { return state_ == State::Failed; }
  const std::string& error() const { return error_; }
  FailKind failKind() const { return failKind_; }
  const ExecStats& stats() const { return stats_; }
  std::size_t elemSize() const { return elemSize_; }
  // Where the run is, for the progress board: the current step (steps() once done) and the peer
  // (transport rank) of its first transfer still pending, -1 if none; after a failure, the peer
  // of the transfer that failed. `recv` tells whether that transfer is a receive.
  std::size_t step() const { return step_; }
  std::size_t steps() const { return schedule_ ? schedule_->steps.size() : 0; }
  int waitingFor(bool& recv) const;

 private:
  struct PlannedTransfer {
    std::size_t iovBegin = 0;
    std::size_t iovCount = 0;
    std::size_t bytes = 0;
    tl::Tag tag;
    bool direct = false;  // received in place, read by the op that `feeds` names
    bool push = false;    // posted in pushed form (Transfer::push and the transport can)
    bool early = false;   // posted with the previous step (see "Pushing")
  };
  // What an op reads in place: the transfers of its step that carry its operands (-1: none).
  // sink: the pushed send of the next step (index in transfers_) the op writes piece by piece.
  struct Feed {
    std::int32_t a = -1;
    std::int32_t b = -1;
    std::int32_t sink = -1;
    bool any() const { return a >= 0 || b >= 0; }
  };

  void plan(MessageCounters& counters, std::uint32_t comm, std::uint32_t seq);
  void planTransfer(std::size_t step, std::size_t index, const algo::Transfer& x,
                    MessageCounters& counters, std::uint32_t comm, std::uint32_t seq);
  void checkOp(std::size_t step, std::size_t index, const algo::LocalOp& op) const;
  void checkBound(const algo::Slice& s, std::size_t step, std::size_t index) const;
  void planDirect(std::size_t step);
  void planEarly(std::size_t step);
  void post(std::size_t g, const algo::Transfer& x);
  bool pushPiece(std::size_t index, std::int32_t sink, std::size_t at, const std::byte* from,
                 std::size_t bytes);
  bool pushWhole(std::size_t g);
  bool runFed(std::size_t index, const algo::LocalOp& op, const Feed& feed, std::int32_t sink);
  bool ready(const algo::Step& st, const algo::LocalOp& op, const Feed& feed) const;
  bool runReadyOps(bool all);
  bool settleDirect();
  void postStep();
  bool advance();  // true when the run is over
  bool runOp(std::size_t index, const algo::LocalOp& op, std::int32_t sink);
  // The record and the open flag of transfer i of the current step.
  tl::Completion& comp(std::size_t i) { return completions_[stepFirst_[step_] + i]; }
  const tl::Completion& comp(std::size_t i) const { return completions_[stepFirst_[step_] + i]; }
  void
  traceCompletions() noexcept;  // stamps transfers of the step seen complete for the first time
  void traceStep() noexcept;    // records the finished step and its transfers
  void fail(FailKind kind, std::string message) noexcept;
  void cancelPending() noexcept;
  std::string where(std::size_t step) const;
  std::string whereTransfer(std::size_t step, std::size_t index) const;
  std::string whereOp(std::size_t step, std::size_t index) const;

  tl::Transport& transport_;
  std::size_t elemSize_;
  Reduction* reduction_;
  int rank_;
  int size_;

  const algo::RankSchedule* schedule_ = nullptr;
  const Bindings* bindings_ = nullptr;
  State state_ = State::Idle;
  std::string error_;
  FailKind failKind_ = FailKind::None;
  ExecStats stats_;

  // Resolved at start(), reused across runs.
  std::vector<PlannedTransfer> transfers_;  // every transfer of the schedule, step by step
  std::vector<std::size_t> stepFirst_;      // transfers_ index of each step's first transfer
  std::vector<std::size_t> stepOpFirst_;    // feeds_ index of each step's first op
  std::vector<Feed> feeds_;                 // one per op of the schedule
  std::vector<std::byte> bounce_;           // pieces of a peer's buffer on their way to an op
  // Per transfer of the schedule: a direct receive to finish, or a pushed send to write.
  std::vector<bool> open_;
  bool directReads_ = true;
  std::vector<tl::IoVec> iovs_;
  // One per transfer of the schedule: an early one is posted while the step before runs.
  std::vector<tl::Completion> completions_;
  std::vector<bool> live_;  // per transfer of the schedule: posted, not yet over or cancelled

  std::size_t step_ = 0;
  int failedPeer_ = -1;
  bool failedRecv_ = false;
  bool posted_ = false;
  std::size_t postedCount_ = 0;
  std::size_t nextOp_ = 0;      // the step's first op not yet run
  std::size_t seenDone_ = 0;    // completed transfers when ops were last tried
  std::int32_t sinkWait_ = -1;  // the push whose receiver's buffer the next op waits for

  TraceLog* trace_ = nullptr;  // null: not traced
  TraceCall traceCall_;
  std::uint64_t traceStepBegin_ = 0;
  std::vector<std::uint64_t> tracePosted_, traceDone_;  // per transfer of the step, ns (0: pending)
};

}  // namespace hccl::engine
