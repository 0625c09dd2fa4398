/*
 * coll_hccl_floor.h - coll_hccl's own implementation of every intracommunicator collective over
 * Open MPI's PML, on the schedule of coll_hccl_sched.h: what serves a call the engine cannot take
 * when no lower-priority component exists (`--mca coll hccl` alone), and communicators the engine
 * is not set up on (size 1, a failed set-up, spawned processes).
 *
 * Correct for every argument MPI allows (derived and mixed datatypes, every op in rank order,
 * MPI_IN_PLACE, zero counts, any root); linear algorithms, but reductions over a rank-ordered
 * binomial tree (Scan and Exscan: recursive doubling) in O(count) memory per rank; speed is
 * secondary. Each function is the collective in one of its three forms: req NULL is blocking,
 * else `persistent` selects MPI_*_init over MPI_I*. Arrays of counts, displacements and types are
 * read at the call (for a persistent request: at init); data buffers at every run.
 */
#ifndef MCA_COLL_HCCL_FLOOR_H
#define MCA_COLL_HCCL_FLOOR_H

#include "coll_hccl.h"
#include "coll_hccl_sched.h"

BEGIN_C_DECLS

/* The floor's verbose line and its choice (coll_hccl_decide.c). */

/* Rooted (coll_hccl_floor_rooted.c) */
int mca_coll_hccl_floor_bcast(void* buf, int count, ompi_datatype_t* dtype, int root,
                              ompi_communicator_t* comm, ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_reduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                               ompi_op_t* op, int root, ompi_communicator_t* comm,
                               ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_scatter(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                int rcount, ompi_datatype_t* rdtype, int root,
                                ompi_communicator_t* comm, ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_scatterv(const void* sbuf, const int* scounts, const int* displs,
                                 ompi_datatype_t* sdtype, void* rbuf, int rcount,
                                 ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                                 ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_gather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                               int rcount, ompi_datatype_t* rdtype, int root,
                               ompi_communicator_t* comm, ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_gatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                const int* rcounts, const int* displs, ompi_datatype_t* rdtype,
                                int root, ompi_communicator_t* comm, ompi_request_t** req,
                                bool persistent);

/* All-to-one-to-all (coll_hccl_floor_all.c) */
int mca_coll_hccl_floor_allreduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                                  ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                                  bool persistent);
int mca_coll_hccl_floor_allgather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                  int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                  ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_allgatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                   void* rbuf, const int* rcounts, const int* displs,
                                   ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                   ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts,
                                       ompi_datatype_t* dtype, ompi_op_t* op,
                                       ompi_communicator_t* comm, ompi_request_t** req,
                                       bool persistent);
int mca_coll_hccl_floor_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount,
                                             ompi_datatype_t* dtype, ompi_op_t* op,
                                             ompi_communicator_t* comm, ompi_request_t** req,
                                             bool persistent);
int mca_coll_hccl_floor_barrier(ompi_communicator_t* comm, ompi_request_t** req, bool persistent);

/* All-to-all (coll_hccl_floor_alltoall.c) */
int mca_coll_hccl_floor_alltoall(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                 int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                 ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_alltoallv(const void* sbuf, const int* scounts, const int* sdispls,
                                  ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                                  const int* rdispls, ompi_datatype_t* rdtype,
                                  ompi_communicator_t* comm, ompi_request_t** req, bool persistent);
int mca_coll_hccl_floor_alltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                                  ompi_datatype_t* const* sdtypes, void* rbuf, const int* rcounts,
                                  const int* rdispls, ompi_datatype_t* const* rdtypes,
                                  ompi_communicator_t* comm, ompi_request_t** req, bool persistent);

/* Prefix reductions (coll_hccl_floor_scan.c) */
int mca_coll_hccl_floor_scan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                             ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                             bool persistent);
int mca_coll_hccl_floor_exscan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                               ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                               bool persistent);

/* Shared by the reducing files above (coll_hccl_floor_all.c): the rank-ordered binomial tree.
 * Every rank's `count` x `dtype` at `own` (read only) is combined a0 op a1 op ... op a(p-1) at
 * rank 0, right for non-commutative ops: rank r, for k = 0, 1, ... while bit k of r is clear,
 * receives the partial result of ranks [r + 2^k, r + 2^(k+1)) from r + 2^k (when it exists) and
 * combines its own, lower ranks on the left; at its lowest set bit k it sends its partial result
 * of [r, r + 2^k) to r - 2^k. ceil(log2 p) rounds; two temporaries of `cap` elements per rank
 * (allocated by the first tree that needs them, reused by the later trees of the schedule), so
 * O(count) memory whatever p. The result then lands in `dest`'s rbuf (rank 0 copies it there or
 * sends it to dest; rbuf is read nowhere else). Ends with a round: what follows may overwrite own
 * and rbuf, and a later tree reuses the temporaries. */
typedef struct mca_coll_hccl_floor_tree {
  int rank, p;
  ompi_datatype_t* dtype;
  ompi_op_t* op;
  size_t cap;   /* elements each temporary holds: the largest count of the schedule's trees */
  void* tmp[2]; /* NULL until needed */
} mca_coll_hccl_floor_tree_t;
int mca_coll_hccl_floor_tree(mca_coll_hccl_sched_t* s, mca_coll_hccl_floor_tree_t* t,
                             const void* own, size_t count, int dest, void* rbuf);
/* Address of block i of `count` x `dtype` elements each. */
static inline char* mca_coll_hccl_floor_block(const void* buf, size_t i, size_t count,
                                              ompi_datatype_t* dtype) {
  ptrdiff_t lb = 0, extent = 0;
  ompi_datatype_get_extent(dtype, &lb, &extent);
  return (char*)(uintptr_t)buf + (ptrdiff_t)(i * count) * extent;
}

/* A failed step frees the schedule and returns its code from the calling function. */
#define MCA_COLL_HCCL_FLOOR_TRY(s, x) \
  do {                                \
    int floor_rc_ = (x);              \
    if (OMPI_SUCCESS != floor_rc_) {  \
      mca_coll_hccl_sched_free(s);    \
      return floor_rc_;               \
    }                                 \
  } while (0)
#define MCA_COLL_HCCL_FLOOR_NEED(s, ptr) \
  MCA_COLL_HCCL_FLOOR_TRY(s, NULL == (ptr) ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS)
#define MCA_COLL_HCCL_FLOOR_NEW(s, comm)                    \
  mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(comm); \
  if (NULL == s) return OMPI_ERR_OUT_OF_RESOURCE

END_C_DECLS

#endif /* MCA_COLL_HCCL_FLOOR_H */
