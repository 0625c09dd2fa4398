/*
 * coll_hccl_reductions.c - MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Reduce_scatter and their
 * nonblocking forms: describe the call to the engine, or hand it to the previous component.
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

#include <stdlib.h>
#include <string.h>

/* Fills the reduction part of a call; returns the adapter's reason to decline, or NULL. The send
 * side holds input_elems elements, the result is result_elems at the start of recvbuf (in place:
 * recvbuf holds the input). Any op on any datatype (mca_coll_hccl_map_any_reduction): a type with
 * gaps (MAXLOC/MINLOC pairs, a user op on a vector) runs on staged whole extents, reduced through
 * Open MPI's op; only the data bytes of the result go back. */
static const char* describe_reduction(mca_coll_hccl_module_t* m, mca_coll_hccl_call_t* call,
                                      hccl_coll_t coll, const void* sbuf, void* rbuf, size_t count,
                                      size_t input_elems, size_t result_elems,
                                      ompi_datatype_t* dtype, ompi_op_t* op) {
  call->op = op;
  call->dtype = dtype;
  call->bytes = mca_coll_hccl_bytes(dtype, input_elems);
  hccl_coll_desc_t* d = &call->desc;
  d->coll = coll;
  d->in_place = MPI_IN_PLACE == sbuf ? 1 : 0;
  d->count = count;
  if (0 == input_elems) return mca_coll_hccl_nothing(call);
  mca_coll_hccl_reduction_t red;
  const char* why = NULL;
  if (!mca_coll_hccl_map_reduction_of(m, dtype, op, &red, &why)) return why;
  call->true_lb = red.elem.true_lb;
  d->dtype = red.elem.dtype;
  d->elem_size = red.elem.elem_size;
  d->op = red.elem.op;
  d->user_commutative = red.elem.user_commutative;
  if (!red.staged) {
    d->sendbuf = d->in_place ? NULL : (const char*)sbuf + red.elem.true_lb;
    d->recvbuf = (char*)rbuf + red.elem.true_lb;
    return NULL;
  }
  mca_coll_hccl_region_t in = {d->in_place ? rbuf : sbuf, input_elems, dtype, 0};
  mca_coll_hccl_region_t out = {rbuf, result_elems, dtype, 0};
  if (!d->in_place) {
    call->send.kind = MCA_COLL_HCCL_EXTENT;
    call->send.bytes = input_elems * red.extent;
    call->send.in = in;
  }
  call->recv.kind = MCA_COLL_HCCL_EXTENT;
  call->recv.bytes = (d->in_place ? input_elems : result_elems) * red.extent;
  if (d->in_place) call->recv.in = in;
  call->recv.out = out;
  return NULL;
}

/* Each helper returns false when the previous component must run the call; else *rc is set. */
static bool allreduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                      ompi_op_t* op, mca_coll_hccl_module_t* m, ompi_request_t** request,
                      bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Allreduce", "MPI_Iallreduce", "MPIX_Allreduce_init"};
  const bool blocking = NULL == request && !persistent;
  if (blocking) {
    const mca_coll_hccl_call_t* same =
        mca_coll_hccl_memo_find(m->memo_allreduce, sbuf, rbuf, count, 0, dtype, op);
    if (NULL != same) {
      if (mca_coll_hccl_try_fast(m, same, NULL, rc)) return true;
      return mca_coll_hccl_offer(m, same, NULL, request, rc);
    }
  }
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  const char* why = describe_reduction(m, &call, HCCL_COLL_ALLREDUCE, sbuf, rbuf, (size_t)count,
                                       (size_t)count, (size_t)count, dtype, op);
  if (blocking)
    mca_coll_hccl_memo_keep(&m->memo_allreduce, &call, why, sbuf, rbuf, count, 0, dtype, op);
  if (NULL == request && mca_coll_hccl_try_fast(m, &call, why, rc)) return true;
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_allreduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                            ompi_op_t* op, ompi_communicator_t* comm,
                            mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allreduce(sbuf, rbuf, count, dtype, op, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, allreduce)) {
    return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
  }
  return mca_coll_hccl_floor_allreduce(sbuf, rbuf, count, dtype, op, comm, NULL, false);
}

int mca_coll_hccl_iallreduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                             ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** request,
                             mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allreduce(sbuf, rbuf, count, dtype, op, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, iallreduce)) {
    return m->prev_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                              m->prev_iallreduce_module);
  }
  return mca_coll_hccl_floor_allreduce(sbuf, rbuf, count, dtype, op, comm, request, false);
}

static bool reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, ompi_datatype_t* dtype,
                                 ompi_op_t* op, mca_coll_hccl_module_t* m, ompi_request_t** request,
                                 bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block",
                                       "MPIX_Reduce_scatter_block_init"};
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  size_t p = (size_t)ompi_comm_size(m->comm);
  const char* why =
      describe_reduction(m, &call, HCCL_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, (size_t)rcount,
                         p * (size_t)rcount, (size_t)rcount, dtype, op);
  if (NULL == request && mca_coll_hccl_try_fast(m, &call, why, rc)) return true;
  return mca_coll_hccl_offer(m, &call, why, request, rc);
}

int mca_coll_hccl_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount,
                                       ompi_datatype_t* dtype, ompi_op_t* op,
                                       ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, reduce_scatter_block)) {
    return m->prev_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                        m->prev_reduce_scatter_block_module);
  }
  return mca_coll_hccl_floor_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, NULL, false);
}

int mca_coll_hccl_ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount,
                                        ompi_datatype_t* dtype, ompi_op_t* op,
                                        ompi_communicator_t* comm, ompi_request_t** request,
                                        mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, ireduce_scatter_block)) {
    return m->prev_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                         m->prev_ireduce_scatter_block_module);
  }
  return mca_coll_hccl_floor_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                  false);
}

static bool reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, ompi_datatype_t* dtype,
                           ompi_op_t* op, mca_coll_hccl_module_t* m, ompi_request_t** request,
                           bool persistent, int* rc) {
  static const char* const names[3] = {"MPI_Reduce_scatter", "MPI_Ireduce_scatter",
                                       "MPIX_Reduce_scatter_init"};
  mca_coll_hccl_call_t call;
  mca_coll_hccl_call_init(&call, names, request, persistent);
  int p = ompi_comm_size(m->comm);
  /* a small communicator's counts on the stack: no allocation per call */
  size_t few[16];
  size_t* counts = p <= 16 ? few : malloc((size_t)p * sizeof *counts);
  if (NULL == counts) {
    *rc = OMPI_ERR_OUT_OF_RESOURCE;
    return true;
  }
  size_t total = 0;
  for (int i = 0; i < p; ++i) {
    counts[i] = (size_t)rcounts[i];
    total += counts[i];
  }
  const char* why = describe_reduction(m, &call, HCCL_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, total,
                                       counts[ompi_comm_rank(m->comm)], dtype, op);
  call.desc.recvcounts = counts;
  bool taken = NULL == request && mca_coll_hccl_try_fast(m, &call, why, rc);
  if (!taken) taken = mca_coll_hccl_offer(m, &call, why, request, rc);
  if (few != counts) free(counts); /* the engine copied what it needs in hccl_coll_start */
  return taken;
}

int mca_coll_hccl_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts,
                                 ompi_datatype_t* dtype, ompi_op_t* op, ompi_communicator_t* comm,
                                 mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce_scatter(sbuf, rbuf, rcounts, dtype, op, m, NULL, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, reduce_scatter)) {
    return m->prev_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                  m->prev_reduce_scatter_module);
  }
  return mca_coll_hccl_floor_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, NULL, false);
}

int mca_coll_hccl_ireduce_scatter(const void* sbuf, void* rbuf, const int* rcounts,
                                  ompi_datatype_t* dtype, ompi_op_t* op, ompi_communicator_t* comm,
                                  ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce_scatter(sbuf, rbuf, rcounts, dtype, op, m, request, false, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, ireduce_scatter)) {
    return m->prev_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                   m->prev_ireduce_scatter_module);
  }
  return mca_coll_hccl_floor_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request, false);
}

/* Persistent (MPIX_Allreduce_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_allreduce_init(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                                 ompi_op_t* op, ompi_communicator_t* comm, struct ompi_info_t* info,
                                 ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (allreduce(sbuf, rbuf, count, dtype, op, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, allreduce_init)) {
    return m->prev_allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                  m->prev_allreduce_init_module);
  }
  return mca_coll_hccl_floor_allreduce(sbuf, rbuf, count, dtype, op, comm, request, true);
}

/* Persistent (MPIX_Reduce_scatter_block_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_reduce_scatter_block_init(const void* sbuf, void* rbuf, int rcount,
                                            ompi_datatype_t* dtype, ompi_op_t* op,
                                            ompi_communicator_t* comm, struct ompi_info_t* info,
                                            ompi_request_t** request,
                                            mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, reduce_scatter_block_init)) {
    return m->prev_reduce_scatter_block_init(sbuf, rbuf, rcount, dtype, op, comm, info, request,
                                             m->prev_reduce_scatter_block_init_module);
  }
  return mca_coll_hccl_floor_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                  true);
}

/* Persistent (MPIX_Reduce_scatter_init): decided and planned once, run by every MPI_Start. */
int mca_coll_hccl_reduce_scatter_init(const void* sbuf, void* rbuf, const int* rcounts,
                                      ompi_datatype_t* dtype, ompi_op_t* op,
                                      ompi_communicator_t* comm, struct ompi_info_t* info,
                                      ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  int rc = OMPI_SUCCESS;
  if (reduce_scatter(sbuf, rbuf, rcounts, dtype, op, m, request, true, &rc)) return rc;
  if (MCA_COLL_HCCL_HAS_PREV(m, reduce_scatter_init)) {
    return m->prev_reduce_scatter_init(sbuf, rbuf, rcounts, dtype, op, comm, info, request,
                                       m->prev_reduce_scatter_init_module);
  }
  return mca_coll_hccl_floor_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request, true);
}
