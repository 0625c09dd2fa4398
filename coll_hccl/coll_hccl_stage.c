/*
 * coll_hccl_stage.c - the user's buffers as the engine's contiguous arrays.
 *
 * The engine moves contiguous arrays of elements. A contiguous MPI layout is handed over as is
 * (pointer + true lower bound); any other is staged through a temporary: packed by Open MPI's
 * convertor (size_t throughout, so no 2 GiB limit) or, for reductions through Open MPI's op, copied
 * as whole extents. Results go back through the datatype engine, which writes the data bytes of
 * the layout only: a derived type's gaps are never written (the write contract).
 */
#include "coll_hccl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "opal/datatype/opal_convertor.h"

size_t mca_coll_hccl_bytes(ompi_datatype_t* dtype, size_t count) {
  size_t size = 0;
  ompi_datatype_type_size(dtype, &size);
  return size * count;
}

void* mca_coll_hccl_side(mca_coll_hccl_stage_t* st, const void* buf, size_t count,
                         ompi_datatype_t* dtype, bool prefill, bool result) {
  memset(st, 0, sizeof *st);
  if (0 == count) return NULL;
  ptrdiff_t lb = 0, extent = 0;
  ompi_datatype_get_true_extent(dtype, &lb, &extent);
  if (count <= (size_t)INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dtype, (int)count)) {
    return (char*)(uintptr_t)buf + lb;
  }
  st->kind = MCA_COLL_HCCL_PACK;
  st->bytes = mca_coll_hccl_bytes(dtype, count);
  mca_coll_hccl_region_t whole = {buf, count, dtype, 0};
  if (prefill) st->in = whole;
  if (result) st->out = whole;
  return NULL;
}

static int pack(const mca_coll_hccl_region_t* from, char* tmp) {
  opal_convertor_t conv;
  OBJ_CONSTRUCT(&conv, opal_convertor_t);
  size_t bytes = mca_coll_hccl_bytes(from->dtype, from->count);
  int rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &from->dtype->super,
                                                    from->count, from->user, 0, &conv);
  if (OPAL_SUCCESS == rc) {
    struct iovec iov = {tmp + from->offset, bytes};
    uint32_t n = 1;
    size_t max = bytes;
    rc = opal_convertor_pack(&conv, &iov, &n, &max) < 0 || max != bytes ? OMPI_ERROR : OMPI_SUCCESS;
  }
  OBJ_DESTRUCT(&conv);
  return rc;
}

static int unpack(const mca_coll_hccl_region_t* to, const char* tmp) {
  opal_convertor_t conv;
  OBJ_CONSTRUCT(&conv, opal_convertor_t);
  size_t bytes = mca_coll_hccl_bytes(to->dtype, to->count);
  int rc = opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &to->dtype->super,
                                                    to->count, to->user, 0, &conv);
  if (OPAL_SUCCESS == rc) {
    struct iovec iov = {(char*)(uintptr_t)tmp + to->offset, bytes};
    uint32_t n = 1;
    size_t max = bytes;
    rc = opal_convertor_unpack(&conv, &iov, &n, &max) < 0 || max != bytes ? OMPI_ERROR
                                                                          : OMPI_SUCCESS;
  }
  OBJ_DESTRUCT(&conv);
  return rc;
}

/* EXTENT staging: element i of the temporary mirrors the user's bytes from lb + i * extent. Only
 * the span the data occupies is read (the last element may end before a full extent). */
static void extent_in(const mca_coll_hccl_region_t* from, char* tmp) {
  ptrdiff_t lb = 0, true_extent = 0, xlb = 0, extent = 0;
  ompi_datatype_get_true_extent(from->dtype, &lb, &true_extent);
  ompi_datatype_get_extent(from->dtype, &xlb, &extent);
  size_t span = (from->count - 1) * (size_t)extent + (size_t)true_extent;
  memcpy(tmp + from->offset, (const char*)from->user + lb, span);
}

static int extent_out(const mca_coll_hccl_region_t* to, const char* tmp) {
  ptrdiff_t lb = 0, true_extent = 0;
  ompi_datatype_get_true_extent(to->dtype, &lb, &true_extent);
  /* Copies the data bytes of the layout only. */
  return ompi_datatype_copy_content_same_ddt(to->dtype, to->count, (char*)(uintptr_t)to->user,
                                             (char*)(uintptr_t)tmp + to->offset - lb);
}

static int load(const mca_coll_hccl_stage_t* st, void* tmp) {
  if (0 == st->in.count) return OMPI_SUCCESS;
  if (MCA_COLL_HCCL_EXTENT == st->kind) {
    extent_in(&st->in, tmp);
    return OMPI_SUCCESS;
  }
  return pack(&st->in, tmp);
}

static int fill(mca_coll_hccl_stage_t* st, void** tmp) {
  /* the block table of a V form lives after the data, aligned */
  size_t data = (st->bytes + 15) / 16 * 16;
  size_t table = st->nblocks * (sizeof(size_t) + sizeof(ptrdiff_t));
  *tmp = malloc(data + table > 0 ? data + table : 1);
  if (NULL == *tmp) return OMPI_ERR_OUT_OF_RESOURCE;
  if (st->nblocks > 0) {
    size_t* counts = (size_t*)(void*)((char*)*tmp + data);
    ptrdiff_t* displs = (ptrdiff_t*)(void*)(counts + st->nblocks);
    memcpy(counts, st->block_counts, st->nblocks * sizeof *counts);
    memcpy(displs, st->block_displs, st->nblocks * sizeof *displs);
    st->block_counts = counts;
    st->block_displs = displs;
  }
  return load(st, *tmp);
}

int mca_coll_hccl_stage_refill(const mca_coll_hccl_call_t* call, void* tmp_send, void* tmp_recv) {
  int rc = MCA_COLL_HCCL_DIRECT != call->send.kind ? load(&call->send, tmp_send) : OMPI_SUCCESS;
  if (OMPI_SUCCESS == rc && MCA_COLL_HCCL_DIRECT != call->recv.kind)
    rc = load(&call->recv, tmp_recv);
  return rc;
}

int mca_coll_hccl_stage_in(mca_coll_hccl_call_t* call, void** tmp_send, void** tmp_recv) {
  if (MCA_COLL_HCCL_DIRECT != call->send.kind) {
    int rc = fill(&call->send, tmp_send);
    if (OMPI_SUCCESS != rc) return rc;
    call->desc.sendbuf = *tmp_send;
  }
  if (MCA_COLL_HCCL_DIRECT != call->recv.kind) {
    int rc = fill(&call->recv, tmp_recv);
    if (OMPI_SUCCESS != rc) return rc;
    call->desc.recvbuf = *tmp_recv;
  }
  return OMPI_SUCCESS;
}

int mca_coll_hccl_stage_out(const mca_coll_hccl_call_t* call, const void* tmp_recv) {
  const mca_coll_hccl_stage_t* st = &call->recv;
  if (MCA_COLL_HCCL_DIRECT == st->kind) return OMPI_SUCCESS;
  if (st->nblocks > 0) {
    size_t offset = 0;
    for (size_t i = 0; i < st->nblocks; ++i) {
      mca_coll_hccl_region_t piece = {(const char*)st->out.user + st->block_displs[i],
                                      st->block_counts[i], st->out.dtype, offset};
      offset += mca_coll_hccl_bytes(st->out.dtype, st->block_counts[i]);
      if (0 == piece.count) continue;
      int rc = unpack(&piece, tmp_recv);
      if (OMPI_SUCCESS != rc) return rc;
    }
    return OMPI_SUCCESS;
  }
  if (0 == st->out.count) return OMPI_SUCCESS;
  return MCA_COLL_HCCL_EXTENT == st->kind ? extent_out(&st->out, tmp_recv)
                                          : unpack(&st->out, tmp_recv);
}
