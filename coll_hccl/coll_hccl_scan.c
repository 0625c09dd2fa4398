/*
 * coll_hccl_scan.c - MPI_Scan, MPI_Exscan and MPI_Barrier (blocking, nonblocking, persistent).
 *
 * Scan and Exscan are rank-order prefix reductions: count, datatype and op are equal on every
 * rank and decide; any op on any datatype reaches the engine as Reduce does (kernels, else one
 * extent per element through Open MPI's op). Exscan writes nothing on rank 0. Barrier moves no
 * data and is decided on the communicator alone.
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <string.h>

static const char* describe_scan(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                 bool exclusive, const void* sbuf, void* rbuf, int count,
                                 ompi_datatype_t* dtype, ompi_op_t* op) {
  hccl_coll_desc_t* d = &call->desc;
  call->op = op;
  call->dtype = dtype;
  call->bytes = mca_coll_hccl_bytes(dtype, (size_t)count);
  d->coll = exclusive ? HCCL_COLL_EXSCAN : HCCL_COLL_SCAN;
  d->in_place = MPI_IN_PLACE == sbuf ? 1 : 0;
  d->count = (size_t)count;
  if (0 == count) return mca_coll_hccl_nothing(call);
  mca_coll_hccl_reduction_t red;
  const char* why = NULL;
  if (!mca_coll_hccl_map_any_reduction(dtype, op, &red, &why)) return why;
  call->true_lb = red.elem.true_lb;
  d->dtype = red.elem.dtype;
  d->elem_size = red.elem.elem_size;
  d->op = red.elem.op;
  d->user_commutative = red.elem.user_commutative;
  bool writes = !(exclusive && 0 == ompi_comm_rank(m->comm)); /* Exscan: nothing on rank 0 */
  if (!red.staged) {
    d->sendbuf = d->in_place ? NULL : (const char*)sbuf + red.elem.true_lb;
    d->recvbuf = (char*)rbuf + red.elem.true_lb;
    return NULL;
  }
  size_t bytes = (size_t)count * red.extent;
  mca_coll_hccl_region_t in = {d->in_place ? rbuf : sbuf, (size_t)count, dtype, 0};
  mca_coll_hccl_region_t out = {rbuf, (size_t)count, dtype, 0};
  if (!d->in_place) {
    call->send.kind = MCA_COLL_HCCL_EXTENT;
    call->send.bytes = bytes;
    call->send.in = in;
  }
  call->recv.kind = MCA_COLL_HCCL_EXTENT;
  call->recv.bytes = bytes;
  if (d->in_place) call->recv.in = in;
  if (writes) call->recv.out = out;
  return NULL;
}

static bool scan(bool exclusive, const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                 ompi_op_t* op, mca_coll_hccl_module_t* m, ompi_request_t** request,
                 bool persistent, int* rc) {
  static const char* const scan_names[3] = {"MPI_Scan", "MPI_Iscan", "MPIX_Scan_init"};
  static const char* const exscan_names[3] = {"MPI_Exscan", "MPI_Iexscan", "MPIX_Exscan_init"};
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, exclusive ? exscan_names : scan_names, request, persistent);
  const char* why = describe_scan(m, &call, exclusive, sbuf, rbuf, count, dtype, op);
  if (NULL == request && !persistent && mca_coll_hccl_try_fast(m, &call, why, rc)) return true;
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_scan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                       ompi_op_t* op, ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scan(false, sbuf, rbuf, count, dtype, op, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, scan)) {
    return m->prev_scan(sbuf, rbuf, count, dtype, op, comm, m->prev_scan_module);
  }
  return mca_coll_hccl_floor_scan(sbuf, rbuf, count, dtype, op, comm, NULL, false);
}

int mca_coll_hccl_iscan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                        ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** request,
                        mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scan(false, sbuf, rbuf, count, dtype, op, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, iscan)) {
    return m->prev_iscan(sbuf, rbuf, count, dtype, op, comm, request, m->prev_iscan_module);
  }
  return mca_coll_hccl_floor_scan(sbuf, rbuf, count, dtype, op, comm, request, false);
}

int mca_coll_hccl_scan_init(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                            ompi_op_t* op, ompi_communicator_t* comm, struct ompi_info_t* info,
                            ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scan(false, sbuf, rbuf, count, dtype, op, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, scan_init)) {
    return m->prev_scan_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                             m->prev_scan_init_module);
  }
  return mca_coll_hccl_floor_scan(sbuf, rbuf, count, dtype, op, comm, request, true);
}

int mca_coll_hccl_exscan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                         ompi_op_t* op, ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scan(true, sbuf, rbuf, count, dtype, op, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, exscan)) {
    return m->prev_exscan(sbuf, rbuf, count, dtype, op, comm, m->prev_exscan_module);
  }
  return mca_coll_hccl_floor_exscan(sbuf, rbuf, count, dtype, op, comm, NULL, false);
}

int mca_coll_hccl_iexscan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                          ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** request,
                          mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scan(true, sbuf, rbuf, count, dtype, op, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, iexscan)) {
    return m->prev_iexscan(sbuf, rbuf, count, dtype, op, comm, request, m->prev_iexscan_module);
  }
  return mca_coll_hccl_floor_exscan(sbuf, rbuf, count, dtype, op, comm, request, false);
}

int mca_coll_hccl_exscan_init(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                              ompi_op_t* op, ompi_communicator_t* comm, struct ompi_info_t* info,
                              ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (scan(true, sbuf, rbuf, count, dtype, op, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, exscan_init)) {
    return m->prev_exscan_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                               m->prev_exscan_init_module);
  }
  return mca_coll_hccl_floor_exscan(sbuf, rbuf, count, dtype, op, comm, request, true);
}

/* ---- Barrier -------------------------------------------------------------------------------- */

static bool barrier(mca_coll_hccl_module_t* m, ompi_request_t** request, bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Barrier", "MPI_Ibarrier", "MPIX_Barrier_init"};
  /* A blocking Barrier's description never changes: not cleared and filled again every call. */
  static const mca_coll_hccl_call_t blocking = {.desc = {.coll = HCCL_COLL_BARRIER,
                                                         .dtype = HCCL_DT_BYTE,
                                                         .elem_size = 1,
                                                         .op = HCCL_OP_NONE},
                                                .mpi_name = "MPI_Barrier"};
  if (NULL == request && !persistent) {
    if (mca_coll_hccl_try_fast(m, &blocking, NULL, rc)) return true;
    return mca_coll_hccl_offer(m, &blocking, NULL, request, rc);
  }
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  call.desc.coll = HCCL_COLL_BARRIER;
  call.desc.dtype = HCCL_DT_BYTE;
  call.desc.elem_size = 1;
  call.desc.op = HCCL_OP_NONE;
  return mca_coll_hccl_offer(m, &call, NULL, request, rc);
}

int mca_coll_hccl_barrier(ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (barrier(m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, barrier)) {
    return m->prev_barrier(comm, m->prev_barrier_module);
  }
  return mca_coll_hccl_floor_barrier(comm, NULL, false);
}

int mca_coll_hccl_ibarrier(ompi_communicator_t* comm, ompi_request_t** request,
                           mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (barrier(m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, ibarrier)) {
    return m->prev_ibarrier(comm, request, m->prev_ibarrier_module);
  }
  return mca_coll_hccl_floor_barrier(comm, request, false);
}

int mca_coll_hccl_barrier_init(ompi_communicator_t* comm, struct ompi_info_t* info,
                               ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (barrier(m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, barrier_init)) {
    return m->prev_barrier_init(comm, info, request, m->prev_barrier_init_module);
  }
  return mca_coll_hccl_floor_barrier(comm, request, true);
}
