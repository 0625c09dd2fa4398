/*
 * reductions.c - MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Reduce_scatter (blocking and
 * nonblocking, out of place and MPI_IN_PLACE) over every predefined type and every op MPI defines
 * on it, with counts 0, 1, fewer than p, not divisible by p, and larger.
 *
 * Options: --quick (a representative subset of types and counts), --blocking-only, --large (only
 * an allreduce of 16501 elements and a reduce_scatter_block of 16501 per rank: at np=2, with the
 * shared-memory link's stream_from_bytes below their size, the blocking calls stream through the
 * slots and the nonblocking ones run on the executor's single copy, each checked against the same
 * exact expectation, so the two paths agree bit for bit).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_check.h"
#include "mpi_values.h"

typedef enum { ALLREDUCE, REDUCE_SCATTER_BLOCK, REDUCE_SCATTER } coll_t;
static const char* const coll_names[] = {"allreduce", "reduce_scatter_block", "reduce_scatter"};

static int rank, nranks;

/* Per-rank element counts of MPI_Reduce_scatter: with zeros, all ones, and larger blocks. */
static void rs_counts(int pattern, int* counts) {
  for (int r = 0; r < nranks; ++r) {
    counts[r] = 0 == pattern ? r % 3 : 1 == pattern ? 1 : (r * 7 + 3) % 11 + 60;
  }
}

typedef struct {
  coll_t coll;
  size_t count; /* allreduce: elements; reduce_scatter_block: per rank; reduce_scatter: pattern */
  bool in_place;
  bool nonblocking;
} case_t;

static void run_case(const test_type_t* t, int op_index, const test_op_t* op, const case_t* c) {
  int counts[64];
  size_t in_elems = 0, out_elems = 0, out_first = 0; /* output = elements [first, first+out) */
  if (ALLREDUCE == c->coll) {
    in_elems = out_elems = c->count;
  } else if (REDUCE_SCATTER_BLOCK == c->coll) {
    in_elems = c->count * (size_t)nranks;
    out_elems = c->count;
    out_first = c->count * (size_t)rank;
  } else {
    rs_counts((int)c->count, counts);
    for (int r = 0; r < nranks; ++r) {
      if (r == rank) out_first = in_elems;
      in_elems += (size_t)counts[r];
    }
    out_elems = (size_t)counts[rank];
  }

  /* The receive buffer between guard zones: in place it holds the whole input, and only the
   * result (at its start) may change. */
  guarded_t g;
  size_t recv_elems = c->in_place ? in_elems : out_elems;
  unsigned char* send = malloc(in_elems * t->size + 1);
  unsigned char* recv = guarded_alloc(&g, recv_elems * t->size);
  unsigned char* input = c->in_place ? recv : send;
  for (size_t i = 0; i < in_elems; ++i) {
    long double re, im;
    test_value(op_index, t, rank, i, &re, &im);
    t->set(input, i, re, im);
  }
  guarded_snapshot(&g);

  const void* sbuf = c->in_place ? MPI_IN_PLACE : send;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  if (ALLREDUCE == c->coll) {
    rc = c->nonblocking
             ? MPI_Iallreduce(sbuf, recv, (int)c->count, t->type, op->op, MPI_COMM_WORLD, &req)
             : MPI_Allreduce(sbuf, recv, (int)c->count, t->type, op->op, MPI_COMM_WORLD);
  } else if (REDUCE_SCATTER_BLOCK == c->coll) {
    rc = c->nonblocking
             ? MPI_Ireduce_scatter_block(sbuf, recv, (int)c->count, t->type, op->op, MPI_COMM_WORLD,
                                         &req)
             : MPI_Reduce_scatter_block(sbuf, recv, (int)c->count, t->type, op->op, MPI_COMM_WORLD);
  } else {
    rc = c->nonblocking
             ? MPI_Ireduce_scatter(sbuf, recv, counts, t->type, op->op, MPI_COMM_WORLD, &req)
             : MPI_Reduce_scatter(sbuf, recv, counts, t->type, op->op, MPI_COMM_WORLD);
  }
  if (c->nonblocking && MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);

  const char* where = c->in_place ? "in place" : "out of place";
  const char* kind = c->nonblocking ? "nonblocking" : "blocking";
  if (check(MPI_SUCCESS == rc, "%s %s %s count %zu %s %s: rc %d", coll_names[c->coll], t->name,
            op->name, c->count, where, kind, rc)) {
    int bad = 0;
    for (size_t j = 0; j < out_elems && bad < 3; ++j) {
      long double ere, eim, gre, gim;
      test_expected(op_index, t, nranks, out_first + j, &ere, &eim);
      t->get(recv, j, &gre, &gim);
      if (!check(ere == gre && eim == gim,
                 "%s %s %s count %zu %s %s: element %zu is (%Lg,%Lg), expected (%Lg,%Lg)",
                 coll_names[c->coll], t->name, op->name, c->count, where, kind, j, gre, gim, ere,
                 eim)) {
        ++bad;
      }
    }
    char what[256];
    snprintf(what, sizeof what, "%s %s %s count %zu %s %s", coll_names[c->coll], t->name, op->name,
             c->count, where, kind);
    guarded_untouched(&g, 0, out_elems * t->size, what);
  }
  free(send);
  guarded_free(&g);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const bool quick = has_flag(argc, argv, "--quick");
  const bool blocking_only = has_flag(argc, argv, "--blocking-only");
  const bool large = has_flag(argc, argv, "--large");

  test_type_t types[MAX_TEST_TYPES];
  int ntypes = test_types(types);
  test_op_t ops[16];
  int nops = test_ops(ops);
  const size_t p = (size_t)nranks;

  for (int ti = 0; ti < ntypes; ++ti) {
    const test_type_t* t = &types[ti];
    if (quick && MPI_INT != t->type && MPI_UINT8_T != t->type && MPI_DOUBLE != t->type &&
        MPI_LONG_DOUBLE != t->type && MPI_C_FLOAT_COMPLEX != t->type && MPI_C_BOOL != t->type &&
        MPI_BYTE != t->type) {
      continue;
    }
    for (int oi = 0; oi < nops; ++oi) {
      if (0 == (ops[oi].groups & GBIT(t->group))) continue;
      /* counts: 0, 1, fewer than p, not divisible by p, larger */
      size_t ar_counts[] = {0, 1, p > 1 ? p - 1 : 1, 2 * p + 1, 1037, 16501};
      size_t rsb_counts[] = {0, 1, 3, 257, 16501};
      size_t rs_patterns[] = {0, 1, 2};
      for (int coll = ALLREDUCE; coll <= REDUCE_SCATTER; ++coll) {
        const size_t* counts = ALLREDUCE == coll              ? ar_counts
                               : REDUCE_SCATTER_BLOCK == coll ? rsb_counts
                                                              : rs_patterns;
        size_t ncounts = (ALLREDUCE == coll              ? 5
                          : REDUCE_SCATTER_BLOCK == coll ? 4
                                                         : 3) +
                         (large && REDUCE_SCATTER != coll ? 1 : 0);
        for (size_t ci = large && REDUCE_SCATTER != coll ? ncounts - 1 : 0; ci < ncounts; ++ci) {
          if (large && REDUCE_SCATTER == coll) break;
          if (quick && ALLREDUCE == coll && 3 != ci && 1 != ci) continue;
          if (quick && REDUCE_SCATTER_BLOCK == coll && 2 != ci) continue;
          if (quick && REDUCE_SCATTER == coll && 0 != ci) continue;
          for (int in_place = 0; in_place < 2; ++in_place) {
            for (int nb = 0; nb < (blocking_only ? 1 : 2); ++nb) {
              case_t c = {(coll_t)coll, counts[ci], 1 == in_place, 1 == nb};
              run_case(t, oi, &ops[oi], &c);
            }
          }
        }
      }
    }
  }
  return check_finish("reductions");
}
