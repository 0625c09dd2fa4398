/*
 * coll_hccl_allgather.c - MPI_Allgather and MPI_Iallgather.
 *
 * The engine moves bytes. Send and receive types may differ from rank to rank (only their type
 * signatures must match), so whether a rank's layout is contiguous is a local fact: it decides
 * only whether this rank packs, never whether the engine is used. The decision rests on the byte
 * count per rank, which MPI makes equal everywhere.
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <limits.h>
#include <string.h>

static const char* describe_allgather(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                      const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                      void* rbuf, int rcount, ompi_datatype_t* rdtype) {
  size_t p = (size_t)ompi_comm_size(m->comm);
  size_t rsize = 0;
  ompi_datatype_type_size(rdtype, &rsize);
  size_t per_rank = (size_t)rcount * rsize;
  hccl_coll_desc_t* d = &call->desc;
  call->dtype = rdtype;
  call->bytes = p * per_rank;
  d->coll = HCCL_COLL_ALLGATHER;
  d->in_place = MPI_IN_PLACE == sbuf ? 1 : 0;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->count = per_rank;
  d->op = HCCL_OP_NONE;
  if (0 == per_rank) return mca_coll_hccl_nothing(call);
  /* Packing uses Open MPI's int-counted copy; beyond that the previous component takes over. */
  if (p * per_rank > (size_t)INT_MAX) return "more than 2 GiB gathered";

  if (!d->in_place) {
    size_t ssize = 0;
    ompi_datatype_type_size(sdtype, &ssize);
    if ((size_t)scount * ssize != per_rank) return "send and receive sizes differ";
    d->sendbuf = mca_coll_hccl_side(&call->send, sbuf, (size_t)scount, sdtype, true, false);
  }

  size_t total_count = p * (size_t)rcount;
  d->recvbuf = mca_coll_hccl_side(&call->recv, rbuf, total_count, rdtype, false, true);
  if (MCA_COLL_HCCL_DIRECT != call->recv.kind && d->in_place) {
    /* in place through a packed buffer: this rank's block is copied in before the call */
    ptrdiff_t rlb = 0, rextent = 0;
    ompi_datatype_get_extent(rdtype, &rlb, &rextent);
    size_t rank = (size_t)ompi_comm_rank(m->comm);
    mca_coll_hccl_region_t own = {(const char*)rbuf + (ptrdiff_t)(rank * (size_t)rcount) * rextent,
                                  (size_t)rcount, rdtype, rank * per_rank};
    call->recv.in = own;
  }
  return NULL;
}

static bool allgather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf, int rcount,
                      ompi_datatype_t* rdtype, mca_coll_hccl_module_t* m, ompi_request_t** request,
                      bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Allgather", "MPI_Iallgather", "MPIX_Allgather_init"};
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  const char* why = describe_allgather(m, &call, sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_allgather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                            int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                            mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, allgather)) {
    return m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             m->prev_allgather_module);
  }
  return mca_coll_hccl_floor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, NULL,
                                       false);
}

int mca_coll_hccl_iallgather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                             int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                             ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, iallgather)) {
    return m->prev_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                              m->prev_iallgather_module);
  }
  return mca_coll_hccl_floor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                       false);
}

/* Persistent (MPIX_Allgather_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_allgather_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                 int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                 struct ompi_info_t* info, ompi_request_t** request,
                                 mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, allgather_init)) {
    return m->prev_allgather_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
                                  m->prev_allgather_init_module);
  }
  return mca_coll_hccl_floor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                       true);
}
