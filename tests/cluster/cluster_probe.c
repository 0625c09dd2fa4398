/* cluster_probe: shows where the ranks of an emulated-cluster job run and checks that
 * communication across the emulated servers gives the right answers.
 *
 *   cluster_probe                      one "probe" line per rank (printed by rank 0 in rank
 *                                      order), then the checks; exit 1 if any check fails
 *   cluster_probe --time BYTES ITERS   times MPI_Allreduce (float sum) of BYTES, checks the
 *                                      result, rank 0 prints min/median/max over ITERS runs
 *
 * Expected values are computed from the rank numbers and the gathered host names, never from the
 * results of the operations under test. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBigCount = 1 << 18 }; /* 2 MiB of int64: goes through the rendezvous/pipelined path */

typedef struct {
  char host[MPI_MAX_PROCESSOR_NAME];
  int shm_leader; /* world rank of rank 0 of this rank's MPI_COMM_TYPE_SHARED group */
  int shm_rank;
  int shm_size;
} placement;

static int fail(int rank, const char* what, long long got, long long want) {
  fprintf(stderr, "cluster_probe: rank %d: %s: got %lld, expected %lld\n", rank, what, got, want);
  return 0;
}

/* Sum of (r + 1) * (i % 1000 + 1) over all ranks r, element i. */
static int check_world_allreduce(int rank, int size) {
  int64_t* in = malloc(sizeof(int64_t) * kBigCount);
  int64_t* out = malloc(sizeof(int64_t) * kBigCount);
  if (in == NULL || out == NULL) {
    free(in);
    free(out);
    return fail(rank, "out of memory for the allreduce buffers", 0, 0);
  }
  for (int i = 0; i < kBigCount; ++i) in[i] = (int64_t)(rank + 1) * (i % 1000 + 1);
  MPI_Allreduce(in, out, kBigCount, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  const int64_t ranks_sum = (int64_t)size * (size + 1) / 2;
  int ok = 1;
  for (int i = 0; i < kBigCount && ok; ++i) {
    const int64_t want = ranks_sum * (i % 1000 + 1);
    if (out[i] != want) ok = fail(rank, "world allreduce element", (long long)out[i], want);
  }
  int64_t one = rank;
  int64_t sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (sum != ranks_sum - size)
    ok = fail(rank, "world allreduce of 1 element", sum, ranks_sum - size);
  free(in);
  free(out);
  return ok;
}

/* The shared-memory group must be exactly the ranks that report the same host name. */
static int check_shm_group(int rank, int size, const placement* all, MPI_Comm shm) {
  int members = 0;
  long long rank_sum = 0;
  for (int r = 0; r < size; ++r) {
    if (strcmp(all[r].host, all[rank].host) == 0) {
      ++members;
      rank_sum += r;
    }
  }
  int ok = 1;
  if (all[rank].shm_size != members)
    ok = fail(rank, "shared group size", all[rank].shm_size, members);
  long long mine = rank;
  long long got = 0;
  MPI_Allreduce(&mine, &got, 1, MPI_LONG_LONG, MPI_SUM, shm);
  if (got != rank_sum) ok = fail(rank, "sum of world ranks in the shared group", got, rank_sum);
  return ok;
}

/* Every rank exchanges with every other rank, so each pair opens its own connection. */
static int check_all_pairs(int rank, int size) {
  int ok = 1;
  for (int step = 1; step < size; ++step) {
    const int to = (rank + step) % size;
    const int from = (rank - step + size) % size;
    int sent = rank;
    int got = -1;
    MPI_Sendrecv(&sent, 1, MPI_INT, to, 7, &got, 1, MPI_INT, from, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (got != from) ok = fail(rank, "value received from a peer", got, from);
  }
  return ok;
}

static int probe(int rank, int size) {
  MPI_Comm shm;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
  placement me;
  memset(&me, 0, sizeof me);
  int len = 0;
  MPI_Get_processor_name(me.host, &len);
  MPI_Comm_rank(shm, &me.shm_rank);
  MPI_Comm_size(shm, &me.shm_size);
  me.shm_leader = rank;
  MPI_Bcast(&me.shm_leader, 1, MPI_INT, 0, shm);

  placement* all = calloc((size_t)size, sizeof(placement));
  if (all == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      printf("probe rank=%d size=%d host=%s shm_leader=%d shm_rank=%d shm_size=%d\n", r, size,
             all[r].host, all[r].shm_leader, all[r].shm_rank, all[r].shm_size);
    }
    fflush(stdout);
  }

  int ok = check_shm_group(rank, size, all, shm);
  ok = check_world_allreduce(rank, size) && ok;
  ok = check_all_pairs(rank, size) && ok;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) printf("probe checks %s\n", all_ok ? "ok" : "FAILED");
  free(all);
  MPI_Comm_free(&shm);
  return all_ok ? 0 : 1;
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a;
  const double y = *(const double*)b;
  return (x > y) - (x < y);
}

static int time_allreduce(int rank, int size, long bytes, int iters) {
  const int count = (int)(bytes / (long)sizeof(float));
  float* in = malloc(sizeof(float) * (size_t)count);
  float* out = malloc(sizeof(float) * (size_t)count);
  double* times = malloc(sizeof(double) * (size_t)iters);
  if (in == NULL || out == NULL || times == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  for (int i = 0; i < count; ++i) in[i] = (float)(rank + 1);
  MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm-up: connections */
  for (int it = 0; it < iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double mine = MPI_Wtime() - t0;
    MPI_Allreduce(&mine, &times[it], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }
  /* Small integers are exact in float, so the sum must match exactly. */
  const float want = (float)size * (float)(size + 1) / 2.0f;
  int ok = 1;
  for (int i = 0; i < count && ok; ++i) {
    if (out[i] != want)
      ok = fail(rank, "timed allreduce element", (long long)out[i], (long long)want);
  }
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) {
    qsort(times, (size_t)iters, sizeof(double), compare_doubles);
    printf("allreduce bytes=%ld ranks=%d iters=%d min_s=%.4f median_s=%.4f max_s=%.4f check=%s\n",
           bytes, size, iters, times[0], times[iters / 2], times[iters - 1],
           all_ok ? "ok" : "FAILED");
  }
  free(in);
  free(out);
  free(times);
  return all_ok ? 0 : 1;
}

static long parse_positive(const char* text, const char* what, long max) {
  char* end = NULL;
  const long value = strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0 || value > max) {
    fprintf(stderr, "cluster_probe: bad %s '%s': give an integer from 1 to %ld\n", what, text, max);
    return -1;
  }
  return value;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  if (argc == 1) {
    status = probe(rank, size);
  } else if (argc == 4 && strcmp(argv[1], "--time") == 0) {
    const long bytes = parse_positive(argv[2], "byte count", 1L << 30);
    const long iters = parse_positive(argv[3], "iteration count", 1000);
    status = (bytes < 0 || iters < 0) ? 2 : time_allreduce(rank, size, bytes, (int)iters);
  } else {
    if (rank == 0) fprintf(stderr, "usage: cluster_probe [--time BYTES ITERS]\n");
    status = 2;
  }
  MPI_Finalize();
  return status;
}
