/* time_probe: the time of each collective call per forced level-1 algorithm, for validating the
 * simulator (hccl_info predict) on the emulated cluster (validate_sim.py runs it).
 *
 *   time_probe [--sizes 1M,4M,16M] [--algos ring,H-D_R,...] [--reps R] [--calls K]
 *              [--warmup W] COLL...
 *
 * COLL is allreduce, allgather or reduce_scatter (MPI_Reduce_scatter_block), float sum. A size is
 * the call's count times 4 bytes, as `hccl_info predict` counts it: the whole vector of
 * allreduce, the per-rank block of allgather (its input) and of reduce_scatter (its output). An
 * algorithm ALGO runs on a duplicate of MPI_COMM_WORLD with the info key
 * hccl_algo=level0:NA;level1:ALGO ("auto": no key, the automatic choice).
 *
 * Per collective and size, every algorithm's communicator is created; then R + W rounds (the
 * first W untimed), each running every algorithm once, in an order rotated by one per round so
 * that drift and position bias spread evenly: a barrier, the first rank of each server reads its
 * namespace's eth0 tx_bytes, K calls, the slowest rank's time per call (MPI_MAX of each rank's
 * time from the barrier), a barrier and the counter again. Rank 0 prints one line per timed sample:
 *   sample coll=C algo=A bytes=N round=I calls=K time_per_call_s=T tx_max_per_call=B
 * (B: the most bytes one server's eth0 sent per call; -1 when unreadable), and per algorithm
 * after the first round a check line comparing the last call's output with what every rank
 * computes itself (small integers: exact in float in any order):
 *   check coll=C algo=A bytes=N wrong=E
 * Then the communicators are freed (so their scratch memory goes before the next size). Exit 1 if
 * any element was wrong, 2 for a usage error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"

enum { kMaxAlgos = 16, kMaxSizes = 16, kNumColls = 3 };

typedef enum { ALLREDUCE, ALLGATHER, REDUCE_SCATTER } coll_t;
static const char* const coll_names[kNumColls] = {"allreduce", "allgather", "reduce_scatter"};

typedef struct {
  int nsizes;
  long long sizes[kMaxSizes];
  int nalgos;
  char* algos[kMaxAlgos];
  int reps, calls, warmup;
  int ncolls;
  coll_t colls[kNumColls];
} options;

static int world_rank, world_size;

static int usage(const char* why, const char* what) {
  return probe_usage("time_probe",
                     "time_probe [--sizes N,N,...] [--algos A,A,...] [--reps R] [--calls K] "
                     "[--warmup W] allreduce|allgather|reduce_scatter...",
                     why, what);
}

static int parse_options(int argc, char** argv, options* o) {
  memset(o, 0, sizeof *o);
  static char default_sizes[] = "1M,4M,16M";
  static char default_algos[] = "ring,H-D_R,NHR,NB,pipeline,AHC";
  char* sizes = default_sizes;
  char* algos = default_algos;
  o->reps = 3;
  o->calls = 1;
  o->warmup = 1;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const int has_value = i + 1 < argc;
    if (strcmp(a, "--sizes") == 0 && has_value) {
      sizes = argv[++i];
    } else if (strcmp(a, "--algos") == 0 && has_value) {
      algos = argv[++i];
    } else if (strcmp(a, "--reps") == 0 && has_value) {
      if ((o->reps = probe_parse_int(argv[++i], 1, 1000)) < 0)
        return usage("bad --reps (1..1000)", argv[i]);
    } else if (strcmp(a, "--calls") == 0 && has_value) {
      if ((o->calls = probe_parse_int(argv[++i], 1, 100000)) < 0)
        return usage("bad --calls (1..100000)", argv[i]);
    } else if (strcmp(a, "--warmup") == 0 && has_value) {
      if ((o->warmup = probe_parse_int(argv[++i], 0, 1000)) < 0)
        return usage("bad --warmup (0..1000)", argv[i]);
    } else if (a[0] != '-' && o->ncolls < kNumColls) {
      const int c = probe_find(a, coll_names, kNumColls);
      if (c < 0) return usage("unknown collective (allreduce, allgather, reduce_scatter)", a);
      o->colls[o->ncolls++] = (coll_t)c;
    } else {
      return usage("unknown or incomplete argument", a);
    }
  }
  if (o->ncolls == 0) return usage("no collective given", "");
  for (char* tok = strtok(sizes, ","); tok != NULL; tok = strtok(NULL, ",")) {
    if (o->nsizes == kMaxSizes) return usage("too many sizes (at most 16)", tok);
    if ((o->sizes[o->nsizes++] = probe_parse_size(tok, 1LL << 30)) < 4 ||
        o->sizes[o->nsizes - 1] % 4 != 0)
      return usage("bad size (a multiple of 4 bytes up to 1G, K/M/G allowed)", tok);
  }
  for (char* tok = strtok(algos, ","); tok != NULL; tok = strtok(NULL, ",")) {
    if (o->nalgos == kMaxAlgos) return usage("too many algorithms (at most 16)", tok);
    o->algos[o->nalgos++] = tok;
  }
  if (o->nsizes == 0) return usage("no size given", "");
  if (o->nalgos == 0) return usage("no algorithm given", "");
  return 1;
}

static void call(coll_t c, const float* in, float* out, int count, MPI_Comm comm) {
  if (c == ALLREDUCE) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, comm);
  if (c == ALLGATHER) MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, comm);
  if (c == REDUCE_SCATTER) MPI_Reduce_scatter_block(in, out, count, MPI_FLOAT, MPI_SUM, comm);
}

static long long wrong_elements(coll_t c, const float* out, long long count) {
  const int ranks_sum = world_size * (world_size + 1) / 2;
  long long wrong = 0;
  if (c == ALLREDUCE) {
    for (long long i = 0; i < count; ++i) wrong += out[i] != (float)(ranks_sum * (int)(i % 7 + 1));
  } else if (c == ALLGATHER) {
    for (int r = 0; r < world_size; ++r)
      for (long long i = 0; i < count; ++i) wrong += out[r * count + i] != input_value(r, i);
  } else {
    for (long long i = 0; i < count; ++i) {
      const long long at = (long long)world_rank * count + i;
      wrong += out[i] != (float)(ranks_sum * (int)(at % 7 + 1));
    }
  }
  return wrong;
}

/* Returns the number of wrong elements over all ranks and checks. */
static long long measure(coll_t c, long long bytes, const options* o, int is_leader) {
  const long long count = bytes / (long long)sizeof(float);
  if (count > 0x7fffffffLL) MPI_Abort(MPI_COMM_WORLD, 2);
  const long long in_elems = c == REDUCE_SCATTER ? count * world_size : count;
  const long long out_elems = c == ALLGATHER ? count * world_size : count;
  float* in = malloc(sizeof(float) * (size_t)in_elems);
  float* out = malloc(sizeof(float) * (size_t)out_elems);
  if (in == NULL || out == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  for (long long i = 0; i < in_elems; ++i) in[i] = input_value(world_rank, i);

  MPI_Comm comms[kMaxAlgos];
  for (int a = 0; a < o->nalgos; ++a) {
    MPI_Info info;
    MPI_Info_create(&info);
    char value[128];
    snprintf(value, sizeof value, "level0:NA;level1:%s", o->algos[a]);
    if (strcmp(o->algos[a], "auto") != 0) MPI_Info_set(info, "hccl_algo", value);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[a]);
    MPI_Info_free(&info);
  }
  long long all_wrong = 0;
  for (int round = -o->warmup; round < o->reps; ++round) {
    for (int k = 0; k < o->nalgos; ++k) {
      const int a = (k + round + o->warmup) % o->nalgos;
      for (long long i = 0; i < out_elems; ++i) out[i] = -1.0f;
      MPI_Barrier(MPI_COMM_WORLD);
      const long long tx0 = is_leader ? probe_eth0("tx_bytes") : 0;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int j = 0; j < o->calls; ++j) call(c, in, out, (int)count, comms[a]);
      const double mine = (MPI_Wtime() - t0) / o->calls;
      /* After every rank's calls: a server's other ranks may still be sending when its first
       * rank is done (a few hundred bytes of barrier join the count). */
      MPI_Barrier(MPI_COMM_WORLD);
      const long long tx1 = is_leader ? probe_eth0("tx_bytes") : 0;
      long long tx = !is_leader ? 0 : tx0 < 0 || tx1 < 0 ? -1 : tx1 - tx0, tx_max = 0, tx_min = 0;
      double slowest = 0;
      MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      MPI_Reduce(&tx, &tx_max, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
      MPI_Reduce(&tx, &tx_min, 1, MPI_LONG_LONG, MPI_MIN, 0, MPI_COMM_WORLD);
      if (round == -o->warmup || (o->warmup == 0 && round == 0)) {
        long long wrong = wrong_elements(c, out, count), sum = 0;
        MPI_Reduce(&wrong, &sum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        all_wrong += sum;
        if (world_rank == 0)
          printf("check coll=%s algo=%s bytes=%lld wrong=%lld\n", coll_names[c], o->algos[a], bytes,
                 sum);
      }
      if (world_rank == 0 && round >= 0) {
        printf(
            "sample coll=%s algo=%s bytes=%lld round=%d calls=%d time_per_call_s=%.6f "
            "tx_max_per_call=%.0f\n",
            coll_names[c], o->algos[a], bytes, round, o->calls, slowest,
            tx_min < 0 ? -1.0 : (double)tx_max / o->calls);
        fflush(stdout);
      }
    }
  }
  for (int a = 0; a < o->nalgos; ++a) MPI_Comm_free(&comms[a]);
  free(in);
  free(out);
  return all_wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  options o;
  if (!parse_options(argc, argv, &o)) {
    MPI_Finalize();
    return 2;
  }
  MPI_Comm shm;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
  int shm_rank = 0;
  MPI_Comm_rank(shm, &shm_rank);
  long long wrong = 0;
  for (int c = 0; c < o.ncolls; ++c)
    for (int s = 0; s < o.nsizes; ++s) wrong += measure(o.colls[c], o.sizes[s], &o, shm_rank == 0);
  MPI_Comm_free(&shm);
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
