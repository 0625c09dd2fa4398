/*
 * coll_hccl_floor_alltoall.c - the floor's MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw, each in
 * its blocking, MPI_I* and persistent forms (coll_hccl_floor.h).
 *
 * One linear exchange round: every rank posts its receives and sends to every other rank, and
 * copies its own block locally. All three are one function over per-peer (count, byte offset,
 * type) of both sides. In place, the blocks to send are first copied out of rbuf (one temporary
 * per block, in the receive layout), because the receives overwrite them.
 */
#include "coll_hccl_floor.h"

#include <stdlib.h>

typedef struct side {
  const int* counts; /* NULL: `count` for every peer */
  int count;
  const int* displs; /* in elements (v) or bytes (w); NULL: i * count elements */
  bool displs_in_bytes;
  ompi_datatype_t* type;
  ompi_datatype_t* const* types; /* w: per peer */
} side_t;

static size_t side_count(const side_t* d, int i) {
  return (size_t)(NULL != d->counts ? d->counts[i] : d->count);
}

static ompi_datatype_t* side_type(const side_t* d, int i) {
  return NULL != d->types ? d->types[i] : d->type;
}

static char* side_block(const side_t* d, const void* buf, int i) {
  if (d->displs_in_bytes) return (char*)(uintptr_t)buf + d->displs[i];
  ptrdiff_t lb = 0, extent = 0;
  ompi_datatype_get_extent(d->type, &lb, &extent);
  ptrdiff_t at = NULL != d->displs ? (ptrdiff_t)d->displs[i] : (ptrdiff_t)i * (ptrdiff_t)d->count;
  return (char*)(uintptr_t)buf + at * extent;
}

static int alltoall_any(const void* sbuf, const side_t* snd, void* rbuf, const side_t* rcv,
                        ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  bool in_place = MPI_IN_PLACE == sbuf;
  for (int i = 0; i < p; ++i) {
    size_t rn = side_count(rcv, i);
    ompi_datatype_t* rt = side_type(rcv, i);
    char* rblock = side_block(rcv, rbuf, i);
    if (in_place) {
      /* the data for rank i is rbuf's block i, laid out as received */
      if (i == rank) continue;
      void* t = mca_coll_hccl_sched_tmp_dt(s, rn, rt);
      MCA_COLL_HCCL_FLOOR_NEED(s, t);
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_copy(s, rblock, rn, rt, t, rn, rt));
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, rblock, rn, rt, i));
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, t, rn, rt, i));
      continue;
    }
    const char* sblock = side_block(snd, sbuf, i);
    size_t sn = side_count(snd, i);
    ompi_datatype_t* st = side_type(snd, i);
    if (i == rank) {
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_copy(s, sblock, sn, st, rblock, rn, rt));
    } else {
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, rblock, rn, rt, i));
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, sblock, sn, st, i));
    }
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

int mca_coll_hccl_floor_alltoall(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                 int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                 ompi_request_t** req, bool persistent) {
  side_t snd = {NULL, scount, NULL, false, sdtype, NULL};
  side_t rcv = {NULL, rcount, NULL, false, rdtype, NULL};
  return alltoall_any(sbuf, &snd, rbuf, &rcv, comm, req, persistent);
}

int mca_coll_hccl_floor_alltoallv(const void* sbuf, const int* scounts, const int* sdispls,
                                  ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                                  const int* rdispls, ompi_datatype_t* rdtype,
                                  ompi_communicator_t* comm, ompi_request_t** req,
                                  bool persistent) {
  side_t snd = {scounts, 0, sdispls, false, sdtype, NULL};
  side_t rcv = {rcounts, 0, rdispls, false, rdtype, NULL};
  return alltoall_any(sbuf, &snd, rbuf, &rcv, comm, req, persistent);
}

int mca_coll_hccl_floor_alltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                                  ompi_datatype_t* const* sdtypes, void* rbuf, const int* rcounts,
                                  const int* rdispls, ompi_datatype_t* const* rdtypes,
                                  ompi_communicator_t* comm, ompi_request_t** req,
                                  bool persistent) {
  side_t snd = {scounts, 0, sdispls, true, NULL, sdtypes};
  side_t rcv = {rcounts, 0, rdispls, true, NULL, rdtypes};
  return alltoall_any(sbuf, &snd, rbuf, &rcv, comm, req, persistent);
}
