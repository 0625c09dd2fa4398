/*
 * trace.c - a few identical calls for the engine timeline test (tests/mpi/trace_test.py): ITERS
 * MPI_Allreduce (sum of int) and ITERS MPI_Allgather (int) of COUNT elements per rank, each
 * result checked against what the ranks' inputs give. The test reads the timeline files back.
 *
 * Options: --count N (default 16384), --iters K (default 3).
 */
#include <stdlib.h>

#include "mpi_check.h"

static long option(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (0 == strcmp(argv[i], name)) return strtol(argv[i + 1], NULL, 10);
  return fallback;
}

static int value(int r, int i, int iter) {
  return (r * 31 + i * 7 + iter) % 1000;
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int count = (int)option(argc, argv, "--count", 16384);
  const int iters = (int)option(argc, argv, "--iters", 3);
  int* send = malloc(sizeof(int) * (size_t)count);
  int* recv = malloc(sizeof(int) * (size_t)count * (size_t)nranks);
  for (int it = 0; it < iters; ++it) {
    for (int i = 0; i < count; ++i) send[i] = value(rank, i, it);
    MPI_Allreduce(send, recv, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < count; ++i) {
      int want = 0;
      for (int r = 0; r < nranks; ++r) want += value(r, i, it);
      if (recv[i] != want) ++bad;
    }
    check(0 == bad, "allreduce iteration %d: %d of %d elements wrong", it, bad, count);
  }
  for (int it = 0; it < iters; ++it) {
    for (int i = 0; i < count; ++i) send[i] = value(rank, i, it);
    MPI_Allgather(send, count, MPI_INT, recv, count, MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (int r = 0; r < nranks; ++r)
      for (int i = 0; i < count; ++i)
        if (recv[(size_t)r * (size_t)count + (size_t)i] != value(r, i, it)) ++bad;
    check(0 == bad, "allgather iteration %d: %d elements wrong", it, bad);
  }
  free(send);
  free(recv);
  return check_finish("trace");
}
