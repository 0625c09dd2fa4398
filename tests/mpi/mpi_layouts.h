/*
 * mpi_layouts.h - data-moving collectives checked at the level of packed bytes, with every layout
 * a test uses: contiguous, vector, indexed, shifted lower bound, struct with gaps.
 *
 * The contents of a block are a byte stream the test defines (stream_byte: who sent it, which
 * block, which byte). Send buffers are filled by MPI_Unpack of the stream into the layout; a
 * receive buffer is read back with MPI_Pack and compared with the stream the test expects. Bytes
 * of a layout's gaps must keep what they held before the call (layout_gaps_untouched), as must the
 * guard zones around the buffer (mpi_check.h). Pack and unpack are Open MPI's datatype engine,
 * never the collective under test.
 */
#ifndef TESTS_MPI_MPI_LAYOUTS_H
#define TESTS_MPI_MPI_LAYOUTS_H

#include <stddef.h>

#include "mpi_check.h"

typedef struct layout {
  const char* name;
  MPI_Datatype type;
  int ints; /* MPI_INT elements per element of type (0: not of the int family) */
  size_t size;
  MPI_Aint extent, lb;
} layout_t;

enum { MAX_LAYOUTS = 8 };
static layout_t layouts[MAX_LAYOUTS];
static int num_layouts;

static inline void layout_add(const char* name, MPI_Datatype t, int ints, bool commit) {
  if (commit) MPI_Type_commit(&t);
  layout_t* l = &layouts[num_layouts++];
  l->name = name;
  l->type = t;
  l->ints = ints;
  int size = 0;
  MPI_Type_size(t, &size);
  l->size = (size_t)size;
  MPI_Type_get_extent(t, &l->lb, &l->extent);
}

/* The layouts of the int family (one signature: n ints) and a struct with gaps of its own. */
static inline void layouts_init(void) {
  layout_add("int", MPI_INT, 1, false);
  MPI_Datatype v, x, s, g;
  MPI_Type_vector(2, 1, 3, MPI_INT, &v); /* 2 ints, 8-byte gaps between and after */
  layout_add("vector", v, 2, true);
  int lens[3] = {1, 2, 1}, disps[3] = {0, 3, 7};
  MPI_Type_indexed(3, lens, disps, MPI_INT, &x); /* 4 ints over 32 bytes */
  layout_add("indexed", x, 4, true);
  int one = 4;
  MPI_Aint at = 12;
  MPI_Datatype ints = MPI_INT;
  MPI_Type_create_struct(1, &one, &at, &ints, &s); /* contiguous, but 12 bytes from the pointer */
  layout_add("shifted", s, 4, true);
  /* struct { char c; (3) int i; double d; short h; (6) }: gaps inside and at the end */
  int blens[4] = {1, 1, 1, 1};
  MPI_Aint bdisp[4] = {0, 4, 8, 16};
  MPI_Datatype btypes[4] = {MPI_CHAR, MPI_INT, MPI_DOUBLE, MPI_SHORT};
  MPI_Datatype raw;
  MPI_Type_create_struct(4, blens, bdisp, btypes, &raw);
  MPI_Type_create_resized(raw, 0, 24, &g);
  MPI_Type_free(&raw);
  layout_add("struct", g, 0, true);
}

/* The int family after layouts_init(), in this order: int, vector (2 ints, gaps), indexed (4
 * ints, gaps), shifted (4 ints, contiguous 12 bytes from the pointer). Aborts if one is missing. */
static inline void layouts_int_family(const layout_t* fam[4]) {
  static const char* const names[4] = {"int", "vector", "indexed", "shifted"};
  int found = 0;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < num_layouts; ++i)
      if (0 == strcmp(layouts[i].name, names[k])) fam[found++] = &layouts[i];
  if (4 != found) {
    fprintf(stderr, "mpi_layouts.h lacks the int family\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

static inline void layouts_free(void) {
  for (int i = 0; i < num_layouts; ++i) {
    if (MPI_INT != layouts[i].type) MPI_Type_free(&layouts[i].type);
  }
  num_layouts = 0;
}

/* Bytes a buffer of `count` elements spans from its pointer (the lower bound is >= 0 here). */
static inline size_t layout_span(const layout_t* l, size_t count) {
  return 0 == count ? 0 : (size_t)l->lb + count * (size_t)l->extent;
}

/* Byte k of the block that rank `from` sends as block `block`. */
static inline unsigned char stream_byte(int from, int block, size_t k) {
  return (unsigned char)(from * 131 + block * 29 + (int)(k % 251) * 7 + 1);
}

static inline void stream_fill(unsigned char* s, size_t bytes, int from, int block) {
  for (size_t k = 0; k < bytes; ++k) s[k] = stream_byte(from, block, k);
}

/* Writes `bytes` of stream into count x l at buf through MPI_Unpack (data bytes only). */
static inline void layout_write(const layout_t* l, void* buf, size_t count, const void* stream) {
  if (0 == count) return;
  int pos = 0;
  MPI_Unpack(stream, (int)(count * l->size), &pos, buf, (int)count, l->type, MPI_COMM_SELF);
}

static inline void layout_read(const layout_t* l, const void* buf, size_t count, void* stream) {
  if (0 == count) return;
  int pos = 0;
  MPI_Pack(buf, (int)count, l->type, stream, (int)(count * l->size), &pos, MPI_COMM_SELF);
}

/* Fills count x l at buf with block `block` of rank `from`, starting `skip` bytes into it. */
static inline void layout_fill(const layout_t* l, void* buf, size_t count, int from, int block) {
  size_t bytes = count * l->size;
  unsigned char* s = malloc(bytes + 1);
  stream_fill(s, bytes, from, block);
  layout_write(l, buf, count, s);
  free(s);
}

/* Checks count x l at buf against block `block` of rank `from`. */
static inline bool layout_check(const layout_t* l, const void* buf, size_t count, int from,
                                int block, const char* what) {
  size_t bytes = count * l->size;
  unsigned char* s = malloc(bytes + 1);
  layout_read(l, buf, count, s);
  bool ok = true;
  for (size_t k = 0; k < bytes; ++k) {
    if (s[k] != stream_byte(from, block, k)) {
      ok = check(false, "%s: %s byte %zu of the block from rank %d is %u, expected %u", what,
                 l->name, k, from, s[k], stream_byte(from, block, k));
      break;
    }
  }
  free(s);
  return ok && check(true, "%s", what);
}

/* Every byte of g's body [first, first + span) that is not a data byte of count x l at
 * body + first must equal the snapshot: a collective never writes a layout's gaps. */
static inline bool layout_gaps_untouched(const guarded_t* g, size_t first, const layout_t* l,
                                         size_t count, const char* what) {
  size_t span = layout_span(l, count);
  if (0 == span) return true;
  unsigned char* mask = calloc(span, 1);
  unsigned char* ones = malloc(count * l->size + 1);
  memset(ones, 0xff, count * l->size);
  layout_write(l, mask, count, ones);
  bool ok = true;
  for (size_t k = 0; k < span && ok; ++k) {
    size_t at = GUARD_ZONE + first + k;
    if (0 == mask[k] && g->area[at] != g->snapshot[at]) {
      ok = check(false, "%s: wrote gap byte %zu of the %s layout", what, first + k, l->name);
    }
  }
  free(mask);
  free(ones);
  return ok;
}

/* Marks (nonzero) in mask the data bytes of count x l at mask + first. */
static inline void layout_mark(unsigned char* mask, size_t first, const layout_t* l, size_t count) {
  if (0 == count) return;
  unsigned char* ones = malloc(count * l->size + 1);
  memset(ones, 0xff, count * l->size);
  layout_write(l, mask + first, count, ones);
  free(ones);
}

/* Every byte of g's body not marked in mask (body-sized) must equal the snapshot. */
static inline bool masked_untouched(const guarded_t* g, const unsigned char* mask,
                                    const char* what) {
  for (size_t k = 0; k < g->body; ++k) {
    size_t at = GUARD_ZONE + k;
    if (0 == mask[k] && g->area[at] != g->snapshot[at])
      return check(false, "%s: wrote byte %zu, which is no block's data", what, k);
  }
  return true;
}

/* The result of a Bcast of count x l at g's body, whose root filled it with block `block` of rank
 * `root` before the call: every rank holds that block; the root's buffer is input only (nothing
 * written), elsewhere nothing beyond the span nor any gap of the layout is written. */
static inline void layout_check_bcast(const guarded_t* g, const layout_t* l, size_t count, int root,
                                      int block, bool is_root, const char* what) {
  layout_check(l, (const unsigned char*)g->area + GUARD_ZONE, count, root, block, what);
  if (is_root) {
    guarded_untouched(g, 0, 0, what);
  } else {
    guarded_untouched(g, 0, layout_span(l, count), what);
    layout_gaps_untouched(g, 0, l, count, what);
  }
}

#endif /* TESTS_MPI_MPI_LAYOUTS_H */
