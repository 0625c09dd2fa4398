/*
 * coll_hccl_floor_scan.c - the floor's prefix reductions, MPI_Scan and MPI_Exscan, each in its
 * blocking, MPI_I* and persistent forms (coll_hccl_floor.h).
 *
 * Recursive doubling (as MPICH's MPIR_Scan_intra_recursive_doubling): in step k every rank r
 * exchanges with r ^ 2^k (when that rank exists) the reduction of its aligned group of 2^k ranks
 * (`total`), then a partner below folds into the result and the total on the left (lower ranks
 * first), a partner above into the total on the right: right for non-commutative ops, in
 * ceil(log2 p) rounds, with two temporaries per rank (the total and what arrives). Exscan is the
 * same with the result starting empty (the first partner below gives it), so rank 0's receive
 * buffer is never written, as MPI leaves it undefined.
 */
#include "coll_hccl_floor.h"

#include <stdlib.h>

static int scan_any(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype, ompi_op_t* op,
                    bool inclusive, ompi_communicator_t* comm, ompi_request_t** req,
                    bool persistent) {
  MCA_COLL_HCCL_FLOOR_NEW(s, comm);
  int p = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  size_t n = (size_t)count;
  const void* mine = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
  void* total = mca_coll_hccl_sched_tmp_dt(s, n, dtype);
  void* got = mca_coll_hccl_sched_tmp_dt(s, n, dtype);
  MCA_COLL_HCCL_FLOOR_NEED(s, total);
  MCA_COLL_HCCL_FLOOR_NEED(s, got);
  /* total starts as this rank's data, read before rbuf is written (in place: rbuf itself) */
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_copy(s, mine, n, dtype, total, n, dtype));
  bool has_result = inclusive; /* rbuf holds a0 op ... op a(r) so far */
  if (inclusive && MPI_IN_PLACE != sbuf) {
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_copy(s, sbuf, n, dtype, rbuf, n, dtype));
  }
  for (int mask = 1; mask < p; mask <<= 1) {
    int peer = rank ^ mask;
    if (peer >= p) continue;
    /* the reduces of the previous step ran before this step's sends and receives start */
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, total, n, dtype, peer));
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, got, n, dtype, peer));
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_round(s));
    if (peer < rank) {
      /* ompi_op_reduce computes inout = in op inout: got holds the lower ranks */
      if (has_result) {
        MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_reduce(s, got, rbuf, n, dtype, op));
      } else {
        MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_copy(s, got, n, dtype, rbuf, n, dtype));
        has_result = true;
      }
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_reduce(s, got, total, n, dtype, op));
    } else {
      /* total op got lands in got, which becomes the total; the old total receives next */
      MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_reduce(s, total, got, n, dtype, op));
      void* swap = total;
      total = got;
      got = swap;
    }
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

int mca_coll_hccl_floor_scan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                             ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                             bool persistent) {
  return scan_any(sbuf, rbuf, count, dtype, op, true, comm, req, persistent);
}

int mca_coll_hccl_floor_exscan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                               ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                               bool persistent) {
  return scan_any(sbuf, rbuf, count, dtype, op, false, comm, req, persistent);
}
