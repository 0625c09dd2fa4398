/*
 * malformed_mpi.c - one MPI job per row of malformed_inputs.tsv (run_malformed_mpi.py).
 *
 *   malformed_mpi [KEY VALUE]
 *
 * Runs MPI_Allreduce on MPI_COMM_WORLD and, when KEY VALUE is given, on a duplicate carrying that
 * communicator info key, and checks the sums: a malformed setting must make coll_hccl decline
 * (and say why), never hang or give a wrong answer. Prints "malformed_mpi: PASS (N checks)".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check_sum(MPI_Comm comm, int* checks) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  long in[4], out[4];
  for (int i = 0; i < 4; ++i) in[i] = (long)(rank + 1) * (i + 1);
  MPI_Allreduce(in, out, 4, MPI_LONG, MPI_SUM, comm);
  for (int i = 0; i < 4; ++i) {
    ++*checks;
    if (out[i] != (long)size * (size + 1) / 2 * (i + 1)) {
      fprintf(stderr, "malformed_mpi: rank %d: element %d is %ld\n", rank, i, out[i]);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, checks = 0, bad = check_sum(MPI_COMM_WORLD, &checks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc == 3) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, argv[1], argv[2]);
    MPI_Comm dup;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dup);
    MPI_Info_free(&info);
    bad |= check_sum(dup, &checks);
    MPI_Comm_free(&dup);
  }
  int anybad = 0;
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (0 == rank) printf("malformed_mpi: %s (%d checks)\n", anybad ? "FAIL" : "PASS", checks);
  MPI_Finalize();
  return anybad;
}
