/*
 * predictions.c - the calls whose verbose lines run_mpi.py --expect-predictions compares with
 * hccl_info's decision for the same shape: MPI_Allreduce (MPI_INT sum, MPI_FLOAT max), MPI_Bcast,
 * MPI_Reduce (MPI_INT sum), MPI_Scatter, MPI_Gather and MPI_Alltoall (MPI_FLOAT) at counts from 1
 * to 64 Ki (MPI's count: the whole vector, per rank for Scatter and Gather, per pair for
 * Alltoall), roots 0 and the last rank. Every result is checked against values computed here.
 *
 * Options: none.
 */
#include <stdlib.h>

#include "mpi_check.h"

/* Rank r's element i: small integers, exact in float sums. */
static int value(int r, size_t i) {
  return r * 7 + (int)(i % 1009);
}

static void* alloc(size_t bytes) {
  void* p = malloc(bytes > 0 ? bytes : 1);
  if (NULL == p) MPI_Abort(MPI_COMM_WORLD, 2);
  return p;
}

static void reductions(int rank, int p, size_t n, int root) {
  int* in = alloc(n * sizeof *in);
  int* out = alloc(n * sizeof *out);
  float* fin = alloc(n * sizeof *fin);
  float* fout = alloc(n * sizeof *fout);
  for (size_t i = 0; i < n; ++i) {
    in[i] = value(rank, i);
    fin[i] = (float)value(rank, i);
  }
  int sum_ranks = p * (p - 1) / 2 * 7;
  if (check(MPI_SUCCESS == MPI_Allreduce(in, out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            "allreduce int sum %zu: rc", n)) {
    for (size_t i = 0; i < n; ++i)
      if (!check(out[i] == p * (int)(i % 1009) + sum_ranks, "allreduce int sum %zu: [%zu] = %d", n,
                 i, out[i]))
        break;
  }
  if (check(MPI_SUCCESS == MPI_Allreduce(fin, fout, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD),
            "allreduce float max %zu: rc", n)) {
    for (size_t i = 0; i < n; ++i)
      if (!check(fout[i] == (float)value(p - 1, i), "allreduce float max %zu: [%zu] = %g", n, i,
                 (double)fout[i]))
        break;
  }
  if (check(MPI_SUCCESS == MPI_Reduce(in, out, (int)n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD),
            "reduce %zu root %d: rc", n, root) &&
      rank == root) {
    for (size_t i = 0; i < n; ++i)
      if (!check(out[i] == p * (int)(i % 1009) + sum_ranks, "reduce %zu root %d: [%zu] = %d", n,
                 root, i, out[i]))
        break;
  }
  for (size_t i = 0; i < n; ++i) fout[i] = rank == root ? fin[i] : -1.0f;
  if (check(MPI_SUCCESS == MPI_Bcast(fout, (int)n, MPI_FLOAT, root, MPI_COMM_WORLD),
            "bcast %zu root %d: rc", n, root)) {
    for (size_t i = 0; i < n; ++i)
      if (!check(fout[i] == (float)value(root, i), "bcast %zu root %d: [%zu] = %g", n, root, i,
                 (double)fout[i]))
        break;
  }
  free(in);
  free(out);
  free(fin);
  free(fout);
}

/* n elements per rank (Scatter, Gather) or per pair (Alltoall). */
static void blocks(int rank, int p, size_t n, int root) {
  const size_t all = (size_t)p * n;
  float* whole = alloc(all * sizeof *whole);
  float* whole2 = alloc(all * sizeof *whole2);
  float* mine = alloc(n * sizeof *mine);
  /* Scatter: block r of the root's buffer goes to rank r */
  for (size_t i = 0; i < all; ++i) whole[i] = (float)value(rank, i);
  if (check(MPI_SUCCESS == MPI_Scatter(whole, (int)n, MPI_FLOAT, mine, (int)n, MPI_FLOAT, root,
                                       MPI_COMM_WORLD),
            "scatter %zu root %d: rc", n, root)) {
    for (size_t i = 0; i < n; ++i)
      if (!check(mine[i] == (float)value(root, (size_t)rank * n + i),
                 "scatter %zu root %d: [%zu] = %g", n, root, i, (double)mine[i]))
        break;
  }
  /* Gather: rank r's block lands at block r of the root's buffer */
  for (size_t i = 0; i < n; ++i) mine[i] = (float)value(rank, i);
  if (check(MPI_SUCCESS == MPI_Gather(mine, (int)n, MPI_FLOAT, whole2, (int)n, MPI_FLOAT, root,
                                      MPI_COMM_WORLD),
            "gather %zu root %d: rc", n, root) &&
      rank == root) {
    for (size_t i = 0; i < all; ++i)
      if (!check(whole2[i] == (float)value((int)(i / n), i % n), "gather %zu root %d: [%zu] = %g",
                 n, root, i, (double)whole2[i]))
        break;
  }
  /* Alltoall: block j of rank r's buffer goes to rank j, landing at its block r */
  if (check(MPI_SUCCESS ==
                MPI_Alltoall(whole, (int)n, MPI_FLOAT, whole2, (int)n, MPI_FLOAT, MPI_COMM_WORLD),
            "alltoall %zu: rc", n)) {
    for (size_t i = 0; i < all; ++i)
      if (!check(whole2[i] == (float)value((int)(i / n), (size_t)rank * n + i % n),
                 "alltoall %zu: [%zu] = %g", n, i, (double)whole2[i]))
        break;
  }
  free(whole);
  free(whole2);
  free(mine);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const size_t counts[] = {1, 257, 8192, 65536};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
    for (int root = 0; root<p; root += p> 1 ? p - 1 : 1) {
      reductions(rank, p, counts[c], root);
      blocks(rank, p, counts[c], root);
    }
  }
  return check_finish("predictions");
}
