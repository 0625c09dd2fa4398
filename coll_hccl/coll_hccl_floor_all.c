/*
 * coll_hccl_floor_all.c - the floor's collectives where every rank receives: MPI_Allreduce,
 * MPI_Allgather(v), MPI_Reduce_scatter(_block) and MPI_Barrier, each in its blocking, MPI_I* and
 * persistent forms (coll_hccl_floor.h); and the rank-ordered binomial tree all reducing floor
 * collectives but Scan and Exscan share.
 *
 * Allgather(v) is linear, in one exchange round: every rank sends its block straight to every
 * rank. Reductions combine over the rank-ordered binomial tree (mca_coll_hccl_floor_tree), so
 * non-commutative ops are right, every rank gets the same bits and no rank holds more than two
 * temporaries of the reduced size: Allreduce is the tree to rank 0, then rank 0 sends the result
 * to every rank (ceil(log2 p) + 1 rounds); Reduce_scatter(_block) is one tree per non-empty block
 * i, in block order, its result forwarded from rank 0 to rank i (p (ceil(log2 p) + 1) rounds at
 * most; temporaries of the largest block). Simple rather than fast, as the floor only serves what
 * nothing faster can. Barrier is a fan-in to rank 0 and a fan-out from it.
 */
#include "coll_hccl_floor.h"

#include <stdlib.h>

int mca_coll_hccl_floor_tree(mca_coll_hccl_sched_t* s, mca_coll_hccl_floor_tree_t* t,
                             const void* own, size_t count, int dest, void* rbuf) {
  const void* acc = own; /* the partial result of ranks [rank, rank + mask) */
  int next = 0, rc = OMPI_SUCCESS;
  for (int mask = 1; mask < t->p && OMPI_SUCCESS == rc; mask <<= 1) {
    if (0 != (t->rank & mask)) {
      rc = mca_coll_hccl_sched_send(s, acc, count, t->dtype, t->rank - mask);
      break;
    }
    if (t->rank + mask >= t->p) continue;
    if (NULL == t->tmp[next]) t->tmp[next] = mca_coll_hccl_sched_tmp_dt(s, t->cap, t->dtype);
    if (NULL == t->tmp[next]) return OMPI_ERR_OUT_OF_RESOURCE;
    /* a receive starts after the previous round's reduce read the buffer it fills */
    rc = mca_coll_hccl_sched_recv(s, t->tmp[next], count, t->dtype, t->rank + mask);
    if (OMPI_SUCCESS == rc) rc = mca_coll_hccl_sched_round(s);
    /* ompi_op_reduce computes inout = in op inout: received = partial op received */
    if (OMPI_SUCCESS == rc)
      rc = mca_coll_hccl_sched_reduce(s, acc, t->tmp[next], count, t->dtype, t->op);
    acc = t->tmp[next];
    next ^= 1;
  }
  /* the tree completed (own may be written), then the result moves from rank 0 to dest */
  if (OMPI_SUCCESS == rc) rc = mca_coll_hccl_sched_round(s);
  if (OMPI_SUCCESS != rc) return rc;
  if (0 == t->rank && 0 == dest && acc != rbuf) {
    rc = mca_coll_hccl_sched_copy(s, acc, count, t->dtype, rbuf, count, t->dtype);
  } else if (0 == t->rank && 0 != dest) {
    rc = mca_coll_hccl_sched_send(s, acc, count, t->dtype, dest);
  } else if (t->rank == dest && 0 != dest) {
    rc = mca_coll_hccl_sched_recv(s, rbuf, count, t->dtype, 0);
  }
  return OMPI_SUCCESS == rc ? mca_coll_hccl_sched_round(s) : rc;
}

int mca_coll_hccl_floor_allreduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                                  ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                                  bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  size_t n = (size_t)count;
  mca_coll_hccl_floor_tree_t t = {rank, p, dtype, op, n, {NULL, NULL}};
  /* in place, rbuf is read by the tree, which completes before anything writes it */
  const void* own = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_floor_tree(s, &t, own, n, 0, rbuf));
  for (int i = 1; i < p; ++i) {
    MCA_COLL_HCCL_FLOOR_TRY(s, 0 == rank   ? mca_coll_hccl_sched_send(s, rbuf, n, dtype, i)
                               : i == rank ? mca_coll_hccl_sched_recv(s, rbuf, n, dtype, 0)
                                           : OMPI_SUCCESS);
  }
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
 * its start. Block i's tree runs after those of blocks 0..i-1: in place, rank i's result only
 * overwrites input blocks 0..i, whose trees completed (block j > i starts past counts[i]). */
static int reduce_scatter_any(const void* sbuf, void* rbuf, int rcount, const int* rcounts,
                              ompi_datatype_t* dtype, ompi_op_t* op, ompi_communicator_t* comm,
                              ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  const char* input = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
  mca_coll_hccl_floor_tree_t t = {rank, p, dtype, op, 0, {NULL, NULL}};
  for (int i = 0; i < p; ++i) {
    size_t n = (size_t)(NULL != rcounts ? rcounts[i] : rcount);
    if (n > t.cap) t.cap = n;
  }
  size_t at = 0; /* elements before block i */
  for (int i = 0; i < p; ++i) {
    size_t n = (size_t)(NULL != rcounts ? rcounts[i] : rcount);
    const char* block = mca_coll_hccl_floor_block(input, at, 1, dtype);
    at += n;
    if (0 == n) continue; /* counts are equal on every rank: all skip alike */
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_floor_tree(s, &t, block, n, i, rbuf));
  }
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
