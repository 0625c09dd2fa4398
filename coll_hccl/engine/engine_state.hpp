// What the engine keeps per process: the log sink, what MPI_COMM_WORLD's set-up learnt about every
// rank (placement records and the transport every communicator inside it shares), this process's
// topology record, and the calls in flight.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "coll_hccl/engine/diagnosis.hpp"
#include "coll_hccl/engine/host_views.hpp"
#include "coll_hccl/engine/progress_board.hpp"
#include "coll_hccl/engine/trace.hpp"
#include "coll_hccl/hccl_engine.h"
#include "topology/hierarchy.hpp"
#include "ucx_tl/transport.hpp"

namespace hccl::engine {

class Communicator;
class Request;

class EngineState {
 public:
  // Lines go to the adapter's callback when their level is enabled.
  bool logs(int level) const { return log_ && level <= logLevel_; }
  void log(int level, const std::string& line) const;
  void configure(const hccl_engine_params_t& p);

  // This process's topology record (hwloc discovery runs once).
  const std::vector<std::byte>& localRecord();

  // Scratch of freed communicators that a transfer UCX still holds may write into (see
  // tl::Transport::heldOrphans): freed only once the transports are gone, hence declared before
  // `world` (members go in reverse order) and cleared after it at finalize.
  std::vector<std::unique_ptr<std::byte[]>> orphanedScratch;

  // What MPI_COMM_WORLD's set-up learnt, so that every other communicator is built locally: the
  // world's hierarchy and its transport (world rank i = transport rank i).
  struct World {
    topo::Hierarchy hierarchy;
    std::shared_ptr<tl::Transport> transport;
    std::vector<PeerProcess> processes;    // by world rank, for fault diagnosis
    std::unique_ptr<ProgressBoard> board;  // this host's; null without shared memory
    // Asks and answers other hosts on a failure; last, so it goes (and stops answering) first.
    std::unique_ptr<DiagnosisChannel> channel;
  };
  std::optional<World> world;

  // The timeline (coll_hccl_trace), opened by the first communicator created with it set and
  // written at finalize; null when off.
  std::unique_ptr<TraceLog> trace;

  // Cost models by tuning file path ("" = built-in defaults), loaded once; warnings logged once.
  const algo::CostModel& costModel(const std::string& path, std::string& err);

  // Calls in flight (few: a vector beats a tree here), and their number, read without the lock
  // so that an idle progress loop costs one atomic load.
  std::vector<hccl_req_t*> active;
  std::atomic<std::size_t> inFlight{0};
  std::vector<tl::Transport*> progressScratch;  // hccl_progress's list, kept to avoid allocating

  // Serialises every API call under MPI_THREAD_MULTIPLE (UCX workers run single-threaded).
  // Recursive: Open MPI may enter a collective from its progress loop while this thread is inside
  // the engine already (polling MPI_COMM_WORLD's bootstrap exchange).
  std::recursive_mutex lock;
  bool threadMultiple = false;
  bool yieldWhenIdle = false;  // ranks outnumber cores: waiting peers may be descheduled

 private:
  hccl_log_fn log_ = nullptr;
  void* logCtx_ = nullptr;
  int logLevel_ = 0;
  std::optional<std::vector<std::byte>> record_;
  std::map<std::string, algo::CostModel> models_;
};

EngineState& engineState();

}  // namespace hccl::engine
