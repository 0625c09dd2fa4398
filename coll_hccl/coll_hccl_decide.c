/*
 * coll_hccl_decide.c - engine, previous component or coll_hccl's own point-to-point floor, and
 * the one verbose line saying which (`-> hccl: ...`, `-> fallback: <why>`, `-> floor: <why>`).
 *
 * Every input of the decision is equal on every rank (see hccl_coll_desc_t), so all ranks of a
 * communicator take the same path: a rank falling back while another runs the engine would hang.
 * Whether a previous component exists is a property of the communicator's selection, the same
 * everywhere; the floor serves a call only where none does (`--mca coll hccl` alone), or every
 * call under the coll_hccl_force_floor diagnostic.
 */
#include "coll_hccl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

static void describe(const mca_coll_hccl_call_t* call, char* buf, size_t len) {
  const hccl_coll_desc_t* d = &call->desc;
  const char* type = NULL == call->dtype            ? "per-peer types"
                     : '\0' == call->dtype->name[0] ? "derived type"
                                                    : call->dtype->name;
  /* a non-commutative op must run rank-ordered: say so next to the algorithm chosen */
  char op[MPI_MAX_OBJECT_NAME + 24] = "";
  if (NULL != call->op)
    snprintf(op, sizeof op, "%s%s", call->op->o_name,
             HCCL_OP_USER == d->op && !d->user_commutative ? " (non-commutative)" : "");
  switch (d->coll) {
    case HCCL_COLL_ALLREDUCE:
      snprintf(buf, len, "%zu x %s, %s, %zu bytes", d->count, type, op, call->bytes);
      break;
    case HCCL_COLL_ALLGATHER:
      snprintf(buf, len, "%s, %zu bytes gathered", type, call->bytes);
      break;
    case HCCL_COLL_REDUCE_SCATTER_BLOCK:
      snprintf(buf, len, "%zu x %s per rank, %s, %zu bytes in", d->count, type, op, call->bytes);
      break;
    case HCCL_COLL_REDUCE_SCATTER:
      snprintf(buf, len, "%s, %s, %zu bytes in (per-rank counts)", type, op, call->bytes);
      break;
    case HCCL_COLL_BCAST:
      snprintf(buf, len, "%s, %zu bytes from root %d", type, call->bytes, d->root);
      break;
    case HCCL_COLL_REDUCE:
      snprintf(buf, len, "%zu x %s, %s, %zu bytes to root %d", d->count, type, op, call->bytes,
               d->root);
      break;
    case HCCL_COLL_SCATTER:
    case HCCL_COLL_SCATTERV:
      snprintf(buf, len, "%s, %zu bytes from root %d", type, call->bytes, d->root);
      break;
    case HCCL_COLL_GATHER:
    case HCCL_COLL_GATHERV:
      snprintf(buf, len, "%s, %zu bytes to root %d", type, call->bytes, d->root);
      break;
    case HCCL_COLL_ALLTOALL:
    case HCCL_COLL_ALLTOALLV:
      snprintf(buf, len, "%s, %zu bytes sent", type, call->bytes);
      break;
    case HCCL_COLL_ALLGATHERV:
      snprintf(buf, len, "%s, %zu bytes gathered (per-rank counts)", type, call->bytes);
      break;
    case HCCL_COLL_BARRIER:
      snprintf(buf, len, "no data");
      break;
    case HCCL_COLL_SCAN:
    case HCCL_COLL_EXSCAN:
      snprintf(buf, len, "%zu x %s, %s, %zu bytes", d->count, type, op, call->bytes);
      break;
    case HCCL_COLL_COUNT:
      snprintf(buf, len, "?");
      break;
  }
}

/* "MPI_Iallreduce" -> "iallreduce", "MPIX_Allreduce_init" -> "allreduce_init" */
static bool path_is_prev(const mca_coll_hccl_module_t* m, const char* mpi_name) {
  const char* at = strchr(mpi_name, '_');
  char slot[64];
  size_t n = 0;
  for (at = NULL != at ? at + 1 : mpi_name; '\0' != *at && n + 1 < sizeof slot; ++at)
    slot[n++] = (char)tolower((unsigned char)*at);
  slot[n] = '\0';
  return mca_coll_hccl_use_prev(mca_coll_hccl_has_prev_slot(m, slot));
}

static const char* why_not_engine(const mca_coll_hccl_module_t* m) {
  if (mca_coll_hccl_component.force_floor) return "coll_hccl_force_floor is set";
  if (NULL == m->engine_comm) {
    return ompi_comm_size(m->comm) < 2 ? "single rank" : "no engine on this communicator";
  }
  return NULL;
}

static void log_line(const mca_coll_hccl_module_t* m, const char* mpi_name, const char* what,
                     bool in_place, bool take, const char* why, const char* note) {
  int rank = ompi_comm_rank(m->comm);
  const char* path = take ? "hccl" : path_is_prev(m, mpi_name) ? "fallback" : "floor";
  opal_output(mca_coll_hccl_component.output, "%s on %s (cid %u, rank %d of %d): %s%s -> %s: %s%s",
              mpi_name, MCA_COLL_HCCL_NAME(m->comm), (unsigned)MCA_COLL_HCCL_CID(m->comm), rank,
              ompi_comm_size(m->comm), what, in_place ? ", in place" : "", path, why, note);
}

/* `note` ends the verbose line ("" for none). */
static bool decide_noted(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                         const char* adapter_why, const char* note) {
  char explain[512] = "";
  bool take = false;
  if (call->empty && !mca_coll_hccl_component.force_floor) {
    /* every rank completes it alike, on or off the engine: no peer waits for anything */
    take = true;
    adapter_why = "nothing to move, completed locally";
  } else if (NULL == adapter_why) {
    adapter_why = why_not_engine(m);
  }
  if (!take && NULL == adapter_why) {
    int rc = hccl_coll_supported(m->engine_comm, &call->desc, explain, sizeof explain);
    if (rc < 0) {
      /* Cannot be rank-dependent for a correct engine; say so loudly rather than hide it. */
      opal_output(mca_coll_hccl_component.output, "%s: engine error while deciding (%s): %s",
                  call->mpi_name, hccl_status_string((hccl_status_t)rc), explain);
    }
    take = 1 == rc;
  }
  if (mca_coll_hccl_wants_log(m->comm)) {
    char what[256];
    describe(call, what, sizeof what);
    log_line(m, call->mpi_name, what, 0 != call->desc.in_place, take,
             NULL != adapter_why ? adapter_why : explain, note);
  }
  return take;
}

bool mca_coll_hccl_decide(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                          const char* adapter_why) {
  return decide_noted(m, call, adapter_why, "");
}

void mca_coll_hccl_call_init(mca_coll_hccl_call_t* call, const char* const names[3],
                             ompi_request_t** request, bool persistent) {
  memset(call, 0, sizeof *call);
  call->mpi_name = names[persistent ? 2 : NULL != request ? 1 : 0];
  call->persistent = persistent;
  call->desc.nonblocking = NULL != request ? 1 : 0;
}

bool mca_coll_hccl_offer(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                         const char* adapter_why, ompi_request_t** request, int* rc) {
  if (!mca_coll_hccl_decide(m, call, adapter_why)) return false;
  *rc = mca_coll_hccl_run(m, call, request);
  return true;
}

bool mca_coll_hccl_offer_v(mca_coll_hccl_module_t* m, const char* const names[3],
                           ompi_request_t** request, bool persistent, int sides,
                           mca_coll_hccl_describe_v_t describe_v, const void* args, int* rc) {
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  mca_coll_hccl_vtable_t t[2]; /* Alltoallv's two sides at most */
  void* mem = NULL;
  if (OMPI_SUCCESS != mca_coll_hccl_vtables((size_t)ompi_comm_size(m->comm), sides, t, &mem)) {
    *rc = OMPI_ERR_OUT_OF_RESOURCE;
    return true;
  }
  const char* why = describe_v(m, &call, args, t);
  /* Allgatherv alone of the V forms may run on the slots: every rank knows every count. */
  bool taken = HCCL_COLL_ALLGATHERV == call.desc.coll && NULL == request && !persistent &&
               mca_coll_hccl_try_fast(m, &call, why, rc);
  if (!taken) taken = mca_coll_hccl_offer(m, &call, why, request, rc);
  free(mem);
  return taken;
}

const char* mca_coll_hccl_nothing(mca_coll_hccl_call_t* call) {
  call->empty = true;
  return NULL;
}

void mca_coll_hccl_root_mismatch(mca_coll_hccl_call_t* call, size_t send_bytes, size_t recv_bytes) {
  opal_output(mca_coll_hccl_component.output,
              "%s: the root's own block is %zu bytes to send but %zu bytes to receive (MPI needs "
              "matching type signatures); it is not copied and the call fails with "
              "MPI_ERR_TRUNCATE",
              call->mpi_name, send_bytes, recv_bytes);
  call->error_after = MPI_ERR_TRUNCATE;
  call->desc.in_place = 1;
  call->desc.sendbuf = NULL;
}

void mca_coll_hccl_log_fast(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call) {
  if (mca_coll_hccl_wants_log(m->comm))
    (void)decide_noted(m, call, NULL, "; on the shared-memory slots");
}
