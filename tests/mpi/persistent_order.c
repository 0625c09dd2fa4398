/*
 * persistent_order.c - persistent collectives started in different orders on different ranks.
 * MPI-4 matches persistent collectives in the order of their init calls, not of their starts
 * (MPICH's coll/p_order checks a Bcast and a Barrier started in opposite orders); coll_hccl used
 * to number each call at its start, so the ranks paired one call's messages with another's and
 * failed with "mismatched calls". Here a Bcast, an Allreduce, an Alltoall and a Barrier are
 * initialised in one order and each rank starts them in its own rotation of it, with a blocking
 * Allreduce between init and the starts, for several rounds of new contents; every result is
 * checked against what the test computes itself.
 */
#include <stdlib.h>

#include "mpi_check.h" /* mpi.h, which mpi-ext.h needs first */

#include <mpi-ext.h>

enum { N = 29, CALLS = 4, ROUNDS = 6 };

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bcast[N], red_in[N], red_out[N];
  int* a2a_in = malloc(sizeof(int) * N * (size_t)size);
  int* a2a_out = malloc(sizeof(int) * N * (size_t)size);
  MPI_Request req[CALLS];
  const int root = size - 1;
  MPIX_Bcast_init(bcast, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
  MPIX_Allreduce_init(red_in, red_out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
  MPIX_Alltoall_init(a2a_in, N, MPI_INT, a2a_out, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                     &req[2]);
  MPIX_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &req[3]);
  /* a blocking call between init and start: it numbers after the four inits on every rank */
  int one = 1, ranks = 0;
  MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  check(ranks == size, "blocking Allreduce between the inits and the starts: %d, expected %d",
        ranks, size);
  for (int k = 0; k < ROUNDS; ++k) {
    for (int i = 0; i < N; ++i) {
      bcast[i] = rank == root ? 1000 * k + i : -1;
      red_in[i] = rank * 7 + i + k;
      red_out[i] = -1;
      for (int p = 0; p < size; ++p) {
        a2a_in[p * N + i] = 100000 * rank + 1000 * p + i + k;
        a2a_out[p * N + i] = -1;
      }
    }
    for (int j = 0; j < CALLS; ++j) { /* rank r starts at call (r + k) mod CALLS */
      MPI_Start(&req[(rank + k + j) % CALLS]);
    }
    MPI_Waitall(CALLS, req, MPI_STATUSES_IGNORE);
    int bad_b = 0, bad_r = 0, bad_a = 0;
    for (int i = 0; i < N; ++i) {
      bad_b += bcast[i] != 1000 * k + i;
      bad_r += red_out[i] != 7 * size * (size - 1) / 2 + size * (i + k);
      for (int p = 0; p < size; ++p)
        bad_a += a2a_out[p * N + i] != 100000 * p + 1000 * rank + i + k;
    }
    check(0 == bad_b, "round %d: Bcast, %d of %d elements wrong", k, bad_b, N);
    check(0 == bad_r, "round %d: Allreduce, %d of %d elements wrong", k, bad_r, N);
    check(0 == bad_a, "round %d: Alltoall, %d of %d elements wrong", k, bad_a, N * size);
  }
  for (int j = 0; j < CALLS; ++j) MPI_Request_free(&req[j]);
  free(a2a_in);
  free(a2a_out);
  return check_finish("persistent_order");
}
