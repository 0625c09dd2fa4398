#include "coll_hccl/engine/engine_state.hpp"

#include <fmt/format.h>

#include "topology/local.hpp"
#include "topology/records.hpp"
#include "topology/resolve.hpp"

namespace hccl::engine {

EngineState& engineState() {
  static EngineState state;
  return state;
}

void EngineState::configure(const hccl_engine_params_t& p) {
  log_ = p.log;
  logCtx_ = p.log_ctx;
  logLevel_ = p.log_level;
  threadMultiple = p.thread_multiple != 0;
  yieldWhenIdle = p.yield_when_idle != 0;
}

void EngineState::log(int level, const std::string& line) const {
  if (logs(level)) log_(level, line.c_str(), logCtx_);
}

const std::vector<std::byte>& EngineState::localRecord() {
  if (!record_) {
    const topo::TopologySource src = topo::TopologySource::fromEnvironment();
    const auto bytes = topo::localRecord(src.supernodeHint).serialize();
    record_.emplace(bytes.begin(), bytes.end());
  }
  return *record_;
}

const algo::CostModel& EngineState::costModel(const std::string& path, std::string& err) {
  auto it = models_.find(path);
  if (it != models_.end()) return it->second;
  if (path.empty()) return models_.emplace(path, algo::defaultCostModel()).first->second;
  std::vector<std::string> warnings;
  auto r = algo::loadTuningFile(algo::defaultCostModel(), path, warnings);
  for (const auto& w : warnings) log(1, "tuning file: " + w);
  if (!r.ok()) {
    err = r.error().message;
    static const algo::CostModel none;
    return none;
  }
  return models_.emplace(path, std::move(r).value()).first->second;
}

}  // namespace hccl::engine
