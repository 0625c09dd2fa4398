/*
 * zero_skip.c - collectives that Open MPI's MPI layer returns from before the coll component on
 * some ranks only, followed by collectives whose results are checked.
 *
 * Why: MPI_Bcast returns at once for a zero count, and an intercommunicator's MPI_PROC_NULL ranks
 * may pass one while the root does not (mpi4py's object bcast does: a length, then the payload,
 * of length 0 where nothing is received); MPI_Gather returns at once on a non-root sending
 * nothing. A component that draws a per-call sequence number or tag would then be one call apart
 * on those ranks, and every later call would match the wrong messages (found by mpi4py's
 * test_cco_obj_inter with coll_hccl: a payload read as a length, then a hang). The pattern is
 * mpi4py's: the root group's MPI_ROOT rank sends a length and then that many bytes, its
 * MPI_PROC_NULL ranks pass their own (zero) length, the other group receives both.
 *
 * Blocking calls only: with MPI_Ibcast the same pattern fails on stock Open MPI 4.1.4 too (its
 * MPI layer skips zero-count MPI_Ibcast as well, and libnbc's per-call tags then disagree).
 *
 * Options: --rounds N (default 20).
 */
#include <stdlib.h>

#include "mpi_check.h"

static int wrank, wsize;

static int bcast(void* buf, int count, MPI_Datatype t, int root, MPI_Comm c) {
  return MPI_Bcast(buf, count, t, root, c);
}

static unsigned char payload_byte(int round, int root_world, int i) {
  return (unsigned char)(round * 31 + root_world * 7 + i);
}

/* One mpi4py-style object bcast from every rank of the root group in turn. */
static void inter_round(MPI_Comm inter, bool root_group, int round, const int* remote_world) {
  int rank, size, rsize;
  MPI_Comm_rank(inter, &rank);
  MPI_Comm_size(inter, &size);
  MPI_Comm_remote_size(inter, &rsize);
  unsigned char buf[64];
  for (int root = 0; root < (root_group ? size : rsize); ++root) {
    int len = 0;
    if (root_group) {
      int mode = root == rank ? MPI_ROOT : MPI_PROC_NULL;
      if (MPI_ROOT == mode) {
        len = (round + root) % 5; /* 0 too: then every rank's payload call is skipped */
        for (int i = 0; i < len; ++i) buf[i] = payload_byte(round, wrank, i);
      }
      check(MPI_SUCCESS == bcast(&len, 1, MPI_INT, mode, inter), "round %d length rc", round);
      check(MPI_SUCCESS == bcast(buf, len, MPI_BYTE, mode, inter), "round %d payload rc", round);
    } else {
      check(MPI_SUCCESS == bcast(&len, 1, MPI_INT, root, inter), "round %d length rc", round);
      int expect = (round + root) % 5;
      if (!check(len == expect, "round %d root %d: length %d expected %d", round, root, len,
                 expect)) {
        len = expect < len ? expect : len; /* keep going within the buffer */
      }
      memset(buf, 0xEE, sizeof buf);
      check(MPI_SUCCESS == bcast(buf, len, MPI_BYTE, root, inter), "round %d payload rc", round);
      for (int i = 0; i < len; ++i) {
        unsigned char e = payload_byte(round, remote_world[root], i);
        if (!check(buf[i] == e, "round %d root %d byte %d: %d expected %d", round, root, i, buf[i],
                   e)) {
          break;
        }
      }
    }
  }
}

/* Intracommunicator calls returning early on some ranks, then checked ones. */
static void intra_round(MPI_Comm comm, int round) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int root = round % size;
  int none[1] = {0};
  /* the root reaches the component, the others return at once */
  check(MPI_SUCCESS == MPI_Gather(none, 0, MPI_INT, none, 0, MPI_INT, root, comm), "gather rc");
  check(MPI_SUCCESS == MPI_Scatter(none, 0, MPI_INT, none, 0, MPI_INT, root, comm), "scatter rc");
  long v = rank == root ? 1000 + round : -1;
  check(MPI_SUCCESS == MPI_Bcast(&v, 1, MPI_LONG, root, comm), "bcast rc");
  check(v == 1000 + round, "round %d bcast after skipped calls: %ld", round, v);
  long mine = rank + round, sum = 0, expect = 0;
  for (int r = 0; r < size; ++r) expect += r + round;
  check(MPI_SUCCESS == MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm), "allreduce rc");
  check(sum == expect, "round %d allreduce after skipped calls: %ld expected %ld", round, sum,
        expect);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  int rounds = 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (0 == strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
  }
  for (int k = 0; k < rounds; ++k) intra_round(MPI_COMM_WORLD, k);
  if (wsize >= 2) {
    /* A: world rank 0 alone (as in mpi4py's test at np 3), B: the others */
    int low = 0 == wrank;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, low, wrank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? 1 : 0, 17, &inter);
    int rsize;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Group rg, wg;
    MPI_Comm_remote_group(inter, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int* idx = malloc((size_t)rsize * sizeof *idx);
    int* remote_world = malloc((size_t)rsize * sizeof *remote_world);
    for (int i = 0; i < rsize; ++i) idx[i] = i;
    MPI_Group_translate_ranks(rg, rsize, idx, wg, remote_world);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    for (int k = 0; k < rounds; ++k) {
      for (int g = 0; g < 2; ++g) inter_round(inter, low == g, k, remote_world);
      intra_round(half, k);
    }
    free(idx);
    free(remote_world);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  return check_finish("zero_skip");
}
