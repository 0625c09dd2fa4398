// One communicator as the engine sees it: its hierarchy, its selector, the transport that reaches
// its ranks, and the plans and scratch buffers its calls reuse.
//
// A call goes: describe (the arguments MPI requires to match on every rank) -> decide (selector,
// cached) -> plan (chunk size and per-chunk schedules, cached per call shape) -> run (a Request
// binds the plan to this call's buffers and drives it through the executor).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/chunking.hpp"
#include "algorithms/hierarchical.hpp"
#include "algorithms/selector.hpp"
#include "coll_hccl/engine/diagnosis.hpp"
#include "coll_hccl/engine/reduction.hpp"
#include "coll_hccl/engine/settings_bridge.hpp"
#include "coll_hccl/engine/setup.hpp"
#include "coll_hccl/engine/slot_executor.hpp"
#include "coll_hccl/engine/trace.hpp"
#include "coll_hccl/hccl_engine.h"
#include "common/bounded_cache.hpp"
#include "topology/hierarchy.hpp"
#include "ucx_tl/transport.hpp"

namespace hccl::engine {

class Request;
class DiagnosisChannel;

// The part of a call that every rank shares, normalised: opaque byte types with a predefined op
// or no op become elements of one byte.
struct CallShape {
  algo::CallInfo info;
  algo::Problem problem;
  bool userOp = false;
};

// What a plan depends on: the call's problem, its element size and the decision's plan.
struct PlanCacheKey {
  algo::Problem problem;
  std::size_t elemSize = 1;
  algo::PlanKey plan;
  auto operator<=>(const PlanCacheKey&) const = default;
};
// A chunk's schedule: the same chunk problem under the same plan is generated once.
struct ScheduleCacheKey {
  PlanCacheKey plan;
  algo::Problem chunk;
  auto operator<=>(const ScheduleCacheKey&) const = default;
};

// Everything about a call that depends only on its shape: the chunks and their schedules.
//
// Only the first runs' schedules are built with the plan (algo::kRunsPlanned: every run of a call
// whose blocks are equal); a later run's (a V form's, one run wherever some block's count ends) is
// made when a request reaches it (Communicator::runSchedule). Building every run's up front, only
// to size the scratch, cost O(runs x p) at the first call: 8,191 schedules, 1.9 s and 0.5 GB for a
// ReduceScatter with every count distinct on 4096 ranks.
struct Plan {
  algo::Decision decision;
  algo::LevelAlgorithms algorithms{};
  PlanCacheKey key;
  algo::RankGenerator gen;  // what runs: the composed plan (refers to the communicator's layout)
  algo::ChunkPlan chunks;   // cut lazily: a chunk's maps are made when the Request reaches it
  std::vector<std::shared_ptr<const algo::RankSchedule>> schedules;  // the first runs'
  // The planned runs' largest scratch: a request grows its scratch for a later run needing more.
  std::uint64_t scratchElems = 0;
};

// Process-wide state shared by communicators: the world transport, the local topology record.
class EngineState;

class Communicator {
 public:
  using Log = std::function<void(int level, const std::string& line)>;

  // See hccl_comm_create: collective for MPI_COMM_WORLD (params.allgather set), local for every
  // other communicator. Throws nothing: failures come back as status + message, identical on
  // every rank.
  static hccl_status_t create(EngineState& engine, const hccl_comm_params_t& params,
                              std::unique_ptr<Communicator>& out, std::string& err);
  // A communicator of `size` ranks over `transport` and nothing else: no hierarchy, layout,
  // selector or slots, so it can only launch() plans made by hand (runSchedule, the scratch pool
  // and Requests as for any call). For the engine's tests, which drive Requests without MPI.
  static std::unique_ptr<Communicator> overTransport(EngineState& engine,
                                                     std::shared_ptr<tl::Transport> transport,
                                                     int rank, int size);
  ~Communicator();

  // 1 take, 0 decline (explain says why), < 0 error.
  int supported(const hccl_coll_desc_t& desc, std::string& explain);
  hccl_status_t start(const hccl_coll_desc_t& desc, std::unique_ptr<Request>& req,
                      std::string& err);

  // A call prepared once and started many times (MPI's persistent collectives): its shape, its
  // plan (chunks and schedules) and its buffers. Each start only binds and runs the plan.
  struct Prepared {
    CallShape shape;
    std::shared_ptr<const Plan> plan;
    const void* send = nullptr;
    void* recv = nullptr;
    hccl_user_op_fn userFn = nullptr;
    void* userCtx = nullptr;
    // A persistent call's number, taken at init: MPI-4 matches persistent collectives in the
    // order of their init calls, and ranks may start them in different orders (MPICH's p_order
    // starts a Bcast and a Barrier in opposite orders on rank 0 and the others). Every start
    // reuses it: a restart follows the local completion of the previous one, and equal tags
    // between a pair match in posting order.
    std::optional<std::uint32_t> seq;
  };
  hccl_status_t prepare(const hccl_coll_desc_t& desc, Prepared& out, std::string& err);

  // Blocking small calls on the shared-memory link's slots (slot_executor.hpp), for a group that
  // spans its server: no request, no tag, no executor. fastStart returns HCCL_SUCCESS (done),
  // HCCL_PENDING (call fastPoll until it is not), HCCL_ERR_UNSUPPORTED (not for slots: nothing
  // happened, start the call the general way), or the failure that broke the communicator.
  // fastStart polls once.
  // Whether a call shape runs on slots is decided once, alike on every rank, and remembered.
  hccl_status_t fastStart(const hccl_coll_desc_t& desc, unsigned spins, std::string& err);
  // Whether fastStart would run this shape on slots (the same decision; buffers not read).
  bool fastAccepts(const hccl_coll_desc_t& desc);
  // Polls up to `spins` times while the call is pending.
  hccl_status_t fastPoll(unsigned spins, std::string& err);
  // Starts a prepared call on `req` (a fresh or recycled Request of this communicator).
  hccl_status_t launch(const Prepared& call, std::unique_ptr<Request>& req, std::string& err);

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::uint32_t commTag() const { return commTag_; }
  tl::Transport& transport() { return *transport_; }
  // The transport underneath, shared by every communicator inside MPI_COMM_WORLD: progressed
  // once however many calls use it.
  tl::Transport& linkLayer() { return *linkLayer_; }
  const std::string& label() const { return label_; }
  // The timeline calls on this communicator record into (null: not traced), and who this rank
  // is in it: its server and world rank, and the world rank of every communicator rank.
  TraceLog* trace() const { return trace_; }
  TraceCall traceCall(std::uint32_t seq, std::uint32_t chunk, Collective coll) const {
    return {commTag_, seq, chunk, coll, traceServer_, members_[static_cast<std::size_t>(rank_)],
            &members_};
  }
  // For fault diagnosis: communicator rank -> world rank, what MPI_COMM_WORLD's set-up learnt of
  // every process, and this host's progress board (null when shared memory was unavailable).
  std::span<const int> members() const { return members_; }
  std::span<const PeerProcess> worldProcesses() const;
  ProgressBoard* board() const;
  // Asks the other hosts what their boards show (null before MPI_COMM_WORLD's set-up).
  DiagnosisChannel* diagnosisChannel() const;

  // Scratch buffers: a request borrows one while it runs (concurrent calls each need their own).
  std::byte* borrowScratch(std::size_t bytes);
  void returnScratch(std::byte* p);
  // The schedule of `plan`'s run `run` on this rank: planned, cached, or generated now.
  std::shared_ptr<const algo::RankSchedule> runSchedule(const Plan& plan, std::size_t run);
  // Finished requests come back here to serve later calls.
  void release(std::unique_ptr<Request> r);

  // A failed call leaves the ranks out of step (some moved data, some did not): the
  // communicator is unusable from then on, and every later start() says so with the first
  // failure. `seq` is the failed call's sequence number; that call may mark it again with a
  // fuller message (its diagnosis, which may end later than the failure: request.cpp).
  void markBroken(std::uint32_t seq, hccl_status_t status, const std::string& message);
  bool broken() const { return broken_.has_value(); }

 private:
  Communicator() = default;
  // The set-up stages (setup.hpp) of MPI_COMM_WORLD and of every other communicator; they set
  // hierarchy_, transport_ and linkLayer_.
  setup::Failure joinWorld(const hccl_comm_params_t& params, setup::Failure local,
                           const setup::Configuration& cfg);
  setup::Failure joinMembers(const hccl_comm_params_t& params, const setup::Failure& local);
  // The last call's shared arguments, shape and plan: loops repeat the same call, and checking
  // that is far cheaper than describing, deciding and planning again.
  struct LastCall {
    hccl_coll_desc_t desc{};
    std::vector<std::size_t> recvcounts;
    CallShape shape;
    int supported = -1;  // hccl_coll_supported's answer, -1 = not asked
    std::string explain;
    std::shared_ptr<const Plan> plan;
  };
  bool sameAsLast(const hccl_coll_desc_t& d) const;
  void remember(const hccl_coll_desc_t& d, const CallShape& s);
  hccl_status_t describe(const hccl_coll_desc_t& desc, CallShape& shape, std::string& why) const;
  std::shared_ptr<const Plan> planFor(const CallShape& shape, std::string& err);
  std::string decisionTable();
  // Where the slots' posts travel on this communicator (fastBuild's choice of paths): blocks
  // per collective, streaming, and whether the link's copy speed chose fast_single_copy.
  std::string slotPaths() const;
  // The shared-memory class's paths for the link's copy speed; none where the link yields (then
  // copies above a slot travel as blocks and nothing streams) or the model has no such class.
  std::optional<algo::LinkParams::Paths> linkPaths() const;

  // A call shape's verdict for the slots, and its compiled program.
  struct FastEntry {
    bool used = false;
    hccl_coll_desc_t key{};  // the shared fields; buffers cleared
    std::vector<std::size_t> recvcounts;
    bool slots = false;  // runs on slots
    SlotProgram program;
    std::optional<Reduction> reduction;
    std::size_t elemSize = 1;
    std::size_t scratchBytes = 0;
    std::size_t stageBytes = 0;  // after the scratch: an in-place call's rebound buffer
  };
  bool fastMatches(const FastEntry& e, const hccl_coll_desc_t& d) const;
  void fastBuild(FastEntry& e, const hccl_coll_desc_t& d);
  // The remembered entry of this shape (after the last one did not match), built on first sight.
  FastEntry& fastFind(const hccl_coll_desc_t& d);
  // Input and Output of an in-place call of a collective whose program is out of place.
  void rebindInPlace(const FastEntry& e, const hccl_coll_desc_t& d, std::byte* bufs[3]);
  hccl_status_t fastFail(hccl_status_t status, std::string message, std::string& err);

  EngineState* engine_ = nullptr;
  TraceLog* trace_ = nullptr;
  std::uint32_t traceServer_ = 0;
  int rank_ = 0, size_ = 0;
  std::uint32_t commTag_ = 0;
  std::uint32_t seq_ = 0;
  std::vector<int> members_;  // world rank of each communicator rank
  std::string label_;
  EngineOptions options_;
  std::unique_ptr<topo::Hierarchy> hierarchy_;
  std::unique_ptr<algo::Layout> layout_;
  std::unique_ptr<algo::Selector> selector_;
  std::shared_ptr<tl::Transport> transport_;
  std::shared_ptr<tl::Transport> linkLayer_;
  // Bounded, least recently used forgotten first: a sweep of many sizes keeps its hot plans.
  common::BoundedCache<PlanCacheKey, Plan> plans_{1024};
  common::BoundedCache<ScheduleCacheKey, algo::RankSchedule> schedules_{4096};
  struct Scratch {
    std::unique_ptr<std::byte[]> data;
    std::size_t bytes = 0;
    bool busy = false;
  };
  std::vector<Scratch> scratch_;
  LastCall last_;
  std::vector<std::unique_ptr<Request>> idle_;
  struct Broken {
    std::uint32_t seq = 0;
    hccl_status_t status = HCCL_SUCCESS;
    std::string message;
  };
  std::optional<Broken> broken_;
  // The slots: set when this group is its server's whole set of ranks on the shared-memory
  // link (and threads do not run calls concurrently).
  tl::ShmLink* fastLink_ = nullptr;
  std::array<FastEntry, 8> fast_{};
  // The entry each collective's last call used, looked at first: programs interleave
  // collectives (OSU's loops put a Barrier after every call), so one "last entry" for all would
  // miss every call and scan the cache.
  std::array<std::uint8_t, HCCL_COLL_COUNT> fastLast_{};
  std::size_t fastNext_ = 0;
  FastEntry& fastLastOf(const hccl_coll_desc_t& d) {
    return fast_[d.coll < HCCL_COLL_COUNT ? fastLast_[d.coll] : 0];
  }
  SlotRun fastRun_;
  std::vector<std::byte> fastScratch_;
  std::uint32_t fastSeq_ = 0;
  // The root of the last numbered call when it was a Bcast, else -1: every rank numbers its calls
  // in the same order, so every rank knows it alike (noteNumbered). A Barrier's selection reads
  // it (algo::CallInfo::afterBroadcastFrom, through keyed()): the gathered Barrier's sequence
  // rule (algorithms/registry.cpp).
  int prevBcastRoot_ = -1;
  // ... and its bytes (0 after any other call), equal on every rank too.
  std::uint64_t prevBcastBytes_ = 0;
  void noteNumbered(hccl_coll_t coll, int root, std::uint64_t bytes) {
    prevBcastRoot_ = coll == HCCL_COLL_BCAST ? root : -1;
    prevBcastBytes_ = coll == HCCL_COLL_BCAST ? bytes : 0;
  }
  // d as the engine keys and describes it: d itself, or for a Barrier a copy whose root is the
  // previous call's Bcast root (-1: the previous call was no Bcast) and whose count is that
  // Bcast's bytes (a Barrier has no count of its own). describe() reads them as
  // CallInfo::afterBroadcastFrom and afterBroadcastBytes, and the caches (sameAsLast,
  // fastMatches) compare them like any root and count: a Barrier after a Bcast and one after
  // anything else, or after Bcasts of other sizes, are different shapes.
  static const hccl_coll_desc_t& keyed(const hccl_coll_desc_t& d, int after,
                                       std::uint64_t afterBytes, hccl_coll_desc_t& copy) {
    if (d.coll != HCCL_COLL_BARRIER) return d;
    copy = d;
    copy.root = after;
    copy.count = after >= 0 ? afterBytes : 0;
    return copy;
  }
  // What the last call on the slots was keyed with (prevBcastRoot_ and prevBcastBytes_ before it
  // was numbered): its verbose line is asked for after it ran (supported()). fastRan_: some call
  // ran there.
  int fastAfter_ = -1;
  std::uint64_t fastAfterBytes_ = 0;
  bool fastRan_ = false;
  std::uint64_t fastIdle_ = 0;  // fastPoll calls without movement
  std::chrono::steady_clock::time_point fastSince_{}, fastLiveness_{};
  // "communicator X broken since call N: <first failure>" in err, and the first failure's status.
  hccl_status_t brokenError(std::string& err) const;
};

}  // namespace hccl::engine
