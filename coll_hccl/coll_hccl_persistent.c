/*
 * coll_hccl_persistent.c - persistent collectives (MPIX_*_init in Open MPI 4.1, MPI_*_init in
 * MPI-4): what HCCL calls graph mode. At init the call is decided, its staging temporaries are
 * allocated and the engine plans it once (chunks, schedules, the request and its executor);
 * every MPI_Start reloads staged inputs, binds and runs the prepared plan, and completion writes
 * staged results back. The request lives from init to MPI_Request_free and keeps its
 * communicator alive.
 */
#include "coll_hccl.h"

#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

static int persistent_free(ompi_request_t** rptr) {
  mca_coll_hccl_request_t* r = (mca_coll_hccl_request_t*)*rptr;
  if (!REQUEST_COMPLETE(&r->super.super)) return MPI_ERR_REQUEST; /* started, not completed */
  hccl_prepared_free(r->prepared);
  free(r->tmp_send);
  free(r->tmp_recv);
  ompi_communicator_t* comm = r->comm;
  OMPI_REQUEST_FINI(&r->super.super);
  OBJ_DESTRUCT(&r->super);
  free(r);
  *rptr = MPI_REQUEST_NULL;
  if (NULL != comm) OBJ_RELEASE(comm);
  return OMPI_SUCCESS;
}

static int persistent_cancel(ompi_request_t* req, int complete) {
  (void)req;
  (void)complete;
  return MPI_ERR_REQUEST;
}

/* From the progress loop, after hccl_progress returned. */
static void persistent_complete(mca_coll_hccl_request_t* r, hccl_status_t st) {
  ompi_request_t* req = &r->super.super;
  int mpi_rc = MPI_SUCCESS;
  if (HCCL_SUCCESS != st) {
    const char* why = hccl_req_error(r->engine_req);
    opal_output(mca_coll_hccl_component.output, "%s on %s failed (%s): %s", r->call.mpi_name,
                MCA_COLL_HCCL_NAME(r->comm), hccl_status_string(st), why);
    mpi_rc = mca_coll_hccl_error_code(st, why);
  } else {
    mpi_rc = mca_coll_hccl_stage_out(&r->call, r->tmp_recv);
    if (MPI_SUCCESS == mpi_rc && 0 != r->call.error_after) mpi_rc = r->call.error_after;
  }
  hccl_req_free(r->engine_req);
  r->engine_req = NULL;
  req->req_status.MPI_ERROR = mpi_rc;
  ompi_request_complete(req, true);
}

static int start_one(mca_coll_hccl_request_t* r) {
  ompi_request_t* req = &r->super.super;
  if (!REQUEST_COMPLETE(req)) return MPI_ERR_REQUEST; /* still running */
  if (r->call.empty) { /* nothing to move: every start completes at once */
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_state = OMPI_REQUEST_ACTIVE;
    req->req_complete = REQUEST_PENDING;
    ompi_request_complete(req, true);
    return OMPI_SUCCESS;
  }
  int rc = mca_coll_hccl_stage_refill(&r->call, r->tmp_send, r->tmp_recv);
  req->req_status.MPI_ERROR = MPI_SUCCESS;
  req->req_state = OMPI_REQUEST_ACTIVE;
  req->req_complete = REQUEST_PENDING;
  char err[1] = ""; /* hccl_last_error() has the whole message */
  hccl_status_t st = OMPI_SUCCESS == rc
                         ? hccl_prepared_start(r->prepared, r, &r->engine_req, err, sizeof err)
                         : HCCL_ERR_NO_MEMORY;
  if (HCCL_SUCCESS == st) return OMPI_SUCCESS;
  const char* why = OMPI_SUCCESS != rc ? "staging the inputs failed" : hccl_last_error();
  opal_output(mca_coll_hccl_component.output, "%s on %s: could not start: %s", r->call.mpi_name,
              MCA_COLL_HCCL_NAME(r->comm), why);
  const int code = mca_coll_hccl_error_code(st, why);
  req->req_status.MPI_ERROR = code;
  ompi_request_complete(req, true);
  return code;
}

static int persistent_start(size_t count, ompi_request_t** requests) {
  int rc = OMPI_SUCCESS;
  for (size_t i = 0; i < count; ++i) {
    int one = start_one((mca_coll_hccl_request_t*)requests[i]);
    if (OMPI_SUCCESS != one) rc = one;
  }
  return rc;
}

int mca_coll_hccl_persistent_init(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                                  ompi_request_t** request) {
  mca_coll_hccl_request_t* r = calloc(1, sizeof *r);
  if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
  OBJ_CONSTRUCT(&r->super, ompi_coll_base_nbc_request_t);
  ompi_request_t* req = &r->super.super;
  OMPI_REQUEST_INIT(req, true);
  req->req_type = OMPI_REQUEST_COLL;
  req->req_state = OMPI_REQUEST_INACTIVE;
  req->req_complete = REQUEST_COMPLETED; /* inactive: MPI_Wait returns at once */
  req->req_status.MPI_ERROR = MPI_SUCCESS;
  req->req_start = persistent_start;
  req->req_free = persistent_free;
  req->req_cancel = persistent_cancel;
  req->req_mpi_object.comm = m->comm;
  r->call = *call;
  r->complete = persistent_complete;
  if (HCCL_OP_USER == r->call.desc.op) {
    r->call.desc.user_fn = mca_coll_hccl_reduce_with_ompi;
    r->call.desc.user_ctx = r;
  }
  if (r->call.empty) { /* no temporaries, no plan (coll_hccl_request.c) */
    OBJ_RETAIN(m->comm);
    r->comm = m->comm;
    *request = req;
    return OMPI_SUCCESS;
  }
  char err[1] = ""; /* hccl_last_error() has the whole message */
  int rc = mca_coll_hccl_stage_in(&r->call, &r->tmp_send, &r->tmp_recv);
  hccl_status_t st = HCCL_ERR_NO_MEMORY;
  if (OMPI_SUCCESS == rc) {
    st = hccl_coll_prepare(m->engine_comm, &r->call.desc, &r->prepared, err, sizeof err);
  }
  r->call.desc.recvcounts = NULL; /* the engine copied what it keeps */
  if (HCCL_SUCCESS != st) {
    const char* why = OMPI_SUCCESS != rc ? "staging failed" : hccl_last_error();
    opal_output(mca_coll_hccl_component.output, "%s on %s: could not prepare: %s", call->mpi_name,
                MCA_COLL_HCCL_NAME(m->comm), why);
    persistent_free(&req);
    return OMPI_SUCCESS != rc ? rc : mca_coll_hccl_error_code(st, why);
  }
  OBJ_RETAIN(m->comm);
  r->comm = m->comm;
  *request = req;
  return OMPI_SUCCESS;
}
