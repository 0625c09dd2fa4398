/*
 * rooted.c - MPI_Bcast, MPI_Scatter and MPI_Reduce (blocking and nonblocking), and
 * MPI_Reduce_local: every root, in place at the root, zero and uneven counts, every layout of
 * mpi_layouts.h (send and receive layouts mixed within the int family), every predefined type with
 * every op MPI defines on it, MAXLOC/MINLOC on pair types, user ops on a struct with gaps and a
 * non-commutative user op against the rank-order result, nonblocking calls overlapped with each
 * other and with point-to-point. Guard zones around every receive buffer; nothing is written on a
 * rank the standard names no output for (a Bcast root, non-roots of Reduce, an in-place Scatter
 * root).
 *
 * Options: --quick (fewer types, counts and roots).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_check.h"
#include "mpi_layouts.h"
#include "mpi_values.h"

static int rank, nranks;
static bool quick;

static bool root_wanted(int root) {
  return !quick || 0 == root || nranks - 1 == root || nranks / 2 == root;
}

static int finish(int rc, MPI_Request* req, bool nonblocking) {
  if (nonblocking && MPI_SUCCESS == rc) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
  return rc;
}

/* ---- Bcast ---------------------------------------------------------------------------------- */

static void bcast_case(const layout_t* l, size_t count, int root, bool nb) {
  char what[160];
  snprintf(what, sizeof what, "bcast %s count %zu root %d %s", l->name, count, root,
           nb ? "nonblocking" : "blocking");
  guarded_t g;
  unsigned char* buf = guarded_alloc(&g, layout_span(l, count));
  if (rank == root) layout_fill(l, buf, count, root, 0);
  guarded_snapshot(&g);
  MPI_Request req;
  int rc = nb ? MPI_Ibcast(buf, (int)count, l->type, root, MPI_COMM_WORLD, &req)
              : MPI_Bcast(buf, (int)count, l->type, root, MPI_COMM_WORLD);
  rc = finish(rc, &req, nb);
  if (!check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    guarded_free(&g);
    return;
  }
  layout_check_bcast(&g, l, count, root, 0, rank == root, what);
  guarded_free(&g);
}

/* ---- Scatter -------------------------------------------------------------------------------- */

/* ints: MPI_INT elements per rank; the send and receive layouts carry ints / l->ints each. */
static void scatter_case(const layout_t* sl, const layout_t* rl, size_t ints, int root,
                         bool in_place, bool nb) {
  if (0 == sl->ints || 0 == rl->ints) { /* the struct layout: same type, `ints` elements */
    if (sl != rl) return;
  } else if (ints % (size_t)sl->ints || ints % (size_t)rl->ints) {
    return;
  }
  size_t scount = 0 == sl->ints ? ints : ints / (size_t)sl->ints;
  size_t rcount = 0 == rl->ints ? ints : ints / (size_t)rl->ints;
  char what[200];
  snprintf(what, sizeof what, "scatter %s -> %s, %zu per rank, root %d%s %s", sl->name, rl->name,
           ints, root, in_place ? " in place" : "", nb ? "nonblocking" : "blocking");
  const size_t p = (size_t)nranks;
  bool is_root = rank == root;
  /* The root's send buffer between guard zones too: nothing may be written there. */
  guarded_t gs, gr;
  unsigned char* sbuf = guarded_alloc(&gs, is_root ? layout_span(sl, p * scount) : 0);
  unsigned char* rbuf = guarded_alloc(&gr, layout_span(rl, rcount));
  if (is_root) {
    for (int r = 0; r < nranks; ++r)
      layout_fill(sl, sbuf + (size_t)r * scount * (size_t)sl->extent, scount, root, r);
  }
  guarded_snapshot(&gs);
  guarded_snapshot(&gr);
  void* recv = is_root && in_place ? MPI_IN_PLACE : rbuf;
  MPI_Request req;
  int rc = nb ? MPI_Iscatter(sbuf, (int)scount, sl->type, recv, (int)rcount, rl->type, root,
                             MPI_COMM_WORLD, &req)
              : MPI_Scatter(sbuf, (int)scount, sl->type, recv, (int)rcount, rl->type, root,
                            MPI_COMM_WORLD);
  rc = finish(rc, &req, nb);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    guarded_untouched(&gs, 0, 0, what);
    if (is_root && in_place) {
      guarded_untouched(&gr, 0, 0, what);
    } else {
      layout_check(rl, rbuf, rcount, root, rank, what);
      guarded_untouched(&gr, 0, layout_span(rl, rcount), what);
      layout_gaps_untouched(&gr, 0, rl, rcount, what);
    }
  }
  guarded_free(&gs);
  guarded_free(&gr);
}

/* ---- Reduce: predefined types and ops ------------------------------------------------------- */

static void reduce_case(const test_type_t* t, int oi, const test_op_t* op, size_t count, int root,
                        bool in_place, bool nb) {
  char what[200];
  snprintf(what, sizeof what, "reduce %s %s count %zu root %d%s %s", t->name, op->name, count, root,
           in_place ? " in place" : "", nb ? "nonblocking" : "blocking");
  bool is_root = rank == root;
  guarded_t g;
  unsigned char* send = malloc(count * t->size + 1);
  unsigned char* recv = guarded_alloc(&g, count * t->size);
  unsigned char* input = is_root && in_place ? recv : send;
  for (size_t i = 0; i < count; ++i) {
    long double re, im;
    test_value(oi, t, rank, i, &re, &im);
    t->set(input, i, re, im);
  }
  guarded_snapshot(&g);
  const void* sbuf = is_root && in_place ? MPI_IN_PLACE : send;
  MPI_Request req;
  int rc = nb ? MPI_Ireduce(sbuf, recv, (int)count, t->type, op->op, root, MPI_COMM_WORLD, &req)
              : MPI_Reduce(sbuf, recv, (int)count, t->type, op->op, root, MPI_COMM_WORLD);
  rc = finish(rc, &req, nb);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    if (is_root) {
      for (size_t j = 0; j < count; ++j) {
        long double ere, eim, gre, gim;
        test_expected(oi, t, nranks, j, &ere, &eim);
        t->get(recv, j, &gre, &gim);
        if (!check(ere == gre && eim == gim, "%s: element %zu is (%Lg,%Lg), expected (%Lg,%Lg)",
                   what, j, gre, gim, ere, eim))
          break;
      }
      guarded_untouched(&g, 0, count * t->size, what);
    } else {
      guarded_untouched(&g, 0, 0, what); /* nothing on non-roots */
    }
  }
  free(send);
  guarded_free(&g);
}

/* ---- Reduce: user ops and pair types -------------------------------------------------------- */

#define MOD 1000003LL
/* x -> a*x + b (mod MOD): composition is associative and not commutative. The struct has a gap
 * between a and b (a vector of 3 long longs, the middle one not part of the type). */
typedef struct {
  long long a, unused, b;
} affine_t;
static MPI_Datatype affine_type;
static MPI_Op op_affine, op_gapsum;

static void affine_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  affine_t* f = in;
  affine_t* g = inout;
  for (int i = 0; i < *len; ++i) { /* inout = in o inout: `in` holds the lower ranks */
    long long a = (f[i].a * g[i].a) % MOD, b = (f[i].a * g[i].b + f[i].b) % MOD;
    g[i].a = a;
    g[i].b = b;
  }
}

static affine_t affine_of(int who, size_t i) {
  affine_t f = {(long long)((size_t)who * 7 + i * 3) % 11 + 2, -1,
                (long long)((size_t)who * 5 + i) % 13 + 1};
  return f;
}

/* The struct layout's fields summed (commutative): int and short wrap, double exact. */
typedef struct {
  char c;
  int i;
  double d;
  short h;
} gap_t;

static void gapsum_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  gap_t* x = in;
  gap_t* y = inout;
  for (int k = 0; k < *len; ++k) {
    y[k].c = (char)(x[k].c ^ y[k].c);
    y[k].i += x[k].i;
    y[k].d += x[k].d;
    y[k].h = (short)(x[k].h + y[k].h);
  }
}

static gap_t gap_of(int who, size_t k) {
  gap_t v;
  memset(&v, 0, sizeof v);
  v.c = (char)(who * 3 + (int)k);
  v.i = who * 1000 + (int)k;
  v.d = (double)who * 0.5 + (double)k;
  v.h = (short)(who + 2 * (int)k);
  return v;
}

/* User ops through the engine's callback: non-commutative on a type with a gap, commutative on a
 * struct with gaps; in place at the root too. */
static void reduce_user_case(bool affine, size_t count, int root, bool in_place, bool nb) {
  char what[200];
  snprintf(what, sizeof what, "reduce user %s count %zu root %d%s %s",
           affine ? "affine (non-commutative)" : "gap-struct sum", count, root,
           in_place ? " in place" : "", nb ? "nonblocking" : "blocking");
  bool is_root = rank == root;
  size_t esz = affine ? sizeof(affine_t) : sizeof(gap_t);
  MPI_Datatype type = affine ? affine_type : layouts[4].type;
  guarded_t g;
  unsigned char* send = malloc(count * esz + 1);
  unsigned char* recv = guarded_alloc(&g, count * esz);
  unsigned char* input = is_root && in_place ? recv : send;
  for (size_t k = 0; k < count; ++k) {
    if (affine) {
      affine_t v = affine_of(rank, k);
      affine_t* dst = (affine_t*)(void*)(input + k * esz);
      dst->a = v.a; /* the gap (unused) keeps the guard pattern when in place */
      dst->b = v.b;
    } else {
      gap_t v = gap_of(rank, k);
      gap_t* dst = (gap_t*)(void*)(input + k * esz);
      dst->c = v.c;
      dst->i = v.i;
      dst->d = v.d;
      dst->h = v.h;
    }
  }
  guarded_snapshot(&g);
  const void* sbuf = is_root && in_place ? MPI_IN_PLACE : send;
  MPI_Op op = affine ? op_affine : op_gapsum;
  MPI_Request req;
  int rc = nb ? MPI_Ireduce(sbuf, recv, (int)count, type, op, root, MPI_COMM_WORLD, &req)
              : MPI_Reduce(sbuf, recv, (int)count, type, op, root, MPI_COMM_WORLD);
  rc = finish(rc, &req, nb);
  if (!check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) goto out;
  if (!is_root) {
    guarded_untouched(&g, 0, 0, what);
    goto out;
  }
  for (size_t k = 0; k < count; ++k) {
    if (affine) {
      affine_t e = affine_of(0, k);
      for (int r = 1; r < nranks; ++r) { /* e = e o f_r: rank order */
        affine_t f = affine_of(r, k);
        long long a = (e.a * f.a) % MOD, b = (e.a * f.b + e.b) % MOD;
        e.a = a;
        e.b = b;
      }
      const affine_t* got = (const affine_t*)(const void*)(recv + k * esz);
      if (!check(got->a == e.a && got->b == e.b,
                 "%s: element %zu is (%lld,%lld), expected "
                 "(%lld,%lld)",
                 what, k, got->a, got->b, e.a, e.b))
        break;
    } else {
      gap_t e = gap_of(0, k);
      for (int r = 1; r < nranks; ++r) {
        gap_t v = gap_of(r, k);
        e.c = (char)(e.c ^ v.c);
        e.i += v.i;
        e.d += v.d;
        e.h = (short)(e.h + v.h);
      }
      const gap_t* got = (const gap_t*)(const void*)(recv + k * esz);
      if (!check(got->c == e.c && got->i == e.i && got->d == e.d && got->h == e.h,
                 "%s: element %zu differs", what, k))
        break;
    }
  }
  guarded_untouched(&g, 0, count * esz, what);
  if (!affine) layout_gaps_untouched(&g, 0, &layouts[4], count, what);
  if (affine) { /* the gap of every element */
    for (size_t k = 0; k < count; ++k) {
      size_t at = GUARD_ZONE + k * esz + offsetof(affine_t, unused);
      if (!check(0 == memcmp(g.area + at, g.snapshot + at, sizeof(long long)),
                 "%s: wrote the gap of element %zu", what, k))
        break;
    }
  }
out:
  free(send);
  guarded_free(&g);
}

/* MAXLOC and MINLOC on a pair type with a gap (double, int) and one without (int, int). Ties go to
 * the lowest index. */
static void reduce_loc_case(MPI_Op op, bool is_max, bool dbl, size_t count, int root, bool nb) {
  char what[160];
  snprintf(what, sizeof what, "reduce %s on %s count %zu root %d %s", is_max ? "MAXLOC" : "MINLOC",
           dbl ? "MPI_DOUBLE_INT" : "MPI_2INT", count, root, nb ? "nonblocking" : "blocking");
  typedef struct {
    double v;
    int i;
  } di_t;
  typedef struct {
    int v, i;
  } ii_t;
  size_t esz = dbl ? sizeof(di_t) : sizeof(ii_t);
  guarded_t g;
  unsigned char* send = calloc(count + 1, esz);
  unsigned char* recv = guarded_alloc(&g, count * esz);
  for (size_t k = 0; k < count; ++k) {
    int v = (int)((size_t)rank * 7 + k * 3) % 5; /* ties on purpose */
    if (dbl) {
      ((di_t*)(void*)send)[k].v = v;
      ((di_t*)(void*)send)[k].i = rank;
    } else {
      ((ii_t*)(void*)send)[k].v = v;
      ((ii_t*)(void*)send)[k].i = rank;
    }
  }
  guarded_snapshot(&g);
  MPI_Datatype type = dbl ? MPI_DOUBLE_INT : MPI_2INT;
  MPI_Request req;
  int rc = nb ? MPI_Ireduce(send, recv, (int)count, type, op, root, MPI_COMM_WORLD, &req)
              : MPI_Reduce(send, recv, (int)count, type, op, root, MPI_COMM_WORLD);
  rc = finish(rc, &req, nb);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    if (rank == root) {
      for (size_t k = 0; k < count; ++k) {
        int best = -1, at = -1;
        for (int r = 0; r < nranks; ++r) {
          int v = (int)((size_t)r * 7 + k * 3) % 5;
          if (at < 0 || (is_max ? v > best : v < best)) best = v, at = r;
        }
        double gv = dbl ? ((di_t*)(void*)recv)[k].v : ((ii_t*)(void*)recv)[k].v;
        int gi = dbl ? ((di_t*)(void*)recv)[k].i : ((ii_t*)(void*)recv)[k].i;
        if (!check(gv == best && gi == at, "%s: element %zu is (%g,%d), expected (%d,%d)", what, k,
                   gv, gi, best, at))
          break;
        if (dbl) { /* the 4 padding bytes after the int are not part of the type */
          size_t pad = GUARD_ZONE + k * esz + offsetof(di_t, i) + sizeof(int);
          check(0 == memcmp(g.area + pad, g.snapshot + pad, esz - offsetof(di_t, i) - sizeof(int)),
                "%s: wrote the padding of element %zu", what, k);
        }
      }
      guarded_untouched(&g, 0, count * esz, what);
    } else {
      guarded_untouched(&g, 0, 0, what);
    }
  }
  free(send);
  guarded_free(&g);
}

/* ---- Reduce_local --------------------------------------------------------------------------- */

static void reduce_local_case(const test_type_t* t, int oi, const test_op_t* op, size_t count) {
  unsigned char* in = malloc(count * t->size + 1);
  unsigned char* inout = malloc(count * t->size + 1);
  for (size_t i = 0; i < count; ++i) {
    long double re, im;
    test_value(oi, t, 0, i, &re, &im);
    t->set(in, i, re, im);
    test_value(oi, t, 1, i, &re, &im);
    t->set(inout, i, re, im);
  }
  int rc = MPI_Reduce_local(in, inout, (int)count, t->type, op->op);
  if (check(MPI_SUCCESS == rc, "reduce_local %s %s: rc %d", t->name, op->name, rc)) {
    for (size_t i = 0; i < count; ++i) {
      long double ere, eim, gre, gim;
      test_expected(oi, t, 2, i, &ere, &eim); /* in (rank 0) op inout (rank 1) */
      t->get(inout, i, &gre, &gim);
      if (!check(ere == gre && eim == gim,
                 "reduce_local %s %s count %zu: element %zu is "
                 "(%Lg,%Lg), expected (%Lg,%Lg)",
                 t->name, op->name, count, i, gre, gim, ere, eim))
        break;
    }
  }
  free(in);
  free(inout);
}

/* ---- Overlap -------------------------------------------------------------------------------- */

/* Nonblocking Bcast, Reduce and Scatter in flight together with a point-to-point ring; completed
 * in reverse order. */
static void overlap(void) {
  enum { N = 3001 };
  const int root = nranks - 1;
  int* b = malloc(N * sizeof(int));
  int* rs = malloc(N * sizeof(int));
  int* rr = malloc(N * sizeof(int));
  int* ss = malloc((size_t)nranks * N * sizeof(int));
  int* sr = malloc(N * sizeof(int));
  int ring_out = rank * 11, ring_in = -1;
  for (int i = 0; i < N; ++i) {
    b[i] = rank == 0 ? i * 5 + 1 : -1;
    rs[i] = rank + i;
  }
  for (int i = 0; i < nranks * N; ++i) ss[i] = rank == root ? i * 3 : -1;
  MPI_Request req[6];
  MPI_Ibcast(b, N, MPI_INT, 0, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(&ring_in, 1, MPI_INT, (rank + nranks - 1) % nranks, 7, MPI_COMM_WORLD, &req[1]);
  MPI_Ireduce(rs, rr, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &req[2]);
  MPI_Iscatter(ss, N, MPI_INT, sr, N, MPI_INT, root, MPI_COMM_WORLD, &req[3]);
  MPI_Isend(&ring_out, 1, MPI_INT, (rank + 1) % nranks, 7, MPI_COMM_WORLD, &req[4]);
  MPI_Ibcast(&ring_out, 0, MPI_INT, 0, MPI_COMM_WORLD, &req[5]);
  for (int k = 5; k >= 0; --k) MPI_Wait(&req[k], MPI_STATUS_IGNORE);
  int bad = 0;
  for (int i = 0; i < N && bad < 3; ++i) {
    if (!check(b[i] == i * 5 + 1, "overlap: bcast element %d is %d", i, b[i])) ++bad;
    long long sum = (long long)nranks * i + (long long)nranks * (nranks - 1) / 2;
    if (rank == root && !check(rr[i] == (int)sum, "overlap: reduce element %d is %d", i, rr[i]))
      ++bad;
    if (!check(sr[i] == (rank * N + i) * 3, "overlap: scatter element %d is %d", i, sr[i])) ++bad;
  }
  check(ring_in == ((rank + nranks - 1) % nranks) * 11, "overlap: ring got %d", ring_in);
  free(b);
  free(rs);
  free(rr);
  free(ss);
  free(sr);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  quick = has_flag(argc, argv, "--quick");
  layouts_init();
  MPI_Type_vector(2, 1, 2, MPI_LONG_LONG, &affine_type); /* a, (gap), b */
  MPI_Type_commit(&affine_type);
  MPI_Op_create(affine_op, 0, &op_affine);
  MPI_Op_create(gapsum_op, 1, &op_gapsum);
  const size_t p = (size_t)nranks;

  for (int nb = 0; nb < 2; ++nb) {
    for (int root = 0; root < nranks; ++root) {
      if (!root_wanted(root)) continue;
      /* Bcast: every layout, counts 0, 1, uneven and larger */
      size_t bcounts[] = {0, 1, 2 * p + 1, 1037};
      for (int li = 0; li < num_layouts; ++li)
        for (size_t ci = 0; ci < 4; ++ci) {
          if (quick && li > 0 && ci < 2) continue;
          bcast_case(&layouts[li], bcounts[ci], root, 1 == nb);
        }
      /* Scatter: send and receive layouts mixed, per-rank sizes 0, 4, 12 and 4 * 37 ints */
      size_t sints[] = {0, 4, 12, 148};
      for (int si = 0; si < num_layouts; ++si)
        for (int ri = 0; ri < num_layouts; ++ri)
          for (size_t ci = 0; ci < 4; ++ci)
            for (int ip = 0; ip < 2; ++ip) {
              if (quick && (ci == 0 || ci == 2) && (si > 0 || ri > 0)) continue;
              scatter_case(&layouts[si], &layouts[ri], sints[ci], root, 1 == ip, 1 == nb);
            }
      /* user ops and pair types */
      size_t ucounts[] = {1, p + 2, 515};
      for (size_t ci = 0; ci < 3; ++ci)
        for (int ip = 0; ip < 2; ++ip) {
          reduce_user_case(true, ucounts[ci], root, 1 == ip, 1 == nb);
          reduce_user_case(false, ucounts[ci], root, 1 == ip, 1 == nb);
        }
      for (int dbl = 0; dbl < 2; ++dbl) {
        reduce_loc_case(MPI_MAXLOC, true, 1 == dbl, 2 * p + 3, root, 1 == nb);
        reduce_loc_case(MPI_MINLOC, false, 1 == dbl, 2 * p + 3, root, 1 == nb);
      }
    }
  }

  /* Reduce over every predefined type and op: roots spread, counts 1, p-1, 2p+1, 1037 */
  test_type_t types[MAX_TEST_TYPES];
  int ntypes = test_types(types);
  test_op_t ops[16];
  int nops = test_ops(ops);
  for (int ti = 0; ti < ntypes; ++ti) {
    const test_type_t* t = &types[ti];
    if (quick && MPI_INT != t->type && MPI_DOUBLE != t->type && MPI_C_BOOL != t->type &&
        MPI_LONG_DOUBLE != t->type && MPI_BYTE != t->type && MPI_C_FLOAT_COMPLEX != t->type)
      continue;
    for (int oi = 0; oi < nops; ++oi) {
      if (0 == (ops[oi].groups & GBIT(t->group))) continue;
      size_t counts[] = {1, p > 1 ? p - 1 : 1, 2 * p + 1, 1037};
      for (size_t ci = 0; ci < 4; ++ci) {
        if (quick && ci != 2) continue;
        int root = (int)((size_t)(ti + oi) + ci) % nranks; /* every root over the sweep */
        for (int ip = 0; ip < 2; ++ip) {
          reduce_case(t, oi, &ops[oi], counts[ci], root, 1 == ip, 1 == ((oi + ip) % 2));
        }
      }
      reduce_local_case(t, oi, &ops[oi], 1037);
    }
  }

  overlap();

  MPI_Op_free(&op_affine);
  MPI_Op_free(&op_gapsum);
  MPI_Type_free(&affine_type);
  layouts_free();
  return check_finish("rooted");
}
