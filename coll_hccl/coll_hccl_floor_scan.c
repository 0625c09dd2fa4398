/*
 * coll_hccl_floor_scan.c - the floor's prefix reductions, MPI_Scan and MPI_Exscan, each in its
 * blocking, MPI_I* and persistent forms (coll_hccl_floor.h).
 *
 * Linear: every rank sends its contribution to every higher rank in one round, then combines what
 * it received from the lower ranks in rank order (right for non-commutative ops). Rank r keeps r
 * temporaries; simple rather than fast, as the floor only serves what nothing faster can.
 * Exscan leaves rank 0's receive buffer untouched, as MPI leaves it undefined.
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
  const void** in = mca_coll_hccl_sched_tmp(s, (size_t)(rank + 1) * sizeof *in);
  MCA_COLL_HCCL_FLOOR_NEED(s, in);
  for (int i = 0; i < rank; ++i) {
    void* t = mca_coll_hccl_sched_tmp_dt(s, n, dtype);
    MCA_COLL_HCCL_FLOOR_NEED(s, t);
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_recv(s, t, n, dtype, i));
    in[i] = t;
  }
  for (int i = rank + 1; i < p; ++i) {
    MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_send(s, mine, n, dtype, i));
  }
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_sched_round(s));
  /* inclusive: a0 op ... op a(r), the last term being this rank's own data (rbuf itself when in
   * place, which the chain may start from); exclusive: a0 op ... op a(r-1) */
  in[rank] = mine;
  size_t terms = inclusive ? (size_t)rank + 1 : (size_t)rank;
  MCA_COLL_HCCL_FLOOR_TRY(s, mca_coll_hccl_floor_chain(s, in, terms, rbuf, n, dtype, op));
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
