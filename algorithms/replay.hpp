// Replays a whole schedule, all ranks at once, under the execution rules of schedule.hpp:
// a rank posts the transfers of its step, the step completes once every transfer has met its
// partner, then the rank runs the step's local ops and posts its next step. Sends are
// rendezvous: a send completes only when its receive is posted, so a schedule that replays
// without deadlock here cannot deadlock however much a real transport buffers.
//
// The verifier (provenance) and the cost model (critical path) are both observers of a replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"

namespace hccl::algo {

// One transfer end: the step it sits in and its index in that step's transfer list.
struct XferRef {
  std::uint32_t rank;
  std::uint32_t step;
  std::uint32_t index;
};

class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  // The rank has just posted `step` (before any of its transfers are matched).
  virtual void posted(std::uint32_t /*rank*/, std::uint32_t /*step*/) {}
  // A send met its receive.
  virtual void matched(const XferRef& /*send*/, const XferRef& /*recv*/) {}
  // The same event with both transfers as posted, for observers of a StepSource that may have
  // released the steps holding them (a transfer that waited is kept by the replay, its step not).
  virtual void transferred(const XferRef& send, const Transfer& /*ts*/, const XferRef& recv,
                           const Transfer& /*tr*/) {
    matched(send, recv);
  }
  // Every transfer of the step has completed; the rank is about to run the step's local ops.
  virtual void completed(std::uint32_t /*rank*/, std::uint32_t /*step*/) {}
};

struct ReplayProblem {
  enum class Kind { SizeMismatch, UnmatchedSend, UnmatchedRecv, Deadlock, BadPeer };
  Kind kind;
  std::uint32_t rank;
  std::uint32_t step;
  std::string message;
};

// Where a replay reads the steps: all ranks' schedules held at once (the vector overload below),
// or steps produced on demand so that thousands of ranks' schedules need not all be in memory
// (verifier.hpp's streamed verify). The replay and its observers read only each rank's current
// step (and, to explain a size mismatch, the steps before it through whole()): a reference
// returned by step(r, k) must stay valid until step() is next called for rank r.
class StepSource {
 public:
  virtual ~StepSource() = default;
  virtual std::uint32_t ranks() const = 0;
  virtual std::uint32_t steps(std::uint32_t rank) const = 0;
  virtual const Step& step(std::uint32_t rank, std::uint32_t k) = 0;
  // Rank r's whole schedule (error paths only).
  virtual RankSchedule whole(std::uint32_t rank) = 0;
  // Rank r waits in its current step (every transfer posted, some not matched) or has finished:
  // its steps are not read again until the step completes (or never), so a source may drop
  // them and give them again on the next step() call. A one-step mesh at thousands of ranks
  // has every rank waiting at once with 2p transfers each: p^2 transfers held otherwise.
  virtual void release(std::uint32_t /*rank*/, bool /*finished*/) {}
};

// Replays `ranks` (one schedule per rank, peers in [0, ranks.size())). Returns every matching
// problem found; an empty result means every step of every rank completed.
std::vector<ReplayProblem> replay(const std::vector<RankSchedule>& ranks, ReplayObserver& obs);
std::vector<ReplayProblem> replay(StepSource& src, ReplayObserver& obs);

// The source over schedules held in memory.
class HeldSteps final : public StepSource {
 public:
  explicit HeldSteps(const std::vector<RankSchedule>& ranks) : ranks_(ranks) {}
  std::uint32_t ranks() const override { return static_cast<std::uint32_t>(ranks_.size()); }
  std::uint32_t steps(std::uint32_t r) const override {
    return static_cast<std::uint32_t>(ranks_[r].steps.size());
  }
  const Step& step(std::uint32_t r, std::uint32_t k) override { return ranks_[r].steps[k]; }
  RankSchedule whole(std::uint32_t r) override { return ranks_[r]; }

 private:
  const std::vector<RankSchedule>& ranks_;
};

}  // namespace hccl::algo
