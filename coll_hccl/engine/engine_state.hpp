// What the engine keeps per process: the log sink, the transport shared by every communicator
// of MPI_COMM_WORLD, this process's topology record, and the calls in flight.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "coll_hccl/hccl_engine.h"
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

  // The transport every communicator inside MPI_COMM_WORLD reaches its peers through, once
  // MPI_COMM_WORLD's communicator has built it (world rank i = transport rank i).
  std::weak_ptr<tl::Transport> world;
  int worldRank = -1, worldSize = 0;

  // Cost models by tuning file path ("" = built-in defaults), loaded once; warnings logged once.
  const algo::CostModel& costModel(const std::string& path, std::string& err);

  // Tag ids of live communicators, to refuse a second communicator with the same id.
  std::multiset<std::uint32_t> liveTags;
  std::vector<Request*> active;  // calls in flight (few: a vector beats a tree here)

  std::recursive_mutex lock;  // serialises every API call under MPI_THREAD_MULTIPLE
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
