// TEMPORARY engine behind hccl_engine.h, until the real engine (coll_hccl/engine/) is wired in.
//
// What it really does: checks API versions, runs the communicator bootstrap through the adapter's
// all-gather callback (every rank sends hostname, pid, rank, size, communicator id and checks
// that every rank answered consistently), logs the configuration layers it was given, and
// declines every call ("engine not wired yet") so that Open MPI's previous component runs it.
// That proves the adapter's set-up, fallback and decision paths with real mpirun jobs now.
//
// Test mode (HCCL_PLACEHOLDER_EXECUTE=1 on every rank) additionally exercises the adapter's
// engine path (requests, progress, packing, user-op callbacks): see engine_placeholder_exec.hpp.
// It is not an engine: it gathers every input with the blocking bootstrap all-gather.
// HCCL_PLACEHOLDER_FAIL_RANK=r makes communicator creation fail on rank r only.
//
// The lead replaces this file (and engine_placeholder_exec.*) with the real engine's API layer.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/types.hpp"
#include "coll_hccl/engine_placeholder_exec.hpp"
#include "coll_hccl/hccl_engine.h"

// The C enums must mirror the C++ vocabulary the engine uses.
static_assert(static_cast<int>(hccl::DataType::Int8) == HCCL_DT_INT8);
static_assert(static_cast<int>(hccl::DataType::UInt64) == HCCL_DT_UINT64);
static_assert(static_cast<int>(hccl::DataType::Float16) == HCCL_DT_FLOAT16);
static_assert(static_cast<int>(hccl::DataType::LongDouble) == HCCL_DT_LONG_DOUBLE);
static_assert(static_cast<int>(hccl::DataType::ComplexDouble) == HCCL_DT_COMPLEX_DOUBLE);
static_assert(static_cast<int>(hccl::DataType::Bool) == HCCL_DT_BOOL);
static_assert(static_cast<int>(hccl::DataType::Byte) == HCCL_DT_BYTE);
static_assert(hccl::kNumDataTypes == HCCL_DT_COUNT);
static_assert(static_cast<int>(hccl::ReduceOp::Sum) == HCCL_OP_SUM);
static_assert(static_cast<int>(hccl::ReduceOp::Min) == HCCL_OP_MIN);
static_assert(static_cast<int>(hccl::ReduceOp::LXor) == HCCL_OP_LXOR);
static_assert(static_cast<int>(hccl::ReduceOp::BXor) == HCCL_OP_BXOR);
static_assert(hccl::kNumReduceOps == HCCL_OP_BXOR + 1);

namespace {

struct EngineState {
  hccl_log_fn log = nullptr;
  void* log_ctx = nullptr;
  int log_level = 0;
  bool execute = false;  // test mode requested on this rank
  bool ready = false;
};
EngineState g_engine;

void copyMessage(char* buf, std::size_t len, const std::string& msg) {
  if (buf == nullptr || len == 0) return;
  std::size_t n = std::min(len - 1, msg.size());
  std::memcpy(buf, msg.data(), n);
  buf[n] = '\0';
}

const char* settingName(int id) {
  static constexpr std::array<const char*, HCCL_SETTING_COUNT> names = {
      "algorithm", "selection",  "buffsize_mb", "deterministic", "hccs_tls",
      "roce_tls",  "intra_roce", "tuning_file", "timeout",       "verbose"};
  return names[static_cast<std::size_t>(id)];
}

// What every rank sends during communicator creation; fixed layout, no pointers.
struct PeerRecord {
  std::array<char, 64> host{};
  std::int64_t pid = 0;
  std::int32_t rank = -1;
  std::int32_t size = 0;
  std::uint64_t comm_id = 0;
  std::int32_t api_version = 0;
  std::int32_t execute = 0;
};

std::string describeHosts(const std::vector<PeerRecord>& peers) {
  std::map<std::string, int> perHost;
  for (const auto& p : peers) ++perHost[std::string(p.host.data())];
  std::string out;
  for (const auto& [host, n] : perHost) {
    if (!out.empty()) out += ", ";
    out += host + " x" + std::to_string(n);
  }
  return out;
}

}  // namespace

namespace hccl::placeholder {

void log(int level, const char* fmt, ...) {
  if (g_engine.log == nullptr || level > g_engine.log_level) return;
  std::array<char, 1024> line{};
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line.data(), line.size(), fmt, ap);
  va_end(ap);
  g_engine.log(level, line.data(), g_engine.log_ctx);
}

}  // namespace hccl::placeholder

struct hccl_comm {
  int rank = 0;
  int size = 0;
  std::uint64_t id = 0;
  std::string name;
  hccl_allgather_fn allgather = nullptr;
  void* allgather_ctx = nullptr;
  bool execute = false;  // every rank agreed on test mode
};

extern "C" {

const char* hccl_status_string(hccl_status_t status) {
  switch (status) {
    case HCCL_SUCCESS:
      return "success";
    case HCCL_PENDING:
      return "pending";
    case HCCL_ERR_ARG:
      return "invalid argument";
    case HCCL_ERR_CONFIG:
      return "configuration error";
    case HCCL_ERR_UNSUPPORTED:
      return "unsupported";
    case HCCL_ERR_BOOTSTRAP:
      return "bootstrap error";
    case HCCL_ERR_TRANSPORT:
      return "transport error";
    case HCCL_ERR_TIMEOUT:
      return "timeout";
    case HCCL_ERR_NO_MEMORY:
      return "out of memory";
    case HCCL_ERR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

const char* hccl_engine_version(void) {
  return "coll_hccl engine 0.1.0 (TEMPORARY placeholder, not the engine)";
}

hccl_status_t hccl_engine_init(const hccl_engine_params_t* params, char* err, size_t errlen) {
  if (params == nullptr || params->api_version != HCCL_ENGINE_API_VERSION) {
    copyMessage(err, errlen,
                "engine API version mismatch: adapter " +
                    std::to_string(params != nullptr ? params->api_version : -1) + ", engine " +
                    std::to_string(HCCL_ENGINE_API_VERSION));
    return HCCL_ERR_ARG;
  }
  g_engine.log = params->log;
  g_engine.log_ctx = params->log_ctx;
  g_engine.log_level = params->log_level;
  const char* exec = std::getenv("HCCL_PLACEHOLDER_EXECUTE");
  g_engine.execute = exec != nullptr && std::strcmp(exec, "1") == 0;
  g_engine.ready = true;
  return HCCL_SUCCESS;
}

void hccl_engine_finalize(void) {
  g_engine = EngineState{};
}

hccl_status_t hccl_comm_create(const hccl_comm_params_t* params, hccl_comm_t** comm, char* err,
                               size_t errlen) {
  if (comm != nullptr) *comm = nullptr;
  try {
    if (!g_engine.ready || params == nullptr || comm == nullptr || params->allgather == nullptr) {
      copyMessage(err, errlen, "hccl_comm_create: engine not initialised or NULL argument");
      return HCCL_ERR_ARG;
    }
    if (params->api_version != HCCL_ENGINE_API_VERSION || params->size < 2 || params->rank < 0 ||
        params->rank >= params->size) {
      copyMessage(err, errlen,
                  "hccl_comm_create: bad parameters (api " + std::to_string(params->api_version) +
                      ", rank " + std::to_string(params->rank) + " of " +
                      std::to_string(params->size) + ")");
      return HCCL_ERR_ARG;
    }
    PeerRecord mine;
    gethostname(mine.host.data(), mine.host.size() - 1);
    mine.pid = static_cast<std::int64_t>(getpid());
    mine.rank = params->rank;
    mine.size = params->size;
    mine.comm_id = params->comm_id;
    mine.api_version = HCCL_ENGINE_API_VERSION;
    mine.execute = g_engine.execute ? 1 : 0;
    std::vector<PeerRecord> peers(static_cast<std::size_t>(params->size));
    if (params->allgather(&mine, peers.data(), sizeof(PeerRecord), params->allgather_ctx) != 0) {
      copyMessage(err, errlen, "bootstrap all-gather failed");
      return HCCL_ERR_BOOTSTRAP;
    }
    int executing = 0;
    for (std::size_t r = 0; r < peers.size(); ++r) {
      const PeerRecord& p = peers[r];
      if (p.rank != static_cast<std::int32_t>(r) || p.size != mine.size ||
          p.comm_id != mine.comm_id || p.api_version != mine.api_version) {
        copyMessage(err, errlen,
                    "bootstrap: slot " + std::to_string(r) + " holds rank " +
                        std::to_string(p.rank) + " of " + std::to_string(p.size) +
                        ", communicator " + std::to_string(p.comm_id) + ", API " +
                        std::to_string(p.api_version) + "; expected rank " + std::to_string(r) +
                        " of " + std::to_string(mine.size) + ", communicator " +
                        std::to_string(mine.comm_id) + ", API " + std::to_string(mine.api_version));
        return HCCL_ERR_BOOTSTRAP;
      }
      executing += p.execute;
    }
    // Test hook: a local failure after the exchange (as a transport set-up error would be), to
    // prove that the adapter makes every rank drop the engine for this communicator.
    if (const char* fail = std::getenv("HCCL_PLACEHOLDER_FAIL_RANK");
        fail != nullptr && std::atoi(fail) == params->rank) {
      copyMessage(err, errlen,
                  "failure injected by HCCL_PLACEHOLDER_FAIL_RANK=" + std::string(fail) +
                      " (placeholder test hook)");
      return HCCL_ERR_INTERNAL;
    }
    auto c = std::make_unique<hccl_comm>();
    c->rank = params->rank;
    c->size = params->size;
    c->id = params->comm_id;
    c->name = params->name != nullptr ? params->name : "";
    c->allgather = params->allgather;
    c->allgather_ctx = params->allgather_ctx;
    c->execute = executing == params->size;
    if (executing != 0 && executing != params->size) {
      hccl::placeholder::log(0,
                             "HCCL_PLACEHOLDER_EXECUTE is set on %d of %d ranks only; test mode "
                             "stays off for communicator %llu",
                             executing, params->size,
                             static_cast<unsigned long long>(params->comm_id));
    }
    hccl::placeholder::log(2, "communicator %llu: rank %d of %d, host %s pid %lld; hosts: %s%s",
                           static_cast<unsigned long long>(c->id), c->rank, c->size,
                           mine.host.data(), static_cast<long long>(mine.pid),
                           describeHosts(peers).c_str(), c->execute ? "; TEST MODE" : "");
    for (int id = 0; id < HCCL_SETTING_COUNT; ++id) {
      const hccl_setting_t& s = params->settings[id];
      if (s.num_layers == 0) continue;
      hccl::placeholder::log(2, "communicator %llu: %s = '%s' from %s (not interpreted yet)",
                             static_cast<unsigned long long>(c->id), settingName(id),
                             s.layers[0].value, s.layers[0].source);
    }
    *comm = c.release();
    return HCCL_SUCCESS;
  } catch (const std::exception& e) {
    copyMessage(err, errlen, std::string("hccl_comm_create: ") + e.what());
    return HCCL_ERR_INTERNAL;
  } catch (...) {
    copyMessage(err, errlen, "hccl_comm_create: unknown exception");
    return HCCL_ERR_INTERNAL;
  }
}

void hccl_comm_destroy(hccl_comm_t* comm) {
  delete comm;
}

int hccl_coll_supported(hccl_comm_t* comm, const hccl_coll_desc_t* desc, char* explain,
                        size_t explainlen) {
  if (comm == nullptr || desc == nullptr) {
    copyMessage(explain, explainlen, "NULL argument");
    return HCCL_ERR_ARG;
  }
  if (!comm->execute) {
    copyMessage(explain, explainlen, "engine not wired yet");
    return 0;
  }
  std::string why;
  if (!hccl::placeholder::canExecute(*desc, why)) {
    copyMessage(explain, explainlen, "placeholder test mode cannot run it: " + why);
    return 0;
  }
  copyMessage(explain, explainlen,
              "placeholder test mode: inputs gathered with the bootstrap all-gather, reduced in "
              "rank order");
  return 1;
}

hccl_status_t hccl_coll_start(hccl_comm_t* comm, const hccl_coll_desc_t* desc, hccl_req_t** req,
                              char* err, size_t errlen) {
  if (req != nullptr) *req = nullptr;
  if (comm == nullptr || desc == nullptr || req == nullptr || !comm->execute) {
    copyMessage(err, errlen, "hccl_coll_start: NULL argument or call not accepted");
    return HCCL_ERR_ARG;
  }
  try {
    std::string why;
    hccl_status_t st = hccl::placeholder::start(
        {comm->rank, comm->size, comm->allgather, comm->allgather_ctx}, *desc, req, why);
    if (st != HCCL_SUCCESS) copyMessage(err, errlen, why);
    return st;
  } catch (const std::bad_alloc&) {
    copyMessage(err, errlen, "out of memory");
    return HCCL_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    copyMessage(err, errlen, e.what());
    return HCCL_ERR_INTERNAL;
  } catch (...) {
    copyMessage(err, errlen, "unknown exception");
    return HCCL_ERR_INTERNAL;
  }
}

hccl_status_t hccl_req_test(hccl_req_t* req, char* err, size_t errlen) {
  if (req == nullptr) {
    copyMessage(err, errlen, "hccl_req_test: NULL request");
    return HCCL_ERR_ARG;
  }
  std::string why;
  hccl_status_t st = hccl::placeholder::test(req, why);
  if (st < 0) copyMessage(err, errlen, why);
  return st;
}

void hccl_req_free(hccl_req_t* req) {
  hccl::placeholder::release(req);
}

int hccl_progress(void) {
  return hccl::placeholder::progress();
}

}  // extern "C"
