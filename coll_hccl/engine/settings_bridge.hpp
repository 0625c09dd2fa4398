// The adapter hands every setting over as the layers that set it (info key > MCA > environment,
// each with a printable source); this turns them into the engine's options, with the same parsers
// and error messages hccl_info uses.
#pragma once

#include <string>
#include <vector>

#include "algorithms/config_settings.hpp"
#include "algorithms/config_values.hpp"
#include "coll_hccl/hccl_engine.h"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::engine {

using algo::Level0Link;

struct EngineOptions {
  algo::Settings settings;  // algo, buffsize, deterministic, selection, tuning file
  tl::UcxOptions ucx;       // link-class transport lists, intra-RoCE, timeout
  Level0Link level0Link = Level0Link::Auto;
  std::string level0LinkSource = "default";
  std::string ucxSources;  // where the transport settings came from, for logs
  int verbose = 0;
  std::string trace;  // coll_hccl_trace's file pattern; empty: no trace (trace.hpp)
  std::size_t traceEvents = 100000;
  // coll_hccl_shm_slot_bytes: the shared-memory slots' payload; 0: the engine's choice
  // (setup::shmOptions). Fixed with MPI_COMM_WORLD's segment, so equal on every rank.
  std::size_t shmSlotBytes = 0;
  // Accepted settings that have no effect (HCCL_ALGO's level3, an entry for an op coll_hccl does
  // not take over through MPI, ...), one sentence each, for the verbose log.
  std::vector<std::string> notes;
};

// Resolves every setting from its highest layer. Errors name the setting, the value, its source
// and what is valid (the message of the first bad setting).
algo::ConfigResult<EngineOptions> optionsFromLayers(
    const hccl_setting_t (&layers)[HCCL_SETTING_COUNT]);

// Every setting that must be equal on all ranks for them to decide alike (and to carry level0
// alike), as one string. (Transport lists and the timeout may differ between servers.)
std::string fingerprint(const EngineOptions& o);

}  // namespace hccl::engine
