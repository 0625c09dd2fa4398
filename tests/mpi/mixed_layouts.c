/*
 * mixed_layouts.c - blocking MPI_Allgather and MPI_Bcast whose ranks describe the same type
 * signature with different layouts: contiguous ints on some ranks, a vector or indexed type (not
 * contiguous, so the adapter packs it) or a shifted struct on others, rotated over the ranks so
 * that every rank meets every pairing; Allgather also in place (on every rank, as MPI requires)
 * with mixed receive layouts, and send and receive layouts differing on one rank. MPI requires
 * only equal signatures for these (MPI 4.0 sections 6.4 and 6.7), so whether a rank's layout is
 * contiguous is a local fact: the engine's path (the shared-memory slots for small blocking calls,
 * the general executor otherwise) must not depend on it, or ranks take different protocols and
 * hang or corrupt (issue 13's slot fast path decided from the local layout).
 *
 * Small sizes run on the slots, one larger size on the general path. The reductions
 * (MPI_Allreduce, MPI_Reduce_scatter(_block)) run with one layout on every rank, contiguous or
 * not, in place or not, since MPI requires the same count and datatype on every rank for them
 * (section 6.9.1): MPI_SUM on contiguous ints, a user op on the derived layouts (Open MPI defines
 * MPI_SUM on predefined types only); --mixed-reductions mixes layouts across ranks there too
 * (outside the standard; a diagnostic, not in the suite).
 * Expectations are computed here from the ranks' inputs; guard zones and a layout's gaps must keep
 * what they held.
 */
#include <stdlib.h>

#include "mpi_check.h"
#include "mpi_layouts.h"

static int rank, nranks;
static bool mixed_reductions;
/* The int family of mpi_layouts.h: int, vector (2 ints, gaps), indexed (4 ints, gaps), shifted
 * (4 ints, contiguous 12 bytes from the pointer). */
static const layout_t* fam[4];

/* The layout rank r uses in rotation v. */
static const layout_t* pick(int r, int v) {
  return fam[(r + v) % 4];
}

/* ---- Allgather ------------------------------------------------------------------------------ */

/* Every rank contributes `ints` ints: send layout pick(rank, sv), receive layout pick(rank, rv). */
static void allgather_case(size_t ints, int sv, int rv, bool in_place) {
  const layout_t* sl = pick(rank, sv);
  const layout_t* rl = pick(rank, rv);
  char what[200];
  snprintf(what, sizeof what, "allgather %zu ints per rank, send %s, recv %s%s (rotation %d/%d)",
           ints, sl->name, rl->name, in_place ? ", in place" : "", sv, rv);
  const size_t p = (size_t)nranks;
  const size_t scount = ints / (size_t)sl->ints, rcount = ints / (size_t)rl->ints;
  guarded_t g;
  unsigned char* rbuf = guarded_alloc(&g, layout_span(rl, p * rcount));
  void* sbuf = NULL;
  if (in_place) {
    /* this rank's block sits at its place in the receive buffer */
    layout_fill(rl, rbuf + (size_t)rank * rcount * (size_t)rl->extent, rcount, rank, 0);
  } else {
    sbuf = calloc(1, layout_span(sl, scount) + 1);
    layout_fill(sl, sbuf, scount, rank, 0);
  }
  guarded_snapshot(&g);
  int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : sbuf, (int)scount, sl->type, rbuf, (int)rcount,
                         rl->type, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    for (int r = 0; r < nranks; ++r) {
      char block[240];
      snprintf(block, sizeof block, "%s, block of rank %d", what, r);
      layout_check(rl, rbuf + (size_t)r * rcount * (size_t)rl->extent, rcount, r, 0, block);
    }
    guarded_untouched(&g, 0, layout_span(rl, p * rcount), what);
    layout_gaps_untouched(&g, 0, rl, p * rcount, what);
  }
  free(sbuf);
  guarded_free(&g);
}

/* ---- Bcast ---------------------------------------------------------------------------------- */

static void bcast_case(size_t ints, int v, int root) {
  const layout_t* l = pick(rank, v);
  char what[200];
  snprintf(what, sizeof what, "bcast %zu ints, root %d, this rank %s (rotation %d)", ints, root,
           l->name, v);
  const size_t count = ints / (size_t)l->ints;
  guarded_t g;
  unsigned char* buf = guarded_alloc(&g, layout_span(l, count));
  if (rank == root) layout_fill(l, buf, count, root, 3);
  guarded_snapshot(&g);
  int rc = MPI_Bcast(buf, (int)count, l->type, root, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc))
    layout_check_bcast(&g, l, count, root, 3, rank == root, what);
  guarded_free(&g);
}

/* ---- Reductions (MPI_SUM on ints) ----------------------------------------------------------- */

/* Input int i of rank r. */
static int input_int(int r, size_t i) {
  return (int)((size_t)r * 1009 + i * 7 % 1000 + 1);
}

/* Writes ints [first, first + n) of rank r's input into n / l->ints elements of l at buf. */
static void write_ints(const layout_t* l, void* buf, int r, size_t first, size_t n) {
  int* v = malloc(n * sizeof *v + 1);
  for (size_t i = 0; i < n; ++i) v[i] = input_int(r, first + i);
  layout_write(l, buf, n / (size_t)l->ints, v);
  free(v);
}

/* Checks that n / l->ints elements of l at buf hold the sum over ranks of input ints
 * [first, first + n). */
static bool check_sums(const layout_t* l, const void* buf, size_t first, size_t n,
                       const char* what) {
  int* v = malloc(n * sizeof *v + 1);
  layout_read(l, buf, n / (size_t)l->ints, v);
  bool ok = true;
  for (size_t i = 0; i < n && ok; ++i) {
    int want = 0;
    for (int r = 0; r < nranks; ++r) want += input_int(r, first + i);
    ok = check(v[i] == want, "%s: int %zu is %d, expected %d", what, i, v[i], want);
  }
  free(v);
  return ok && check(true, "%s", what);
}

/* Byte offsets of the ints of one element of each layout of fam (mpi_layouts.h's type maps). */
static const MPI_Aint int_at[4][4] = {{0}, {0, 12}, {0, 12, 16, 28}, {12, 16, 20, 24}};

/* A user op summing ints in any layout of fam: Open MPI defines MPI_SUM on predefined types
 * only, so the derived layouts reduce through this (the adapter stages whole extents). */
static void int_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  int f = 0;
  while (f < 4 && fam[f]->type != *type) ++f;
  if (4 == f) MPI_Abort(MPI_COMM_WORLD, 3);
  for (int e = 0; e < *len; ++e)
    for (int j = 0; j < fam[f]->ints; ++j) {
      MPI_Aint at = (MPI_Aint)e * fam[f]->extent + int_at[f][j];
      int a = 0, b = 0;
      memcpy(&a, (char*)in + at, sizeof a);
      memcpy(&b, (char*)inout + at, sizeof b);
      b += a;
      memcpy((char*)inout + at, &b, sizeof b);
    }
}
static MPI_Op op_int_sum;

enum { ALLREDUCE, REDUCE_SCATTER_BLOCK, REDUCE_SCATTER };
static const char* const red_names[] = {"allreduce", "reduce_scatter_block", "reduce_scatter"};

/* `ints` is the result size of rank 0 (allreduce: of every rank); reduce_scatter gives rank r
 * (r % 2 + 1) times as many. */
static void reduction_case(int kind, size_t ints, const layout_t* l, bool in_place, int v) {
  char what[200];
  snprintf(what, sizeof what, "%s %zu ints, this rank %s%s (rotation %d)", red_names[kind], ints,
           l->name, in_place ? ", in place" : "", v);
  const size_t p = (size_t)nranks;
  size_t mine = ints, total = ints, first = 0; /* ints of the result, of the input, where mine is */
  int* counts = malloc(p * sizeof *counts);
  for (size_t r = 0; r < p; ++r) {
    size_t c = REDUCE_SCATTER == kind ? (r % 2 + 1) * ints : ints;
    counts[r] = (int)(c / (size_t)l->ints);
    if (ALLREDUCE != kind) {
      if ((int)r < rank) first += c;
      if ((int)r == rank) mine = c;
    }
  }
  if (ALLREDUCE != kind) {
    total = 0;
    for (size_t r = 0; r < p; ++r) total += (size_t)counts[r] * (size_t)l->ints;
  }
  const size_t in_elems = total / (size_t)l->ints, out_elems = mine / (size_t)l->ints;
  guarded_t g;
  unsigned char* rbuf = guarded_alloc(&g, layout_span(l, in_place ? in_elems : out_elems));
  void* sbuf = NULL;
  if (in_place) {
    write_ints(l, rbuf, rank, 0, total);
  } else {
    sbuf = calloc(1, layout_span(l, in_elems) + 1);
    write_ints(l, sbuf, rank, 0, total);
  }
  guarded_snapshot(&g);
  const void* s = in_place ? MPI_IN_PLACE : sbuf;
  /* MPI_SUM on contiguous ints (the slots take it), the user op on every layout else */
  MPI_Op op = MPI_INT == l->type && !mixed_reductions ? MPI_SUM : op_int_sum;
  int rc = ALLREDUCE == kind ? MPI_Allreduce(s, rbuf, (int)in_elems, l->type, op, MPI_COMM_WORLD)
           : REDUCE_SCATTER_BLOCK == kind
               ? MPI_Reduce_scatter_block(s, rbuf, counts[0], l->type, op, MPI_COMM_WORLD)
               : MPI_Reduce_scatter(s, rbuf, counts, l->type, op, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    check_sums(l, rbuf, first, mine, what);
    /* only this rank's result is written; in place, the rest of the input stays as it was */
    guarded_untouched(&g, 0, layout_span(l, out_elems), what);
    layout_gaps_untouched(&g, 0, l, out_elems, what);
  }
  free(counts);
  free(sbuf);
  guarded_free(&g);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  mixed_reductions = has_flag(argc, argv, "--mixed-reductions");
  layouts_init();
  layouts_int_family(fam);
  MPI_Op_create(int_sum, 1, &op_int_sum);
  /* ints per rank (multiples of 4, the largest ints per element): small ones on the slots, the
   * last beyond them (the general path) */
  const size_t sizes[] = {4, 8, 36, 16384};
  const size_t nsizes = sizeof sizes / sizeof sizes[0];
  for (size_t si = 0; si < nsizes; ++si) {
    for (int v = 0; v < 4; ++v) {
      allgather_case(sizes[si], v, v, false);
      allgather_case(sizes[si], v, v + 1, false);
      allgather_case(sizes[si], v, v, true);
      for (int root = 0; root < nranks; ++root) bcast_case(sizes[si], v, root);
    }
  }
  for (int kind = 0; kind < 3; ++kind) {
    for (size_t si = 0; si < nsizes; ++si) {
      for (int v = 0; v < 4; ++v) {
        const layout_t* l = mixed_reductions ? pick(rank, v) : fam[v];
        for (int ip = 0; ip < 2; ++ip) reduction_case(kind, sizes[si], l, 1 == ip, v);
      }
    }
  }
  MPI_Op_free(&op_int_sum);
  layouts_free();
  return check_finish("mixed_layouts");
}
