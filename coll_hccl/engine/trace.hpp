// Engine timelines (MCA coll_hccl_trace=FILE): what each rank's executor did, when, written at
// MPI_Finalize as Chrome trace-event JSON in the simulator's schema (algorithms/simulator.hpp
// chromeTrace), so Perfetto and chrome://tracing open it and tools/hccl_trace_merge.py can put
// the predicted timeline of the same schedule beside it.
//
// Files: one per process, FILE with every "%r" replaced by the MPI_COMM_WORLD rank, or, without
// "%r", FILE.<world rank>: processes never share a file (no locking, no interleaved writes), and
// a plain name works without the user knowing the pattern syntax.
//
// Events (pid = this rank's server, tid = its world rank, as the simulator's):
//  - per executor step, one "X" event "step N" (cat "step"): from the step's first post to the
//    end of its last op; args coll, comm, seq (the call's number), chunk, transfers;
//  - per transfer, a "b"/"e" pair "src -> dst" (world ranks; cat "levelL", L the hierarchy level
//    whose links carry it): from its post to the executor seeing it complete; args bytes, step,
//    dir ("send"/"recv"), peer, coll, seq, chunk.
// Sends and receives are both recorded (each rank sees only its own side), so a merged file has
// every flow twice, once on each end.
//
// Bound: at most `capacity` events per process (MCA coll_hccl_trace_events): the first ones are
// kept, later ones only counted (the file's otherData says how many were dropped), so a long run
// cannot fill memory or the disk; memory grows with the events kept (56 bytes each), never past it.
//
// Clock: CLOCK_MONOTONIC in nanoseconds, one vDSO read per stamp. Ranks on one machine share it,
// so their timelines line up; on several hosts each host's clock has its own origin, and the
// merge tool aligns each file to its own first event instead (--align per-file).
//
// Cost when off: the executor holds a null pointer and tests it once per step and once per
// completion check (one predictable branch); the slot path (small calls on shared-memory slots)
// is not traced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/types.hpp"

namespace hccl::engine {

// Which call an executor run belongs to.
struct TraceCall {
  std::uint32_t comm = 0;  // the communicator's tag
  std::uint32_t seq = 0;   // the call's number on it
  std::uint32_t chunk = 0;
  Collective coll = Collective::AllReduce;
  std::uint32_t server = 0;                 // this rank's server (the event's pid)
  std::int32_t self = 0;                    // this rank's world rank (the event's tid)
  const std::vector<int>* world = nullptr;  // communicator rank -> world rank; null: identity
};

class TraceLog {
 public:
  enum class Kind : std::uint8_t { Step, Send, Recv };
  struct Event {
    std::uint64_t begin = 0, end = 0;  // ns, CLOCK_MONOTONIC
    std::uint64_t bytes = 0;           // transfers; the step's transfer count for steps
    std::uint32_t comm = 0, seq = 0;
    std::uint32_t step = 0, chunk = 0;
    std::int32_t self = 0, peer = -1;  // world ranks
    std::uint32_t server = 0;
    Kind kind = Kind::Step;
    std::uint8_t level = 0;
    Collective coll = Collective::AllReduce;
  };

  // Default bound on events per process.
  static constexpr std::size_t kDefaultCapacity = 100000;

  TraceLog(std::string path, std::size_t capacity) : path_(std::move(path)), capacity_(capacity) {}

  static std::uint64_t now() noexcept;
  // The file of world rank `rank` for pattern `pattern` (see above).
  static std::string pathFor(const std::string& pattern, int rank);

  void record(const Event& e) noexcept;
  std::size_t size() const { return events_.size(); }
  std::uint64_t dropped() const { return dropped_; }
  const std::string& path() const { return path_; }
  // The JSON document of the events kept.
  std::string json() const;
  // Writes json() to path(); false with why on failure.
  bool write(std::string& err) const;

 private:
  std::string path_;
  std::size_t capacity_;
  std::vector<Event> events_;
  std::uint64_t dropped_ = 0;
};

}  // namespace hccl::engine
