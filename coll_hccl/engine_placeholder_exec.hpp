// TEMPORARY: the placeholder engine's test mode (HCCL_PLACEHOLDER_EXECUTE=1), removed with it.
//
// It exists to prove the Open MPI adapter's engine path before the engine is wired: MPI requests
// completed from the progress loop, packing of non-contiguous allgather types, MPI_IN_PLACE
// layouts, per-rank reduce-scatter counts, and the user-op callback in rank order. It gathers
// every rank's whole input with the bootstrap all-gather inside hccl_coll_start (blocking, so
// nonblocking calls are only "nonblocking" from then on) and reduces during hccl_progress.
#pragma once

#include <string>

#include "coll_hccl/hccl_engine.h"

namespace hccl::placeholder {

struct CommView {
  int rank;
  int size;
  hccl_allgather_fn allgather;
  void* allgather_ctx;
};

// Engine log line through the adapter's callback (printf-style).
void log(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

bool canExecute(const hccl_coll_desc_t& desc, std::string& why);
hccl_status_t start(const CommView& comm, const hccl_coll_desc_t& desc, hccl_req_t** req,
                    std::string& why);
hccl_status_t test(hccl_req_t* req, std::string& why);
void release(hccl_req_t* req);
int progress();

}  // namespace hccl::placeholder
