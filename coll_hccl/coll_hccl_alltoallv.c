/*
 * coll_hccl_alltoallv.c - MPI_Alltoallv and MPI_Alltoallw (blocking, MPI_I*, MPIX_*_init) on the
 * engine's ALLTOALLV.
 *
 * Every rank knows only its own row and column of the count matrix, so the decision rests on the
 * communicator alone and a call that moves nothing still runs on the engine (no rank could tell).
 * Both sides reach the engine in its packed byte layout: block r of the send side at the sum of
 * the bytes before it, likewise on the receive side. Alltoallw is the same call once each peer's
 * block was packed with its own type (byte displacements, elem_size 1). A side whose blocks
 * already lie packed and contiguous is used directly; any other is staged: send blocks packed from
 * their displacements, receive blocks unpacked to theirs (gaps never written). In place, the
 * input is the receive buffer in the receive layout, read before anything is written.
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <stdlib.h>
#include <string.h>

/* One call of either form: types NULL for Alltoallv (one type per side, displacements in
 * extents), per-peer type arrays and byte displacements for Alltoallw. */
typedef struct {
  const void* sbuf;
  const int* scounts;
  const int* sdispls;
  ompi_datatype_t* sdtype;
  ompi_datatype_t* const* stypes;
  void* rbuf;
  const int* rcounts;
  const int* rdispls;
  ompi_datatype_t* rdtype;
  ompi_datatype_t* const* rtypes;
} a2av_args_t;

static const char* describe_alltoallv(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                      const void* args, mca_coll_hccl_vtable_t* t) {
  const a2av_args_t* a = args;
  size_t p = (size_t)ompi_comm_size(m->comm);
  hccl_coll_desc_t* d = &call->desc;
  d->coll = HCCL_COLL_ALLTOALLV;
  d->in_place = MPI_IN_PLACE == a->sbuf ? 1 : 0;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->op = HCCL_OP_NONE;
  call->dtype = a->rdtype; /* NULL for Alltoallw: "per-peer types" in the verbose line */
  /* in place the receive blocks are the input too */
  d->recvbuf = mca_coll_hccl_blocks_side(&call->recv, &t[0], a->rbuf, p, a->rcounts, a->rdispls,
                                         a->rdtype, a->rtypes, d->in_place != 0, true);
  d->recvcounts = t[0].bytes;
  call->bytes = t[0].total;
  if (d->in_place) return NULL;
  d->sendbuf = mca_coll_hccl_blocks_side(&call->send, &t[1], a->sbuf, p, a->scounts, a->sdispls,
                                         a->sdtype, a->stypes, true, false);
  d->sendcounts = t[1].bytes;
  call->bytes = t[1].total;
  return NULL;
}

static bool alltoallv(const a2av_args_t* a, const char* const names[3], mca_coll_hccl_module_t* m,
                      ompi_request_t** request, bool persistent, int* rc) {
  return mca_coll_hccl_offer_v(m, names, request, persistent, 2, describe_alltoallv, a, rc);
}

/* ---- Alltoallv ------------------------------------------------------------------------------ */

static const char* const v_names[3] = {"MPI_Alltoallv", "MPI_Ialltoallv", "MPIX_Alltoallv_init"};

int mca_coll_hccl_alltoallv(const void* sbuf, const int* scounts, const int* sdispls,
                            ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                            const int* rdispls, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                            mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  a2av_args_t a = {sbuf, scounts, sdispls, sdtype, NULL, rbuf, rcounts, rdispls, rdtype, NULL};
  int rc = OMPI_SUCCESS;
  if (alltoallv(&a, v_names, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, alltoallv))
    return m->prev_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                             m->prev_alltoallv_module);
  return mca_coll_hccl_floor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                       rdtype, comm, NULL, false);
}

int mca_coll_hccl_ialltoallv(const void* sbuf, const int* scounts, const int* sdispls,
                             ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                             const int* rdispls, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                             ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  a2av_args_t a = {sbuf, scounts, sdispls, sdtype, NULL, rbuf, rcounts, rdispls, rdtype, NULL};
  int rc = OMPI_SUCCESS;
  if (alltoallv(&a, v_names, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, ialltoallv))
    return m->prev_ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                              request, m->prev_ialltoallv_module);
  return mca_coll_hccl_floor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                       rdtype, comm, request, false);
}

/* Persistent (MPIX_Alltoallv_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_alltoallv_init(const void* sbuf, const int* scounts, const int* sdispls,
                                 ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                                 const int* rdispls, ompi_datatype_t* rdtype,
                                 ompi_communicator_t* comm, struct ompi_info_t* info,
                                 ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  a2av_args_t a = {sbuf, scounts, sdispls, sdtype, NULL, rbuf, rcounts, rdispls, rdtype, NULL};
  int rc = OMPI_SUCCESS;
  if (alltoallv(&a, v_names, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, alltoallv_init))
    return m->prev_alltoallv_init(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
                                  comm, info, request, m->prev_alltoallv_init_module);
  return mca_coll_hccl_floor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                       rdtype, comm, request, true);
}

/* ---- Alltoallw ------------------------------------------------------------------------------ */

static const char* const w_names[3] = {"MPI_Alltoallw", "MPI_Ialltoallw", "MPIX_Alltoallw_init"};

int mca_coll_hccl_alltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                            ompi_datatype_t* const* stypes, void* rbuf, const int* rcounts,
                            const int* rdispls, ompi_datatype_t* const* rtypes,
                            ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  a2av_args_t a = {sbuf, scounts, sdispls, NULL, stypes, rbuf, rcounts, rdispls, NULL, rtypes};
  int rc = OMPI_SUCCESS;
  if (alltoallv(&a, w_names, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, alltoallw))
    return m->prev_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm,
                             m->prev_alltoallw_module);
  return mca_coll_hccl_floor_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls,
                                       rtypes, comm, NULL, false);
}

int mca_coll_hccl_ialltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                             ompi_datatype_t* const* stypes, void* rbuf, const int* rcounts,
                             const int* rdispls, ompi_datatype_t* const* rtypes,
                             ompi_communicator_t* comm, ompi_request_t** request,
                             mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  a2av_args_t a = {sbuf, scounts, sdispls, NULL, stypes, rbuf, rcounts, rdispls, NULL, rtypes};
  int rc = OMPI_SUCCESS;
  if (alltoallv(&a, w_names, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, ialltoallw))
    return m->prev_ialltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm,
                              request, m->prev_ialltoallw_module);
  return mca_coll_hccl_floor_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls,
                                       rtypes, comm, request, false);
}

/* Persistent (MPIX_Alltoallw_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_alltoallw_init(const void* sbuf, const int* scounts, const int* sdispls,
                                 ompi_datatype_t* const* stypes, void* rbuf, const int* rcounts,
                                 const int* rdispls, ompi_datatype_t* const* rtypes,
                                 ompi_communicator_t* comm, struct ompi_info_t* info,
                                 ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  a2av_args_t a = {sbuf, scounts, sdispls, NULL, stypes, rbuf, rcounts, rdispls, NULL, rtypes};
  int rc = OMPI_SUCCESS;
  if (alltoallv(&a, w_names, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, alltoallw_init))
    return m->prev_alltoallw_init(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes,
                                  comm, info, request, m->prev_alltoallw_init_module);
  return mca_coll_hccl_floor_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls,
                                       rtypes, comm, request, true);
}
