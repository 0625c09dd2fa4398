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

// Replays `ranks` (one schedule per rank, peers in [0, ranks.size())). Returns every matching
// problem found; an empty result means every step of every rank completed.
std::vector<ReplayProblem> replay(const std::vector<RankSchedule>& ranks, ReplayObserver& obs);

}  // namespace hccl::algo
