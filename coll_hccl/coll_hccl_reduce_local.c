/*
 * coll_hccl_reduce_local.c - MPI_Reduce_local on the engine's vectorised kernels.
 *
 * Open MPI 4.1 reaches it through MPI_COMM_SELF's coll table, which is why coll_hccl keeps a
 * module on single-rank communicators that serves this entry alone. Pairs without an engine
 * kernel (user ops, MAXLOC/MINLOC, derived types) go to the previous component.
 */
#include "coll_hccl.h"

#include <string.h>

#include "opal/util/output.h"

int mca_coll_hccl_reduce_local(const void* inbuf, void* inoutbuf, int count, ompi_datatype_t* dtype,
                               ompi_op_t* op, mca_coll_base_module_t* module) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  mca_coll_hccl_elem_t e;
  memset(&e, 0, sizeof e);
  const char* why = NULL;
  if (count > 0 && mca_coll_hccl_map_reduction(dtype, op, &e, &why) && HCCL_OP_USER != e.op) {
    hccl_status_t st = hccl_reduce_local((const char*)inbuf + e.true_lb,
                                         (char*)inoutbuf + e.true_lb, (size_t)count, e.dtype, e.op);
    if (HCCL_SUCCESS == st) {
      opal_output_verbose(3, mca_coll_hccl_component.output,
                          "MPI_Reduce_local: %d x %s, %s -> hccl kernel", count, dtype->name,
                          op->o_name);
      return OMPI_SUCCESS;
    }
    why = hccl_status_string(st);
  }
  bool prev = MCA_COLL_HCCL_HAS_PREV(m, reduce_local);
  opal_output_verbose(3, mca_coll_hccl_component.output, "MPI_Reduce_local: %d x %s, %s -> %s: %s",
                      count, dtype->name, op->o_name, prev ? "fallback" : "floor",
                      NULL != why            ? why
                      : HCCL_OP_USER == e.op ? "user op"
                                             : "empty");
  if (prev) {
    return m->prev_reduce_local(inbuf, inoutbuf, count, dtype, op, m->prev_reduce_local_module);
  }
  ompi_op_reduce(op, (void*)(uintptr_t)inbuf, inoutbuf, (size_t)count, dtype);
  return OMPI_SUCCESS;
}
