/*
 * vforms.c - the V forms with rank-local counts (MPI_Gatherv, MPI_Scatterv, MPI_Alltoallv,
 * MPI_Alltoallw), reductions that need staging (MAXLOC/MINLOC on every pair type, a
 * non-commutative user op on a non-contiguous type) and calls that move nothing, each blocking,
 * nonblocking (MPI_I*) and persistent (MPIX_*_init, started twice with new contents).
 *
 * V forms: every root, counts with zeros among others, uneven, all zero; displacements packed or
 * reversed with gaps between blocks; every layout of mpi_layouts.h (send and receive layouts
 * mixed within the int family); per-peer types for Alltoallw (int family and a struct with gaps,
 * byte displacements); in place where MPI allows it (Gatherv/Scatterv root, Alltoallv/w with
 * symmetric counts). Guard zones around every receive buffer, the space between blocks and the
 * gaps of derived types stay untouched; nothing is written where the standard names no output.
 * Reductions are checked against the rank-order result computed here.
 *
 * Options: --quick (fewer layouts, roots and patterns).
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "mpi_check.h"
#include "mpi_layouts.h"

#include <mpi-ext.h>

static int rank, nranks;
static bool quick;

typedef enum { BLOCKING = 0, NONBLOCKING, PERSISTENT } form_t;
static const char* const form_names[] = {"blocking", "nonblocking", "persistent"};
enum { ROUNDS_PERSISTENT = 2, MAX_RANKS = 64 };

static int rounds(form_t f) {
  return PERSISTENT == f ? ROUNDS_PERSISTENT : 1;
}

/* Completes one round of a call posted as `req` (nonblocking) or made (persistent: started once
 * per round, freed by release() after the last). form_t's values are mpi_check.h's modes. */
static int complete(int rc, form_t f, MPI_Request* req) {
  return check_complete_with(rc, req, (int)f, 1, true);
}

static void release(form_t f, MPI_Request* req) {
  if (PERSISTENT == f) MPI_Request_free(req);
}

static bool root_wanted(int root) {
  return !quick || 0 == root || nranks - 1 == root || nranks / 2 == root;
}

/* MPI_INT elements rank r contributes (rooted forms), by pattern: zeros among others, uneven,
 * all zero. Multiples of 4: every int-family layout divides them. */
static size_t block_ints(int pattern, int r) {
  switch (pattern) {
    case 0:
      return (size_t)(r % 3) * 4;
    case 1:
      return (size_t)(r * 7 % 5 + 1) * 12;
    default:
      return 0;
  }
}

/* MPI_INT elements rank i sends rank j (all-to-all forms); patterns 0 and 2 are symmetric, as
 * in place needs (the receive layout is the send layout). */
static size_t pair_ints(int pattern, int i, int j) {
  switch (pattern) {
    case 0:
      return (size_t)((i + j) % 3) * 4;
    case 1:
      return (size_t)((i * 5 + j * 3) % 4) * 8;
    default:
      return 0;
  }
}

static int per_elem(const layout_t* l) {
  return 0 == l->ints ? 1 : l->ints;
}

/* Places p blocks of counts[r] elements (extent ext): packed, or reversed (block r after block
 * r+1) with one element of space between blocks. Returns the span in elements. */
static size_t place(const int* counts, int* displs, int p, bool reversed) {
  size_t at = 0;
  for (int k = 0; k < p; ++k) {
    int r = reversed ? p - 1 - k : k;
    displs[r] = (int)at;
    at += (size_t)counts[r] + (reversed ? 1 : 0);
  }
  return at;
}

/* Sizes compatible within the family; the struct layout pairs only with itself. */
static bool compatible(const layout_t* a, const layout_t* b) {
  return (0 == a->ints) == (0 == b->ints) && (0 != a->ints || a == b);
}

/* Checks g's body: every block's data, then nothing else written (guards, spaces, gaps). */
static void check_blocks(const guarded_t* g, const layout_t* l, const int* counts,
                         const int* displs, int p, int from_is_rank, int fixed, int block_base,
                         const char* what) {
  const size_t ext = (size_t)l->extent;
  for (int r = 0; r < p; ++r) {
    int from = from_is_rank ? r : fixed;
    int block = block_base + (from_is_rank ? fixed : r);
    if (!layout_check(l, g->area + GUARD_ZONE + (size_t)displs[r] * ext, (size_t)counts[r], from,
                      block, what))
      break;
  }
  unsigned char* mask = calloc(g->body + 1, 1);
  for (int r = 0; r < p; ++r) layout_mark(mask, (size_t)displs[r] * ext, l, (size_t)counts[r]);
  masked_untouched(g, mask, what);
  guarded_untouched(g, 0, g->body, what);
  free(mask);
}

/* ---- Gatherv -------------------------------------------------------------------------------- */

static void gatherv_case(const layout_t* sl, const layout_t* rl, int pattern, bool reversed,
                         int root, bool in_place, form_t f) {
  if (!compatible(sl, rl) || (in_place && sl != rl)) return;
  int counts[MAX_RANKS], displs[MAX_RANKS];
  for (int r = 0; r < nranks; ++r) counts[r] = (int)(block_ints(pattern, r) / (size_t)per_elem(rl));
  size_t span = place(counts, displs, nranks, reversed);
  size_t scount = block_ints(pattern, rank) / (size_t)per_elem(sl);
  bool is_root = rank == root;
  char what[200];
  snprintf(what, sizeof what, "gatherv %s -> %s pattern %d%s root %d%s %s", sl->name, rl->name,
           pattern, reversed ? " reversed with gaps" : "", root, in_place ? " in place" : "",
           form_names[f]);
  guarded_t g;
  /* non-roots get a receive buffer too, which must stay untouched */
  unsigned char* recv = guarded_alloc(&g, is_root ? layout_span(rl, span) : 16);
  unsigned char* send = malloc(layout_span(sl, scount) + 1);
  const void* sbuf = in_place && is_root ? MPI_IN_PLACE : send;
  MPI_Request req;
  int rc = MPI_SUCCESS;
  if (PERSISTENT == f)
    rc = MPIX_Gatherv_init(sbuf, (int)scount, sl->type, recv, counts, displs, rl->type, root,
                           MPI_COMM_WORLD, MPI_INFO_NULL, &req);
  for (int round = 0; round < rounds(f) && MPI_SUCCESS == rc; ++round) {
    if (in_place && is_root)
      layout_fill(rl, recv + (size_t)displs[root] * (size_t)rl->extent, (size_t)counts[root], root,
                  round);
    else
      layout_fill(sl, send, scount, rank, round);
    guarded_snapshot(&g);
    if (BLOCKING == f)
      rc = MPI_Gatherv(sbuf, (int)scount, sl->type, recv, counts, displs, rl->type, root,
                       MPI_COMM_WORLD);
    else if (NONBLOCKING == f)
      rc = MPI_Igatherv(sbuf, (int)scount, sl->type, recv, counts, displs, rl->type, root,
                        MPI_COMM_WORLD, &req);
    rc = complete(rc, f, &req);
    if (!check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) break;
    if (is_root)
      check_blocks(&g, rl, counts, displs, nranks, 1, 0, round, what);
    else
      guarded_untouched(&g, 0, 0, what);
  }
  if (MPI_SUCCESS == rc) release(f, &req);
  free(send);
  guarded_free(&g);
}

/* ---- Scatterv ------------------------------------------------------------------------------- */

static void scatterv_case(const layout_t* sl, const layout_t* rl, int pattern, bool reversed,
                          int root, bool in_place, form_t f) {
  if (!compatible(sl, rl) || (in_place && sl != rl)) return;
  int counts[MAX_RANKS], displs[MAX_RANKS];
  for (int r = 0; r < nranks; ++r) counts[r] = (int)(block_ints(pattern, r) / (size_t)per_elem(sl));
  size_t span = place(counts, displs, nranks, reversed);
  size_t rcount = block_ints(pattern, rank) / (size_t)per_elem(rl);
  bool is_root = rank == root;
  char what[200];
  snprintf(what, sizeof what, "scatterv %s -> %s pattern %d%s root %d%s %s", sl->name, rl->name,
           pattern, reversed ? " reversed with gaps" : "", root, in_place ? " in place" : "",
           form_names[f]);
  /* the root's send buffer is input only: guarded and checked untouched */
  guarded_t gs, gr;
  unsigned char* send = guarded_alloc(&gs, is_root ? layout_span(sl, span) : 0);
  unsigned char* recv = guarded_alloc(&gr, layout_span(rl, rcount));
  void* rbuf = in_place && is_root ? MPI_IN_PLACE : recv;
  MPI_Request req;
  int rc = MPI_SUCCESS;
  if (PERSISTENT == f)
    rc = MPIX_Scatterv_init(send, counts, displs, sl->type, rbuf, (int)rcount, rl->type, root,
                            MPI_COMM_WORLD, MPI_INFO_NULL, &req);
  for (int round = 0; round < rounds(f) && MPI_SUCCESS == rc; ++round) {
    if (is_root) {
      for (int r = 0; r < nranks; ++r)
        layout_fill(sl, send + (size_t)displs[r] * (size_t)sl->extent, (size_t)counts[r], root,
                    round * 16 + r);
    }
    guarded_snapshot(&gs);
    guarded_snapshot(&gr);
    if (BLOCKING == f)
      rc = MPI_Scatterv(send, counts, displs, sl->type, rbuf, (int)rcount, rl->type, root,
                        MPI_COMM_WORLD);
    else if (NONBLOCKING == f)
      rc = MPI_Iscatterv(send, counts, displs, sl->type, rbuf, (int)rcount, rl->type, root,
                         MPI_COMM_WORLD, &req);
    rc = complete(rc, f, &req);
    if (!check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) break;
    guarded_untouched(&gs, 0, 0, what);
    if (in_place && is_root) {
      guarded_untouched(&gr, 0, 0, what);
    } else {
      layout_check(rl, recv, rcount, root, round * 16 + rank, what);
      guarded_untouched(&gr, 0, layout_span(rl, rcount), what);
      layout_gaps_untouched(&gr, 0, rl, rcount, what);
    }
  }
  if (MPI_SUCCESS == rc) release(f, &req);
  guarded_free(&gs);
  guarded_free(&gr);
}

/* ---- Alltoallv ------------------------------------------------------------------------------ */

static void alltoallv_case(const layout_t* sl, const layout_t* rl, int pattern, bool reversed,
                           bool in_place, form_t f) {
  if (!compatible(sl, rl) || (in_place && (sl != rl || 1 == pattern))) return;
  int sc[MAX_RANKS], sd[MAX_RANKS], rc_[MAX_RANKS], rd[MAX_RANKS];
  for (int j = 0; j < nranks; ++j) {
    sc[j] = (int)(pair_ints(pattern, rank, j) / (size_t)per_elem(sl));
    rc_[j] = (int)(pair_ints(pattern, j, rank) / (size_t)per_elem(rl));
  }
  size_t sspan = place(sc, sd, nranks, reversed), rspan = place(rc_, rd, nranks, !reversed);
  char what[200];
  snprintf(what, sizeof what, "alltoallv %s -> %s pattern %d%s%s %s", sl->name, rl->name, pattern,
           reversed ? " send reversed with gaps" : " receive reversed with gaps",
           in_place ? " in place" : "", form_names[f]);
  guarded_t g;
  unsigned char* recv = guarded_alloc(&g, layout_span(rl, rspan));
  unsigned char* send = malloc(layout_span(sl, sspan) + 1);
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  MPI_Request req;
  int rc = MPI_SUCCESS;
  if (PERSISTENT == f)
    rc = MPIX_Alltoallv_init(sbuf, sc, sd, sl->type, recv, rc_, rd, rl->type, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &req);
  for (int round = 0; round < rounds(f) && MPI_SUCCESS == rc; ++round) {
    for (int j = 0; j < nranks; ++j) {
      if (in_place) /* the input in the receive layout */
        layout_fill(rl, recv + (size_t)rd[j] * (size_t)rl->extent, (size_t)rc_[j], rank,
                    round * 16 + j);
      else
        layout_fill(sl, send + (size_t)sd[j] * (size_t)sl->extent, (size_t)sc[j], rank,
                    round * 16 + j);
    }
    guarded_snapshot(&g);
    if (BLOCKING == f)
      rc = MPI_Alltoallv(sbuf, sc, sd, sl->type, recv, rc_, rd, rl->type, MPI_COMM_WORLD);
    else if (NONBLOCKING == f)
      rc = MPI_Ialltoallv(sbuf, sc, sd, sl->type, recv, rc_, rd, rl->type, MPI_COMM_WORLD, &req);
    rc = complete(rc, f, &req);
    if (!check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) break;
    check_blocks(&g, rl, rc_, rd, nranks, 1, rank, round * 16, what);
  }
  if (MPI_SUCCESS == rc) release(f, &req);
  free(send);
  guarded_free(&g);
}

/* ---- Alltoallw ------------------------------------------------------------------------------ */

/* The layout one side uses for the pair (i, j): the struct where both sides agree on it, else an
 * int-family layout each side picks for itself (any mix has the same signature). */
static const layout_t* pair_layout(int i, int j, int salt) {
  int lo = i < j ? i : j, hi = i < j ? j : i;
  if (3 == (lo + hi) % 4) return &layouts[num_layouts - 1];
  return &layouts[(i * 3 + j + salt) % (num_layouts - 1)];
}

static void alltoallw_case(int pattern, bool in_place, form_t f, int salt) {
  if (in_place && 1 == pattern) return;
  int sc[MAX_RANKS], sd[MAX_RANKS], rc_[MAX_RANKS], rd[MAX_RANKS];
  MPI_Datatype st[MAX_RANKS], rt[MAX_RANKS];
  const layout_t* sls[MAX_RANKS];
  const layout_t* rls[MAX_RANKS];
  /* byte displacements: send blocks reversed, receive blocks in order, 8 bytes between blocks */
  size_t sat = 0, rat = 0;
  for (int k = 0; k < nranks; ++k) {
    int j = nranks - 1 - k;
    /* in place: this rank's receive layout for j is its send layout for j */
    sls[j] = in_place ? pair_layout(j, rank, salt + 1) : pair_layout(rank, j, salt);
    sc[j] = (int)(pair_ints(pattern, rank, j) / (size_t)per_elem(sls[j]));
    st[j] = sls[j]->type;
    sd[j] = (int)sat;
    sat += layout_span(sls[j], (size_t)sc[j]) + 8;
  }
  for (int j = 0; j < nranks; ++j) {
    rls[j] = pair_layout(j, rank, salt + 1);
    rc_[j] = (int)(pair_ints(pattern, j, rank) / (size_t)per_elem(rls[j]));
    rt[j] = rls[j]->type;
    rd[j] = (int)rat;
    rat += layout_span(rls[j], (size_t)rc_[j]) + 8;
  }
  if (in_place) { /* symmetric counts: send and receive are the same per-peer blocks */
    for (int j = 0; j < nranks; ++j) check(sc[j] == rc_[j], "alltoallw in-place test set-up");
  }
  char what[160];
  snprintf(what, sizeof what, "alltoallw per-peer types pattern %d salt %d%s %s", pattern, salt,
           in_place ? " in place" : "", form_names[f]);
  guarded_t g;
  unsigned char* recv = guarded_alloc(&g, rat);
  unsigned char* send = malloc(sat + 1);
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  MPI_Request req;
  int rc = MPI_SUCCESS;
  if (PERSISTENT == f)
    rc = MPIX_Alltoallw_init(sbuf, sc, sd, st, recv, rc_, rd, rt, MPI_COMM_WORLD, MPI_INFO_NULL,
                             &req);
  for (int round = 0; round < rounds(f) && MPI_SUCCESS == rc; ++round) {
    for (int j = 0; j < nranks; ++j) {
      if (in_place)
        layout_fill(rls[j], recv + rd[j], (size_t)rc_[j], rank, round * 16 + j);
      else
        layout_fill(sls[j], send + sd[j], (size_t)sc[j], rank, round * 16 + j);
    }
    guarded_snapshot(&g);
    if (BLOCKING == f)
      rc = MPI_Alltoallw(sbuf, sc, sd, st, recv, rc_, rd, rt, MPI_COMM_WORLD);
    else if (NONBLOCKING == f)
      rc = MPI_Ialltoallw(sbuf, sc, sd, st, recv, rc_, rd, rt, MPI_COMM_WORLD, &req);
    rc = complete(rc, f, &req);
    if (!check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) break;
    unsigned char* mask = calloc(g.body + 1, 1);
    for (int j = 0; j < nranks; ++j) {
      layout_check(rls[j], recv + rd[j], (size_t)rc_[j], j, round * 16 + rank, what);
      layout_mark(mask, (size_t)rd[j], rls[j], (size_t)rc_[j]);
    }
    masked_untouched(&g, mask, what);
    guarded_untouched(&g, 0, g.body, what);
    free(mask);
  }
  if (MPI_SUCCESS == rc) release(f, &req);
  free(send);
  guarded_free(&g);
}

/* ---- MAXLOC / MINLOC on the pair types ------------------------------------------------------ */

typedef struct {
  const char* name;
  MPI_Datatype type;
  size_t extent;   /* sizeof the C struct */
  size_t index_at; /* offset of the int */
  void (*set)(void* e, int v);
  int (*get)(const void* e);
} pair_t;

#define PAIR(NAME, T, MPI_T)                    \
  typedef struct {                              \
    T v;                                        \
    int i;                                      \
  } pair_##NAME##_t;                            \
  static void set_##NAME(void* e, int v) {      \
    ((pair_##NAME##_t*)e)->v = (T)v;            \
  }                                             \
  static int get_##NAME(const void* e) {        \
    return (int)((const pair_##NAME##_t*)e)->v; \
  }
PAIR(double, double, MPI_DOUBLE_INT)
PAIR(float, float, MPI_FLOAT_INT)
PAIR(long, long, MPI_LONG_INT)
PAIR(int, int, MPI_2INT)
PAIR(short, short, MPI_SHORT_INT)
PAIR(ldouble, long double, MPI_LONG_DOUBLE_INT)
#define PAIR_ENTRY(NAME, MPI_T) \
  { #MPI_T, MPI_T, sizeof(pair_##NAME##_t), offsetof(pair_##NAME##_t, i), set_##NAME, get_##NAME }

static const pair_t pairs[] = {
    PAIR_ENTRY(double, MPI_DOUBLE_INT), PAIR_ENTRY(float, MPI_FLOAT_INT),
    PAIR_ENTRY(long, MPI_LONG_INT),     PAIR_ENTRY(int, MPI_2INT),
    PAIR_ENTRY(short, MPI_SHORT_INT),   PAIR_ENTRY(ldouble, MPI_LONG_DOUBLE_INT),
};

/* Ties are frequent on purpose: the lower index wins. */
static int loc_value(int r, size_t k) {
  return (int)((r * 7 + (int)k * 3) % 5) - 2;
}

static int pair_index(const pair_t* t, const void* e) {
  int i;
  memcpy(&i, (const char*)e + t->index_at, sizeof i);
  return i;
}

static void pair_fill(const pair_t* t, void* buf, size_t count, int r) {
  for (size_t k = 0; k < count; ++k) {
    char* e = (char*)buf + k * t->extent;
    t->set(e, loc_value(r, k));
    int i = r * 10 + (int)(k % 7);
    memcpy(e + t->index_at, &i, sizeof i);
  }
}

/* The fold over ranks [lo, hi) of element k, in rank order. */
static void loc_expect(bool is_max, size_t k, int lo, int hi, int* v, int* i) {
  *v = loc_value(lo, k);
  *i = lo * 10 + (int)(k % 7);
  for (int r = lo + 1; r < hi; ++r) {
    int rv = loc_value(r, k), ri = r * 10 + (int)(k % 7);
    bool better = is_max ? rv > *v : rv < *v;
    if (better || (rv == *v && ri < *i)) {
      *v = rv;
      *i = ri;
    }
  }
}

static layout_t pair_layout_of(const pair_t* t) {
  layout_t l = {t->name, t->type, 0, 0, 0, 0};
  int size = 0;
  MPI_Type_size(t->type, &size);
  l.size = (size_t)size;
  MPI_Type_get_extent(t->type, &l.lb, &l.extent);
  return l;
}

typedef enum { R_ALLREDUCE = 0, R_REDUCE, R_SCAN, R_EXSCAN, R_RSB, R_RS, R_COUNT } red_t;
static const char* const red_names[] = {
    "allreduce", "reduce", "scan", "exscan", "reduce_scatter_block", "reduce_scatter"};

/* Reduce_scatter's counts: rank 0 gets nothing, the others 1 to 3 elements of `count`. */
static int rs_count(int r, size_t count) {
  return (int)((size_t)(r % 3) * count / 2);
}

/* The part of the reduced vector rank `rank` receives, and the vector's length. */
typedef struct {
  size_t mine, first, in_elems;
  int rcounts[MAX_RANKS];
} red_shape_t;

static red_shape_t red_shape(red_t which, size_t count) {
  red_shape_t sh = {count, 0, count, {0}};
  if (R_RSB == which) {
    sh.first = count * (size_t)rank;
    sh.in_elems = count * (size_t)nranks;
  } else if (R_RS == which) {
    sh.in_elems = 0;
    for (int r = 0; r < nranks; ++r) {
      sh.rcounts[r] = rs_count(r, count);
      if (r < rank) sh.first += (size_t)sh.rcounts[r];
      sh.in_elems += (size_t)sh.rcounts[r];
    }
    sh.mine = (size_t)sh.rcounts[rank];
  }
  return sh;
}

/* Posts one reduction of `count` elements (per rank for reduce_scatter_block, rcounts for
 * reduce_scatter) in form f (persistent: the init; complete() starts it). */
static int post_reduction(red_t which, form_t f, const void* sbuf, void* rbuf, int count,
                          const int* rcounts, MPI_Datatype type, MPI_Op op, int root,
                          MPI_Request* req) {
  MPI_Comm c = MPI_COMM_WORLD;
  switch (which) {
    case R_ALLREDUCE:
      return BLOCKING == f ? MPI_Allreduce(sbuf, rbuf, count, type, op, c)
             : NONBLOCKING == f
                 ? MPI_Iallreduce(sbuf, rbuf, count, type, op, c, req)
                 : MPIX_Allreduce_init(sbuf, rbuf, count, type, op, c, MPI_INFO_NULL, req);
    case R_REDUCE:
      return BLOCKING == f ? MPI_Reduce(sbuf, rbuf, count, type, op, root, c)
             : NONBLOCKING == f
                 ? MPI_Ireduce(sbuf, rbuf, count, type, op, root, c, req)
                 : MPIX_Reduce_init(sbuf, rbuf, count, type, op, root, c, MPI_INFO_NULL, req);
    case R_SCAN:
      return BLOCKING == f ? MPI_Scan(sbuf, rbuf, count, type, op, c)
             : NONBLOCKING == f
                 ? MPI_Iscan(sbuf, rbuf, count, type, op, c, req)
                 : MPIX_Scan_init(sbuf, rbuf, count, type, op, c, MPI_INFO_NULL, req);
    case R_EXSCAN:
      return BLOCKING == f ? MPI_Exscan(sbuf, rbuf, count, type, op, c)
             : NONBLOCKING == f
                 ? MPI_Iexscan(sbuf, rbuf, count, type, op, c, req)
                 : MPIX_Exscan_init(sbuf, rbuf, count, type, op, c, MPI_INFO_NULL, req);
    case R_RS:
      return BLOCKING == f ? MPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, c)
             : NONBLOCKING == f
                 ? MPI_Ireduce_scatter(sbuf, rbuf, rcounts, type, op, c, req)
                 : MPIX_Reduce_scatter_init(sbuf, rbuf, rcounts, type, op, c, MPI_INFO_NULL, req);
    default:
      return BLOCKING == f      ? MPI_Reduce_scatter_block(sbuf, rbuf, count, type, op, c)
             : NONBLOCKING == f ? MPI_Ireduce_scatter_block(sbuf, rbuf, count, type, op, c, req)
                                : MPIX_Reduce_scatter_block_init(sbuf, rbuf, count, type, op, c,
                                                                 MPI_INFO_NULL, req);
  }
}

/* Which ranks' fold rank `rank` receives, and whether it receives anything. */
static bool result_range(red_t which, int root, int* lo, int* hi) {
  *lo = 0;
  *hi = nranks;
  if (R_REDUCE == which) return rank == root;
  if (R_SCAN == which) *hi = rank + 1;
  if (R_EXSCAN == which) *hi = rank;
  return !(R_EXSCAN == which && 0 == rank);
}

static void loc_case(const pair_t* t, bool is_max, red_t which, int root, form_t f) {
  const red_shape_t sh = red_shape(which, 5);
  const size_t count = sh.mine, in_elems = sh.in_elems;
  char what[160];
  snprintf(what, sizeof what, "%s %s on %s root %d %s", red_names[which],
           is_max ? "MAXLOC" : "MINLOC", t->name, root, form_names[f]);
  layout_t l = pair_layout_of(t);
  guarded_t g;
  unsigned char* recv = guarded_alloc(&g, count * t->extent);
  unsigned char* send = malloc(in_elems * t->extent);
  pair_fill(t, send, in_elems, rank);
  int lo, hi;
  bool gets = result_range(which, root, &lo, &hi);
  guarded_snapshot(&g);
  MPI_Request req;
  int rc = post_reduction(which, f, send, recv, (int)count, sh.rcounts, t->type,
                          is_max ? MPI_MAXLOC : MPI_MINLOC, root, &req);
  rc = complete(rc, f, &req);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    if (gets) {
      for (size_t k = 0; k < count; ++k) {
        /* reduce_scatter_block: this rank's block of the whole vector */
        size_t at = sh.first + k;
        int v, i;
        loc_expect(is_max, at, lo, hi, &v, &i);
        const void* e = recv + k * t->extent;
        if (!check(t->get(e) == v && pair_index(t, e) == i,
                   "%s: element %zu is (%d, %d), expected (%d, %d)", what, k, t->get(e),
                   pair_index(t, e), v, i))
          break;
      }
      guarded_untouched(&g, 0, count * t->extent, what);
      layout_gaps_untouched(&g, 0, &l, count, what); /* the padding of the pair */
    } else {
      guarded_untouched(&g, 0, 0, what);
    }
  }
  release(f, &req);
  free(send);
  guarded_free(&g);
}

/* ---- A non-commutative user op on a non-contiguous type ------------------------------------ */

/* The element: two ints three apart (MPI_Type_vector(2, 1, 3)): an affine map x -> a x + b mod
 * M, a at int 0 and b at int 3; gaps in between and after. Composition in rank order is
 * associative and not commutative. */
enum { AFFINE_M = 9973, AFFINE_STRIDE = 4 /* ints per extent */ };
static MPI_Datatype affine_type;

/* inout = in (lower ranks, applied first) then inout. */
static void affine_compose(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  const int* a = in;
  int* b = inout;
  for (int k = 0; k < *len; ++k) {
    const int* x = a + k * AFFINE_STRIDE;
    int* y = b + k * AFFINE_STRIDE;
    long long ya = y[0], yb = y[3];
    y[0] = (int)((long long)x[0] * ya % AFFINE_M);
    y[3] = (int)((ya * x[3] + yb) % AFFINE_M);
  }
}

static void affine_of(int r, size_t k, long long* a, long long* b) {
  *a = 2 + (r * 3 + (int)k) % 7;
  *b = r * 11 + (int)k + 1;
}

static void affine_case(red_t which, int root, form_t f, MPI_Op op) {
  const red_shape_t sh = red_shape(which, 6);
  const size_t count = sh.mine, in_elems = sh.in_elems;
  char what[160];
  snprintf(what, sizeof what, "%s non-commutative user op on a vector root %d %s", red_names[which],
           root, form_names[f]);
  layout_t l = {"affine", affine_type, 0, 2 * sizeof(int), AFFINE_STRIDE * sizeof(int), 0};
  const size_t ext = AFFINE_STRIDE * sizeof(int);
  guarded_t g;
  unsigned char* recv = guarded_alloc(&g, count * ext);
  int* send = calloc(in_elems * AFFINE_STRIDE, sizeof(int));
  for (size_t k = 0; k < in_elems; ++k) {
    long long a, b;
    affine_of(rank, k, &a, &b);
    send[k * AFFINE_STRIDE] = (int)a;
    send[k * AFFINE_STRIDE + 3] = (int)b;
  }
  int lo, hi;
  bool gets = result_range(which, root, &lo, &hi);
  guarded_snapshot(&g);
  MPI_Request req;
  int rc =
      post_reduction(which, f, send, recv, (int)count, sh.rcounts, affine_type, op, root, &req);
  rc = complete(rc, f, &req);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    if (gets) {
      for (size_t k = 0; k < count; ++k) {
        size_t at = sh.first + k;
        long long ea, eb;
        affine_of(lo, at, &ea, &eb);
        for (int r = lo + 1; r < hi; ++r) {
          long long a, b;
          affine_of(r, at, &a, &b);
          eb = (a * eb + b) % AFFINE_M;
          ea = ea * a % AFFINE_M;
        }
        int got[AFFINE_STRIDE];
        memcpy(got, recv + k * ext, sizeof got);
        if (!check(got[0] == ea && got[3] == eb,
                   "%s: element %zu is (%d, %d), expected (%lld, %lld) (rank order)", what, k,
                   got[0], got[3], ea, eb))
          break;
      }
      guarded_untouched(&g, 0, count * ext, what);
      layout_gaps_untouched(&g, 0, &l, count, what);
    } else {
      guarded_untouched(&g, 0, 0, what);
    }
  }
  release(f, &req);
  free(send);
  guarded_free(&g);
}

/* ---- Calls that move nothing, and Barrier still synchronising -------------------------------- */

static void empty_calls(void) {
  int one = 7;
  MPI_Request req;
  for (int f = BLOCKING; f <= PERSISTENT; ++f) {
    for (int round = 0; round < rounds((form_t)f); ++round) {
      int rc = MPI_SUCCESS;
      if (BLOCKING == f)
        rc = MPI_Bcast(&one, 0, MPI_INT, nranks - 1, MPI_COMM_WORLD);
      else if (NONBLOCKING == f)
        rc = MPI_Ibcast(&one, 0, MPI_INT, nranks - 1, MPI_COMM_WORLD, &req);
      else if (0 == round)
        rc = MPIX_Bcast_init(&one, 0, MPI_INT, nranks - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
      rc = complete(rc, (form_t)f, &req);
      check(MPI_SUCCESS == rc && 7 == one, "bcast of 0 ints %s: rc %d", form_names[f], rc);
      if (NONBLOCKING == f) check(MPI_REQUEST_NULL == req, "ibcast of 0: request freed");
    }
    if (PERSISTENT == f) release((form_t)f, &req);
  }
  int zeros[MAX_RANKS] = {0}, displs[MAX_RANKS] = {0};
  int rc = MPI_Iallgatherv(&one, 0, MPI_INT, &one, zeros, displs, MPI_INT, MPI_COMM_WORLD, &req);
  if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  check(MPI_SUCCESS == rc && 7 == one, "iallgatherv of nothing");
  rc = MPI_Ialltoall(&one, 0, MPI_INT, &one, 0, MPI_INT, MPI_COMM_WORLD, &req);
  if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  check(MPI_SUCCESS == rc && 7 == one, "ialltoall of nothing");
  rc = MPI_Iscan(&one, &one, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
  if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  check(MPI_SUCCESS == rc && 7 == one, "iscan of nothing");

  /* Barrier moves nothing but still waits for everyone: rank 0 comes late. */
  enum { LATE_MS = 150 };
  MPI_Barrier(MPI_COMM_WORLD);
  struct timespec t0, t1;
  if (0 == rank) nanosleep(&(struct timespec){0, LATE_MS * 1000000L}, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  MPI_Barrier(MPI_COMM_WORLD);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double waited = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  if (0 != rank) check(waited > LATE_MS * 0.6, "barrier returned after %.1f ms", waited);
}

/* Erroneous calls whose root sends itself more than it receives: every other rank gets its data
 * and nobody hangs (the root cannot decline alone); the root's Gatherv fails with
 * MPI_ERR_TRUNCATE (as in Open MPI's own components, whose Scatterv copies what fits instead).
 * On a duplicate with MPI_ERRORS_RETURN. */
static void root_truncation(void) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  const int root = nranks - 1;
  int counts[MAX_RANKS], displs[MAX_RANKS];
  for (int r = 0; r < nranks; ++r) {
    counts[r] = 2;
    displs[r] = 2 * r;
  }
  int* all = calloc((size_t)nranks * 2 + 1, sizeof(int));
  int mine[3] = {rank * 10, rank * 10 + 1, rank * 10 + 2}, got[3] = {-1, -1, -1};
  const int scount = rank == root ? 3 : 2;
  for (int r = 0; r < nranks; ++r) all[2 * r] = all[2 * r + 1] = 100 + r;
  int rc = MPI_Gatherv(mine, scount, MPI_INT, all, counts, displs, MPI_INT, root, c);
  int cls = MPI_SUCCESS;
  MPI_Error_class(rc, &cls);
  check((rank == root ? MPI_ERR_TRUNCATE : MPI_SUCCESS) == cls,
        "gatherv, root sending itself 3 ints for 2: error class %d", cls);
  if (rank == root) {
    for (int r = 0; r < root; ++r)
      check(all[2 * r] == r * 10 && all[2 * r + 1] == r * 10 + 1,
            "gatherv with a truncated root: block of rank %d", r);
  }
  for (int r = 0; r < nranks; ++r) all[2 * r] = all[2 * r + 1] = 100 + r;
  rc = MPI_Scatterv(all, counts, displs, MPI_INT, got, rank == root ? 1 : 2, MPI_INT, root, c);
  MPI_Error_class(rc, &cls);
  /* erroneous: Open MPI's components copy what fits, coll_hccl says MPI_ERR_TRUNCATE */
  check(MPI_SUCCESS == cls || (rank == root && MPI_ERR_TRUNCATE == cls),
        "scatterv, root receiving 1 int of its 2: error class %d", cls);
  if (rank != root)
    check(got[0] == 100 + rank && got[1] == 100 + rank, "scatterv with a truncated root: data");
  free(all);
  MPI_Comm_free(&c);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  quick = has_flag(argc, argv, "--quick");
  if (nranks > MAX_RANKS) {
    if (0 == rank) fprintf(stderr, "at most %d ranks\n", MAX_RANKS);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  layouts_init();
  const int n_int = num_layouts - 1; /* the int family; the struct is last */
  const int patterns = quick ? 2 : 3;
  for (int f = BLOCKING; f <= PERSISTENT; ++f) {
    form_t form = (form_t)f;
    for (int si = 0; si < num_layouts; ++si) {
      for (int ri = 0; ri < num_layouts; ++ri) {
        /* quick: the diagonal and one mixed pair */
        if (quick && si != ri && !(0 == si && 1 == ri)) continue;
        const layout_t* sl = &layouts[si];
        const layout_t* rl = &layouts[ri];
        for (int pattern = 0; pattern < patterns; ++pattern) {
          bool reversed = (si + ri + pattern) % 2 == 1;
          for (int root = 0; root < nranks; ++root) {
            if (!root_wanted(root) || (si != ri && root % 2)) continue;
            gatherv_case(sl, rl, pattern, reversed, root, false, form);
            scatterv_case(sl, rl, pattern, !reversed, root, false, form);
            if (si == ri) {
              gatherv_case(sl, rl, pattern, !reversed, root, true, form);
              scatterv_case(sl, rl, pattern, reversed, root, true, form);
            }
          }
          alltoallv_case(sl, rl, pattern, reversed, false, form);
          if (si == ri) alltoallv_case(sl, rl, pattern, !reversed, true, form);
        }
      }
    }
    for (int pattern = 0; pattern < 3; ++pattern) {
      for (int salt = 0; salt < (quick ? 1 : n_int); ++salt) {
        alltoallw_case(pattern, false, form, salt);
        alltoallw_case(pattern, true, form, salt);
      }
    }
  }

  MPI_Type_vector(2, 1, 3, MPI_INT, &affine_type);
  MPI_Type_commit(&affine_type);
  MPI_Op affine;
  MPI_Op_create(affine_compose, 0, &affine);
  for (int f = BLOCKING; f <= PERSISTENT; ++f) {
    for (int which = 0; which < R_COUNT; ++which) {
      int roots = R_REDUCE == which ? nranks : 1;
      for (int root = 0; root < roots; ++root) {
        if (!root_wanted(root)) continue;
        affine_case((red_t)which, root, (form_t)f, affine);
        for (size_t t = 0; t < sizeof pairs / sizeof pairs[0]; ++t) {
          if (quick && root != 0 && t % 2) continue;
          loc_case(&pairs[t], true, (red_t)which, root, (form_t)f);
          loc_case(&pairs[t], false, (red_t)which, root, (form_t)f);
        }
      }
    }
  }
  MPI_Op_free(&affine);
  MPI_Type_free(&affine_type);
  empty_calls();
  if (nranks > 1) root_truncation();
  layouts_free();
  return check_finish("vforms");
}
