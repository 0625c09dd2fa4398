/*
 * nonblocking.c - nonblocking collectives in flight together: on several communicators at once
 * (started in a different order on even and odd ranks, which MPI allows), several on the same
 * communicator, overlapped with point-to-point traffic and with a blocking collective, completed
 * by MPI_Wait, MPI_Waitall and MPI_Test polling, and with the user op and derived type freed
 * while the call is in flight.
 *
 * Options: --same-order (start the calls in the same order on every rank: needed when the engine
 * blocks inside MPI_I*, as the placeholder's test mode does).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_check.h"

static int rank, nranks;

static double dvalue(int r, int i) {
  return (double)((r * 31 + i * 7) % 101) - 50.0;
}

static void check_sum(const double* got, int n, const char* what) {
  for (int i = 0; i < n; ++i) {
    double e = 0;
    for (int r = 0; r < nranks; ++r) e += dvalue(r, i);
    if (!check(got[i] == e, "%s element %d: %g expected %g", what, i, got[i], e)) return;
  }
}

/* Rank order a0 - a1 - ... with each a_r = (x -> x*m + r): composition as in comms.c, but
 * simpler: pairs (m, c) combined as (m1*m2, m1*c2 + c1) modulo 1009. */
static void affine_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  const int* x = in;
  int* y = inout;
  for (int i = 0; i < *len; ++i) {
    int m = (x[2 * i] * y[2 * i]) % 1009;
    int c = (x[2 * i] * y[2 * i + 1] + x[2 * i + 1]) % 1009;
    y[2 * i] = m;
    y[2 * i + 1] = c;
  }
}

static void overlapped(bool same_order) {
  MPI_Comm a, b;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Comm_dup(MPI_COMM_WORLD, &b);
  const int n = 1000;
  guarded_t g_ar, g_rsb, g_ag;
  double* in = malloc(n * sizeof(double));
  double* ar = guarded_alloc(&g_ar, n * sizeof(double));
  double* rsb = guarded_alloc(&g_rsb, n * sizeof(double));
  double* rsb_in = malloc((size_t)n * (size_t)nranks * sizeof(double));
  int* ag = guarded_alloc(&g_ag, (size_t)nranks * 3 * sizeof(int));
  guarded_snapshot(&g_ar);
  guarded_snapshot(&g_rsb);
  guarded_snapshot(&g_ag);
  for (int i = 0; i < n; ++i) in[i] = dvalue(rank, i);
  for (int i = 0; i < n * nranks; ++i) rsb_in[i] = dvalue(rank, i);
  int mine[3] = {rank, rank * 2, rank * 3};

  MPI_Request req[6];
  const bool flip = !same_order && rank % 2;
  /* three collectives on three communicators, started in rank-dependent order */
  if (!flip) {
    MPI_Iallreduce(in, ar, n, MPI_DOUBLE, MPI_SUM, a, &req[0]);
    MPI_Iallgather(mine, 3, MPI_INT, ag, 3, MPI_INT, b, &req[1]);
  } else {
    MPI_Iallgather(mine, 3, MPI_INT, ag, 3, MPI_INT, b, &req[1]);
    MPI_Iallreduce(in, ar, n, MPI_DOUBLE, MPI_SUM, a, &req[0]);
  }
  MPI_Ireduce_scatter_block(rsb_in, rsb, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[2]);

  /* point-to-point around a ring while they are in flight */
  int token_out = rank * 100, token_in = -1;
  MPI_Irecv(&token_in, 1, MPI_INT, (rank + nranks - 1) % nranks, 5, MPI_COMM_WORLD, &req[3]);
  MPI_Isend(&token_out, 1, MPI_INT, (rank + 1) % nranks, 5, MPI_COMM_WORLD, &req[4]);
  MPI_Waitall(2, &req[3], MPI_STATUSES_IGNORE);
  check(token_in == ((rank + nranks - 1) % nranks) * 100, "ring token %d", token_in);

  /* a blocking collective on a communicator with a pending nonblocking one */
  double one = 1, total = 0;
  MPI_Allreduce(&one, &total, 1, MPI_DOUBLE, MPI_SUM, b);
  check(total == nranks, "blocking allreduce during nonblocking ones: %g", total);

  /* complete by polling */
  int done = 0;
  while (!done) MPI_Testall(3, req, &done, MPI_STATUSES_IGNORE);
  check_sum(ar, n, "overlapped iallreduce");
  for (int r = 0; r < nranks; ++r) {
    check(ag[3 * r] == r && ag[3 * r + 2] == 3 * r, "overlapped iallgather slot %d", r);
  }
  for (int i = 0; i < n; ++i) {
    double e = 0;
    for (int r = 0; r < nranks; ++r) e += dvalue(r, rank * n + i);
    if (!check(rsb[i] == e, "overlapped ireduce_scatter_block element %d", i)) break;
  }
  guarded_untouched(&g_ar, 0, n * sizeof(double), "overlapped iallreduce");
  guarded_untouched(&g_rsb, 0, n * sizeof(double), "overlapped ireduce_scatter_block");
  guarded_untouched(&g_ag, 0, (size_t)nranks * 3 * sizeof(int), "overlapped iallgather");
  free(in);
  guarded_free(&g_ar);
  guarded_free(&g_rsb);
  free(rsb_in);
  guarded_free(&g_ag);
  MPI_Comm_free(&a);
  MPI_Comm_free(&b);
}

/* Many calls on one communicator at once; MPI orders them by issue order. */
static void many_on_one(void) {
  enum { K = 16 };
  MPI_Request req[K];
  double* bufs[K];
  guarded_t g[K];
  int counts[K];
  for (int k = 0; k < K; ++k) {
    counts[k] = 1 + k * 37;
    bufs[k] = guarded_alloc(&g[k], (size_t)counts[k] * sizeof(double));
    for (int i = 0; i < counts[k]; ++i) bufs[k][i] = dvalue(rank, i + k);
    guarded_snapshot(&g[k]);
    MPI_Iallreduce(MPI_IN_PLACE, bufs[k], counts[k], MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[k]);
  }
  MPI_Waitall(K, req, MPI_STATUSES_IGNORE);
  for (int k = 0; k < K; ++k) {
    for (int i = 0; i < counts[k]; ++i) {
      double e = 0;
      for (int r = 0; r < nranks; ++r) e += dvalue(r, i + k);
      if (!check(bufs[k][i] == e, "iallreduce %d of %d element %d", k, K, i)) break;
    }
    guarded_untouched(&g[k], 0, (size_t)counts[k] * sizeof(double), "in-place iallreduce");
    guarded_free(&g[k]);
  }
}

/* MPI lets the program free the op and the datatype right after starting the call. */
static void freed_in_flight(void) {
  MPI_Op op;
  MPI_Datatype pair;
  MPI_Op_create(affine_op, 0, &op);
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  const int n = 64;
  guarded_t g;
  int* in = malloc(2 * n * sizeof(int));
  int* out = guarded_alloc(&g, 2 * n * sizeof(int));
  guarded_snapshot(&g);
  for (int i = 0; i < n; ++i) {
    in[2 * i] = (rank + i) % 7 + 2;
    in[2 * i + 1] = (rank * 3 + i) % 5 + 1;
  }
  MPI_Request req;
  MPI_Iallreduce(in, out, n, pair, op, MPI_COMM_WORLD, &req);
  MPI_Op_free(&op);
  MPI_Type_free(&pair);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  for (int i = 0; i < n; ++i) {
    int m = (i) % 7 + 2, c = (i) % 5 + 1; /* rank 0 */
    for (int r = 1; r < nranks; ++r) {
      int m2 = (r + i) % 7 + 2, c2 = (r * 3 + i) % 5 + 1;
      int nm = (m * m2) % 1009, nc = (m * c2 + c) % 1009;
      m = nm;
      c = nc;
    }
    if (!check(out[2 * i] == m && out[2 * i + 1] == c,
               "user op freed in flight, element %d: (%d,%d) expected (%d,%d)", i, out[2 * i],
               out[2 * i + 1], m, c)) {
      break;
    }
  }
  guarded_untouched(&g, 0, 2 * n * sizeof(int), "iallreduce with a user op freed in flight");
  free(in);
  guarded_free(&g);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const bool same_order = has_flag(argc, argv, "--same-order");
  for (int round = 0; round < 3; ++round) overlapped(same_order);
  many_on_one();
  freed_in_flight();
  return check_finish("nonblocking");
}
