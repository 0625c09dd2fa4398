// The extern "C" engine API (hccl_engine.h) over Communicator and Request. Every entry point
// takes the engine lock (MPI_THREAD_MULTIPLE) and turns every C++ exception into a status.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "coll_hccl/engine/communicator.hpp"
#include "coll_hccl/engine/engine_state.hpp"
#include "coll_hccl/engine/request.hpp"
#include "coll_hccl/hccl_engine.h"
#include "topology/error.hpp"

using hccl::engine::Communicator;
using hccl::engine::EngineState;
using hccl::engine::engineState;
using hccl::engine::Request;
namespace tl = hccl::tl;

struct hccl_comm {
  std::unique_ptr<Communicator> impl;
};
struct hccl_req {
  std::unique_ptr<Request> impl;
};

namespace {

void put(char* buf, std::size_t len, const std::string& msg) {
  if (!buf || len == 0) return;
  const std::size_t n = std::min(len - 1, msg.size());
  std::memcpy(buf, msg.data(), n);
  buf[n] = '\0';
}

// Runs `body` (under the engine lock when threads may call concurrently); exceptions become
// statuses with their message.
template <typename F>
hccl_status_t guarded(char* err, std::size_t errlen, F&& body) noexcept {
  try {
    EngineState& e = engineState();
    if (!e.threadMultiple) return body();
    std::lock_guard<std::recursive_mutex> g(e.lock);
    return body();
  } catch (const std::bad_alloc&) {
    put(err, errlen, "out of memory");
    return HCCL_ERR_NO_MEMORY;
  } catch (const hccl::topo::TopologyError& e) {
    put(err, errlen, e.what());
    return HCCL_ERR_CONFIG;
  } catch (const std::exception& e) {
    put(err, errlen, fmt::format("internal error: {}", e.what()));
    return HCCL_ERR_INTERNAL;
  } catch (...) {
    put(err, errlen, "internal error: unknown exception");
    return HCCL_ERR_INTERNAL;
  }
}

}  // namespace

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
      return "not supported";
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
  return "coll_hccl engine 0.1.0";
}

hccl_status_t hccl_engine_init(const hccl_engine_params_t* params, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!params || params->api_version != HCCL_ENGINE_API_VERSION) {
      put(err, errlen,
          fmt::format("engine API version {} expected, adapter has {}", HCCL_ENGINE_API_VERSION,
                      params ? params->api_version : -1));
      return HCCL_ERR_ARG;
    }
    engineState().configure(*params);
    return HCCL_SUCCESS;
  });
}

void hccl_engine_finalize(void) {
  char ignored[8];
  (void)guarded(ignored, sizeof ignored, [] {
    EngineState& e = engineState();
    e.active.clear();
    e.world.reset();
    return HCCL_SUCCESS;
  });
}

hccl_status_t hccl_comm_create(const hccl_comm_params_t* params, hccl_comm_t** comm, char* err,
                               size_t errlen) {
  if (comm) *comm = nullptr;
  return guarded(err, errlen, [&] {
    if (!params || !comm || !params->allgather || params->size < 1 || params->rank < 0 ||
        params->rank >= params->size || params->api_version != HCCL_ENGINE_API_VERSION) {
      put(err, errlen, "invalid communicator parameters");
      return HCCL_ERR_ARG;
    }
    std::unique_ptr<Communicator> c;
    std::string msg;
    const hccl_status_t st = Communicator::create(engineState(), *params, c, msg);
    if (st != HCCL_SUCCESS) {
      put(err, errlen, msg);
      return st;
    }
    *comm = new hccl_comm{std::move(c)};
    return HCCL_SUCCESS;
  });
}

void hccl_comm_destroy(hccl_comm_t* comm) {
  char ignored[8];
  (void)guarded(ignored, sizeof ignored, [&] {
    delete comm;
    return HCCL_SUCCESS;
  });
}

int hccl_coll_supported(hccl_comm_t* comm, const hccl_coll_desc_t* desc, char* explain,
                        size_t explainlen) {
  int result = 0;
  const hccl_status_t st = guarded(explain, explainlen, [&] {
    if (!comm || !desc) return HCCL_ERR_ARG;
    std::string why;
    result = comm->impl->supported(*desc, why);
    put(explain, explainlen, why);
    return HCCL_SUCCESS;
  });
  return st == HCCL_SUCCESS ? result : st;
}

hccl_status_t hccl_coll_start(hccl_comm_t* comm, const hccl_coll_desc_t* desc, hccl_req_t** req,
                              char* err, size_t errlen) {
  if (req) *req = nullptr;
  return guarded(err, errlen, [&] {
    if (!comm || !desc || !req) return HCCL_ERR_ARG;
    std::unique_ptr<Request> r;
    std::string msg;
    const hccl_status_t st = comm->impl->start(*desc, r, msg);
    if (st != HCCL_SUCCESS) {
      put(err, errlen, msg);
      return st;
    }
    engineState().active.push_back(r.get());
    *req = new hccl_req{std::move(r)};
    return HCCL_SUCCESS;
  });
}

hccl_status_t hccl_req_test(hccl_req_t* req, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!req) return HCCL_ERR_ARG;
    Request& r = *req->impl;
    if (!r.progress(false)) return HCCL_PENDING;
    if (r.failed()) {
      put(err, errlen, r.error());
      return r.error().find("no progress") != std::string::npos ? HCCL_ERR_TIMEOUT
                                                                : HCCL_ERR_TRANSPORT;
    }
    return HCCL_SUCCESS;
  });
}

void hccl_req_free(hccl_req_t* req) {
  char ignored[8];
  (void)guarded(ignored, sizeof ignored, [&] {
    if (req) {
      std::erase(engineState().active, req->impl.get());
      Communicator& c = req->impl->communicator();
      c.release(std::move(req->impl));
    }
    delete req;
    return HCCL_SUCCESS;
  });
}

int hccl_progress(void) {
  int completed = 0;
  char ignored[8];
  (void)guarded(ignored, sizeof ignored, [&] {
    // Drive each transport once, however many calls share it, then advance every call.
    tl::Transport* driven[8];
    std::size_t n = 0;
    for (Request* r : engineState().active) {
      tl::Transport* t = &r->communicator().transport();
      if (std::find(driven, driven + n, t) != driven + n) continue;
      t->progress();
      if (n < std::size(driven)) driven[n++] = t;
    }
    for (Request* r : engineState().active)
      if (!r->finished() && r->progress(false)) ++completed;
    return HCCL_SUCCESS;
  });
  return completed;
}

}  // extern "C"
