/*
 * bcast_post.c - blocking MPI_Bcast as one post on the shared-memory slots (fullmesh_oneshot at
 * more than two ranks, the model's choice at every size on one server): every root, sizes on both
 * sides of a slot (16 KiB at more than two ranks: inline below, a block or a stream above), a
 * derived, non-contiguous type at the root only, at the non-roots only or everywhere (equal
 * signatures), calls back to back with the root changing from call to call, so that a fast rank
 * starts call k+1 while a slow one still reads call k (the writer reuses a slot only when every
 * reader released it). Each rank checks its buffer against the root's pattern computed here, the
 * root that its buffer is unchanged, everyone that guard zones and a layout's gaps are.
 */
#include <stdlib.h>

#include "../mpi_check.h"
#include "../mpi_layouts.h"

static int rank, nranks;
/* The int family of mpi_layouts.h: int, vector (2 ints, gaps), indexed (4 ints, gaps), shifted. */
static const layout_t* fam[4];

enum { ALL_INT, ROOT_DERIVED, OTHERS_DERIVED, ALL_DERIVED, NUM_MODES };
static const char* const mode_names[] = {"ints everywhere", "derived at the root only",
                                         "derived except at the root", "derived everywhere"};

static const layout_t* layout_of(int mode, int r, int root, int v) {
  bool derived = ALL_DERIVED == mode || (ROOT_DERIVED == mode && r == root) ||
                 (OTHERS_DERIVED == mode && r != root);
  return derived ? fam[1 + (v + r) % 3] : fam[0];
}

/* `ints` ints (a multiple of 4, so every layout of the family carries them whole). */
static void bcast_case(size_t ints, int root, int mode, int v, int tag) {
  const layout_t* l = layout_of(mode, rank, root, v);
  char what[200];
  snprintf(what, sizeof what, "bcast %zu ints from root %d, %s (%s here, call %d)", ints, root,
           mode_names[mode], l->name, tag);
  const size_t count = ints / (size_t)l->ints;
  guarded_t g;
  unsigned char* buf = guarded_alloc(&g, layout_span(l, count));
  if (rank == root) layout_fill(l, buf, count, root, tag);
  guarded_snapshot(&g);
  int rc = MPI_Bcast(buf, (int)count, l->type, root, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc))
    layout_check_bcast(&g, l, count, root, tag, rank == root, what);
  guarded_free(&g);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  layouts_init();
  layouts_int_family(fam);
  /* 16 B, 1 KiB, a slot less a line, a slot, a slot and a line, 2 slots and a bit, 256 KiB. */
  const size_t ints[] = {4, 256, 4080, 4096, 4112, 8212, 65536};
  const size_t nsizes = sizeof ints / sizeof ints[0];
  int tag = 0;
  for (size_t s = 0; s < nsizes; ++s)
    for (int mode = 0; mode < NUM_MODES; ++mode)
      for (int root = 0; root < nranks; ++root)
        bcast_case(ints[s], root, mode, (int)s + root, ++tag);
  /* Back to back, no barrier between: sizes and roots changing from call to call. */
  for (int k = 0; k < 64; ++k) bcast_case(ints[(size_t)k % nsizes], k % nranks, ALL_INT, 0, ++tag);
  layouts_free();
  return check_finish("bcast_post");
}
