/*
 * coll_hccl_request.c - MPI requests for calls the engine runs, and their completion from Open
 * MPI's progress loop. Blocking calls use the same path and poll their request, the engine more
 * often than Open MPI's whole loop.
 *
 * The engine owns every call in flight (hccl_progress hands back those that completed); this file
 * only maps a completion onto its MPI request. Two facts from the reference
 * (openmpi-component.md section 6) shape it:
 *  - the MPI layer casts every request returned by coll_i* to ompi_coll_base_nbc_request_t (to keep
 *    user ops and derived types alive), so ours embeds one first;
 *  - completing a request runs callbacks that may re-enter opal_progress, so completion happens
 *    after hccl_progress returned, outside the engine.
 */
#include "coll_hccl.h"
#include "coll_hccl_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/* libmpi exports it but no installed header declares it (see coll_hccl_component.c). */
extern bool ompi_mpi_yield_when_idle;

/* How many times a blocking call polls the engine for each round of Open MPI's whole progress
 * loop. perf of an 8 B MPI_Allreduce at np=2 over the shared-memory link: about half of every
 * poll went to that loop (the vader BTL, opal_progress, ob1), so the peer's data was seen that
 * much later; the engine carries everything the call needs itself. */
enum { kEnginePollsPerRound = 64 };

static int request_free(ompi_request_t** rptr) {
  mca_coll_hccl_request_t* r = (mca_coll_hccl_request_t*)*rptr;
  if (!REQUEST_COMPLETE(&r->super.super)) return MPI_ERR_REQUEST;
  OMPI_REQUEST_FINI(&r->super.super);
  OBJ_DESTRUCT(&r->super);
  free(r);
  *rptr = MPI_REQUEST_NULL;
  return OMPI_SUCCESS;
}

static int request_cancel(ompi_request_t* req, int complete) {
  (void)req;
  (void)complete;
  return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

/* The engine's reduction callback for ops without an engine kernel: Open MPI's own reduction.
 * ompi_op_reduce computes target = source op target and takes MPI buffer pointers, i.e. before
 * the datatype's lower bound. */
void mca_coll_hccl_reduce_with_ompi(const void* in, void* inout, size_t count, void* ctx) {
  mca_coll_hccl_request_t* r = (mca_coll_hccl_request_t*)ctx;
  ompi_op_reduce(r->call.op, (char*)(uintptr_t)in - r->call.true_lb, (char*)inout - r->call.true_lb,
                 count, r->call.dtype);
}

static void release_buffers(mca_coll_hccl_request_t* r) {
  free(r->tmp_send);
  free(r->tmp_recv);
  r->tmp_send = r->tmp_recv = NULL;
}

/* Non-contiguous layouts: the engine works on staged copies (coll_hccl_stage.c). */
static int pack_inputs(mca_coll_hccl_request_t* r) {
  return mca_coll_hccl_stage_in(&r->call, &r->tmp_send, &r->tmp_recv);
}

static int start(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                 ompi_request_t** request) {
  mca_coll_hccl_request_t* r = calloc(1, sizeof *r);
  if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
  OBJ_CONSTRUCT(&r->super, ompi_coll_base_nbc_request_t);
  ompi_request_t* req = &r->super.super;
  OMPI_REQUEST_INIT(req, false);
  req->req_type = OMPI_REQUEST_COLL;
  req->req_state = OMPI_REQUEST_ACTIVE;
  req->req_status.MPI_ERROR = MPI_SUCCESS;
  req->req_free = request_free;
  req->req_cancel = request_cancel;
  req->req_mpi_object.comm = m->comm;

  r->call = *call;
  if (HCCL_OP_USER == r->call.desc.op) {
    r->call.desc.user_fn = mca_coll_hccl_reduce_with_ompi;
    r->call.desc.user_ctx = r;
  }

  char err[1] = ""; /* hccl_last_error() has the whole message */
  int rc = pack_inputs(r);
  hccl_status_t st = HCCL_SUCCESS;
  /* Retained before the engine may complete the call: the progress loop releases it. */
  OBJ_RETAIN(m->comm);
  r->comm = m->comm;
  if (OMPI_SUCCESS == rc) {
    st = hccl_coll_start(m->engine_comm, &r->call.desc, r, &r->engine_req, err, sizeof err);
  }
  if (OMPI_SUCCESS != rc || HCCL_SUCCESS != st) {
    /* The engine's whole message: err only holds what fits. */
    const char* why = hccl_last_error();
    opal_output(mca_coll_hccl_component.output, "%s on %s: could not start: %s", call->mpi_name,
                MCA_COLL_HCCL_NAME(m->comm),
                OMPI_SUCCESS != rc ? "out of memory or packing failed" : why);
    release_buffers(r);
    r->comm = NULL;
    OBJ_RELEASE(m->comm);
    req->req_complete = REQUEST_COMPLETED;
    request_free(&req);
    return OMPI_SUCCESS != rc ? rc : mca_coll_hccl_error_code(st, why);
  }
  r->call.desc.recvcounts = NULL;
  *request = req;
  return OMPI_SUCCESS;
}

int mca_coll_hccl_run(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                      ompi_request_t** request) {
  if (call->persistent) return mca_coll_hccl_persistent_init(m, call, request);
  if (call->empty) {
    /* As Open MPI's own MPI layer does for a count of 0: a request that is already complete,
     * which MPI_Wait/MPI_Test free to MPI_REQUEST_NULL and the retain calls leave alone. */
    if (NULL != request) *request = &ompi_request_empty;
    return OMPI_SUCCESS;
  }
  if (NULL != request) return start(m, call, request);
  ompi_request_t* req = NULL;
  int rc = start(m, call, &req);
  if (OMPI_SUCCESS != rc) return rc;
  /* Polling the request, as the bootstrap does, rather than ompi_request_wait_completion: the
   * engine first, Open MPI's loop (other traffic, and the yield when ranks outnumber cores, where
   * it runs on every poll) in between. Under MPI_THREAD_MULTIPLE another thread may complete
   * the request: hccl_progress lets one thread in at a time, and completion is seen here. */
  const int polls = ompi_mpi_yield_when_idle ? 1 : kEnginePollsPerRound;
  while (!REQUEST_COMPLETE(req)) {
    for (int i = 1; i < polls && !REQUEST_COMPLETE(req); ++i) (void)mca_coll_hccl_progress();
    if (!REQUEST_COMPLETE(req)) opal_progress();
  }
  rc = req->req_status.MPI_ERROR;
  (void)ompi_request_free(&req);
  return rc;
}

/* Polls of the slots between two runs of Open MPI's loop: one when ranks outnumber cores (the
 * loop then yields the core). hccl_fast_start already polls as many times, so a call whose peers
 * are there finishes within one crossing into the engine. */
static inline int fast_polls(void) {
  return ompi_mpi_yield_when_idle ? 1 : kEnginePollsPerRound;
}

/* A call hccl_fast_start answered with st: false if the slots do not take it, else waits for it
 * and sets *rc. Inlined: the contiguous path compiles as it did before the staged one existed. */
static inline __attribute__((always_inline)) bool fast_run(mca_coll_hccl_module_t* m,
                                                           const mca_coll_hccl_call_t* call,
                                                           hccl_status_t st, int* rc) {
  if (HCCL_ERR_UNSUPPORTED == st) return false;
  char err[1] = ""; /* hccl_last_error() has the whole message */
  /* As mca_coll_hccl_run: the engine's flags first, Open MPI's loop (other traffic, and the
   * yield when ranks outnumber cores) in between. */
  while (HCCL_PENDING == st) {
    opal_progress();
    st = hccl_fast_poll(m->engine_comm, fast_polls(), err, sizeof err);
  }
  mca_coll_hccl_log_fast(m, call);
  if (HCCL_SUCCESS == st) {
    *rc = OMPI_SUCCESS;
    return true;
  }
  const char* message = hccl_last_error();
  opal_output(mca_coll_hccl_component.output, "%s on %s failed (%s): %s", call->mpi_name,
              MCA_COLL_HCCL_NAME(m->comm), hccl_status_string(st), message);
  *rc = mca_coll_hccl_error_code(st, message);
  return true;
}

/* The slots on staged copies of a side that is not contiguous on this rank: packed only for a
 * shape the slots take, unpacked after success. */
static bool try_fast_staged(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call, int* rc) {
  if (!hccl_fast_accepts(m->engine_comm, &call->desc)) return false;
  mca_coll_hccl_call_t staged = *call;
  void *tmp_send = NULL, *tmp_recv = NULL;
  *rc = mca_coll_hccl_stage_in(&staged, &tmp_send, &tmp_recv);
  bool taken = true;
  if (OMPI_SUCCESS != *rc) {
    opal_output(mca_coll_hccl_component.output,
                "%s on %s: could not start: out of memory or packing failed", call->mpi_name,
                MCA_COLL_HCCL_NAME(m->comm));
  } else {
    char err[1] = "";
    taken = fast_run(
        m, call, hccl_fast_start(m->engine_comm, &staged.desc, fast_polls(), err, sizeof err), rc);
    if (taken && OMPI_SUCCESS == *rc) *rc = mca_coll_hccl_stage_out(&staged, tmp_recv);
  }
  free(tmp_send);
  free(tmp_recv);
  return taken;
}

bool mca_coll_hccl_try_fast(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                            const char* why, int* rc) {
  /* Decided from what every rank shares (the adapter's reasons for these calls, the engine's
   * [same] fields), never from this rank's layout: ranks may pass equal signatures in different
   * layouts (MPI_Allgather, MPI_Bcast), so a rank whose side is not contiguous packs it and takes
   * the slots too. The same holds for an in-place root (the engine rebinds its buffers) and for
   * error_after, the root's alone (its own block's sizes differ): it runs the call with the
   * others and reports the error after. */
  if (NULL != why || NULL == m->engine_comm || call->empty || call->persistent ||
      0 != call->desc.nonblocking || HCCL_OP_USER == call->desc.op ||
      !mca_coll_hccl_component.slots || mca_coll_hccl_component.force_floor)
    return false;
  bool taken = false;
  if (MCA_COLL_HCCL_DIRECT != call->send.kind || MCA_COLL_HCCL_DIRECT != call->recv.kind) {
    taken = try_fast_staged(m, call, rc);
  } else {
    char err[1] = "";
    taken = fast_run(
        m, call, hccl_fast_start(m->engine_comm, &call->desc, fast_polls(), err, sizeof err), rc);
  }
  if (taken && OMPI_SUCCESS == *rc && 0 != call->error_after) *rc = call->error_after;
  return taken;
}

void mca_coll_hccl_memo_keep(mca_coll_hccl_memo_t** slot, const mca_coll_hccl_call_t* call,
                             const char* why, const void* sbuf, void* rbuf, int count, int root,
                             ompi_datatype_t* dtype, ompi_op_t* op) {
  if (NULL != why || call->empty || 0 != call->error_after || call->persistent ||
      0 != call->desc.nonblocking || MCA_COLL_HCCL_DIRECT != call->send.kind ||
      MCA_COLL_HCCL_DIRECT != call->recv.kind || !ompi_datatype_is_predefined(dtype) ||
      (NULL != op && !ompi_op_is_intrinsic(op)))
    return;
  if (NULL == *slot && NULL == (*slot = malloc(sizeof **slot))) return; /* no memo: no harm */
  mca_coll_hccl_memo_t* k = *slot;
  k->sbuf = sbuf;
  k->rbuf = rbuf;
  k->count = count;
  k->root = root;
  k->dtype = dtype;
  k->op = op;
  k->call = *call;
}

/* After hccl_progress returned: completion callbacks may start new calls or free the
 * communicator (its destructor runs if this was the last reference). */
static void finish(mca_coll_hccl_request_t* r, hccl_status_t st) {
  if (NULL != r->complete) { /* a persistent request completes its own way */
    r->complete(r, st);
    return;
  }
  mca_coll_hccl_call_t* call = &r->call;
  ompi_request_t* req = &r->super.super;
  int mpi_rc = MPI_SUCCESS;
  if (HCCL_SUCCESS != st) {
    const char* why = hccl_req_error(r->engine_req);
    opal_output(mca_coll_hccl_component.output, "%s on %s failed (%s): %s", call->mpi_name,
                MCA_COLL_HCCL_NAME(r->comm), hccl_status_string(st), why);
    mpi_rc = mca_coll_hccl_error_code(st, why);
  } else {
    mpi_rc = mca_coll_hccl_stage_out(call, r->tmp_recv);
    if (MPI_SUCCESS == mpi_rc && 0 != call->error_after) mpi_rc = call->error_after;
  }
  hccl_req_free(r->engine_req);
  r->engine_req = NULL;
  release_buffers(r);
  ompi_communicator_t* comm = r->comm;
  r->comm = NULL;
  req->req_status.MPI_ERROR = mpi_rc;
  ompi_request_complete(req, true);
  OBJ_RELEASE(comm);
}

int mca_coll_hccl_progress(void) {
  enum { kBatch = 16 };
  hccl_completion_t done[kBatch];
  int n = hccl_progress(done, kBatch);
  for (int i = 0; i < n; ++i) finish((mca_coll_hccl_request_t*)done[i].owner, done[i].status);
  return n + mca_coll_hccl_sched_progress();
}
