// The extern "C" engine API (hccl_engine.h) over Communicator and Request. Every entry point
// takes the engine lock (MPI_THREAD_MULTIPLE) and turns every C++ exception into a status.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "coll_hccl/engine/communicator.hpp"
#include "coll_hccl/engine/engine_state.hpp"
#include "coll_hccl/engine/reduce_kernels.hpp"
#include "coll_hccl/engine/request.hpp"
#include "coll_hccl/hccl_engine.h"
#include "coll_hccl_version.h"
#include "topology/error.hpp"

using hccl::engine::Communicator;
using hccl::engine::EngineState;
using hccl::engine::engineState;
using hccl::engine::Request;
namespace tl = hccl::tl;

struct hccl_comm {
  std::unique_ptr<Communicator> impl;
};
struct hccl_prepared {
  hccl_comm_t* comm = nullptr;
  Communicator::Prepared call;
  std::unique_ptr<Request> spare;  // the request of the last start, back from hccl_req_free
  bool started = false;            // a start is in flight
};
struct hccl_req {
  std::unique_ptr<Request> impl;
  void* owner = nullptr;
  hccl_prepared* home = nullptr;  // started from a prepared call: the request goes back there
};

namespace {

// hccl_last_error's text.
thread_local std::string lastMessage;

void put(char* buf, std::size_t len, const std::string& msg) {
  try {
    lastMessage = msg;
  } catch (...) {
    lastMessage.clear();  // out of memory: the buffer still gets what fits
  }
  if (!buf || len == 0) return;
  const std::size_t n = std::min(len - 1, msg.size());
  std::memcpy(buf, msg.data(), n);
  buf[n] = '\0';
}

// How deep this thread is inside the engine: Open MPI's progress loop can call hccl_progress from
// inside an engine call (while MPI_COMM_WORLD's bootstrap exchange polls), which must not advance
// calls the outer frame is in the middle of.
thread_local int engineDepth = 0;

struct Depth {
  Depth() { ++engineDepth; }
  ~Depth() { --engineDepth; }
  Depth(const Depth&) = delete;
  Depth& operator=(const Depth&) = delete;
};

template <typename F>
hccl_status_t catching(char* err, std::size_t errlen, F&& body) noexcept {
  try {
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

// Runs `body` under the engine lock when threads may call concurrently; exceptions become
// statuses with their message.
template <typename F>
hccl_status_t guarded(char* err, std::size_t errlen, F&& body) noexcept {
  return catching(err, errlen, [&] {
    EngineState& e = engineState();
    const Depth depth;
    if (!e.threadMultiple) return body();
    std::lock_guard<std::recursive_mutex> g(e.lock);
    return body();
  });
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
    case HCCL_ERR_PEER_LOST:
      return "peer lost";
    case HCCL_ERR_MISMATCH:
      return "mismatched calls";
  }
  return "unknown status";
}

const char* hccl_engine_version(void) {
  return "coll_hccl engine " COLL_HCCL_VERSION;
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
    for (hccl_req_t* r : e.active) delete r;
    e.active.clear();
    e.inFlight.store(0);
    if (e.trace) {
      std::string why;
      if (!e.trace->write(why))
        e.log(0, why);
      else if (e.logs(1))
        e.log(1, fmt::format("coll_hccl_trace: wrote {} records to {} ({} dropped)",
                             e.trace->size(), e.trace->path(), e.trace->dropped()));
      e.trace.reset();
    }
    e.world.reset();
    e.orphanedScratch.clear();
    return HCCL_SUCCESS;
  });
}

hccl_status_t hccl_comm_create(const hccl_comm_params_t* params, hccl_comm_t** comm, char* err,
                               size_t errlen) {
  if (comm) *comm = nullptr;
  return guarded(err, errlen, [&] {
    if (!params || !comm || params->size < 1 || params->rank < 0 || params->rank >= params->size ||
        params->api_version != HCCL_ENGINE_API_VERSION) {
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

hccl_status_t hccl_coll_start(hccl_comm_t* comm, const hccl_coll_desc_t* desc, void* owner,
                              hccl_req_t** req, char* err, size_t errlen) {
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
    // Post the first step now rather than on the next progress round: a small call on the
    // shared-memory link may even finish here (it is still handed back by hccl_progress).
    r->progress();
    auto handle = std::make_unique<hccl_req>();
    handle->impl = std::move(r);
    handle->owner = owner;
    EngineState& e = engineState();
    e.active.push_back(handle.get());
    e.inFlight.fetch_add(1, std::memory_order_release);
    *req = handle.release();
    return HCCL_SUCCESS;
  });
}

hccl_status_t hccl_coll_prepare(hccl_comm_t* comm, const hccl_coll_desc_t* desc,
                                hccl_prepared_t** prepared, char* err, size_t errlen) {
  if (prepared) *prepared = nullptr;
  return guarded(err, errlen, [&] {
    if (!comm || !desc || !prepared) return HCCL_ERR_ARG;
    auto p = std::make_unique<hccl_prepared>();
    p->comm = comm;
    std::string msg;
    const hccl_status_t st = comm->impl->prepare(*desc, p->call, msg);
    if (st != HCCL_SUCCESS) {
      put(err, errlen, msg);
      return st;
    }
    *prepared = p.release();
    return HCCL_SUCCESS;
  });
}

hccl_status_t hccl_prepared_start(hccl_prepared_t* prepared, void* owner, hccl_req_t** req,
                                  char* err, size_t errlen) {
  if (req) *req = nullptr;
  return guarded(err, errlen, [&] {
    if (!prepared || !req) return HCCL_ERR_ARG;
    if (prepared->started) {
      put(err, errlen, "the prepared call is still running: it must complete before it restarts");
      return HCCL_ERR_ARG;
    }
    Communicator& c = *prepared->comm->impl;
    std::unique_ptr<Request> r = std::move(prepared->spare);
    if (!r) r = std::make_unique<Request>(c);
    std::string msg;
    const hccl_status_t st = c.launch(prepared->call, r, msg);
    if (st != HCCL_SUCCESS) {
      put(err, errlen, msg);
      return st;
    }
    auto handle = std::make_unique<hccl_req>();
    handle->impl = std::move(r);
    handle->owner = owner;
    handle->home = prepared;
    prepared->started = true;
    EngineState& e = engineState();
    e.active.push_back(handle.get());
    e.inFlight.fetch_add(1, std::memory_order_release);
    *req = handle.release();
    return HCCL_SUCCESS;
  });
}

void hccl_prepared_free(hccl_prepared_t* prepared) {
  char ignored[8];
  (void)guarded(ignored, sizeof ignored, [&] {
    delete prepared;
    return HCCL_SUCCESS;
  });
}

// No lock and no depth count: the slots are never used with thread_multiple, and a blocking call
// does not run inside another engine call. Exceptions (none expected) become statuses.
hccl_status_t hccl_fast_start(hccl_comm_t* comm, const hccl_coll_desc_t* desc, int spins, char* err,
                              size_t errlen) {
  return catching(err, errlen, [&] {
    if (!comm || !desc) return HCCL_ERR_ARG;
    std::string msg;
    const hccl_status_t st =
        comm->impl->fastStart(*desc, spins > 0 ? static_cast<unsigned>(spins) : 1u, msg);
    if (st != HCCL_SUCCESS && st != HCCL_PENDING && st != HCCL_ERR_UNSUPPORTED)
      put(err, errlen, msg);
    return st;
  });
}

int hccl_fast_accepts(hccl_comm_t* comm, const hccl_coll_desc_t* desc) {
  char ignored[8];
  bool accepts = false;
  (void)catching(ignored, sizeof ignored, [&] {
    accepts = comm && desc && comm->impl->fastAccepts(*desc);
    return HCCL_SUCCESS;
  });
  return accepts ? 1 : 0;
}

hccl_status_t hccl_fast_poll(hccl_comm_t* comm, int spins, char* err, size_t errlen) {
  return catching(err, errlen, [&] {
    if (!comm) return HCCL_ERR_ARG;
    std::string msg;
    const hccl_status_t st =
        comm->impl->fastPoll(spins > 0 ? static_cast<unsigned>(spins) : 1u, msg);
    if (st != HCCL_SUCCESS && st != HCCL_PENDING) put(err, errlen, msg);
    return st;
  });
}

const char* hccl_last_error(void) {
  return lastMessage.c_str();
}

const char* hccl_req_error(const hccl_req_t* req) {
  return req && req->impl ? req->impl->error().c_str() : "";
}

void hccl_req_free(hccl_req_t* req) {
  char ignored[8];
  (void)guarded(ignored, sizeof ignored, [&] {
    if (req && req->home) {
      req->home->spare = std::move(req->impl);
      req->home->started = false;
    } else if (req && req->impl) {
      Communicator& c = req->impl->communicator();
      c.release(std::move(req->impl));
    }
    delete req;
    return HCCL_SUCCESS;
  });
}

int hccl_progress(hccl_completion_t* done, int max) {
  EngineState& e = engineState();
  if (e.inFlight.load(std::memory_order_acquire) == 0 || engineDepth > 0 || !done || max <= 0)
    return 0;
  // One thread progresses; the others return rather than wait (they are in Open MPI's progress
  // loop, which comes back here soon enough).
  std::unique_lock<std::recursive_mutex> lk(e.lock, std::defer_lock);
  if (e.threadMultiple && !lk.try_lock()) return 0;
  int completed = 0;
  char ignored[8];
  (void)catching(ignored, sizeof ignored, [&] {
    const Depth depth;
    // Drive each link layer once, however many calls share it, then advance every call.
    std::vector<tl::Transport*>& driven = e.progressScratch;
    driven.clear();
    for (hccl_req_t* r : e.active) {
      tl::Transport* t = &r->impl->communicator().linkLayer();
      if (std::find(driven.begin(), driven.end(), t) != driven.end()) continue;
      driven.push_back(t);
      t->progress();
    }
    for (auto it = e.active.begin(); it != e.active.end() && completed < max;) {
      hccl_req_t* r = *it;
      if (!r->impl->finished() && !r->impl->progress(false)) {
        ++it;
        continue;
      }
      done[completed++] = {r->owner, r, r->impl->status()};
      it = e.active.erase(it);
      e.inFlight.fetch_sub(1, std::memory_order_release);
    }
    return HCCL_SUCCESS;
  });
  return completed;
}

hccl_status_t hccl_reduce_local(const void* in, void* inout, size_t count, hccl_dtype_t dtype,
                                hccl_op_t op) {
  if (dtype < 0 || dtype >= HCCL_DT_COUNT || op < HCCL_OP_SUM || op > HCCL_OP_BXOR)
    return HCCL_ERR_UNSUPPORTED;
  if (count > 0 && (!in || !inout)) return HCCL_ERR_ARG;
  const hccl::engine::ReduceFn fn =
      hccl::engine::kernel(static_cast<hccl::DataType>(dtype), static_cast<hccl::ReduceOp>(op));
  if (!fn) return HCCL_ERR_UNSUPPORTED;
  fn(inout, in, inout, count);  // MPI: inout = in (op) inout, `in` on the left
  return HCCL_SUCCESS;
}

}  // extern "C"
