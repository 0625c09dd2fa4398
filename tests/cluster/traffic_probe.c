/* traffic_probe: how many bytes each emulated server sends across its link per collective call.
 *
 *   traffic_probe [--bytes N] [--calls K] [--warmup W] [--info KEY=VALUE]... COLL...
 *
 * COLL is allreduce, allgather, reduce_scatter (MPI_Reduce_scatter_block), bcast, reduce (both
 * from or to rank 0) or alltoall, float (sum for the reductions). N is the whole per-rank buffer
 * as hccl_bench counts it (allreduce, allgather, bcast, reduce: the output or vector;
 * reduce_scatter, alltoall: the input, N / p per pair for alltoall), default 16M (K/M/G suffixes
 * are binary). The calls run on a duplicate of
 * MPI_COMM_WORLD carrying the given info keys (e.g. hccl_algo=level0:NA;level1:ring, or
 * ompi_comm_coll_preference=^hccl for Open MPI's own components).
 *
 * Per collective: W warm-up calls (endpoints, HAN's sub-communicators), a barrier, the first rank
 * of every server (MPI_COMM_TYPE_SHARED) reads its namespace's /sys/class/net/eth0/statistics
 * tx_bytes and rx_bytes, a barrier, K calls, a barrier, the counters again. Rank 0 prints one line
 * per server with the differences divided by K, and the slowest rank's time per call. The last
 * call's result is compared with the value every rank computes itself (small integers: exact in
 * float in any order); exit status 1 if any element differs, 2 for a usage error. The barriers
 * inside the window add a few hundred bytes, TCP/IP headers and acknowledgements a few percent.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"

enum { kMaxInfo = 8, kNumColls = 6 };

typedef enum { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, BCAST, REDUCE, ALLTOALL } coll_t;
static const char* const coll_names[kNumColls] = {"allreduce", "allgather", "reduce_scatter",
                                                  "bcast",     "reduce",    "alltoall"};

typedef struct {
  long long bytes;
  int calls;
  int warmup;
  int ninfo;
  char* info[kMaxInfo];
  int ncolls;
  coll_t colls[kNumColls];
} options;

typedef struct {
  long long tx;
  long long rx;
} counters;

static int world_rank, world_size;

static int usage(const char* why, const char* what) {
  return probe_usage("traffic_probe",
                     "traffic_probe [--bytes N] [--calls K] [--warmup W] [--info KEY=VALUE]... "
                     "allreduce|allgather|reduce_scatter|bcast|reduce|alltoall...",
                     why, what);
}

static int parse_options(int argc, char** argv, options* o) {
  memset(o, 0, sizeof *o);
  o->bytes = 16LL << 20;
  o->calls = 4;
  o->warmup = 2;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const int has_value = i + 1 < argc;
    if (strcmp(a, "--bytes") == 0 && has_value) {
      o->bytes = probe_parse_size(argv[++i], 1LL << 32);
      if (o->bytes <= 0) return usage("bad --bytes (a positive size, K/M/G allowed)", argv[i]);
    } else if (strcmp(a, "--calls") == 0 && has_value) {
      if ((o->calls = probe_parse_int(argv[++i], 1, 100000)) < 0)
        return usage("bad --calls (1..100000)", argv[i]);
    } else if (strcmp(a, "--warmup") == 0 && has_value) {
      if ((o->warmup = probe_parse_int(argv[++i], 0, 1000)) < 0)
        return usage("bad --warmup (0..1000)", argv[i]);
    } else if (strcmp(a, "--info") == 0 && has_value) {
      if (o->ninfo == kMaxInfo || strchr(argv[i + 1], '=') == NULL)
        return usage("bad --info (KEY=VALUE, at most 8)", argv[i + 1]);
      o->info[o->ninfo++] = argv[++i];
    } else if (a[0] != '-' && o->ncolls < kNumColls) {
      const int c = probe_find(a, coll_names, kNumColls);
      if (c < 0)
        return usage(
            "unknown collective (allreduce, allgather, reduce_scatter, bcast, reduce, alltoall)",
            a);
      o->colls[o->ncolls++] = (coll_t)c;
    } else {
      return usage("unknown or incomplete argument", a);
    }
  }
  if (o->ncolls == 0) return usage("no collective given", "");
  return 1;
}

static counters read_counters(void) {
  counters c = {probe_eth0("tx_bytes"), probe_eth0("rx_bytes")};
  return c;
}

/* Bcast runs on `out`, which rank 0 filled with its input (and never changes). */
static void call(coll_t c, const float* in, float* out, int count, MPI_Comm comm) {
  if (c == ALLREDUCE) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, comm);
  if (c == ALLGATHER) MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, comm);
  if (c == REDUCE_SCATTER) MPI_Reduce_scatter_block(in, out, count, MPI_FLOAT, MPI_SUM, comm);
  if (c == BCAST) MPI_Bcast(out, count, MPI_FLOAT, 0, comm);
  if (c == REDUCE) MPI_Reduce(in, out, count, MPI_FLOAT, MPI_SUM, 0, comm);
  if (c == ALLTOALL) MPI_Alltoall(in, count, MPI_FLOAT, out, count, MPI_FLOAT, comm);
}

/* Elements of the rank's output that differ from the expectation. */
static long long wrong_elements(coll_t c, const float* out, int count) {
  const int ranks_sum = world_size * (world_size + 1) / 2;
  long long wrong = 0;
  if (c == ALLREDUCE || (c == REDUCE && world_rank == 0)) {
    for (int i = 0; i < count; ++i) wrong += out[i] != (float)(ranks_sum * (i % 7 + 1));
  } else if (c == REDUCE) {
    /* a non-root's output is not written */
  } else if (c == BCAST) {
    for (int i = 0; i < count; ++i) wrong += out[i] != input_value(0, i);
  } else if (c == ALLTOALL) {
    /* block r came from rank r: its block world_rank */
    for (int r = 0; r < world_size; ++r)
      for (int i = 0; i < count; ++i)
        wrong += out[(long long)r * count + i] != input_value(r, (long long)world_rank * count + i);
  } else if (c == ALLGATHER) {
    for (int r = 0; r < world_size; ++r)
      for (int i = 0; i < count; ++i) wrong += out[(long long)r * count + i] != input_value(r, i);
  } else {
    for (int i = 0; i < count; ++i) {
      const long long at = (long long)world_rank * count + i;
      wrong += out[i] != (float)(ranks_sum * (int)(at % 7 + 1));
    }
  }
  return wrong;
}

/* Returns 1 when every rank's result was right. */
static int measure(coll_t c, const options* o, MPI_Comm comm, MPI_Comm shm, int is_leader) {
  const long long elems = o->bytes / (long long)sizeof(float);
  /* the whole vector, else per rank or per pair */
  const long long count = c == ALLREDUCE || c == BCAST || c == REDUCE ? elems : elems / world_size;
  if (count <= 0 || count > 0x7fffffffLL) {
    if (world_rank == 0)
      fprintf(stderr, "traffic_probe: %s of %lld bytes on %d ranks: no whole float per rank\n",
              coll_names[c], o->bytes, world_size);
    return 0;
  }
  const long long in_elems = c == REDUCE_SCATTER || c == ALLTOALL ? count * world_size : count;
  const long long out_elems = c == ALLGATHER || c == ALLTOALL ? count * world_size : count;
  float* in = malloc(sizeof(float) * (size_t)in_elems);
  float* out = malloc(sizeof(float) * (size_t)out_elems);
  if (in == NULL || out == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  for (long long i = 0; i < in_elems; ++i) in[i] = input_value(world_rank, i);
  for (long long i = 0; i < out_elems; ++i) out[i] = c == BCAST && world_rank == 0 ? in[i] : -1.0f;

  for (int k = 0; k < o->warmup; ++k) call(c, in, out, (int)count, comm);
  MPI_Barrier(MPI_COMM_WORLD);
  counters before = {0, 0};
  if (is_leader) before = read_counters();
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int k = 0; k < o->calls; ++k) call(c, in, out, (int)count, comm);
  const double mine = (MPI_Wtime() - t0) / o->calls;
  MPI_Barrier(MPI_COMM_WORLD);
  counters after = {0, 0};
  if (is_leader) after = read_counters();

  long long wrong = wrong_elements(c, out, (int)count);
  long long all_wrong = 0;
  double slowest = 0;
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

  /* One record per rank; only servers' first ranks carry counters. */
  long long rec[4] = {is_leader, 0, 0, 0};
  int shm_size = 0;
  MPI_Comm_size(shm, &shm_size);
  rec[1] = shm_size;
  if (is_leader) {
    const int readable = before.tx >= 0 && after.tx >= 0 && before.rx >= 0 && after.rx >= 0;
    rec[2] = readable ? after.tx - before.tx : -1;
    rec[3] = readable ? after.rx - before.rx : -1;
  }
  char host[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(host, &len);
  long long* recs = world_rank == 0 ? malloc(sizeof rec * (size_t)world_size) : NULL;
  char* hosts = world_rank == 0 ? malloc((size_t)MPI_MAX_PROCESSOR_NAME * world_size) : NULL;
  MPI_Gather(rec, 4, MPI_LONG_LONG, recs, 4, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
             MPI_COMM_WORLD);
  if (world_rank == 0) {
    for (int r = 0; r < world_size; ++r) {
      const long long* x = recs + 4 * r;
      if (!x[0]) continue;
      if (x[2] < 0) {
        printf("traffic coll=%s bytes=%lld calls=%d server=%s ranks=%lld counters=unreadable\n",
               coll_names[c], o->bytes, o->calls, hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME, x[1]);
        continue;
      }
      printf(
          "traffic coll=%s bytes=%lld calls=%d server=%s ranks=%lld tx_bytes=%lld "
          "rx_bytes=%lld tx_per_call=%.0f rx_per_call=%.0f\n",
          coll_names[c], o->bytes, o->calls, hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME, x[1], x[2],
          x[3], (double)x[2] / o->calls, (double)x[3] / o->calls);
    }
    printf("traffic coll=%s bytes=%lld calls=%d time_per_call_s=%.4f check=%s wrong=%lld\n",
           coll_names[c], o->bytes, o->calls, slowest, all_wrong ? "FAILED" : "ok", all_wrong);
    fflush(stdout);
  }
  free(recs);
  free(hosts);
  free(in);
  free(out);
  return all_wrong == 0;
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
  MPI_Info info;
  MPI_Info_create(&info);
  for (int i = 0; i < o.ninfo; ++i) {
    char* eq = strchr(o.info[i], '=');
    *eq = '\0';
    MPI_Info_set(info, o.info[i], eq + 1);
  }
  MPI_Comm comm, shm;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
  MPI_Info_free(&info);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
  int shm_rank = 0;
  MPI_Comm_rank(shm, &shm_rank);

  int ok = 1;
  for (int c = 0; c < o.ncolls; ++c) ok = measure(o.colls[c], &o, comm, shm, shm_rank == 0) && ok;
  MPI_Comm_free(&comm);
  MPI_Comm_free(&shm);
  MPI_Finalize();
  return ok ? 0 : 1;
}
