/*
 * coll_hccl_alltoall.c - MPI_Alltoall and MPI_Ialltoall.
 *
 * The engine moves bytes, block r of the send side to rank r. The byte count per pair is equal on
 * every rank (MPI requires matching type signatures), so it alone decides; each rank stages its
 * own layouts when they are not contiguous.
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <string.h>

static const char* describe_alltoall(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                     const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                     void* rbuf, int rcount, ompi_datatype_t* rdtype) {
  size_t p = (size_t)ompi_comm_size(m->comm);
  size_t per_pair = mca_coll_hccl_bytes(rdtype, (size_t)rcount);
  hccl_coll_desc_t* d = &call->desc;
  call->dtype = rdtype;
  call->bytes = p * per_pair;
  d->coll = HCCL_COLL_ALLTOALL;
  d->in_place = MPI_IN_PLACE == sbuf ? 1 : 0;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->count = per_pair;
  d->op = HCCL_OP_NONE;
  if (0 == per_pair) return mca_coll_hccl_nothing(call);
  if (!d->in_place) {
    if (mca_coll_hccl_bytes(sdtype, (size_t)scount) != per_pair)
      return "send and receive sizes differ";
    d->sendbuf = mca_coll_hccl_side(&call->send, sbuf, p * (size_t)scount, sdtype, true, false);
  }
  /* in place: the receive buffer holds the input, read before it is overwritten */
  d->recvbuf =
      mca_coll_hccl_side(&call->recv, rbuf, p * (size_t)rcount, rdtype, d->in_place != 0, true);
  return NULL;
}

static bool alltoall(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf, int rcount,
                     ompi_datatype_t* rdtype, mca_coll_hccl_module_t* m, ompi_request_t** request,
                     bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Alltoall", "MPI_Ialltoall", "MPIX_Alltoall_init"};
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  const char* why = describe_alltoall(m, &call, sbuf, scount, sdtype, rbuf, rcount, rdtype);
  if (NULL == request && !persistent && mca_coll_hccl_try_fast(m, &call, why, rc)) return true;
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_alltoall(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                           mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, alltoall)) {
    return m->prev_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                            m->prev_alltoall_module);
  }
  return mca_coll_hccl_floor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, NULL,
                                      false);
}

int mca_coll_hccl_ialltoall(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                            int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                            ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, ialltoall)) {
    return m->prev_ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                             m->prev_ialltoall_module);
  }
  return mca_coll_hccl_floor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                      false);
}

/* Persistent (MPIX_Alltoall_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_alltoall_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                struct ompi_info_t* info, ompi_request_t** request,
                                mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, alltoall_init)) {
    return m->prev_alltoall_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
                                 m->prev_alltoall_init_module);
  }
  return mca_coll_hccl_floor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                      true);
}
