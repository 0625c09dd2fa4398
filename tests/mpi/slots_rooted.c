/*
 * slots_rooted.c - blocking MPI_Reduce, MPI_Gather, MPI_Scatter, MPI_Alltoall, MPI_Scan and
 * MPI_Exscan (and MPI_Allgatherv, whose counts every rank knows) at the sizes the shared-memory
 * slots serve (issue 13), with what is rank-local in them: MPI_IN_PLACE at the root only (Reduce,
 * Gather, Scatter; every root), on some ranks only (Scan, Exscan: MPI does not ask it of every
 * rank) and on every rank (Alltoall); a derived, non-contiguous type on the root only or on the
 * non-roots only (equal signatures, MPI 4.0 sections 6.5 and 6.6); calls back to back with the root
 * and in-place changing from call to call; a root whose own block's sizes differ (erroneous:
 * MPI_ERR_TRUNCATE at the root, the data everywhere else). Every rank must take the same path
 * whatever its own buffers, or the ranks run different protocols and hang (the earlier attempt,
 * commit 4123169, hung so).
 *
 * Small sizes run on the slots where the schedule has their form (the verbose line ends "; on
 * the shared-memory slots", which the suite checks at np=2), one larger size on the general path.
 * Expectations are computed here from the ranks' inputs; guard zones, a layout's gaps and an
 * in-place root's buffer beyond its output keep what they held.
 */
#include <stdlib.h>

#include "mpi_check.h"
#include "mpi_ints.h"
#include "mpi_layouts.h"

static int rank, nranks;
/* The int family of mpi_layouts.h: int, vector (2 ints, gaps), indexed (4 ints, gaps), shifted
 * (4 ints, contiguous 12 bytes from the pointer). */
static const layout_t* fam[4];

/* Who uses a derived layout: nobody, the root only, everybody but the root. */
enum { ALL_INT, ROOT_DERIVED, OTHERS_DERIVED, NUM_MODES };
static const char* const mode_names[] = {"ints everywhere", "derived at the root only",
                                         "derived except at the root"};

/* Rank r's layout in a rooted call: a derived one (vector, indexed, shifted by v) or int. */
static const layout_t* layout_of(int mode, int r, int root, int v) {
  bool derived = (ROOT_DERIVED == mode && r == root) || (OTHERS_DERIVED == mode && r != root);
  return derived ? fam[1 + (v + r) % 3] : fam[0];
}

/* ---- Gather ------------------------------------------------------------------------------- */

/* `ints` ints per rank; block contents differ by `tag` so back-to-back calls differ. */
static void gather_case(size_t ints, int root, bool in_place, int mode, int v, int tag) {
  const layout_t* l = layout_of(mode, rank, root, v);
  char what[200];
  snprintf(what, sizeof what, "gather %zu ints per rank to root %d%s, %s (%s here, call %d)", ints,
           root, in_place ? ", in place" : "", mode_names[mode], l->name, tag);
  const size_t p = (size_t)nranks, count = ints / (size_t)l->ints;
  const bool me_root = rank == root, ip = in_place && me_root;
  void* sbuf = NULL;
  guarded_t g = {0};
  unsigned char* rbuf = NULL;
  if (me_root) {
    rbuf = guarded_alloc(&g, layout_span(l, p * count));
    if (ip) layout_fill(l, rbuf + (size_t)root * count * (size_t)l->extent, count, root, tag);
    guarded_snapshot(&g);
  }
  if (!ip) {
    sbuf = calloc(1, layout_span(l, count) + 1);
    layout_fill(l, sbuf, count, rank, tag);
  }
  int rc = MPI_Gather(ip ? MPI_IN_PLACE : sbuf, (int)count, l->type, rbuf, (int)count, l->type,
                      root, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc) && me_root) {
    for (int r = 0; r < nranks; ++r) {
      char block[240];
      snprintf(block, sizeof block, "%s, block of rank %d", what, r);
      layout_check(l, rbuf + (size_t)r * count * (size_t)l->extent, count, r, tag, block);
    }
    guarded_untouched(&g, 0, layout_span(l, p * count), what);
    layout_gaps_untouched(&g, 0, l, p * count, what);
  }
  free(sbuf);
  if (me_root) guarded_free(&g);
}

/* ---- Scatter ------------------------------------------------------------------------------ */

static void scatter_case(size_t ints, int root, bool in_place, int mode, int v, int tag) {
  const layout_t* l = layout_of(mode, rank, root, v);
  char what[200];
  snprintf(what, sizeof what, "scatter %zu ints per rank from root %d%s, %s (%s here, call %d)",
           ints, root, in_place ? ", in place" : "", mode_names[mode], l->name, tag);
  const size_t p = (size_t)nranks, count = ints / (size_t)l->ints;
  const bool me_root = rank == root, ip = in_place && me_root;
  /* the root's send buffer is input only: guarded whole */
  guarded_t sg = {0};
  unsigned char* sbuf = NULL;
  if (me_root) {
    sbuf = guarded_alloc(&sg, layout_span(l, p * count));
    for (int r = 0; r < nranks; ++r)
      layout_fill(l, sbuf + (size_t)r * count * (size_t)l->extent, count, root, tag * 16 + r);
    guarded_snapshot(&sg);
  }
  guarded_t g = {0};
  unsigned char* rbuf = NULL;
  if (!ip) {
    rbuf = guarded_alloc(&g, layout_span(l, count));
    guarded_snapshot(&g);
  }
  int rc = MPI_Scatter(sbuf, (int)count, l->type, ip ? MPI_IN_PLACE : rbuf, (int)count, l->type,
                       root, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    if (!ip) {
      layout_check(l, rbuf, count, root, tag * 16 + rank, what);
      guarded_untouched(&g, 0, layout_span(l, count), what);
      layout_gaps_untouched(&g, 0, l, count, what);
    }
    if (me_root) guarded_untouched(&sg, 0, 0, what);
  }
  if (!ip) guarded_free(&g);
  if (me_root) guarded_free(&sg);
}

/* ---- Reduce, Scan, Exscan (MPI_SUM on ints: MPI wants one datatype on every rank) ---------- */

static void reduce_case(size_t n, int root, bool in_place, int tag) {
  char what[160];
  snprintf(what, sizeof what, "reduce %zu ints to root %d%s (call %d)", n, root,
           in_place ? ", in place" : "", tag);
  const bool me_root = rank == root, ip = in_place && me_root;
  guarded_t g = {0};
  int* rbuf = me_root ? int_recv(&g, n, ip, rank, tag) : NULL;
  int* sbuf = int_send(n, ip, rank, tag);
  int rc =
      MPI_Reduce(ip ? MPI_IN_PLACE : sbuf, rbuf, (int)n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc) && me_root) {
    check_sum(rbuf, n, nranks, tag, what);
    guarded_untouched(&g, 0, n * sizeof(int), what);
  }
  free(sbuf);
  if (me_root) guarded_free(&g);
}

/* ---- Alltoall (layouts differ by rank; in place on every rank, as MPI requires) ------------ */

static void alltoall_case(size_t ints, bool in_place, int v) {
  const layout_t* l = fam[(rank + v) % 4];
  char what[160];
  snprintf(what, sizeof what, "alltoall %zu ints per pair, %s here%s (rotation %d)", ints, l->name,
           in_place ? ", in place" : "", v);
  const size_t p = (size_t)nranks, count = ints / (size_t)l->ints;
  const size_t ext = count * (size_t)l->extent;
  guarded_t g;
  unsigned char* rbuf = guarded_alloc(&g, layout_span(l, p * count));
  unsigned char* sbuf = NULL;
  unsigned char* in = rbuf;
  if (!in_place) in = sbuf = calloc(1, layout_span(l, p * count) + 1);
  for (int j = 0; j < nranks; ++j) layout_fill(l, in + (size_t)j * ext, count, rank, j);
  guarded_snapshot(&g);
  int rc = MPI_Alltoall(in_place ? MPI_IN_PLACE : sbuf, (int)count, l->type, rbuf, (int)count,
                        l->type, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    for (int i = 0; i < nranks; ++i) {
      char block[200];
      snprintf(block, sizeof block, "%s, block from rank %d", what, i);
      layout_check(l, rbuf + (size_t)i * ext, count, i, rank, block);
    }
    guarded_untouched(&g, 0, layout_span(l, p * count), what);
    layout_gaps_untouched(&g, 0, l, p * count, what);
  }
  free(sbuf);
  guarded_free(&g);
}

/* ---- Allgatherv (counts shared, so on the slots too; displacements and layouts rank-local) - */

/* Rank r contributes (r % 3) * ints ints (some none); this rank receives in layout fam[(rank + v)
 * % 4], its blocks packed or one element apart depending on the rank. */
static void allgatherv_case(size_t ints, bool in_place, int v) {
  const layout_t* l = fam[(rank + v) % 4];
  const bool gaps = 1 == (rank + v) % 2;
  char what[200];
  snprintf(what, sizeof what, "allgatherv %zu ints per unit, %s here, blocks %s%s (rotation %d)",
           ints, l->name, gaps ? "apart" : "packed", in_place ? ", in place" : "", v);
  const size_t p = (size_t)nranks;
  int* counts = malloc(p * sizeof *counts);
  int* displs = malloc(p * sizeof *displs);
  size_t elems = 0;
  for (size_t r = 0; r < p; ++r) {
    counts[r] = (int)((r % 3) * ints / (size_t)l->ints);
    displs[r] = (int)elems;
    elems += (size_t)counts[r] + (gaps ? 1 : 0);
  }
  guarded_t g;
  unsigned char* rbuf = guarded_alloc(&g, layout_span(l, elems));
  const size_t mine = (size_t)counts[rank];
  unsigned char* own = rbuf + (size_t)displs[rank] * (size_t)l->extent;
  void* sbuf = NULL;
  if (in_place) {
    layout_fill(l, own, mine, rank, v);
  } else {
    sbuf = calloc(1, layout_span(l, mine) + 1);
    layout_fill(l, sbuf, mine, rank, v);
  }
  guarded_snapshot(&g);
  int rc = MPI_Allgatherv(in_place ? MPI_IN_PLACE : sbuf, (int)mine, l->type, rbuf, counts, displs,
                          l->type, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    for (int r = 0; r < nranks; ++r) {
      char block[240];
      snprintf(block, sizeof block, "%s, block of rank %d", what, r);
      layout_check(l, rbuf + (size_t)displs[r] * (size_t)l->extent, (size_t)counts[r], r, v, block);
      /* nothing but the blocks is written (the gaps between them included) */
    }
    guarded_untouched(&g, 0, layout_span(l, elems), what);
    for (int r = 0; r < nranks; ++r)
      layout_gaps_untouched(&g, (size_t)displs[r] * (size_t)l->extent, l, (size_t)counts[r], what);
  }
  free(counts);
  free(displs);
  free(sbuf);
  guarded_free(&g);
}

/* ---- Erroneous: the root's own block is 2 ints to send, 1 to receive ----------------------- */

static void root_truncation(void) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  const int root = nranks - 1;
  int mine[2] = {rank * 10 + 1, rank * 10 + 2};
  int* all = calloc((size_t)nranks + 1, sizeof(int));
  for (int r = 0; r < nranks; ++r) all[r] = -1;
  int rc = MPI_Gather(mine, rank == root ? 2 : 1, MPI_INT, all, 1, MPI_INT, root, c);
  int cls = MPI_SUCCESS;
  MPI_Error_class(rc, &cls);
  check((rank == root ? MPI_ERR_TRUNCATE : MPI_SUCCESS) == cls,
        "gather, root sending itself 2 ints for 1: error class %d", cls);
  if (rank == root)
    for (int r = 0; r < root; ++r)
      check(all[r] == r * 10 + 1, "gather with a truncated root: block of rank %d is %d", r,
            all[r]);
  MPI_Comm_free(&c);
  free(all);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  layouts_init();
  layouts_int_family(fam);
  /* ints per rank (multiples of 4, the largest ints per element): small ones on the slots, the
   * last beyond them (the general path) */
  const size_t sizes[] = {4, 8, 36, 16384};
  const size_t nsizes = sizeof sizes / sizeof sizes[0];
  for (size_t si = 0; si < nsizes; ++si) {
    for (int root = 0; root < nranks; ++root) {
      for (int ip = 0; ip < 2; ++ip) {
        reduce_case(sizes[si], root, 1 == ip, 0);
        for (int mode = 0; mode < NUM_MODES; ++mode) {
          for (int v = 0; v < (ALL_INT == mode ? 1 : 3); ++v) {
            gather_case(sizes[si], root, 1 == ip, mode, v, 0);
            scatter_case(sizes[si], root, 1 == ip, mode, v, 0);
          }
        }
      }
    }
    for (int v = 0; v < 4; ++v)
      for (int ip = 0; ip < 2; ++ip) {
        alltoall_case(sizes[si], 1 == ip, v);
        allgatherv_case(sizes[si], 1 == ip, v);
      }
    const unsigned every = (1u << nranks) - 1;
    const unsigned masks[] = {0, every, 0x5555u & every, 0xaaaau & every, 1u};
    for (size_t k = 0; k < sizeof masks / sizeof masks[0]; ++k) {
      scan_case(rank, false, sizes[si], masks[k], 0);
      scan_case(rank, true, sizes[si], masks[k], 0);
    }
  }
  /* Back to back, nothing in between: the root, the collective, in place and the layout change
   * from call to call, so that a rank running ahead meets a different shape on the slots. */
  for (int k = 0; k < 60; ++k) {
    const int root = k % nranks;
    const bool ip = 0 != (k / 3) % 2;
    const size_t ints = 4 * (size_t)(1 + k % 3);
    switch (k % 5) {
      case 0:
        reduce_case(ints, root, ip, k);
        break;
      case 1:
        gather_case(ints, root, ip, k % NUM_MODES, k % 3, k);
        break;
      case 2:
        scatter_case(ints, root, ip, k % NUM_MODES, k % 3, k);
        break;
      case 3:
        scan_case(rank, k % 2, ints, (unsigned)k & ((1u << nranks) - 1), k);
        allgatherv_case(ints, ip, k % 4);
        break;
      default:
        alltoall_case(ints, ip, k % 4);
        break;
    }
  }
  root_truncation();
  layouts_free();
  return check_finish("slots_rooted");
}
