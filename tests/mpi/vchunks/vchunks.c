/*
 * vchunks.c - MPI_Reduce_scatter and MPI_Allgatherv with every rank's count distinct and large
 * enough (at HCCL_BUFFSIZE=1) that the engine cuts them into chunks: the chunks form many runs
 * of equal chunks (one wherever some block's count ends), and only the first runs' schedules are
 * built with the plan; the others are made as the call reaches them, with the scratch each needs
 * (communicator.hpp, Plan). Each call twice in a row (the second reuses the plan and makes the
 * later runs' schedules again), blocking and nonblocking; results against sums computed here,
 * and the receive buffers' gaps and guard zones untouched.
 */
#include <stdlib.h>

#include "../mpi_check.h"

static int rank, nranks;

/* Integers well inside a double's exact range: sums over ranks are exact in any order. */
static double value(int r, size_t i) {
  return (double)((r * 29 + i * 5) % 997) - 498.0;
}

/* Rank i's block: distinct, ascending, not multiples of each other. */
static size_t count_of(int i) {
  return (size_t)(i + 1) * 40000 + (size_t)i * 7;
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int* counts = malloc((size_t)nranks * sizeof(int));
  int* displs = malloc((size_t)nranks * sizeof(int));
  size_t total = 0, off_mine = 0;
  enum { GAP = 3 }; /* doubles the Allgatherv layout leaves after every block */
  for (int i = 0; i < nranks; ++i) {
    counts[i] = (int)count_of(i);
    displs[i] = (int)(total + (size_t)i * GAP);
    if (i == rank) off_mine = total;
    total += count_of(i);
  }
  const size_t mine = count_of(rank), span = total + (size_t)nranks * GAP;
  double* in = malloc(total * sizeof(double));
  guarded_t g;
  double* out = guarded_alloc(&g, span * sizeof(double));

  for (int nb = 0; nb < 2; ++nb) {
    for (int round = 0; round < 2; ++round) {
      MPI_Request req = MPI_REQUEST_NULL;
      /* Reduce_scatter: every rank's input is the whole vector; rank r keeps block r's sums. */
      for (size_t i = 0; i < total; ++i) in[i] = value(rank, i) + round;
      memset(out, 0, span * sizeof(double));
      guarded_snapshot(&g);
      if (nb) {
        MPI_Ireduce_scatter(in, out, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      } else {
        MPI_Reduce_scatter(in, out, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      }
      size_t bad = 0;
      for (size_t k = 0; k < mine; ++k) {
        double e = 0;
        for (int r = 0; r < nranks; ++r) e += value(r, off_mine + k) + round;
        if (out[k] != e && 0 == bad++)
          check(false, "%sreduce_scatter round %d element %zu: %g expected %g", nb ? "i" : "",
                round, k, out[k], e);
      }
      check(0 == bad, "%sreduce_scatter of distinct counts round %d: %zu wrong elements",
            nb ? "i" : "", round, bad);
      guarded_untouched(&g, 0, mine * sizeof(double), "reduce_scatter of distinct counts");

      /* Allgatherv: rank r sends its block; every rank receives all, a gap after each. */
      for (size_t k = 0; k < mine; ++k) in[k] = value(rank, k) - round;
      guarded_snapshot(&g);
      if (nb) {
        MPI_Iallgatherv(in, (int)mine, MPI_DOUBLE, out, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD,
                        &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      } else {
        MPI_Allgatherv(in, (int)mine, MPI_DOUBLE, out, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
      }
      bad = 0;
      for (int r = 0; r < nranks; ++r)
        for (size_t k = 0; k < count_of(r); ++k)
          bad += out[(size_t)displs[r] + k] != value(r, k) - round;
      check(0 == bad, "%sallgatherv of distinct counts round %d: %zu wrong elements", nb ? "i" : "",
            round, bad);
      /* the gaps between blocks are no output: the bytes there must be the snapshot's */
      for (int r = 0; r < nranks; ++r) {
        const size_t from = (size_t)displs[r] * sizeof(double),
                     to = r + 1 < nranks ? (size_t)displs[r + 1] * sizeof(double)
                                         : span * sizeof(double);
        const size_t end = from + count_of(r) * sizeof(double);
        size_t changed = 0;
        for (size_t b = end; b < to; ++b)
          changed += g.area[GUARD_ZONE + b] != g.snapshot[GUARD_ZONE + b];
        check(0 == changed, "allgatherv wrote %zu bytes into the gap after block %d", changed, r);
      }
      guarded_untouched(
          &g, 0,
          (size_t)displs[nranks - 1] * sizeof(double) + count_of(nranks - 1) * sizeof(double),
          "allgatherv of distinct counts");
    }
  }
  guarded_free(&g);
  free(in);
  free(counts);
  free(displs);
  return check_finish("vchunks");
}
