/*
 * teardown.c - the ways a program leaves communicators and requests behind at MPI_Finalize, each
 * of which runs coll_hccl's module disable and destruction (or the engine's shut-down) in a
 * state other than "everything freed in order".
 *
 * Why: Open MPI destroys MPI_COMM_WORLD and MPI_COMM_SELF at MPI_Finalize whatever still
 * references them, releases communicators the program never freed, and closes the component
 * afterwards; a module or engine that assumed an orderly life would crash, hang or complain
 * there, after the program's own checks passed. run_mpi.py fails the job on a non-zero exit
 * and on Open MPI's coll framework messages, so every path below must end cleanly. Paths:
 *  - a persistent request on MPI_COMM_WORLD started and completed but never freed;
 *  - with --free-while-pending (stock Open MPI 4.1.4 crashes in libnbc on both: its requests do not
 *    retain their communicator; MPI says the free waits for pending operations):
 *    - a persistent request on a duplicate that the program freed (the request keeps it alive)
 *      and another that was never started;
 *    - a duplicate freed while a nonblocking collective on it is still in flight;
 *  - communicators never freed (dup, split, a size-1 split);
 *  - a duplicate whose engine set-up is refused (malformed hccl_algo info key): the call on it
 *    goes to the fallback or the floor, then it is freed and later ones work;
 *  - a blocking call cached by the engine on a communicator freed right after.
 */
#include <stdlib.h>

#include "mpi_check.h" /* mpi.h, which mpi-ext.h needs first */

#include <mpi-ext.h>

enum { N = 1031 };

static int rank, nranks;

static void fill(int* v, int salt) {
  for (int i = 0; i < N; ++i) v[i] = rank * 3 + i % 11 + salt;
}

static void expect_sum(const int* got, int salt, const char* what) {
  for (int i = 0; i < N; ++i) {
    int e = 0;
    for (int r = 0; r < nranks; ++r) e += r * 3 + i % 11 + salt;
    if (!check(got[i] == e, "%s element %d: %d expected %d", what, i, got[i], e)) return;
  }
  check(true, "%s", what);
}

static int sendbuf[8][N], recvbuf[8][N]; /* static: requests left behind may still point here */

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const bool pending = has_flag(argc, argv, "--free-while-pending");

  /* 1. persistent on MPI_COMM_WORLD, started twice, never freed */
  MPI_Request world_p;
  MPIX_Allreduce_init(sendbuf[0], recvbuf[0], N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                      &world_p);
  for (int k = 0; k < 2; ++k) {
    fill(sendbuf[0], k);
    MPI_Start(&world_p);
    MPI_Wait(&world_p, MPI_STATUS_IGNORE);
    expect_sum(recvbuf[0], k, "persistent allreduce on MPI_COMM_WORLD");
  }

  /* 2. persistent requests on a duplicate freed by the program: one used, one never started */
  MPI_Comm dup;
  MPI_Request used = MPI_REQUEST_NULL, unstarted = MPI_REQUEST_NULL;
  if (pending) {
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPIX_Allreduce_init(sendbuf[1], recvbuf[1], N, MPI_INT, MPI_SUM, dup, MPI_INFO_NULL, &used);
    MPIX_Bcast_init(recvbuf[2], N, MPI_INT, 0, dup, MPI_INFO_NULL, &unstarted);
    MPI_Comm_free(&dup);
    fill(sendbuf[1], 5);
    MPI_Start(&used);
    MPI_Wait(&used, MPI_STATUS_IGNORE);
    expect_sum(recvbuf[1], 5, "persistent allreduce on a freed duplicate");
  }

  /* 3. freed with a nonblocking call in flight (MPI frees it once the call completed) */
  if (pending) {
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Request inflight;
    fill(sendbuf[3], 7);
    MPI_Iallreduce(sendbuf[3], recvbuf[3], N, MPI_INT, MPI_SUM, dup, &inflight);
    MPI_Comm_free(&dup);
    MPI_Wait(&inflight, MPI_STATUS_IGNORE);
    expect_sum(recvbuf[3], 7, "iallreduce on a duplicate freed while in flight");
  }

  /* 4. never freed */
  MPI_Comm kept_dup, kept_split, kept_single;
  MPI_Comm_dup(MPI_COMM_WORLD, &kept_dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &kept_split);
  MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &kept_single);
  fill(sendbuf[4], 9);
  MPI_Allreduce(sendbuf[4], recvbuf[4], N, MPI_INT, MPI_SUM, kept_dup);
  expect_sum(recvbuf[4], 9, "allreduce on a duplicate never freed");
  int one = 1, got = 0, members = 0;
  MPI_Allreduce(&one, &got, 1, MPI_INT, MPI_SUM, kept_split);
  MPI_Comm_size(kept_split, &members);
  check(got == members, "allreduce on a split never freed: %d expected %d", got, members);
  MPI_Allreduce(&one, &got, 1, MPI_INT, MPI_SUM, kept_single);
  check(1 == got, "allreduce on a size-1 split never freed: %d", got);

  /* 5. engine set-up refused on one communicator; it still computes, and later ones work */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "hccl_algo", "level0:NA;level1:not_an_algorithm");
  MPI_Comm refused;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &refused);
  MPI_Info_free(&info);
  fill(sendbuf[5], 11);
  MPI_Allreduce(sendbuf[5], recvbuf[5], N, MPI_INT, MPI_SUM, refused);
  expect_sum(recvbuf[5], 11, "allreduce on a communicator whose engine set-up was refused");
  MPI_Comm_free(&refused);

  /* 6. a call the engine cached, on a communicator freed at once; then the same call again */
  for (int k = 0; k < 3; ++k) {
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    fill(sendbuf[6], 13 + k);
    MPI_Allreduce(sendbuf[6], recvbuf[6], N, MPI_INT, MPI_SUM, dup);
    MPI_Comm_free(&dup);
    expect_sum(recvbuf[6], 13 + k, "allreduce on a duplicate freed right after");
  }
  /* world_p, used, unstarted and the kept communicators are deliberately left behind */
  return check_finish("teardown");
}
