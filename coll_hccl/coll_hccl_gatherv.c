/*
 * coll_hccl_gatherv.c - MPI_Gatherv, MPI_Igatherv and MPIX_Gatherv_init on the engine's GATHERV.
 *
 * MPI gives the per-rank counts and displacements to the root only; a non-root knows its own
 * block. So the decision rests on what every rank knows alike (root, the communicator), never on
 * counts: even a call that moves nothing runs on the engine, because no rank could tell. The root
 * hands the engine its receive blocks packed: directly when they already lie back to back in a
 * contiguous layout, else through a temporary unpacked to every displacement afterwards (gaps
 * between blocks and inside derived types are never written).
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <stdlib.h>
#include <string.h>

static const char* describe_gatherv(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                    const void* args, mca_coll_hccl_vtable_t* t) {
  const mca_coll_hccl_gatherv_args_t* a = args;
  const void* sbuf = a->sbuf;
  int scount = a->scount, root = a->root;
  ompi_datatype_t *sdtype = a->sdtype, *rdtype = a->rdtype;
  void* rbuf = a->rbuf;
  size_t p = (size_t)ompi_comm_size(m->comm);
  bool is_root = ompi_comm_rank(m->comm) == root;
  hccl_coll_desc_t* d = &call->desc;
  d->coll = HCCL_COLL_GATHERV;
  d->root = root;
  d->in_place = is_root && MPI_IN_PLACE == sbuf ? 1 : 0;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->op = HCCL_OP_NONE;
  call->dtype = is_root ? rdtype : sdtype;
  if (!is_root) {
    d->count = mca_coll_hccl_bytes(sdtype, (size_t)scount);
    call->bytes = d->count;
    d->sendbuf = mca_coll_hccl_side(&call->send, sbuf, (size_t)scount, sdtype, true, false);
    return NULL;
  }
  d->recvbuf = mca_coll_hccl_blocks_side(&call->recv, t, rbuf, p, a->rcounts, a->displs, rdtype,
                                         NULL, false, true);
  d->recvcounts = t->bytes;
  d->count = t->bytes[root];
  call->bytes = t->total;
  if (!d->in_place && mca_coll_hccl_bytes(sdtype, (size_t)scount) != d->count)
    mca_coll_hccl_root_mismatch(call, mca_coll_hccl_bytes(sdtype, (size_t)scount), d->count);
  if (!d->in_place) {
    d->sendbuf = mca_coll_hccl_side(&call->send, sbuf, (size_t)scount, sdtype, true, false);
  } else if (MCA_COLL_HCCL_DIRECT != call->recv.kind && t->counts[root] > 0) {
    /* the root's own block is packed in; unpacking it back writes the bytes it already holds */
    size_t before = 0;
    for (int r = 0; r < root; ++r) before += t->bytes[r];
    mca_coll_hccl_region_t own = {(const char*)rbuf + t->displs[root], t->counts[root], rdtype,
                                  before};
    call->recv.in = own;
  }
  return NULL;
}

static bool gatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                    const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                    mca_coll_hccl_module_t* m, ompi_request_t** request, bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Gatherv", "MPI_Igatherv", "MPIX_Gatherv_init"};
  mca_coll_hccl_gatherv_args_t a = {sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root};
  return mca_coll_hccl_offer_v(m, names, request, persistent, 1, describe_gatherv, &a, rc);
}

int mca_coll_hccl_gatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                          const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                          ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, m, NULL, false, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, gatherv))
    return m->prev_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm,
                           m->prev_gatherv_module);
  return mca_coll_hccl_floor_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                     comm, NULL, false);
}

int mca_coll_hccl_igatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                           ompi_communicator_t* comm, ompi_request_t** request,
                           mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, m, request, false, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, igatherv))
    return m->prev_igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm,
                            request, m->prev_igatherv_module);
  return mca_coll_hccl_floor_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                     comm, request, false);
}

/* Persistent (MPIX_Gatherv_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_gatherv_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                               const int* rcounts, const int* displs, ompi_datatype_t* rdtype,
                               int root, ompi_communicator_t* comm, struct ompi_info_t* info,
                               ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, m, request, true, &rc))
    return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, gatherv_init))
    return m->prev_gatherv_init(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm,
                                info, request, m->prev_gatherv_init_module);
  return mca_coll_hccl_floor_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                     comm, request, true);
}
