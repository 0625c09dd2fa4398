/*
 * coll_hccl_scatterv.c - MPI_Scatterv, MPI_Iscatterv and MPIX_Scatterv_init on the engine's
 * SCATTERV.
 *
 * The mirror of Gatherv (coll_hccl_gatherv.c): the root alone knows the per-rank counts and
 * displacements, so the decision never looks at them. The root's send blocks reach the engine
 * packed, directly or through a temporary filled from every displacement; in place, the root's
 * receive buffer is neither read nor written and its own block stays where it is.
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const void* sbuf;
  const int* scounts;
  const int* displs;
  ompi_datatype_t* sdtype;
  void* rbuf;
  int rcount;
  ompi_datatype_t* rdtype;
  int root;
} scatterv_args_t;

static const char* describe_scatterv(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                     const void* args, mca_coll_hccl_vtable_t* t) {
  const scatterv_args_t* a = args;
  const void* sbuf = a->sbuf;
  void* rbuf = a->rbuf;
  int rcount = a->rcount, root = a->root;
  ompi_datatype_t *sdtype = a->sdtype, *rdtype = a->rdtype;
  size_t p = (size_t)ompi_comm_size(m->comm);
  bool is_root = ompi_comm_rank(m->comm) == root;
  hccl_coll_desc_t* d = &call->desc;
  d->coll = HCCL_COLL_SCATTERV;
  d->root = root;
  d->in_place = is_root && MPI_IN_PLACE == rbuf ? 1 : 0;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->op = HCCL_OP_NONE;
  call->dtype = is_root ? sdtype : rdtype;
  if (!is_root) {
    d->count = mca_coll_hccl_bytes(rdtype, (size_t)rcount);
    call->bytes = d->count;
    d->recvbuf = mca_coll_hccl_side(&call->recv, rbuf, (size_t)rcount, rdtype, false, true);
    return NULL;
  }
  /* In place the engine takes the send blocks as the root's recvbuf and writes nothing there. */
  mca_coll_hccl_stage_t* send = d->in_place ? &call->recv : &call->send;
  void* blocks =
      mca_coll_hccl_blocks_side(send, t, sbuf, p, a->scounts, a->displs, sdtype, NULL, true, false);
  d->sendcounts = t->bytes;
  d->count = t->bytes[root];
  call->bytes = t->total;
  if (!d->in_place && mca_coll_hccl_bytes(rdtype, (size_t)rcount) != d->count) {
    /* the send blocks were staged on the send side: the in-place call takes them as recvbuf */
    mca_coll_hccl_root_mismatch(call, d->count, mca_coll_hccl_bytes(rdtype, (size_t)rcount));
    call->recv = call->send;
    memset(&call->send, 0, sizeof call->send);
  }
  if (d->in_place) {
    d->recvbuf = blocks;
    return NULL;
  }
  d->sendbuf = blocks;
  d->recvbuf = mca_coll_hccl_side(&call->recv, rbuf, (size_t)rcount, rdtype, false, true);
  return NULL;
}

static bool scatterv(const void* sbuf, const int* scounts, const int* displs,
                     ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                     int root, mca_coll_hccl_module_t* m, ompi_request_t** request, bool persistent,
                     int* rc) {
  static const char* const names[3] = {"MPI_Scatterv", "MPI_Iscatterv", "MPIX_Scatterv_init"};
  scatterv_args_t a = {sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root};
  return mca_coll_hccl_offer_v(m, names, request, persistent, 1, describe_scatterv, &a, rc);
}

int mca_coll_hccl_scatterv(const void* sbuf, const int* scounts, const int* displs,
                           ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                           int root, ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, m, NULL, false, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, scatterv))
    return m->prev_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm,
                            m->prev_scatterv_module);
  return mca_coll_hccl_floor_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                      comm, NULL, false);
}

int mca_coll_hccl_iscatterv(const void* sbuf, const int* scounts, const int* displs,
                            ompi_datatype_t* sdtype, void* rbuf, int rcount,
                            ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                            ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, m, request, false, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, iscatterv))
    return m->prev_iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm,
                             request, m->prev_iscatterv_module);
  return mca_coll_hccl_floor_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                      comm, request, false);
}

/* Persistent (MPIX_Scatterv_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_scatterv_init(const void* sbuf, const int* scounts, const int* displs,
                                ompi_datatype_t* sdtype, void* rbuf, int rcount,
                                ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                                struct ompi_info_t* info, ompi_request_t** request,
                                mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, m, request, true, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, scatterv_init))
    return m->prev_scatterv_init(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm,
                                 info, request, m->prev_scatterv_init_module);
  return mca_coll_hccl_floor_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                      comm, request, true);
}
