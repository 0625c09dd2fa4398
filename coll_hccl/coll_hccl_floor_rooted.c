/*
 * coll_hccl_floor_rooted.c - the floor's rooted collectives: MPI_Bcast, MPI_Reduce, MPI_Scatter(v),
 * MPI_Gather(v), each in its blocking, MPI_I* and persistent forms (coll_hccl_floor.h).
 *
 * Linear: the root exchanges one message with every other rank in one round. Reduce combines
 * over the floor's rank-ordered binomial tree (mca_coll_hccl_floor_tree): a0 op a1 op ... op
 * a(p-1) at rank 0, which is right for non-commutative ops and gives the same bits as the floor's
 * allreduce, forwarded to the root when that is another rank; two temporaries per rank. Simple
 * rather than fast: the floor only serves what nothing faster can.
 */
#include "coll_hccl_floor.h"

#include <stdlib.h>

int mca_coll_hccl_floor_bcast(void* buf, int count, ompi_datatype_t* dtype, int root,
                              ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  if (rank == root) {
    for (int i = 0; i < p; ++i) {
      if (i != root)
        MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, buf, (size_t)count, dtype, i));
    }
  } else {
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, buf, (size_t)count, dtype, root));
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

int mca_coll_hccl_floor_reduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                               ompi_op_t* op, int root, ompi_communicator_t* comm,
                               ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  size_t n = (size_t)count;
  mca_coll_hccl_floor_tree_t t = {rank, p, dtype, op, n, {NULL, NULL}};
  /* in place (the root only), rbuf is read by the tree, which completes before it is written */
  const void* own = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_floor_tree(s, &t, own, n, root, rbuf));
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

/* Scatter and Scatterv: block i of the root's buffer is scounts[i] x sdtype at displs[i]
 * extents (Scatter: i * scount). */
static int scatter_any(const void* sbuf, int scount, const int* scounts, const int* displs,
                       ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                       int root, ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  if (rank != root) {
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, rbuf, (size_t)rcount, rdtype, root));
    return mca_coll_hccl_sched_finish(s, req, persistent);
  }
  ptrdiff_t lb = 0, extent = 0;
  ompi_datatype_get_extent(sdtype, &lb, &extent);
  for (int i = 0; i < p; ++i) {
    size_t n = (size_t)(NULL != scounts ? scounts[i] : scount);
    ptrdiff_t at = NULL != displs ? (ptrdiff_t)displs[i] : (ptrdiff_t)i * (ptrdiff_t)scount;
    const char* block = (const char*)sbuf + at * extent;
    if (i != root) {
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, block, n, sdtype, i));
    } else if (MPI_IN_PLACE != rbuf) {
      MCA_COLL_HCCL_FLOOR_TRY(
          s, mca_coll_hccl_sched_copy(s, block, n, sdtype, rbuf, (size_t)rcount, rdtype));
    }
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

int mca_coll_hccl_floor_scatter(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                int rcount, ompi_datatype_t* rdtype, int root,
                                ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  return scatter_any(sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, rdtype, root, comm, req,
                     persistent);
}

int mca_coll_hccl_floor_scatterv(const void* sbuf, const int* scounts, const int* displs,
                                 ompi_datatype_t* sdtype, void* rbuf, int rcount,
                                 ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                                 ompi_request_t** req, bool persistent) {
  return scatter_any(sbuf, 0, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, req,
                     persistent);
}

/* Gather and Gatherv: block i of the root's buffer is rcounts[i] x rdtype at displs[i] extents
 * (Gather: i * rcount). */
static int gather_any(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf, int rcount,
                      const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                      ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  if (rank != root) {
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, sbuf, (size_t)scount, sdtype, root));
    return mca_coll_hccl_sched_finish(s, req, persistent);
  }
  ptrdiff_t lb = 0, extent = 0;
  ompi_datatype_get_extent(rdtype, &lb, &extent);
  for (int i = 0; i < p; ++i) {
    size_t n = (size_t)(NULL != rcounts ? rcounts[i] : rcount);
    ptrdiff_t at = NULL != displs ? (ptrdiff_t)displs[i] : (ptrdiff_t)i * (ptrdiff_t)rcount;
    char* block = (char*)rbuf + at * extent;
    if (i != root) {
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, block, n, rdtype, i));
    } else if (MPI_IN_PLACE != sbuf) {
      MCA_COLL_HCCL_FLOOR_TRY(
          s, mca_coll_hccl_sched_copy(s, sbuf, (size_t)scount, sdtype, block, n, rdtype));
    }
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

int mca_coll_hccl_floor_gather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                               int rcount, ompi_datatype_t* rdtype, int root,
                               ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  return gather_any(sbuf, scount, sdtype, rbuf, rcount, NULL, NULL, rdtype, root, comm, req,
                    persistent);
}

int mca_coll_hccl_floor_gatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                const int* rcounts, const int* displs, ompi_datatype_t* rdtype,
                                int root, ompi_communicator_t* comm, ompi_request_t** req,
                                bool persistent) {
  return gather_any(sbuf, scount, sdtype, rbuf, 0, rcounts, displs, rdtype, root, comm, req,
                    persistent);
}
