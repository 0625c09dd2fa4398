// Runs a whole schedule (every rank) on threads of this process over the in-process transport,
// with real buffers and real reductions. For tests and the foundation demo.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "coll_hccl/engine/executor.hpp"
#include "coll_hccl/engine/reduction.hpp"
#include "ucx_tl/inproc.hpp"

namespace hccl::engine {

// One rank's user buffers, in bytes. Sizes must be problem.bufferCount(buf, rank) elements (empty
// for an absent buffer); in-place calls and Broadcast read their input from `output`.
struct RankBuffers {
  std::vector<std::byte> input;
  std::vector<std::byte> output;
};

// Puts another transport over a rank's in-process endpoint (e.g. the shared-memory link between
// the rank threads, with the endpoint for everything else). `allGather` is collective over the
// run's ranks: rank r's `mine` lands at r * mine.size() of `all` on every rank.
using AllGatherFn = std::function<void(std::span<const std::byte> mine, std::span<std::byte> all)>;
using TransportWrap =
    std::function<std::shared_ptr<tl::Transport>(tl::Transport& endpoint, const AllGatherFn&)>;

// The wrap of runs whose options name none: a test binary sets it once to run every check over
// another link (nothing: the in-process endpoints as they are).
void setDefaultTransportWrap(TransportWrap wrap);

struct LocalRunOptions {
  // Transfers unmatched this long fail, so a deadlocked schedule fails instead of hanging.
  std::chrono::milliseconds timeout{30000};
  std::uint32_t comm = 1;
  std::uint32_t seq = 1;
  // Ranks that never run (and are marked dead): their peers must fail, naming them.
  std::vector<int> deadRanks;
  // Called on the fabric before the ranks start (e.g. to set link classes).
  std::function<void(tl::InProcFabric&)> configure;
  // Empty: the default wrap (setDefaultTransportWrap). Runs with dead ranks never wrap.
  TransportWrap wrap;
};

struct LocalRunResult {
  bool ok = false;
  std::string error;                            // the first error, when !ok
  std::vector<std::string> rankErrors;          // each rank's error ("" when it succeeded)
  std::vector<std::vector<std::byte>> outputs;  // each rank's Output after the run
  std::vector<ExecStats> stats;                 // each rank's executor statistics
  std::uint64_t bytesMoved = 0;                 // bytes the fabric copied
};

// Runs `schedule` with a copy of `reduction` on each rank (elements of reduction.elemSize()).
LocalRunResult runLocal(const algo::Schedule& schedule, const Reduction& reduction,
                        std::vector<RankBuffers> buffers, const LocalRunOptions& options = {});
// The same with the predefined op on `type`; when op is not defined on type (e.g. AllGather of
// bool with sum), schedules without Reduce ops still run and others fail naming the pair.
LocalRunResult runLocal(const algo::Schedule& schedule, DataType type, ReduceOp op,
                        std::vector<RankBuffers> buffers, const LocalRunOptions& options = {});
// Copy-only schedules (no Reduce ops) on elements of elemSize bytes.
LocalRunResult runLocal(const algo::Schedule& schedule, std::size_t elemSize,
                        std::vector<RankBuffers> buffers, const LocalRunOptions& options = {});

}  // namespace hccl::engine
