/*
 * comm_churn.c - creates and frees many communicators of mixed kinds (dup, split, split_type,
 * create, create_group, idup, Cartesian, dist-graph, intercomm create + merge), runs collectives
 * on each and checks their results.
 *
 * Why: every communicator Open MPI creates goes through coll selection, module enable and, when
 * freed, disable and destruction; with `--mca coll hccl` alone coll_hccl serves all of them
 * (size-1 ones, intercommunicators and their merges included), and Open MPI's own context-id
 * agreement runs through its allreduce. Up to POOL communicators stay alive at once and are freed
 * oldest first, so context ids are reused out of order. Each result is checked against sums the
 * test computes from the members' MPI_COMM_WORLD ranks (MPI_Group_translate_ranks).
 *
 * Options: --iterations N (default 1000), --neighbor (also a neighbourhood allgather on the
 * Cartesian and dist-graph communicators).
 */
#include <stdlib.h>

#include "mpi_check.h"

enum { POOL = 6, KINDS = 9 };
static const char* const kind_names[KINDS] = {"dup",    "split",        "split_type",
                                              "create", "create_group", "idup",
                                              "cart",   "dist_graph",   "intercomm merge"};

static int wrank, wsize;

static long contribution(int world_rank, int iteration) {
  return (long)world_rank * 1000 + iteration % 977;
}

/* The MPI_COMM_WORLD ranks of a group's members, in group order. */
static int* world_ranks(MPI_Group g, int* n) {
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_size(g, n);
  int* in = malloc((size_t)*n * sizeof *in);
  int* out = malloc((size_t)*n * sizeof *out);
  for (int i = 0; i < *n; ++i) in[i] = i;
  MPI_Group_translate_ranks(g, *n, in, world, out);
  MPI_Group_free(&world);
  free(in);
  return out;
}

/* Allreduce, then one of allgather, bcast, alltoall, by iteration; on an intercommunicator the
 * allreduce sums the remote group. */
static void exercise(MPI_Comm c, int it, const char* kind) {
  int inter = 0;
  MPI_Comm_test_inter(c, &inter);
  MPI_Group g;
  if (inter) {
    MPI_Comm_remote_group(c, &g);
  } else {
    MPI_Comm_group(c, &g);
  }
  int n = 0;
  int* members = world_ranks(g, &n);
  MPI_Group_free(&g);
  long mine = contribution(wrank, it), sum = 0, expect = 0;
  for (int i = 0; i < n; ++i) expect += contribution(members[i], it);
  int rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c);
  check(MPI_SUCCESS == rc && sum == expect, "iteration %d %s%s allreduce: rc %d, %ld expected %ld",
        it, kind, inter ? " (inter)" : "", rc, sum, expect);
  if (inter) {
    free(members);
    return;
  }
  int me = 0;
  MPI_Comm_rank(c, &me);
  long* all = malloc((size_t)n * sizeof *all);
  long* mine_n = malloc((size_t)n * sizeof *mine_n);
  switch (it % 3) {
    case 0:
      rc = MPI_Allgather(&mine, 1, MPI_LONG, all, 1, MPI_LONG, c);
      for (int i = 0; i < n; ++i) {
        if (!check(MPI_SUCCESS == rc && all[i] == contribution(members[i], it),
                   "iteration %d %s allgather block %d: rc %d, %ld", it, kind, i, rc, all[i])) {
          break;
        }
      }
      break;
    case 1: {
      long v = me == n - 1 ? mine : -1;
      rc = MPI_Bcast(&v, 1, MPI_LONG, n - 1, c);
      check(MPI_SUCCESS == rc && v == contribution(members[n - 1], it),
            "iteration %d %s bcast: rc %d, %ld", it, kind, rc, v);
      break;
    }
    default:
      for (int i = 0; i < n; ++i) mine_n[i] = contribution(wrank, it) * 7 + i;
      rc = MPI_Alltoall(mine_n, 1, MPI_LONG, all, 1, MPI_LONG, c);
      for (int i = 0; i < n; ++i) {
        if (!check(MPI_SUCCESS == rc && all[i] == contribution(members[i], it) * 7 + me,
                   "iteration %d %s alltoall block %d: rc %d, %ld", it, kind, i, rc, all[i])) {
          break;
        }
      }
      break;
  }
  free(all);
  free(mine_n);
  free(members);
}

/* One neighbour allgather: every rank learns its in-neighbours' world ranks. */
static void exercise_neighbors(MPI_Comm c, int it, const char* kind, const int* sources,
                               int nsources) {
  long mine = contribution(wrank, it);
  long* got = malloc((size_t)(nsources > 0 ? nsources : 1) * sizeof *got);
  int rc = MPI_Neighbor_allgather(&mine, 1, MPI_LONG, got, 1, MPI_LONG, c);
  for (int i = 0; i < nsources; ++i) {
    if (!check(MPI_SUCCESS == rc && got[i] == contribution(sources[i], it),
               "iteration %d %s neighbor_allgather from %d: rc %d, %ld", it, kind, i, rc, got[i])) {
      break;
    }
  }
  free(got);
}

/* Creates communicator number `it` (MPI_COMM_NULL on ranks outside it). */
static MPI_Comm create(int it, int kind, bool neighbor) {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Group world, sub;
  switch (kind) {
    case 0:
      MPI_Comm_dup(MPI_COMM_WORLD, &c);
      break;
    case 1: /* reversed order, colours by iteration: sizes vary, size 1 included */
      MPI_Comm_split(MPI_COMM_WORLD, wrank % (1 + it % 3), -wrank, &c);
      break;
    case 2:
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wrank, MPI_INFO_NULL, &c);
      break;
    case 3: { /* the even ranks; the others get MPI_COMM_NULL */
      int range[1][3] = {{0, wsize - 1, 2}};
      MPI_Comm_group(MPI_COMM_WORLD, &world);
      MPI_Group_range_incl(world, 1, range, &sub);
      MPI_Comm_create(MPI_COMM_WORLD, sub, &c);
      MPI_Group_free(&sub);
      MPI_Group_free(&world);
      break;
    }
    case 4: { /* the last ranks in reverse, called only by its members */
      int k = wsize > 1 ? wsize - 1 : 1;
      if (wrank < wsize - k) break;
      int range[1][3] = {{wsize - 1, wsize - k, -1}};
      MPI_Comm_group(MPI_COMM_WORLD, &world);
      MPI_Group_range_incl(world, 1, range, &sub);
      MPI_Comm_create_group(MPI_COMM_WORLD, sub, it, &c);
      MPI_Group_free(&sub);
      MPI_Group_free(&world);
      break;
    }
    case 5: {
      MPI_Request req;
      MPI_Comm_idup(MPI_COMM_WORLD, &c, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      break;
    }
    case 6: {
      int dims[2] = {0, 0}, periods[2] = {1, 1};
      MPI_Dims_create(wsize, 2, dims);
      MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, it % 2, &c);
      if (neighbor && MPI_COMM_NULL != c) {
        /* in-neighbours in MPI's order: per dimension, the source below then the one above */
        int src[4], n = 0;
        MPI_Group cg;
        MPI_Comm_group(c, &cg);
        int nmembers = 0;
        int* members = world_ranks(cg, &nmembers);
        MPI_Group_free(&cg);
        for (int d = 0; d < 2; ++d) {
          int lo, hi;
          MPI_Cart_shift(c, d, 1, &lo, &hi);
          src[n++] = members[lo]; /* periodic: every rank has both neighbours */
          src[n++] = members[hi];
        }
        free(members);
        exercise_neighbors(c, it, "cart", src, n);
      }
      break;
    }
    case 7: { /* a directed ring: receive from the left neighbour, send to the right one */
      int left = (wrank + wsize - 1) % wsize, right = (wrank + 1) % wsize, weight = 1;
      MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &weight, 1, &right, &weight,
                                     MPI_INFO_NULL, it % 2, &c);
      if (neighbor) exercise_neighbors(c, it, "dist_graph", &left, 1);
      break;
    }
    case 8: { /* two halves, an intercommunicator between them, merged with the high half last */
      if (wsize < 2) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        break;
      }
      int low = wrank < wsize / 2;
      MPI_Comm half, inter;
      MPI_Comm_split(MPI_COMM_WORLD, low, wrank, &half);
      MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? wsize / 2 : 0, it, &inter);
      exercise(inter, it, "intercomm");
      MPI_Intercomm_merge(inter, !low, &c);
      MPI_Comm_free(&inter);
      MPI_Comm_free(&half);
      break;
    }
  }
  return c;
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  int iterations = 1000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (0 == strcmp(argv[i], "--iterations")) iterations = atoi(argv[i + 1]);
  }
  bool neighbor = has_flag(argc, argv, "--neighbor");
  MPI_Comm pool[POOL];
  for (int i = 0; i < POOL; ++i) pool[i] = MPI_COMM_NULL;
  int created[KINDS] = {0};
  for (int it = 0; it < iterations; ++it) {
    int kind = it % KINDS;
    MPI_Comm* slot = &pool[it % POOL];
    if (MPI_COMM_NULL != *slot) MPI_Comm_free(slot);
    *slot = create(it, kind, neighbor);
    if (MPI_COMM_NULL != *slot) {
      exercise(*slot, it, kind_names[kind]);
      ++created[kind];
    }
    /* a live older communicator still works among the new ones */
    MPI_Comm older = pool[(it + 1) % POOL];
    if (MPI_COMM_NULL != older && 0 == it % 7) exercise(older, it, "older");
  }
  for (int i = 0; i < POOL; ++i) {
    if (MPI_COMM_NULL != pool[i]) MPI_Comm_free(&pool[i]);
  }
  if (0 == wrank) {
    printf("comm_churn: created");
    for (int k = 0; k < KINDS; ++k) printf(" %s %d,", kind_names[k], created[k]);
    printf(" on rank 0\n");
  }
  return check_finish("comm_churn");
}
