/*
 * coll_hccl_floor_all.c - the floor's collectives where every rank receives: MPI_Allreduce,
 * MPI_Allgather(v), MPI_Reduce_scatter(_block) and MPI_Barrier, each in its blocking, MPI_I* and
 * persistent forms (coll_hccl_floor.h); and the rank-order reduction chain all reducing floor
 * collectives share.
 *
 * Linear, in one exchange round: every rank sends its data straight to every rank that needs it.
 * Reductions collect all contributions first and combine them in rank order on each rank, so
 * non-commutative ops are right and every rank gets the same bits. p temporaries of the reduced
 * size per rank: simple rather than fast or lean, as the floor only serves what nothing faster
 * can. Barrier is a fan-in to rank 0 and a fan-out from it.
 */
#include "coll_hccl_floor.h"

#include <stdlib.h>

int mca_coll_hccl_floor_chain(mca_coll_hccl_sched_t* s, const void* const* in, size_t n, void* dst,
                              size_t count, ompi_datatype_t* dtype, ompi_op_t* op) {
  if (0 == n) return OMPI_SUCCESS;
  int rc = OMPI_SUCCESS;
  /* ompi_op_reduce computes inout = in op inout: start from the last rank and fold leftwards */
  if (in[n - 1] != dst)
    rc = mca_coll_hccl_sched_copy(s, in[n - 1], count, dtype, dst, count, dtype);
  for (size_t i = n - 1; OMPI_SUCCESS == rc && i-- > 0;) {
    rc = mca_coll_hccl_sched_reduce(s, in[i], dst, count, dtype, op);
  }
  return rc;
}

int mca_coll_hccl_floor_allreduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                                  ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                                  bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  size_t n = (size_t)count;
  const void** in = mca_coll_hccl_sched_tmp(s, (size_t)p * sizeof *in);
  MCA_COLL_HCCL_FLOOR_NEED(s, in);
  const void* mine = sbuf;
  if (MPI_IN_PLACE == sbuf) {
    /* rbuf becomes the result while the chain still reads this rank's contribution */
    void* own = mca_coll_hccl_sched_tmp_dt(s, n, dtype);
    MCA_COLL_HCCL_FLOOR_NEED(s, own);
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_copy(s, rbuf, n, dtype, own, n, dtype));
    mine = own;
  }
  in[rank] = mine;
  for (int i = 0; i < p; ++i) {
    if (i == rank) continue;
    void* t = mca_coll_hccl_sched_tmp_dt(s, n, dtype);
    MCA_COLL_HCCL_FLOOR_NEED(s, t);
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, t, n, dtype, i));
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, mine, n, dtype, i));
    in[i] = t;
  }
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_round(s));
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_floor_chain(s, in, (size_t)p, rbuf, n, dtype, op));
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

/* Allgather and Allgatherv: block i of rbuf is rcounts[i] x rdtype at displs[i] extents
 * (Allgather: i * rcount). In place, this rank's block already holds its data. */
static int allgather_any(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                         int rcount, const int* rcounts, const int* displs, ompi_datatype_t* rdtype,
                         ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  ptrdiff_t lb = 0, extent = 0;
  ompi_datatype_get_extent(rdtype, &lb, &extent);
#define BLOCK_COUNT(i) ((size_t)(NULL != rcounts ? rcounts[i] : rcount))
#define BLOCK_AT(i) \
  ((char*)rbuf +    \
   (NULL != displs ? (ptrdiff_t)displs[i] : (ptrdiff_t)(i) * (ptrdiff_t)rcount) * extent)
  const void* mine = sbuf;
  size_t mine_count = (size_t)scount;
  ompi_datatype_t* mine_type = sdtype;
  if (MPI_IN_PLACE == sbuf) {
    mine = BLOCK_AT(rank);
    mine_count = BLOCK_COUNT(rank);
    mine_type = rdtype;
  } else {
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_copy(s, sbuf, (size_t)scount, sdtype,
                                                        BLOCK_AT(rank), BLOCK_COUNT(rank), rdtype));
  }
  for (int i = 0; i < p; ++i) {
    if (i == rank) continue;
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, BLOCK_AT(i), BLOCK_COUNT(i), rdtype, i));
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, mine, mine_count, mine_type, i));
  }
#undef BLOCK_COUNT
#undef BLOCK_AT
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

int mca_coll_hccl_floor_allgather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                  int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                  ompi_request_t** req, bool persistent) {
  return allgather_any(sbuf, scount, sdtype, rbuf, rcount, NULL, NULL, rdtype, comm, req,
                       persistent);
}

int mca_coll_hccl_floor_allgatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                   void* rbuf, const int* rcounts, const int* displs,
                                   ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                   ompi_request_t** req, bool persistent) {
  return allgather_any(sbuf, scount, sdtype, rbuf, 0, rcounts, displs, rdtype, comm, req,
                       persistent);
}

/* Reduce_scatter and Reduce_scatter_block: rank i's block of the input is rcounts[i] elements
 * (block: rcount), the blocks back to back; in place, the input is rbuf and the result goes to
 * its start. */
static int reduce_scatter_any(const void* sbuf, void* rbuf, int rcount, const int* rcounts,
                              ompi_datatype_t* dtype, ompi_op_t* op, ompi_communicator_t* comm,
                              ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  const char* input = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
  const void** in = mca_coll_hccl_sched_tmp(s, (size_t)p * sizeof *in);
  MCA_COLL_HCCL_FLOOR_NEED(s, in);
  size_t mine = (size_t)(NULL != rcounts ? rcounts[rank] : rcount);
  size_t at = 0; /* elements before block i */
  for (int i = 0; i < p; ++i) {
    size_t n = (size_t)(NULL != rcounts ? rcounts[i] : rcount);
    const char* block = mca_coll_hccl_floor_block(input, at, 1, dtype);
    void* t = mca_coll_hccl_sched_tmp_dt(s, mine, dtype);
    MCA_COLL_HCCL_FLOOR_NEED(s, t);
    in[i] = t;
    if (i == rank) {
      /* copied out first: in place, the result overwrites the input's start */
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_copy(s, block, n, dtype, t, n, dtype));
    } else {
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, t, mine, dtype, i));
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, block, n, dtype, i));
    }
    at += n;
  }
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_round(s));
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_floor_chain(s, in, (size_t)p, rbuf, mine, dtype, op));
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

int mca_coll_hccl_floor_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts,
                                       ompi_datatype_t* dtype, ompi_op_t* op,
                                       ompi_communicator_t* comm, ompi_request_t** req,
                                       bool persistent) {
  return reduce_scatter_any(sbuf, rbuf, 0, rcounts, dtype, op, comm, req, persistent);
}

int mca_coll_hccl_floor_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount,
                                             ompi_datatype_t* dtype, ompi_op_t* op,
                                             ompi_communicator_t* comm, ompi_request_t** req,
                                             bool persistent) {
  return reduce_scatter_any(sbuf, rbuf, rcount, NULL, dtype, op, comm, req, persistent);
}

int mca_coll_hccl_floor_barrier(ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  /* zero-byte messages: fan in to rank 0, then, once all arrived, fan out */
  for (int i = 1; i < p; ++i) {
    MCA_COLL_HCCL_FLOOR_TRY(
        s, 0 == rank ? mca_coll_hccl_sched_recv(s, NULL, 0, MPI_BYTE, i) : OMPI_SUCCESS);
  }
  if (0 != rank) MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, NULL, 0, MPI_BYTE, 0));
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_round(s));
  for (int i = 1; i < p; ++i) {
    MCA_COLL_HCCL_FLOOR_TRY(
        s, 0 == rank ? mca_coll_hccl_sched_send(s, NULL, 0, MPI_BYTE, i) : OMPI_SUCCESS);
  }
  if (0 != rank) MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, NULL, 0, MPI_BYTE, 0));
  return mca_coll_hccl_sched_finish(s, req, persistent);
}
