/*
 * threads.c - MPI_THREAD_MULTIPLE: several threads per rank, each on its own communicator,
 * calling collectives concurrently (which the standard allows on distinct communicators) while
 * creating and freeing communicators from theirs: dup, split, create, create_group, an
 * intercommunicator and its merge, each created while a nonblocking collective on the parent is
 * still in flight. Blocking and nonblocking calls mix; every result is checked against the
 * members' world ranks, and every receive buffer against writes outside its output.
 *
 * Options: --threads N (default 3), --rounds N (default 8).
 */
#include <pthread.h>
#include <stdlib.h>

#include "mpi_check.h"

static int world_rank, world_size;
static int rounds = 8;

static long value(int world, int thread, int round, int i) {
  return (long)world * 7 + i + thread * 1000 + round * 10;
}

/* World ranks of the communicator's members, in its rank order. */
static int* members(MPI_Comm comm, int* n) {
  MPI_Comm_size(comm, n);
  MPI_Group g, wg;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int* ranks = malloc((size_t)*n * sizeof(int));
  int* world = malloc((size_t)*n * sizeof(int));
  for (int i = 0; i < *n; ++i) ranks[i] = i;
  MPI_Group_translate_ranks(g, *n, ranks, wg, world);
  free(ranks);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  return world;
}

/* Allreduce (blocking), allgather (nonblocking), reduce_scatter_block (blocking) and
 * reduce_scatter (nonblocking) on `comm`, checked. */
static void exercise(MPI_Comm comm, int th, int round, const char* kind) {
  int n = 0, me = 0;
  int* world = members(comm, &n);
  MPI_Comm_rank(comm, &me);
  enum { K = 33 };
  char what[128];
  long* in = malloc((size_t)K * (size_t)n * sizeof(long));
  for (int i = 0; i < K * n; ++i) in[i] = value(world_rank, th, round, i);

  guarded_t g;
  long* out = guarded_alloc(&g, (size_t)K * (size_t)n * sizeof(long));
  guarded_snapshot(&g);
  MPI_Allreduce(in, out, K, MPI_LONG, MPI_SUM, comm);
  for (int i = 0; i < K; ++i) {
    long e = 0;
    for (int r = 0; r < n; ++r) e += value(world[r], th, round, i);
    if (!check(out[i] == e, "thread %d round %d %s allreduce element %d: %ld expected %ld", th,
               round, kind, i, out[i], e))
      break;
  }
  snprintf(what, sizeof what, "thread %d round %d %s allreduce", th, round, kind);
  guarded_untouched(&g, 0, K * sizeof(long), what);

  MPI_Request req;
  guarded_snapshot(&g);
  MPI_Iallgather(in, K, MPI_LONG, out, K, MPI_LONG, comm, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  for (int r = 0; r < n; ++r) {
    if (!check(out[r * K + 5] == value(world[r], th, round, 5),
               "thread %d round %d %s iallgather block %d", th, round, kind, r))
      break;
  }
  snprintf(what, sizeof what, "thread %d round %d %s iallgather", th, round, kind);
  guarded_untouched(&g, 0, (size_t)K * (size_t)n * sizeof(long), what);

  guarded_snapshot(&g);
  MPI_Reduce_scatter_block(in, out, K, MPI_LONG, MPI_MAX, comm);
  for (int i = 0; i < K; ++i) {
    long e = value(world[0], th, round, me * K + i);
    for (int r = 1; r < n; ++r) {
      long v = value(world[r], th, round, me * K + i);
      if (v > e) e = v;
    }
    if (!check(out[i] == e, "thread %d round %d %s reduce_scatter_block element %d", th, round,
               kind, i))
      break;
  }
  snprintf(what, sizeof what, "thread %d round %d %s reduce_scatter_block", th, round, kind);
  guarded_untouched(&g, 0, K * sizeof(long), what);

  /* in place, uneven counts: the input beyond this rank's result must survive */
  int* counts = malloc((size_t)n * sizeof(int));
  int total = 0, first = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = (r + round) % 3 + 1;
    if (r == me) first = total;
    total += counts[r];
  }
  for (int i = 0; i < total; ++i) out[i] = value(world_rank, th, round, i);
  guarded_snapshot(&g);
  MPI_Ireduce_scatter(MPI_IN_PLACE, out, counts, MPI_LONG, MPI_MIN, comm, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  for (int i = 0; i < counts[me]; ++i) {
    long e = value(world[0], th, round, first + i);
    for (int r = 1; r < n; ++r) {
      long v = value(world[r], th, round, first + i);
      if (v < e) e = v;
    }
    if (!check(out[i] == e, "thread %d round %d %s in-place ireduce_scatter element %d", th, round,
               kind, i))
      break;
  }
  snprintf(what, sizeof what, "thread %d round %d %s in-place ireduce_scatter", th, round, kind);
  guarded_untouched(&g, 0, (size_t)counts[me] * sizeof(long), what);
  free(counts);
  guarded_free(&g);
  free(in);
  free(world);
}

/* An intercommunicator between the even and odd world ranks of `halves` (split by parity, key
 * = world rank), a collective over it, and its merge. */
static void inter_and_merge(MPI_Comm parent, MPI_Comm halves, int th, int round) {
  MPI_Comm inter, merged;
  int remote_leader = world_rank % 2 == 0 ? 1 : 0; /* parent ranks are world ranks */
  MPI_Intercomm_create(halves, 0, parent, remote_leader, 100 + th, &inter);
  long v = value(world_rank, th, round, 0), w = -1, e = 0;
  for (int r = 0; r < world_size; ++r)
    if (r % 2 != world_rank % 2) e += value(r, th, round, 0);
  MPI_Allreduce(&v, &w, 1, MPI_LONG, MPI_SUM, inter);
  check(w == e, "thread %d round %d intercommunicator allreduce: %ld expected %ld", th, round, w,
        e);
  MPI_Intercomm_merge(inter, world_rank % 2, &merged);
  exercise(merged, th, round, "merged");
  MPI_Comm_free(&merged);
  MPI_Comm_free(&inter);
}

typedef struct {
  int thread;
  MPI_Comm parent;
} job_t;

static void* run(void* arg) {
  const job_t* job = arg;
  const int th = job->thread;
  MPI_Comm parent = job->parent;
  for (int round = 0; round < rounds; ++round) {
    /* A nonblocking collective on the parent stays in flight while a child is created. */
    enum { N = 257 };
    long* in = malloc(N * sizeof(long));
    guarded_t g;
    long* sum = guarded_alloc(&g, N * sizeof(long));
    for (int i = 0; i < N; ++i) in[i] = value(world_rank, th, round, i);
    guarded_snapshot(&g);
    MPI_Request req;
    MPI_Iallreduce(in, sum, N, MPI_LONG, MPI_SUM, parent, &req);

    const int kind = (round + th) % 4;
    MPI_Comm child = MPI_COMM_NULL;
    const char* name = "";
    if (0 == kind) {
      MPI_Comm_dup(parent, &child);
      name = "dup";
    } else if (1 == kind) {
      MPI_Comm_split(parent, world_rank % 2, world_rank, &child);
      name = "split";
    } else {
      /* the ranks that are not the last one (all of them on one rank) */
      MPI_Group pg, sub;
      MPI_Comm_group(parent, &pg);
      int last = world_size - 1;
      if (world_size > 1)
        MPI_Group_excl(pg, 1, &last, &sub);
      else
        MPI_Group_incl(pg, 1, &last, &sub);
      if (2 == kind) {
        MPI_Comm_create(parent, sub, &child);
        name = "create";
      } else {
        if (world_size == 1 || world_rank != last)
          MPI_Comm_create_group(parent, sub, 200 + th, &child);
        name = "create_group";
      }
      MPI_Group_free(&sub);
      MPI_Group_free(&pg);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; ++i) {
      long e = 0;
      for (int r = 0; r < world_size; ++r) e += value(r, th, round, i);
      if (!check(sum[i] == e, "thread %d round %d iallreduce during %s element %d", th, round, name,
                 i))
        break;
    }
    guarded_untouched(&g, 0, N * sizeof(long), "iallreduce during communicator creation");
    guarded_free(&g);
    free(in);

    if (MPI_COMM_NULL != child) {
      exercise(child, th, round, name);
      if (1 == kind && world_size >= 2) inter_and_merge(parent, child, th, round);
      MPI_Comm_free(&child);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (!check(MPI_THREAD_MULTIPLE == provided, "MPI_THREAD_MULTIPLE requested, %d provided",
             provided))
    return check_finish("threads");
  int nthreads = 3;
  for (int i = 1; i + 1 < argc; ++i) {
    if (0 == strcmp(argv[i], "--threads")) nthreads = atoi(argv[i + 1]);
    if (0 == strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
  }
  if (nthreads < 1 || nthreads > 16) nthreads = 3;

  /* Each thread's own communicator, created in the same order everywhere. */
  job_t jobs[16];
  pthread_t tids[16];
  for (int t = 0; t < nthreads; ++t) {
    jobs[t].thread = t;
    MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].parent);
  }
  for (int t = 0; t < nthreads; ++t) pthread_create(&tids[t], NULL, run, &jobs[t]);
  /* The main thread works on MPI_COMM_WORLD meanwhile. */
  for (int round = 0; round < rounds; ++round) exercise(MPI_COMM_WORLD, nthreads, round, "world");
  for (int t = 0; t < nthreads; ++t) pthread_join(tids[t], NULL);
  for (int t = 0; t < nthreads; ++t) MPI_Comm_free(&jobs[t].parent);
  return check_finish("threads");
}
