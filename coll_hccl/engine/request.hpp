// A collective call in flight: the plan's chunks run one after the other through one executor,
// bound to this call's buffers; the same per-peer message numbering runs across chunks.
// Requests are recycled by their communicator, so a steady stream of small calls reuses the
// executor's storage instead of allocating per call.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coll_hccl/engine/binding.hpp"
#include "coll_hccl/engine/communicator.hpp"
#include "coll_hccl/engine/diagnosis.hpp"
#include "coll_hccl/engine/executor.hpp"
#include "coll_hccl/engine/progress_board.hpp"
#include "coll_hccl/engine/reduction.hpp"

namespace hccl::engine {

class Request {
 public:
  explicit Request(Communicator& comm) : comm_(comm) {}
  ~Request();
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Sets up a new call and starts its first chunk; false when it failed at once (error() says
  // why, and the request is finished).
  // `coll` and `bytes` only describe the call on the progress board and in error messages.
  bool start(std::shared_ptr<const Plan> plan, const void* send, void* recv, std::size_t elemSize,
             std::optional<Reduction> reduction, std::uint32_t seq, Collective coll,
             std::uint64_t bytes);
  // Advances without blocking; true once finished (check failed()). With drive = false the
  // transport is not progressed (the caller does that once for every request sharing it).
  // A failed call may stay unfinished a while (at most kVerdictWait, diagnosis.hpp) while its
  // diagnosis waits for a server-mate's verdict: each progress() looks for it once.
  bool progress(bool drive = true);
  bool finished() const { return finished_; }
  bool failed() const { return failKind_ != FailKind::None; }
  const std::string& error() const { return error_; }
  // HCCL_SUCCESS, or the status that names what ended a failed call.
  hccl_status_t status() const;
  Communicator& communicator() { return comm_; }

 private:
  bool startChunk();
  // Ends the call; a failure is diagnosed first (finished at once, or left to progress() while
  // rule 3b waits for a verdict).
  void finish(FailKind kind = FailKind::None, std::string error = {});
  void complete();  // publishes the outcome, marks a failure, frees the scratch
  // A failure being diagnosed: the input the rules read, and the storage its spans point into.
  struct Diagnosing {
    DiagnosisInput in;
    std::vector<std::optional<RankView>> remote;  // other hosts' views (host_views.hpp)
    std::string asked;                            // what the side channel did, for the message
    std::chrono::steady_clock::time_point until;  // rule 3b's deadline
  };
  // A failure's diagnosis ends with what the rules named (rank -1: nothing).
  void conclude(const Diagnosing& d, const Culprit& c);
  bool awaitVerdict();  // one look for rule 3b's verdict; true once the call is finished
  // Scratch of at least `elems` for the next chunk (the executor is between chunks).
  void fitScratch(std::uint64_t elems);
  void bind(const algo::BufferMap& map, const std::byte* base, Binding& into) const;
  // Writes where the call is to the progress board, when that changed.
  void publish(CallProgress::State state);
  CallProgress progressNow(CallProgress::State state) const;

  Communicator& comm_;
  std::shared_ptr<const Plan> plan_;
  const std::byte* send_ = nullptr;
  std::byte* recv_ = nullptr;
  std::size_t elemSize_ = 0;
  std::optional<Reduction> reduction_;
  std::uint32_t seq_ = 0;
  Collective coll_ = Collective::AllReduce;
  std::uint64_t bytes_ = 0;
  CallProgress published_;
  std::byte* scratch_ = nullptr;
  std::uint64_t scratchElems_ = 0;  // scratch_'s size: the plan's, grown for a run needing more
  // The current run's schedule (the executor points into it), and which run that is.
  std::shared_ptr<const algo::RankSchedule> schedule_;
  std::size_t run_ = SIZE_MAX;
  MessageCounters counters_;
  std::unique_ptr<Executor> executor_;  // reset before the scratch it may use goes back
  Bindings bindings_;
  // The current chunk's maps (Plan's chunks are cut lazily), reused from chunk to chunk.
  algo::BufferMap inputMap_, outputMap_;
  std::size_t chunk_ = 0;
  bool finished_ = true;
  FailKind failKind_ = FailKind::None;
  int culprit_ = -1;  // the rank this call's failure was blamed on, for the board
  // A failure waiting for rule 3b's verdict (diagnosis.hpp), polled by progress() rather than
  // slept on: the engine's lock, which other threads' calls need, is held while it diagnoses.
  std::unique_ptr<Diagnosing> diagnosing_;
  std::string error_;
};

}  // namespace hccl::engine
