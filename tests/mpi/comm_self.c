/*
 * comm_self.c - every collective on single-rank communicators: MPI_COMM_SELF, a duplicate of it
 * and a size-1 split of MPI_COMM_WORLD, each in its blocking, nonblocking and persistent
 * (MPIX_*_init) form, out of place and with MPI_IN_PLACE wherever MPI allows it, plus
 * MPI_Reduce_local.
 *
 * Why: with `--mca coll hccl` alone, coll_hccl is the only component serving these communicators
 * (Open MPI's self component is not loaded), and every MPI library runs collectives on
 * MPI_COMM_SELF internally (one-sided, I/O, mpi4py). On one rank every collective is a copy (or
 * nothing, in place): the expected result is the input itself, and guard zones catch a write
 * outside the output. Each persistent request is started twice with new contents.
 *
 * Options: --quick (fewer sizes).
 */
#include <stdlib.h>

#include "mpi_check.h" /* mpi.h, which mpi-ext.h needs first */

#include <mpi-ext.h>

enum kind {
  ALLGATHER,
  ALLGATHERV,
  ALLREDUCE,
  ALLTOALL,
  ALLTOALLV,
  ALLTOALLW,
  BARRIER,
  BCAST,
  EXSCAN,
  GATHER,
  GATHERV,
  REDUCE,
  REDUCE_SCATTER_BLOCK,
  REDUCE_SCATTER,
  SCAN,
  SCATTER,
  SCATTERV,
  KINDS
};
static const char* const kind_names[KINDS] = {"allgather",
                                              "allgatherv",
                                              "allreduce",
                                              "alltoall",
                                              "alltoallv",
                                              "alltoallw",
                                              "barrier",
                                              "bcast",
                                              "exscan",
                                              "gather",
                                              "gatherv",
                                              "reduce",
                                              "reduce_scatter_block",
                                              "reduce_scatter",
                                              "scan",
                                              "scatter",
                                              "scatterv"};
/* MPI_IN_PLACE is defined for all but these (MPI-3.1 chapter 5). */
static bool has_in_place(int kind) {
  return BARRIER != kind && BCAST != kind;
}
/* Nothing to check but completion: a barrier, and exscan, whose result is undefined on rank 0. */
static bool has_result(int kind) {
  return BARRIER != kind && EXSCAN != kind;
}

static const char* const form_names[3] = {"blocking", "nonblocking", "persistent"};

/* Issues one call: form 0 blocking, 1 nonblocking (*req set), 2 persistent init (*req set). In
 * place, the input is in r (scatter: in s at the root, and r is not used). */
static int issue(int kind, int form, bool in_place, int* s, int* r, int n, MPI_Comm comm,
                 MPI_Request* req) {
  const void* S = in_place ? MPI_IN_PLACE : s;
  int counts[1] = {n}, displs[1] = {0}, bdispls[1] = {0};
  MPI_Datatype types[1] = {MPI_INT};
  MPI_Info info = MPI_INFO_NULL;
#define F3(B, I, P) (0 == form ? (B) : 1 == form ? (I) : (P))
  switch (kind) {
    case ALLGATHER:
      return F3(MPI_Allgather(S, n, MPI_INT, r, n, MPI_INT, comm),
                MPI_Iallgather(S, n, MPI_INT, r, n, MPI_INT, comm, req),
                MPIX_Allgather_init(S, n, MPI_INT, r, n, MPI_INT, comm, info, req));
    case ALLGATHERV:
      return F3(MPI_Allgatherv(S, n, MPI_INT, r, counts, displs, MPI_INT, comm),
                MPI_Iallgatherv(S, n, MPI_INT, r, counts, displs, MPI_INT, comm, req),
                MPIX_Allgatherv_init(S, n, MPI_INT, r, counts, displs, MPI_INT, comm, info, req));
    case ALLREDUCE:
      return F3(MPI_Allreduce(S, r, n, MPI_INT, MPI_SUM, comm),
                MPI_Iallreduce(S, r, n, MPI_INT, MPI_SUM, comm, req),
                MPIX_Allreduce_init(S, r, n, MPI_INT, MPI_SUM, comm, info, req));
    case ALLTOALL:
      return F3(MPI_Alltoall(S, n, MPI_INT, r, n, MPI_INT, comm),
                MPI_Ialltoall(S, n, MPI_INT, r, n, MPI_INT, comm, req),
                MPIX_Alltoall_init(S, n, MPI_INT, r, n, MPI_INT, comm, info, req));
    case ALLTOALLV:
      return F3(MPI_Alltoallv(S, counts, displs, MPI_INT, r, counts, displs, MPI_INT, comm),
                MPI_Ialltoallv(S, counts, displs, MPI_INT, r, counts, displs, MPI_INT, comm, req),
                MPIX_Alltoallv_init(S, counts, displs, MPI_INT, r, counts, displs, MPI_INT, comm,
                                    info, req));
    case ALLTOALLW:
      return F3(MPI_Alltoallw(S, counts, bdispls, types, r, counts, bdispls, types, comm),
                MPI_Ialltoallw(S, counts, bdispls, types, r, counts, bdispls, types, comm, req),
                MPIX_Alltoallw_init(S, counts, bdispls, types, r, counts, bdispls, types, comm,
                                    info, req));
    case BARRIER:
      return F3(MPI_Barrier(comm), MPI_Ibarrier(comm, req), MPIX_Barrier_init(comm, info, req));
    case BCAST:
      return F3(MPI_Bcast(r, n, MPI_INT, 0, comm), MPI_Ibcast(r, n, MPI_INT, 0, comm, req),
                MPIX_Bcast_init(r, n, MPI_INT, 0, comm, info, req));
    case EXSCAN:
      return F3(MPI_Exscan(S, r, n, MPI_INT, MPI_SUM, comm),
                MPI_Iexscan(S, r, n, MPI_INT, MPI_SUM, comm, req),
                MPIX_Exscan_init(S, r, n, MPI_INT, MPI_SUM, comm, info, req));
    case GATHER:
      return F3(MPI_Gather(S, n, MPI_INT, r, n, MPI_INT, 0, comm),
                MPI_Igather(S, n, MPI_INT, r, n, MPI_INT, 0, comm, req),
                MPIX_Gather_init(S, n, MPI_INT, r, n, MPI_INT, 0, comm, info, req));
    case GATHERV:
      return F3(MPI_Gatherv(S, n, MPI_INT, r, counts, displs, MPI_INT, 0, comm),
                MPI_Igatherv(S, n, MPI_INT, r, counts, displs, MPI_INT, 0, comm, req),
                MPIX_Gatherv_init(S, n, MPI_INT, r, counts, displs, MPI_INT, 0, comm, info, req));
    case REDUCE:
      return F3(MPI_Reduce(S, r, n, MPI_INT, MPI_SUM, 0, comm),
                MPI_Ireduce(S, r, n, MPI_INT, MPI_SUM, 0, comm, req),
                MPIX_Reduce_init(S, r, n, MPI_INT, MPI_SUM, 0, comm, info, req));
    case REDUCE_SCATTER_BLOCK:
      return F3(MPI_Reduce_scatter_block(S, r, n, MPI_INT, MPI_SUM, comm),
                MPI_Ireduce_scatter_block(S, r, n, MPI_INT, MPI_SUM, comm, req),
                MPIX_Reduce_scatter_block_init(S, r, n, MPI_INT, MPI_SUM, comm, info, req));
    case REDUCE_SCATTER:
      return F3(MPI_Reduce_scatter(S, r, counts, MPI_INT, MPI_SUM, comm),
                MPI_Ireduce_scatter(S, r, counts, MPI_INT, MPI_SUM, comm, req),
                MPIX_Reduce_scatter_init(S, r, counts, MPI_INT, MPI_SUM, comm, info, req));
    case SCAN:
      return F3(MPI_Scan(S, r, n, MPI_INT, MPI_SUM, comm),
                MPI_Iscan(S, r, n, MPI_INT, MPI_SUM, comm, req),
                MPIX_Scan_init(S, r, n, MPI_INT, MPI_SUM, comm, info, req));
    case SCATTER: {
      void* R = in_place ? MPI_IN_PLACE : r;
      return F3(MPI_Scatter(s, n, MPI_INT, R, n, MPI_INT, 0, comm),
                MPI_Iscatter(s, n, MPI_INT, R, n, MPI_INT, 0, comm, req),
                MPIX_Scatter_init(s, n, MPI_INT, R, n, MPI_INT, 0, comm, info, req));
    }
    case SCATTERV: {
      void* R = in_place ? MPI_IN_PLACE : r;
      return F3(MPI_Scatterv(s, counts, displs, MPI_INT, R, n, MPI_INT, 0, comm),
                MPI_Iscatterv(s, counts, displs, MPI_INT, R, n, MPI_INT, 0, comm, req),
                MPIX_Scatterv_init(s, counts, displs, MPI_INT, R, n, MPI_INT, 0, comm, info, req));
    }
  }
#undef F3
  return MPI_ERR_ARG;
}

static int value(size_t i, int round, int kind) {
  return (int)((i * 7 + (size_t)round * 131 + (size_t)kind * 1009) % 100003) - 50000;
}

static void run_comm(MPI_Comm comm, const char* label, bool quick) {
  const int sizes[] = {1, 7, 4099};
  const int nsizes = quick ? 2 : 3;
  int size = 0;
  MPI_Comm_size(comm, &size);
  check(1 == size, "%s: size %d, expected 1", label, size);
  for (int form = 0; form < 3; ++form) {
    for (int kind = 0; kind < KINDS; ++kind) {
      for (int ip = 0; ip < (has_in_place(kind) ? 2 : 1); ++ip) {
        for (int z = 0; z < nsizes; ++z) {
          const int n = sizes[z];
          guarded_t g;
          int* s = malloc((size_t)n * sizeof *s);
          int* r = guarded_alloc(&g, (size_t)n * sizeof *r);
          MPI_Request req = MPI_REQUEST_NULL;
          char what[200];
          snprintf(what, sizeof what, "%s %s %s%s n=%d", label, form_names[form], kind_names[kind],
                   ip ? " in place" : "", n);
          /* Scatter in place at the root receives nothing: its input stays in s. */
          const bool writes = has_result(kind) && !(ip && (SCATTER == kind || SCATTERV == kind));
          for (int round = 0; round < 2; ++round) {
            for (int i = 0; i < n; ++i) {
              s[i] = value((size_t)i, round, kind);
              /* The input for in-place and bcast, a sentinel for out-of-place results. */
              r[i] = ip || BCAST == kind ? s[i] : 0x5eed0000 + i;
            }
            guarded_snapshot(&g);
            int rc = MPI_SUCCESS;
            if (2 != form || 0 == round) rc = issue(kind, form, ip, s, r, n, comm, &req);
            if (MPI_SUCCESS == rc && 0 != form) {
              if (2 == form) rc = MPI_Start(&req);
              if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            if (!check(MPI_SUCCESS == rc, "%s round %d: returned %d", what, round, rc)) break;
            if (writes) {
              for (int i = 0; i < n; ++i) {
                int e = value((size_t)i, round, kind);
                if (!check(r[i] == e, "%s round %d element %d: %d expected %d", what, round, i,
                           r[i], e)) {
                  break;
                }
              }
            }
            for (int i = 0; i < n; ++i) {
              if (!check(s[i] == value((size_t)i, round, kind), "%s: changed its input", what)) {
                break;
              }
            }
            guarded_untouched(&g, 0, writes ? (size_t)n * sizeof *r : 0, what);
          }
          if (2 == form && MPI_REQUEST_NULL != req) MPI_Request_free(&req);
          free(s);
          guarded_free(&g);
        }
      }
    }
  }
}

/* MPI_Reduce_local (Open MPI runs it through MPI_COMM_SELF's coll_reduce_local). */
static void run_reduce_local(void) {
  enum { N = 1000 };
  int in[N], inout[N];
  for (int i = 0; i < N; ++i) {
    in[i] = i * 3 - 7;
    inout[i] = 11 - i;
  }
  check(MPI_SUCCESS == MPI_Reduce_local(in, inout, N, MPI_INT, MPI_SUM), "reduce_local rc");
  for (int i = 0; i < N; ++i) {
    if (!check(inout[i] == i * 3 - 7 + 11 - i, "reduce_local element %d: %d", i, inout[i])) break;
  }
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  bool quick = has_flag(argc, argv, "--quick");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  run_comm(MPI_COMM_SELF, "MPI_COMM_SELF", quick);
  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_SELF, &dup);
  run_comm(dup, "dup of MPI_COMM_SELF", quick);
  MPI_Comm_free(&dup);
  /* Every rank its own colour: as many size-1 communicators as ranks, built collectively. */
  MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &split);
  run_comm(split, "size-1 split", quick);
  MPI_Comm_free(&split);
  run_reduce_local();
  return check_finish("comm_self");
}
