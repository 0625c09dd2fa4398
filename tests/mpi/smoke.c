/*
 * smoke.c - every collective coll_hccl intercepts, a few types, sizes from 1 element to a few
 * hundred KiB: a quick end-to-end check used with forced algorithms, configuration layers and
 * component selection options.
 *
 * Options: --quick (fewer sizes and types), --info KEY=VALUE (repeatable): also run everything on a
 * duplicate of MPI_COMM_WORLD created with MPI_Comm_dup_with_info carrying these keys (e.g.
 * hccl_algo=level0:NA;level1:ring).
 */
#include <stdlib.h>

#include "mpi_check.h"

static int rank, nranks;

static long value(int r, size_t i) {
  return (long)((r * 17 + i * 5) % 29) - 14;
}

static bool quick = false;

static void run_all(MPI_Comm comm, const char* label) {
  const size_t sizes[] = {1, (size_t)nranks + 1, 4099, 65537};
  const size_t nsizes = quick ? 3 : 4;
  const MPI_Datatype types[] = {MPI_INT, MPI_FLOAT, MPI_DOUBLE};
  const char* names[] = {"int", "float", "double"};
  for (size_t s = 0; s < nsizes; ++s) {
    const size_t n = sizes[s];
    for (int t = 0; t < 3; ++t) {
      if (quick && 1 == t) continue;
      guarded_t g;
      const size_t tsize = 2 == t ? sizeof(double) : sizeof(int);
      double* in = malloc(n * (size_t)nranks * sizeof(double));
      double* out = guarded_alloc(&g, n * (size_t)nranks * sizeof(double));
      char what[160];
      /* all three types fit in a double-sized slot; fill with the right representation */
      for (size_t i = 0; i < n * (size_t)nranks; ++i) {
        long v = value(rank, i);
        if (0 == t) ((int*)in)[i] = (int)v;
        if (1 == t) ((float*)in)[i] = (float)v;
        if (2 == t) in[i] = (double)v;
      }
#define GET(buf, i) \
  (0 == t ? (double)((int*)(buf))[i] : 1 == t ? (double)((float*)(buf))[i] : (buf)[i])
      /* allreduce (blocking and nonblocking) */
      for (int nb = 0; nb < 2; ++nb) {
        MPI_Request req;
        guarded_snapshot(&g);
        if (nb) {
          MPI_Iallreduce(in, out, (int)n, types[t], MPI_SUM, comm, &req);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
          MPI_Allreduce(in, out, (int)n, types[t], MPI_SUM, comm);
        }
        for (size_t i = 0; i < n; ++i) {
          double e = 0;
          for (int r = 0; r < nranks; ++r) e += (double)value(r, i);
          if (!check(GET(out, i) == e, "%s %sallreduce %s n=%zu element %zu: %g expected %g", label,
                     nb ? "i" : "", names[t], n, i, GET(out, i), e)) {
            break;
          }
        }
        snprintf(what, sizeof what, "%s %sallreduce %s n=%zu", label, nb ? "i" : "", names[t], n);
        guarded_untouched(&g, 0, n * tsize, what);
      }
      for (int nb = 0; nb < 2; ++nb) {
        MPI_Request req = MPI_REQUEST_NULL;
        const char* how = nb ? "nonblocking" : "blocking";
        /* reduce_scatter_block: n per rank */
        guarded_snapshot(&g);
        if (nb) {
          MPI_Ireduce_scatter_block(in, out, (int)n, types[t], MPI_MAX, comm, &req);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
          MPI_Reduce_scatter_block(in, out, (int)n, types[t], MPI_MAX, comm);
        }
        for (size_t i = 0; i < n; ++i) {
          double e = -1e9;
          for (int r = 0; r < nranks; ++r) {
            double v = (double)value(r, (size_t)rank * n + i);
            if (v > e) e = v;
          }
          if (!check(GET(out, i) == e, "%s %s reduce_scatter_block %s n=%zu element %zu", label,
                     how, names[t], n, i)) {
            break;
          }
        }
        snprintf(what, sizeof what, "%s %s reduce_scatter_block %s n=%zu", label, how, names[t], n);
        guarded_untouched(&g, 0, n * tsize, what);
        /* reduce_scatter: rank r gets n/2 + r elements, taken from the front of the input */
        int* counts = malloc((size_t)nranks * sizeof(int));
        size_t first = 0, total = 0;
        for (int r = 0; r < nranks; ++r) {
          counts[r] = (int)(n / 2 + (size_t)r);
          if (r == rank) first = total;
          total += (size_t)counts[r];
        }
        if (total > 0 && total <= n * (size_t)nranks) {
          guarded_snapshot(&g);
          if (nb) {
            MPI_Ireduce_scatter(in, out, counts, types[t], MPI_MIN, comm, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
          } else {
            MPI_Reduce_scatter(in, out, counts, types[t], MPI_MIN, comm);
          }
          for (int i = 0; i < counts[rank]; ++i) {
            double e = 1e9;
            for (int r = 0; r < nranks; ++r) {
              double v = (double)value(r, first + (size_t)i);
              if (v < e) e = v;
            }
            if (!check(GET(out, i) == e, "%s %s reduce_scatter %s element %d", label, how, names[t],
                       i)) {
              break;
            }
          }
          snprintf(what, sizeof what, "%s %s reduce_scatter %s n=%zu", label, how, names[t], n);
          guarded_untouched(&g, 0, (size_t)counts[rank] * tsize, what);
        }
        free(counts);
        /* allgather of n elements per rank */
        guarded_snapshot(&g);
        if (nb) {
          MPI_Iallgather(in, (int)n, types[t], out, (int)n, types[t], comm, &req);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
          MPI_Allgather(in, (int)n, types[t], out, (int)n, types[t], comm);
        }
        for (int r = 0; r < nranks; ++r) {
          size_t i = n - 1;
          if (!check(GET(out, (size_t)r * n + i) == (double)value(r, i),
                     "%s %s allgather %s n=%zu block %d", label, how, names[t], n, r)) {
            break;
          }
        }
        snprintf(what, sizeof what, "%s %s allgather %s n=%zu", label, how, names[t], n);
        guarded_untouched(&g, 0, n * (size_t)nranks * tsize, what);
      }
#undef GET
      free(in);
      guarded_free(&g);
    }
  }
}

int main(int argc, char** argv) {
  /* --env-on-rank R K=V: set K=V in rank R's environment before MPI_Init, so one rank alone sees
   * a setting (Open MPI exports the world rank before MPI_Init). */
  const char* world_rank = getenv("OMPI_COMM_WORLD_RANK");
  for (int i = 1; i + 2 < argc; ++i) {
    if (0 != strcmp(argv[i], "--env-on-rank")) continue;
    if (NULL != world_rank && atoi(argv[i + 1]) == atoi(world_rank)) {
      char* kv = argv[i + 2];
      char* eq = strchr(kv, '=');
      if (NULL != eq) {
        *eq = '\0';
        setenv(kv, eq + 1, 1);
        *eq = '=';
      }
    }
    i += 2;
  }
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  quick = has_flag(argc, argv, "--quick");
  run_all(MPI_COMM_WORLD, "world");
  MPI_Info info;
  MPI_Info_create(&info);
  int keys = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (0 != strcmp(argv[i], "--info")) continue;
    char* kv = argv[++i];
    char* eq = strchr(kv, '=');
    if (NULL == eq) continue;
    *eq = '\0';
    MPI_Info_set(info, kv, eq + 1);
    ++keys;
  }
  if (keys > 0) {
    MPI_Comm with_info;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &with_info);
    MPI_Comm_set_name(with_info, "comm_with_info");
    run_all(with_info, "with_info");
    MPI_Comm_free(&with_info);
  }
  MPI_Info_free(&info);
  return check_finish("smoke");
}
