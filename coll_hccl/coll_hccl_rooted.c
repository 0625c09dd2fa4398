/*
 * coll_hccl_rooted.c - MPI_Bcast, MPI_Reduce, MPI_Scatter and their nonblocking forms.
 *
 * What every rank decides on is what MPI makes equal everywhere: root, the byte count (Bcast,
 * Scatter) or count, datatype and op (Reduce). Whether a rank's own layout is contiguous decides
 * only whether it stages, never whether the engine is used. Only the root may be in place; the
 * engine's choice ignores in-place for rooted calls for that reason.
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <string.h>

/* Any op on any datatype. A predefined pair with an engine kernel stays as mapped (contiguous by
 * construction); everything else is one extent per element through Open MPI's op: MAXLOC/MINLOC
 * on pair types, user ops, predefined ops on types without a kernel. */
bool mca_coll_hccl_map_any_reduction(ompi_datatype_t* dtype, ompi_op_t* op,
                                     mca_coll_hccl_reduction_t* out, const char** why) {
  memset(out, 0, sizeof *out);
  const char* kernel_why = NULL;
  if (mca_coll_hccl_map_reduction(dtype, op, &out->elem, &kernel_why)) return true;
  ptrdiff_t lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  ompi_datatype_get_extent(dtype, &lb, &extent);
  ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
  size_t size = 0;
  ompi_datatype_type_size(dtype, &size);
  if (0 == size || extent <= 0 || true_extent > extent) {
    *why = "datatype whose elements overlap or are empty";
    return false;
  }
  out->elem.dtype = HCCL_DT_BYTE;
  out->elem.op = HCCL_OP_USER;
  out->elem.user_commutative = ompi_op_is_commute(op) ? 1 : 0;
  out->elem.true_lb = true_lb;
  out->elem.elem_size = (size_t)extent;
  out->extent = (size_t)extent;
  /* Elements back to back: Open MPI's op reduces the user's memory itself; else staged. */
  out->staged = !ompi_datatype_is_contiguous_memory_layout(dtype, 2) || (size_t)extent != size;
  return true;
}

bool mca_coll_hccl_map_reduction_of(mca_coll_hccl_module_t* m, ompi_datatype_t* dtype,
                                    ompi_op_t* op, mca_coll_hccl_reduction_t* out,
                                    const char** why) {
  /* Measured in callgrind at np=2 (8 B MPI_Allreduce): the mapping cost ~150 instructions per
   * call, a quarter of the adapter's and engine's work outside the wait. */
  if (dtype == m->last_dtype && op == m->last_op && NULL != dtype) {
    *out = m->last_reduction;
    return true;
  }
  if (!mca_coll_hccl_map_any_reduction(dtype, op, out, why)) return false;
  if (ompi_datatype_is_predefined(dtype) && ompi_op_is_intrinsic(op)) {
    m->last_dtype = dtype;
    m->last_op = op;
    m->last_reduction = *out;
  }
  return true;
}

/* ---- Bcast ---------------------------------------------------------------------------------- */

static const char* describe_bcast(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call, void* buf,
                                  int count, ompi_datatype_t* dtype, int root) {
  size_t bytes = mca_coll_hccl_bytes(dtype, (size_t)count);
  hccl_coll_desc_t* d = &call->desc;
  call->dtype = dtype;
  call->bytes = bytes;
  d->coll = HCCL_COLL_BCAST;
  d->root = root;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->count = bytes;
  d->op = HCCL_OP_NONE;
  if (0 == bytes) return mca_coll_hccl_nothing(call);
  bool is_root = ompi_comm_rank(m->comm) == root;
  /* The root's buffer is the input and is never written; every other rank's is the result. */
  d->recvbuf = mca_coll_hccl_side(&call->recv, buf, (size_t)count, dtype, is_root, !is_root);
  return NULL;
}

static bool bcast(void* buf, int count, ompi_datatype_t* dtype, int root, mca_coll_hccl_module_t* m,
                  ompi_request_t** request, bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Bcast", "MPI_Ibcast", "MPIX_Bcast_init"};
  const bool blocking = NULL == request && !persistent;
  if (blocking) {
    const mca_coll_hccl_call_t* same =
        mca_coll_hccl_memo_find(m->memo_bcast, NULL, buf, count, root, dtype, NULL);
    if (NULL != same) {
      if (mca_coll_hccl_try_fast(m, same, NULL, rc)) return true;
      return mca_coll_hccl_offer(m, same, NULL, request, rc);
    }
  }
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  const char* why = describe_bcast(m, &call, buf, count, dtype, root);
  if (blocking)
    mca_coll_hccl_memo_keep(&m->memo_bcast, &call, why, NULL, buf, count, root, dtype, NULL);
  if (NULL == request && !persistent && mca_coll_hccl_try_fast(m, &call, why, rc)) return true;
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_bcast(void* buff, int count, ompi_datatype_t* datatype, int root,
                        ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (bcast(buff, count, datatype, root, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, bcast)) {
    return m->prev_bcast(buff, count, datatype, root, comm, m->prev_bcast_module);
  }
  return mca_coll_hccl_floor_bcast(buff, count, datatype, root, comm, NULL, false);
}

int mca_coll_hccl_ibcast(void* buff, int count, ompi_datatype_t* datatype, int root,
                         ompi_communicator_t* comm, ompi_request_t** request,
                         mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (bcast(buff, count, datatype, root, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, ibcast)) {
    return m->prev_ibcast(buff, count, datatype, root, comm, request, m->prev_ibcast_module);
  }
  return mca_coll_hccl_floor_bcast(buff, count, datatype, root, comm, request, false);
}

/* ---- Reduce --------------------------------------------------------------------------------- */

static const char* describe_reduce(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                   const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                                   ompi_op_t* op, int root) {
  bool is_root = ompi_comm_rank(m->comm) == root;
  hccl_coll_desc_t* d = &call->desc;
  call->op = op;
  call->dtype = dtype;
  call->bytes = mca_coll_hccl_bytes(dtype, (size_t)count);
  d->coll = HCCL_COLL_REDUCE;
  d->root = root;
  d->in_place = is_root && MPI_IN_PLACE == sbuf ? 1 : 0;
  d->count = (size_t)count;
  if (0 == count) return mca_coll_hccl_nothing(call);
  mca_coll_hccl_reduction_t red;
  const char* why = NULL;
  if (!mca_coll_hccl_map_reduction_of(m, dtype, op, &red, &why)) return why;
  call->true_lb = red.elem.true_lb;
  d->dtype = red.elem.dtype;
  d->elem_size = red.elem.elem_size;
  d->op = red.elem.op;
  d->user_commutative = red.elem.user_commutative;
  const void* input = d->in_place ? rbuf : sbuf;
  if (!red.staged) {
    d->sendbuf = d->in_place ? NULL : (const char*)sbuf + red.elem.true_lb;
    d->recvbuf = is_root ? (char*)rbuf + red.elem.true_lb : NULL;
    return NULL;
  }
  size_t bytes = (size_t)count * red.extent;
  mca_coll_hccl_region_t in = {input, (size_t)count, dtype, 0};
  if (!d->in_place) {
    call->send.kind = MCA_COLL_HCCL_EXTENT;
    call->send.bytes = bytes;
    call->send.in = in;
  }
  if (is_root) {
    call->recv.kind = MCA_COLL_HCCL_EXTENT;
    call->recv.bytes = bytes;
    if (d->in_place) call->recv.in = in;
    mca_coll_hccl_region_t out = {rbuf, (size_t)count, dtype, 0};
    call->recv.out = out;
  }
  return NULL;
}

static bool reduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype, ompi_op_t* op,
                   int root, mca_coll_hccl_module_t* m, ompi_request_t** request, bool persistent,
                   int* rc) {
  static const char* const names[3] = {"MPI_Reduce", "MPI_Ireduce", "MPIX_Reduce_init"};
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  const char* why = describe_reduce(m, &call, sbuf, rbuf, count, dtype, op, root);
  if (NULL == request && !persistent && mca_coll_hccl_try_fast(m, &call, why, rc)) return true;
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_reduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                         ompi_op_t* op, int root, ompi_communicator_t* comm,
                         mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce(sbuf, rbuf, count, dtype, op, root, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, reduce)) {
    return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev_reduce_module);
  }
  return mca_coll_hccl_floor_reduce(sbuf, rbuf, count, dtype, op, root, comm, NULL, false);
}

int mca_coll_hccl_ireduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                          ompi_op_t* op, int root, ompi_communicator_t* comm,
                          ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce(sbuf, rbuf, count, dtype, op, root, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, ireduce)) {
    return m->prev_ireduce(sbuf, rbuf, count, dtype, op, root, comm, request,
                           m->prev_ireduce_module);
  }
  return mca_coll_hccl_floor_reduce(sbuf, rbuf, count, dtype, op, root, comm, request, false);
}

/* ---- Scatter -------------------------------------------------------------------------------- */

static const char* describe_scatter(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                    const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                    void* rbuf, int rcount, ompi_datatype_t* rdtype, int root) {
  size_t p = (size_t)ompi_comm_size(m->comm);
  bool is_root = ompi_comm_rank(m->comm) == root;
  hccl_coll_desc_t* d = &call->desc;
  d->coll = HCCL_COLL_SCATTER;
  d->root = root;
  d->in_place = is_root && MPI_IN_PLACE == rbuf ? 1 : 0;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->op = HCCL_OP_NONE;
  /* Bytes per rank: the root knows them from its send side (its receive side may be in place),
   * every other rank from its receive side; MPI makes them equal. */
  size_t per_rank = is_root ? mca_coll_hccl_bytes(sdtype, (size_t)scount)
                            : mca_coll_hccl_bytes(rdtype, (size_t)rcount);
  call->dtype = is_root ? sdtype : rdtype;
  call->bytes = p * per_rank;
  d->count = per_rank;
  if (0 == per_rank) return mca_coll_hccl_nothing(call);
  if (is_root && !d->in_place && mca_coll_hccl_bytes(rdtype, (size_t)rcount) != per_rank)
    mca_coll_hccl_root_mismatch(call, per_rank, mca_coll_hccl_bytes(rdtype, (size_t)rcount));
  if (d->in_place) { /* the root's send buffer is its output, and nothing is written there */
    d->recvbuf = mca_coll_hccl_side(&call->recv, sbuf, p * (size_t)scount, sdtype, true, false);
    return NULL;
  }
  if (is_root) {
    d->sendbuf = mca_coll_hccl_side(&call->send, sbuf, p * (size_t)scount, sdtype, true, false);
  }
  d->recvbuf = mca_coll_hccl_side(&call->recv, rbuf, (size_t)rcount, rdtype, false, true);
  return NULL;
}

static bool scatter(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf, int rcount,
                    ompi_datatype_t* rdtype, int root, mca_coll_hccl_module_t* m,
                    ompi_request_t** request, bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Scatter", "MPI_Iscatter", "MPIX_Scatter_init"};
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  const char* why = describe_scatter(m, &call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
  if (NULL == request && !persistent && mca_coll_hccl_try_fast(m, &call, why, rc)) return true;
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_scatter(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                          int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                          mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, scatter)) {
    return m->prev_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                           m->prev_scatter_module);
  }
  return mca_coll_hccl_floor_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, NULL,
                                     false);
}

int mca_coll_hccl_iscatter(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                           ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, iscatter)) {
    return m->prev_iscatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request,
                            m->prev_iscatter_module);
  }
  return mca_coll_hccl_floor_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                     request, false);
}

/* Persistent (MPIX_Bcast_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_bcast_init(void* buff, int count, ompi_datatype_t* datatype, int root,
                             ompi_communicator_t* comm, struct ompi_info_t* info,
                             ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (bcast(buff, count, datatype, root, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, bcast_init)) {
    return m->prev_bcast_init(buff, count, datatype, root, comm, info, request,
                              m->prev_bcast_init_module);
  }
  return mca_coll_hccl_floor_bcast(buff, count, datatype, root, comm, request, true);
}

/* Persistent (MPIX_Reduce_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_reduce_init(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                              ompi_op_t* op, int root, ompi_communicator_t* comm,
                              struct ompi_info_t* info, ompi_request_t** request,
                              mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce(sbuf, rbuf, count, dtype, op, root, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, reduce_init)) {
    return m->prev_reduce_init(sbuf, rbuf, count, dtype, op, root, comm, info, request,
                               m->prev_reduce_init_module);
  }
  return mca_coll_hccl_floor_reduce(sbuf, rbuf, count, dtype, op, root, comm, request, true);
}

/* Persistent (MPIX_Scatter_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_scatter_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                               int rcount, ompi_datatype_t* rdtype, int root,
                               ompi_communicator_t* comm, struct ompi_info_t* info,
                               ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, scatter_init)) {
    return m->prev_scatter_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, info,
                                request, m->prev_scatter_init_module);
  }
  return mca_coll_hccl_floor_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                     request, true);
}

/* ---- Gather --------------------------------------------------------------------------------- */

static const char* describe_gather(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                   const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                   void* rbuf, int rcount, ompi_datatype_t* rdtype, int root) {
  size_t p = (size_t)ompi_comm_size(m->comm);
  bool is_root = ompi_comm_rank(m->comm) == root;
  hccl_coll_desc_t* d = &call->desc;
  d->coll = HCCL_COLL_GATHER;
  d->root = root;
  d->in_place = is_root && MPI_IN_PLACE == sbuf ? 1 : 0;
  d->dtype = HCCL_DT_BYTE;
  d->elem_size = 1;
  d->op = HCCL_OP_NONE;
  /* Bytes per rank: the root knows them from its receive side (its send side may be in place),
   * every other rank from its send side; MPI makes them equal. */
  size_t per_rank = is_root ? mca_coll_hccl_bytes(rdtype, (size_t)rcount)
                            : mca_coll_hccl_bytes(sdtype, (size_t)scount);
  call->dtype = is_root ? rdtype : sdtype;
  call->bytes = p * per_rank;
  d->count = per_rank;
  if (0 == per_rank) return mca_coll_hccl_nothing(call);
  if (is_root && !d->in_place && mca_coll_hccl_bytes(sdtype, (size_t)scount) != per_rank)
    mca_coll_hccl_root_mismatch(call, mca_coll_hccl_bytes(sdtype, (size_t)scount), per_rank);
  if (!d->in_place) {
    d->sendbuf = mca_coll_hccl_side(&call->send, sbuf, (size_t)scount, sdtype, true, false);
  }
  if (!is_root) return NULL; /* nothing is written on a non-root */
  d->recvbuf = mca_coll_hccl_side(&call->recv, rbuf, p * (size_t)rcount, rdtype, false, true);
  if (MCA_COLL_HCCL_DIRECT != call->recv.kind && d->in_place) {
    /* the root's own block is packed in; unpacking it back writes the bytes it already holds */
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    mca_coll_hccl_region_t own = {
        (const char*)rbuf + (ptrdiff_t)((size_t)root * (size_t)rcount) * extent, (size_t)rcount,
        rdtype, (size_t)root * per_rank};
    call->recv.in = own;
  }
  return NULL;
}

static bool gather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf, int rcount,
                   ompi_datatype_t* rdtype, int root, mca_coll_hccl_module_t* m,
                   ompi_request_t** request, bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Gather", "MPI_Igather", "MPIX_Gather_init"};
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  const char* why = describe_gather(m, &call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
  if (NULL == request && !persistent && mca_coll_hccl_try_fast(m, &call, why, rc)) return true;
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_gather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                         int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                         mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, gather)) {
    return m->prev_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                          m->prev_gather_module);
  }
  return mca_coll_hccl_floor_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, NULL,
                                    false);
}

int mca_coll_hccl_igather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                          int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                          ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, igather)) {
    return m->prev_igather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request,
                           m->prev_igather_module);
  }
  return mca_coll_hccl_floor_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request,
                                    false);
}

int mca_coll_hccl_gather_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                              int rcount, ompi_datatype_t* rdtype, int root,
                              ompi_communicator_t* comm, struct ompi_info_t* info,
                              ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, gather_init)) {
    return m->prev_gather_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, info,
                               request, m->prev_gather_init_module);
  }
  return mca_coll_hccl_floor_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request,
                                    true);
}
