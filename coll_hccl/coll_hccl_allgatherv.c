/*
 * coll_hccl_allgatherv.c - MPI_Allgatherv and MPI_Iallgatherv: AllGather with per-rank blocks.
 *
 * MPI makes recvcounts (and the type signature) equal on every rank, so the engine decides on
 * the byte count of each block. Displacements may differ from rank to rank: a rank whose blocks
 * are not packed back to back in a contiguous layout stages them (packs its own block in when in
 * place, unpacks every block to its displacement afterwards), which is a local matter.
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <stdlib.h>
#include <string.h>

static const char* describe_allgatherv(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                       const void* args, mca_coll_hccl_vtable_t* t) {
  const mca_coll_hccl_gatherv_args_t* a = args;
  const void* sbuf = a->sbuf;
  int scount = a->scount;
  ompi_datatype_t *sdtype = a->sdtype, *rdtype = a->rdtype;
  void* rbuf = a->rbuf;
  size_t p = (size_t)ompi_comm_size(m->comm);
  size_t rank = (size_t)ompi_comm_rank(m->comm);
  hccl_coll_desc_t* d = &call->desc;
  call->dtype = rdtype;
  d->coll = HCCL_COLL_ALLGATHERV;
  d->in_place = MPI_IN_PLACE == sbuf ? 1 : 0;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->op = HCCL_OP_NONE;
  /* every block unpacked to its displacement when staged */
  d->recvbuf = mca_coll_hccl_blocks_side(&call->recv, t, rbuf, p, a->rcounts, a->displs, rdtype,
                                         NULL, false, true);
  d->recvcounts = t->bytes;
  call->bytes = t->total;
  if (0 == t->total) return mca_coll_hccl_nothing(call);

  if (!d->in_place) {
    if (mca_coll_hccl_bytes(sdtype, (size_t)scount) != t->bytes[rank])
      return "send and receive sizes differ";
    d->sendbuf = mca_coll_hccl_side(&call->send, sbuf, (size_t)scount, sdtype, true, false);
  } else if (MCA_COLL_HCCL_DIRECT != call->recv.kind && t->counts[rank] > 0) {
    /* in place through the temporary: the own block is packed in first */
    size_t before = 0;
    for (size_t r = 0; r < rank; ++r) before += t->bytes[r];
    mca_coll_hccl_region_t own = {(const char*)rbuf + t->displs[rank], t->counts[rank], rdtype,
                                  before};
    call->recv.in = own;
  }
  return NULL;
}

static bool allgatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                       const int* rcounts, const int* disps, ompi_datatype_t* rdtype,
                       mca_coll_hccl_module_t* m, ompi_request_t** request, bool persistent,
                       int* rc) {
  static const char* const names[3] = {"MPI_Allgatherv", "MPI_Iallgatherv", "MPIX_Allgatherv_init"};
  mca_coll_hccl_gatherv_args_t a = {sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, 0};
  return mca_coll_hccl_offer_v(m, names, request, persistent, 1, describe_allgatherv, &a, rc);
}

int mca_coll_hccl_allgatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                             const int* rcounts, const int* disps, ompi_datatype_t* rdtype,
                             ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, m, NULL, false, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, allgatherv)) {
    return m->prev_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm,
                              m->prev_allgatherv_module);
  }
  return mca_coll_hccl_floor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm,
                                        NULL, false);
}

int mca_coll_hccl_iallgatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                              const int* rcounts, const int* disps, ompi_datatype_t* rdtype,
                              ompi_communicator_t* comm, ompi_request_t** request,
                              mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, m, request, false, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, iallgatherv)) {
    return m->prev_iallgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm, request,
                               m->prev_iallgatherv_module);
  }
  return mca_coll_hccl_floor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm,
                                        request, false);
}

/* Persistent (MPIX_Allgatherv_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_allgatherv_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                  const int* rcounts, const int* disps, ompi_datatype_t* rdtype,
                                  ompi_communicator_t* comm, struct ompi_info_t* info,
                                  ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, m, request, true, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, allgatherv_init)) {
    return m->prev_allgatherv_init(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm, info,
                                   request, m->prev_allgatherv_init_module);
  }
  return mca_coll_hccl_floor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm,
                                        request, true);
}
