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

/* The type of block i of a block table. */
static ompi_datatype_t* block_type(const mca_coll_hccl_blocks_t* b, size_t i) {
  return NULL != b->types ? b->types[i] : b->dtype;
}

/* Walks the blocks in the engine's packed order, packing (in) or unpacking (out) each. */
static int move_blocks(const mca_coll_hccl_blocks_t* b, char* tmp, bool in) {
  size_t offset = 0;
  for (size_t i = 0; i < b->n; ++i) {
    ompi_datatype_t* type = block_type(b, i);
    mca_coll_hccl_region_t piece = {(const char*)b->user + b->displs[i], b->counts[i], type,
                                    offset};
    offset += mca_coll_hccl_bytes(type, b->counts[i]);
    if (0 == piece.count) continue;
    int rc = in ? pack(&piece, tmp) : unpack(&piece, tmp);
    if (OMPI_SUCCESS != rc) return rc;
  }
  return OMPI_SUCCESS;
}

static int load(const mca_coll_hccl_stage_t* st, void* tmp) {
  if (st->blocks.n > 0 && st->blocks.in) {
    int rc = move_blocks(&st->blocks, tmp, true);
    if (OMPI_SUCCESS != rc) return rc;
  }
  if (0 == st->in.count) return OMPI_SUCCESS;
  if (MCA_COLL_HCCL_EXTENT == st->kind) {
    extent_in(&st->in, tmp);
    return OMPI_SUCCESS;
  }
  return pack(&st->in, tmp);
}

static int fill(mca_coll_hccl_stage_t* st, void** tmp) {
  /* the block table of a V form lives after the data, aligned */
  mca_coll_hccl_blocks_t* b = &st->blocks;
  size_t data = (st->bytes + 15) / 16 * 16;
  size_t table =
      b->n * (sizeof(size_t) + sizeof(ptrdiff_t) + (NULL != b->types ? sizeof(void*) : 0));
  *tmp = malloc(data + table > 0 ? data + table : 1);
  if (NULL == *tmp) return OMPI_ERR_OUT_OF_RESOURCE;
  if (b->n > 0) {
    size_t* counts = (size_t*)(void*)((char*)*tmp + data);
    ptrdiff_t* displs = (ptrdiff_t*)(void*)(counts + b->n);
    memcpy(counts, b->counts, b->n * sizeof *counts);
    memcpy(displs, b->displs, b->n * sizeof *displs);
    b->counts = counts;
    b->displs = displs;
    if (NULL != b->types) {
      ompi_datatype_t** types = (ompi_datatype_t**)(void*)(displs + b->n);
      memcpy(types, b->types, b->n * sizeof *types);
      b->types = types;
    }
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
  if (st->blocks.n > 0 && st->blocks.out)
    return move_blocks(&st->blocks, (char*)(uintptr_t)tmp_recv, false);
  if (0 == st->out.count) return OMPI_SUCCESS;
  return MCA_COLL_HCCL_EXTENT == st->kind ? extent_out(&st->out, tmp_recv)
                                          : unpack(&st->out, tmp_recv);
}

int mca_coll_hccl_vtables(size_t p, int sides, mca_coll_hccl_vtable_t* tables, void** mem) {
  size_t per_side = p * (2 * sizeof(size_t) + sizeof(ptrdiff_t));
  char* all = malloc((size_t)sides * per_side + 1);
  *mem = all;
  if (NULL == all) return OMPI_ERR_OUT_OF_RESOURCE;
  for (int s = 0; s < sides; ++s) {
    char* base = all + (size_t)s * per_side;
    tables[s].bytes = (size_t*)(void*)base;
    tables[s].counts = tables[s].bytes + p;
    tables[s].displs = (ptrdiff_t*)(void*)(tables[s].counts + p);
    tables[s].total = 0;
  }
  return OMPI_SUCCESS;
}

void* mca_coll_hccl_blocks_side(mca_coll_hccl_stage_t* st, mca_coll_hccl_vtable_t* t,
                                const void* buf, size_t p, const int* counts, const int* displs,
                                ompi_datatype_t* dtype, ompi_datatype_t* const* types, bool prefill,
                                bool result) {
  memset(st, 0, sizeof *st);
  ptrdiff_t lb = 0, extent = 0;
  if (NULL == types) ompi_datatype_get_extent(dtype, &lb, &extent);
  /* Direct when every non-empty block is contiguous and sits where the engine's packed layout
   * puts it relative to the first one: then the engine reads and writes the user's memory. */
  bool direct = true, first = true;
  ptrdiff_t base = 0; /* the packed layout's origin, in bytes from buf */
  size_t total = 0, packed_count = 0;
  for (size_t r = 0; r < p; ++r) {
    ompi_datatype_t* type = NULL != types ? types[r] : dtype;
    t->counts[r] = (size_t)counts[r];
    t->bytes[r] = mca_coll_hccl_bytes(type, t->counts[r]);
    if (NULL == displs)
      t->displs[r] = (ptrdiff_t)packed_count * extent;
    else
      t->displs[r] = NULL != types ? (ptrdiff_t)displs[r] : (ptrdiff_t)displs[r] * extent;
    if (t->bytes[r] > 0 && direct) {
      ptrdiff_t tlb = 0, textent = 0;
      ompi_datatype_get_true_extent(type, &tlb, &textent);
      ptrdiff_t at = t->displs[r] + tlb - (ptrdiff_t)total;
      if (t->counts[r] > (size_t)INT32_MAX ||
          !ompi_datatype_is_contiguous_memory_layout(type, (int)t->counts[r]) ||
          (!first && at != base))
        direct = false;
      if (first) base = at;
      first = false;
    }
    total += t->bytes[r];
    packed_count += t->counts[r];
  }
  t->total = total;
  if (direct) return 0 == total ? (void*)(uintptr_t)buf : (char*)(uintptr_t)buf + base;
  st->kind = MCA_COLL_HCCL_PACK;
  st->bytes = total;
  mca_coll_hccl_blocks_t b = {buf, dtype, types, p, t->counts, t->displs, prefill, result};
  st->blocks = b;
  return NULL;
}
