/*
 * large.c - one large case of each collective: 64 MiB buffers (8 Mi doubles) for allreduce, and
 * 64 MiB in total for allgather and reduce_scatter_block, so that an engine must chunk through
 * its scratch buffer (HCCL_BUFFSIZE) many times, and a reduce of an odd count just under 64 MiB
 * to the last rank, out of place and in place (at np=2 on one server: fullmesh's ReduceScatter +
 * Gather, each rank reading its peer's half in place); blocking allgather and bcast of bytes
 * at sizes streamed through the slots and read as CMA blocks. Option --nonblocking: the MPI_I*
 * forms.
 */
#include <stdlib.h>

#include "mpi_check.h"

static int rank, nranks;

static double value(int r, size_t i) {
  return (double)((r * 13 + i * 3) % 1021) - 510.0;
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const size_t n = (size_t)64 << 20 >> 3; /* 64 MiB of doubles */
  guarded_t g;
  double* in = malloc(n * sizeof(double));
  double* out = guarded_alloc(&g, n * sizeof(double));
  for (size_t i = 0; i < n; ++i) in[i] = value(rank, i);

  const bool nb = has_flag(argc, argv, "--nonblocking");
  MPI_Request req = MPI_REQUEST_NULL;
  {
    memset(out, 0, n * sizeof(double));
    guarded_snapshot(&g);
    if (nb) {
      MPI_Iallreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      double e = 0;
      for (int r = 0; r < nranks; ++r) e += value(r, i);
      if (out[i] != e && 0 == bad++) {
        check(false, "%sallreduce element %zu: %g expected %g", nb ? "i" : "", i, out[i], e);
      }
    }
    check(0 == bad, "%sallreduce of 64 MiB: %zu wrong elements", nb ? "i" : "", bad);
    guarded_untouched(&g, 0, n * sizeof(double), "allreduce of 64 MiB");
  }

  /* allgather: 64 MiB gathered in total */
  const size_t per_rank = n / (size_t)nranks;
  guarded_snapshot(&g);
  if (nb) {
    MPI_Iallgather(in, (int)per_rank, MPI_DOUBLE, out, (int)per_rank, MPI_DOUBLE, MPI_COMM_WORLD,
                   &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    MPI_Allgather(in, (int)per_rank, MPI_DOUBLE, out, (int)per_rank, MPI_DOUBLE, MPI_COMM_WORLD);
  }
  size_t bad = 0;
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < per_rank; ++i) bad += out[(size_t)r * per_rank + i] != value(r, i);
  }
  check(0 == bad, "allgather of 64 MiB: %zu wrong elements", bad);
  guarded_untouched(&g, 0, per_rank * (size_t)nranks * sizeof(double), "allgather of 64 MiB");

  /* Blocking allgather and bcast of bytes at sizes that cross how the shared-memory slots move
   * a post (slot_executor.hpp: in a few slots, streamed through them, or a CMA block in
   * AllGather's single_copy range: 700 KiB under tests/mpi/single_copy's tuning file), odd so the
   * last slot is partial, back to back. */
  {
    const size_t bytes[] = {40 * 1024 + 13, 700 * 1024 + 5, (size_t)5 << 20 | 3};
    unsigned char* bin = (unsigned char*)in;
    unsigned char* bout = (unsigned char*)out;
    for (int k = 0; k < 3; ++k) {
      const size_t c = bytes[k];
      for (size_t i = 0; i < c; ++i) bin[i] = (unsigned char)(rank * 31 + i * 7 + k);
      guarded_snapshot(&g);
      MPI_Allgather(bin, (int)c, MPI_BYTE, bout, (int)c, MPI_BYTE, MPI_COMM_WORLD);
      bad = 0;
      for (int r = 0; r < nranks; ++r)
        for (size_t i = 0; i < c; ++i)
          bad += bout[(size_t)r * c + i] != (unsigned char)(r * 31 + i * 7 + k);
      check(0 == bad, "allgather of %zu bytes a rank: %zu wrong bytes", c, bad);
      guarded_untouched(&g, 0, c * (size_t)nranks, "allgather of bytes");
      const int broot = k % nranks;
      if (rank == broot) memcpy(bout, bin, c);
      guarded_snapshot(&g);
      MPI_Bcast(bout, (int)c, MPI_BYTE, broot, MPI_COMM_WORLD);
      bad = 0;
      for (size_t i = 0; i < c; ++i) bad += bout[i] != (unsigned char)(broot * 31 + i * 7 + k);
      check(0 == bad, "bcast of %zu bytes from %d: %zu wrong bytes", c, broot, bad);
      guarded_untouched(&g, 0, c, "bcast of bytes");
    }
    for (size_t i = 0; i < n; ++i) in[i] = value(rank, i); /* the input the cases below read */
  }

  /* reduce: n - 3 elements (odd, so the halves differ), root the last rank; out of place, then
   * in place at the root. Non-roots' receive buffers are no output: untouched. */
  const int root = nranks - 1;
  const size_t rn = n - 3;
  for (int in_place = 0; in_place < 2; ++in_place) {
    if (in_place && rank == root)
      for (size_t i = 0; i < rn; ++i) out[i] = value(rank, i);
    guarded_snapshot(&g);
    const void* sbuf = in_place && rank == root ? MPI_IN_PLACE : (const void*)in;
    if (nb) {
      MPI_Ireduce(sbuf, out, (int)rn, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      MPI_Reduce(sbuf, out, (int)rn, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    }
    if (rank == root) {
      bad = 0;
      for (size_t i = 0; i < rn; ++i) {
        double e = 0;
        for (int r = 0; r < nranks; ++r) e += value(r, i);
        if (out[i] != e && 0 == bad++)
          check(false, "%sreduce%s element %zu: %g expected %g", nb ? "i" : "",
                in_place ? " in place" : "", i, out[i], e);
      }
      check(0 == bad, "%sreduce%s of %zu doubles: %zu wrong elements", nb ? "i" : "",
            in_place ? " in place" : "", rn, bad);
      guarded_untouched(&g, 0, rn * sizeof(double), "reduce to the root");
    } else {
      guarded_untouched(&g, 0, 0, "reduce on a non-root (no output)");
    }
  }

  guarded_snapshot(&g);
  /* reduce_scatter_block: 64 MiB of input per rank */
  if (nb) {
    MPI_Ireduce_scatter_block(in, out, (int)per_rank, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    MPI_Reduce_scatter_block(in, out, (int)per_rank, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  bad = 0;
  for (size_t i = 0; i < per_rank; ++i) {
    double e = 0;
    for (int r = 0; r < nranks; ++r) e += value(r, (size_t)rank * per_rank + i);
    bad += out[i] != e;
  }
  check(0 == bad, "reduce_scatter_block of 64 MiB: %zu wrong elements", bad);
  guarded_untouched(&g, 0, per_rank * sizeof(double), "reduce_scatter_block of 64 MiB");
  free(in);
  guarded_free(&g);
  return check_finish("large");
}
