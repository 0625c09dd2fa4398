/*
 * floor.c - every intracommunicator collective in its three forms (blocking, MPI_I*, persistent
 * started twice with new contents), as coll_hccl's point-to-point floor must serve them when it
 * is the only coll component (run with --mca coll_hccl_force_floor 1, or --mca coll hccl):
 * every root, MPI_IN_PLACE wherever MPI allows it, per-rank counts with zeros, send and receive
 * types that differ but have equal signatures (int, a vector with gaps, pairs of ints), a struct
 * with a gap, MAXLOC on MPI_DOUBLE_INT, a non-commutative user op (2x2 matrix product) checked
 * against rank order; on MPI_COMM_WORLD, a split communicator in reverse rank order, and
 * MPI_COMM_SELF.
 *
 * Receive buffers are compared byte for byte with an image the test builds: a sentinel
 * everywhere (gaps of derived types, space between v-form blocks, a guard zone after the end)
 * and the expected values in the data positions, so a write outside the output fails as much as
 * a wrong value. Values depend on sender, block, index and a seed that changes between the two
 * starts of a persistent request.
 */
#include <stdint.h>
#include <time.h>

#include "mpi_check.h" /* mpi.h, which mpi-ext.h needs first */

#include <mpi-ext.h>

enum { SENTINEL = 0xA5, GUARD = 64, LCM = 2 /* values per element of every kind divide it */ };

/* ---- data-moving kinds: elements of 1 or 2 values ------------------------------------------ */

typedef struct kind {
  const char* name;
  MPI_Datatype type;
  int vals;           /* values per element */
  size_t off[2];      /* byte offset of each value in the element */
  bool second_double; /* the second value is a double (struct) */
  size_t extent;
  int family; /* equal signatures within a family */
} kind_t;

enum { K_INT, K_VEC, K_PAIR, K_STRUCT, NKINDS };
static kind_t kinds[NKINDS];

static void kinds_init(void) {
  MPI_Datatype vec, pair, st;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec); /* ints at 0 and 8, extent 12 */
  MPI_Type_commit(&vec);
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  int bl[2] = {1, 1};
  MPI_Aint disp[2] = {0, 8};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Datatype raw;
  MPI_Type_create_struct(2, bl, disp, types, &raw); /* int, 4-byte gap, double */
  MPI_Type_create_resized(raw, 0, 16, &st);
  MPI_Type_free(&raw);
  MPI_Type_commit(&st);
  kinds[K_INT] = (kind_t){"int", MPI_INT, 1, {0, 0}, false, 4, 0};
  kinds[K_VEC] = (kind_t){"vector", vec, 2, {0, 8}, false, 12, 0};
  kinds[K_PAIR] = (kind_t){"pair", pair, 2, {0, 4}, false, 8, 0};
  kinds[K_STRUCT] = (kind_t){"struct-gap", st, 2, {0, 8}, true, 16, 1};
}

static void kinds_free(void) {
  for (int k = K_VEC; k < NKINDS; ++k) MPI_Type_free(&kinds[k].type);
}

/* send kind, receive kind */
static const int pairs[][2] = {
    {K_INT, K_INT}, {K_VEC, K_PAIR}, {K_PAIR, K_INT}, {K_STRUCT, K_STRUCT}};
enum { NPAIRS = sizeof pairs / sizeof pairs[0] };

static int value(int from, int block, size_t idx, int seed) {
  return ((seed * 8 + from) * 64 + block) * 4096 + (int)idx + 1;
}

static void put(const kind_t* k, unsigned char* buf, size_t v, int x) {
  unsigned char* at = buf + (v / (size_t)k->vals) * k->extent + k->off[v % (size_t)k->vals];
  if (k->second_double && 1 == v % 2) {
    double d = (double)x;
    memcpy(at, &d, sizeof d);
  } else {
    memcpy(at, &x, sizeof x);
  }
}

/* n values of block `block` from rank `from` into buf (laid out as k) */
static void put_block(const kind_t* k, void* buf, size_t n, int from, int block, int seed) {
  for (size_t v = 0; v < n; ++v) put(k, buf, v, value(from, block, v, seed));
}

static size_t elems(const kind_t* k, size_t n) {
  return n / (size_t)k->vals;
}

/* a receive buffer and the image it must equal */
typedef struct image {
  unsigned char* buf;
  unsigned char* want;
  size_t bytes;
} image_t;

static void image_alloc(image_t* im, size_t bytes) {
  im->bytes = bytes + GUARD;
  im->buf = malloc(im->bytes);
  im->want = malloc(im->bytes);
  memset(im->buf, SENTINEL, im->bytes);
  memset(im->want, SENTINEL, im->bytes);
}

static void image_reset(image_t* im) {
  memset(im->buf, SENTINEL, im->bytes);
  memset(im->want, SENTINEL, im->bytes);
}

static bool image_check(const image_t* im, const char* what) {
  for (size_t i = 0; i < im->bytes; ++i) {
    if (im->buf[i] != im->want[i]) {
      return check(false, "%s: byte %zu is 0x%02x, expected 0x%02x", what, i, im->buf[i],
                   im->want[i]);
    }
  }
  return check(true, "%s", what);
}

static void image_free(image_t* im) {
  free(im->buf);
  free(im->want);
}

/* MPI_Start + MPI_Wait for persistent runs, MPI_Wait for nonblocking ones */
static int go(int rc, MPI_Request* req, int mode) {
  if (MPI_SUCCESS != rc) return rc;
  if (2 == mode) {
    rc = MPI_Start(req);
    if (MPI_SUCCESS == rc) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
  } else if (1 == mode) {
    rc = MPI_Wait(req, MPI_STATUS_IGNORE);
  }
  return rc;
}

/* go, then the image compared when the call succeeded */
static int go_check(int rc, MPI_Request* req, int mode, const image_t* im, const char* what) {
  rc = go(rc, req, mode);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) image_check(im, what);
  return rc;
}

static int runs(int mode) {
  return 2 == mode ? 2 : 1;
}
static void done(int mode, MPI_Request* req) {
  if (2 == mode) MPI_Request_free(req);
}

/* per-rank value counts for v forms, zeros included: block i of rank r */
static size_t vcount(int r, int i) {
  return (size_t)LCM * (size_t)((r + i) % 3);
}

static MPI_Comm comm;
static int me, p;
static const char* comm_name;

/* ---- Bcast ---------------------------------------------------------------------------------- */

static void t_bcast(int kk, size_t n, int root, int mode) {
  const kind_t* k = &kinds[kk];
  char what[256];
  snprintf(what, sizeof what, "%s: bcast %s %zu values root %d %s", comm_name, k->name, n, root,
           check_modes[mode]);
  image_t im;
  image_alloc(&im, elems(k, n) * k->extent);
  MPI_Request req;
  int rc = MPI_SUCCESS;
  for (int s = 0; s < runs(mode); ++s) {
    image_reset(&im);
    if (me == root) put_block(k, im.buf, n, root, 0, s);
    put_block(k, im.want, n, root, 0, s);
    int c = (int)elems(k, n);
    if (0 == s) {
      rc = CHECK_CALL(mode, Bcast, bcast, im.buf, c, k->type, root, comm);
    }
    rc = go_check(rc, &req, mode, &im, what);
  }
  done(mode, &req);
  image_free(&im);
}

/* ---- Scatter(v) and Gather(v): v = per-rank counts, blocks placed in reverse order with one
 * element of space between them ----------------------------------------------------------- */

typedef struct layout_v {
  int counts[64], displs[64]; /* in elements of the kind */
  size_t total;               /* elements spanned */
} layout_v_t;

static void layout_v(layout_v_t* l, const kind_t* k, int root_or_rank, bool v, size_t n,
                     bool rows) {
  /* rows: block i is rank i's (gather/scatter at the root); counts from vcount(i, root) */
  size_t at = 0;
  for (int i = p - 1; i >= 0; --i) {
    size_t vals = v ? (rows ? vcount(i, root_or_rank) : vcount(root_or_rank, i)) : n;
    l->counts[i] = (int)elems(k, vals);
    l->displs[i] = v ? (int)at : (int)((size_t)i * elems(k, n));
    at += (size_t)l->counts[i] + (v ? 1 : 0);
  }
  l->total = v ? at : (size_t)p * elems(k, n);
}

static void t_scatter(int pi, bool v, size_t n, int root, bool in_place, int mode) {
  const kind_t* sk = &kinds[pairs[pi][0]];
  const kind_t* rk = &kinds[pairs[pi][1]];
  char what[256];
  snprintf(what, sizeof what, "%s: scatter%s %s->%s %zu root %d%s %s", comm_name, v ? "v" : "",
           sk->name, rk->name, n, root, in_place ? " in place" : "", check_modes[mode]);
  layout_v_t l;
  layout_v(&l, sk, root, v, n, true);
  size_t mine = v ? vcount(me, root) : n;
  unsigned char* send = malloc(l.total * sk->extent + GUARD);
  image_t im;
  image_alloc(&im, elems(rk, mine) * rk->extent);
  bool skip_recv = in_place && me == root;
  MPI_Request req;
  int rc = MPI_SUCCESS;
  for (int s = 0; s < runs(mode); ++s) {
    image_reset(&im);
    memset(send, SENTINEL, l.total * sk->extent + GUARD);
    if (me == root) {
      for (int i = 0; i < p; ++i) {
        put_block(sk, send + (size_t)l.displs[i] * sk->extent,
                  (size_t)l.counts[i] * (size_t)sk->vals, root, i, s);
      }
    }
    if (!skip_recv) put_block(rk, im.want, mine, root, me, s);
    void* rbuf = skip_recv ? MPI_IN_PLACE : (void*)im.buf;
    int rc_ = (int)elems(rk, mine);
    int sc = (int)elems(sk, n);
    if (0 == s) {
      if (v) {
        rc = CHECK_CALL(mode, Scatterv, scatterv, send, l.counts, l.displs, sk->type, rbuf, rc_,
                        rk->type, root, comm);
      } else {
        rc =
            CHECK_CALL(mode, Scatter, scatter, send, sc, sk->type, rbuf, rc_, rk->type, root, comm);
      }
    }
    rc = go_check(rc, &req, mode, &im, what);
  }
  done(mode, &req);
  free(send);
  image_free(&im);
}

static void t_gather(int pi, bool v, bool all, size_t n, int root, bool in_place, int mode) {
  const kind_t* sk = &kinds[pairs[pi][0]];
  const kind_t* rk = &kinds[pairs[pi][1]];
  char what[256];
  snprintf(what, sizeof what, "%s: %sgather%s %s->%s %zu root %d%s %s", comm_name, all ? "all" : "",
           v ? "v" : "", sk->name, rk->name, n, all ? -1 : root, in_place ? " in place" : "",
           check_modes[mode]);
  /* block i of the result is rank i's, vcount(i, 0) values */
  layout_v_t l;
  layout_v(&l, rk, 0, v, n, true);
  bool receives = all || me == root;
  size_t mine = v ? vcount(me, 0) : n;
  unsigned char* send = malloc(elems(sk, mine) * sk->extent + GUARD);
  image_t im;
  image_alloc(&im, receives ? l.total * rk->extent : 0);
  bool own_in_place = in_place && receives;
  MPI_Request req;
  int rc = MPI_SUCCESS;
  for (int s = 0; s < runs(mode); ++s) {
    image_reset(&im);
    put_block(sk, send, mine, me, 0, s);
    if (receives) {
      for (int i = 0; i < p; ++i) {
        put_block(rk, im.want + (size_t)l.displs[i] * rk->extent,
                  (size_t)l.counts[i] * (size_t)rk->vals, i, 0, s);
      }
    }
    if (own_in_place) {
      put_block(rk, im.buf + (size_t)l.displs[me] * rk->extent, mine, me, 0, s);
    }
    const void* sbuf = own_in_place ? MPI_IN_PLACE : send;
    int sc = (int)elems(sk, mine);
    int rc1 = (int)elems(rk, n);
    if (0 == s) {
      if (all && v) {
        rc = CHECK_CALL(mode, Allgatherv, allgatherv, sbuf, sc, sk->type, im.buf, l.counts,
                        l.displs, rk->type, comm);
      } else if (all) {
        rc =
            CHECK_CALL(mode, Allgather, allgather, sbuf, sc, sk->type, im.buf, rc1, rk->type, comm);
      } else if (v) {
        rc = CHECK_CALL(mode, Gatherv, gatherv, sbuf, sc, sk->type, im.buf, l.counts, l.displs,
                        rk->type, root, comm);
      } else {
        rc =
            CHECK_CALL(mode, Gather, gather, sbuf, sc, sk->type, im.buf, rc1, rk->type, root, comm);
      }
    }
    rc = go_check(rc, &req, mode, &im, what);
  }
  done(mode, &req);
  free(send);
  image_free(&im);
}

/* ---- Alltoall(v, w): rank r sends vcount(r, j) values to j (symmetric, as in place needs) ---- */

enum { A2A, A2AV, A2AW };

static void t_alltoall(int pi, int form, size_t n, bool in_place, int mode) {
  const kind_t* sk0 = &kinds[pairs[pi][0]];
  const kind_t* rk0 = &kinds[pairs[pi][1]];
  /* w: per peer j a kind of the int family chosen by (me + j), the receive kind one further on,
   * so that sender and receiver use different types of equal signature */
  static const int fam[3] = {K_INT, K_VEC, K_PAIR};
  char what[256];
  snprintf(what, sizeof what, "%s: alltoall%s %s->%s %zu%s %s", comm_name,
           A2A == form    ? ""
           : A2AV == form ? "v"
                          : "w",
           A2AW == form ? "mixed" : sk0->name, A2AW == form ? "mixed" : rk0->name, n,
           in_place ? " in place" : "", check_modes[mode]);
  if (A2AW == form && 0 != pi) return; /* w picks its own types */
  const kind_t* skind[64];
  const kind_t* rkind[64];
  MPI_Datatype stypes[64], rtypes[64];
  int scounts[64], rcounts[64], sdispls[64], rdispls[64];
  size_t sat = 0, rat = 0; /* bytes */
  for (int j = p - 1; j >= 0; --j) {
    if (A2AW == form) {
      rkind[j] = &kinds[fam[(me + j + 1) % 3]];
      skind[j] = in_place ? rkind[j] : &kinds[fam[(me + j) % 3]];
    } else {
      skind[j] = sk0;
      rkind[j] = rk0;
    }
    size_t svals = A2A == form ? n : vcount(me, j);
    size_t rvals = A2A == form ? n : vcount(j, me);
    scounts[j] = (int)elems(skind[j], svals);
    rcounts[j] = (int)elems(rkind[j], rvals);
    stypes[j] = skind[j]->type;
    rtypes[j] = rkind[j]->type;
    size_t sgap = A2A == form ? 0 : 16, rgap = A2A == form ? 0 : 16;
    if (A2A == form) {
      sdispls[j] = j * scounts[j];
      rdispls[j] = j * rcounts[j];
    } else if (A2AV == form) {
      sdispls[j] = (int)(sat / skind[j]->extent);
      rdispls[j] = (int)(rat / rkind[j]->extent);
    } else {
      sdispls[j] = (int)sat;
      rdispls[j] = (int)rat;
    }
    /* v: displacements in elements, so keep byte positions multiples of the extent */
    sat += (size_t)scounts[j] * skind[j]->extent + sgap / skind[j]->extent * skind[j]->extent +
           (A2A == form ? 0 : skind[j]->extent);
    rat += (size_t)rcounts[j] * rkind[j]->extent + rgap / rkind[j]->extent * rkind[j]->extent +
           (A2A == form ? 0 : rkind[j]->extent);
  }
  if (A2A == form) {
    sat = (size_t)p * (size_t)scounts[0] * sk0->extent;
    rat = (size_t)p * (size_t)rcounts[0] * rk0->extent;
  }
  unsigned char* send = malloc(sat + GUARD);
  image_t im;
  image_alloc(&im, rat);
  MPI_Request req;
  int rc = MPI_SUCCESS;
  for (int s = 0; s < runs(mode); ++s) {
    image_reset(&im);
    memset(send, SENTINEL, sat + GUARD);
    for (int j = 0; j < p; ++j) {
      size_t sb = A2AW == form ? (size_t)sdispls[j] : (size_t)sdispls[j] * skind[j]->extent;
      size_t rb = A2AW == form ? (size_t)rdispls[j] : (size_t)rdispls[j] * rkind[j]->extent;
      size_t svals = (size_t)scounts[j] * (size_t)skind[j]->vals;
      size_t rvals = (size_t)rcounts[j] * (size_t)rkind[j]->vals;
      if (in_place) {
        put_block(rkind[j], im.buf + rb, rvals, me, j, s);
      } else {
        put_block(skind[j], send + sb, svals, me, j, s);
      }
      put_block(rkind[j], im.want + rb, rvals, j, me, s);
    }
    const void* sbuf = in_place ? MPI_IN_PLACE : send;
    if (0 == s) {
      if (A2A == form) {
        rc = CHECK_CALL(mode, Alltoall, alltoall, sbuf, scounts[0], sk0->type, im.buf, rcounts[0],
                        rk0->type, comm);
      } else if (A2AV == form) {
        rc = CHECK_CALL(mode, Alltoallv, alltoallv, sbuf, scounts, sdispls, sk0->type, im.buf,
                        rcounts, rdispls, rk0->type, comm);
      } else {
        rc = CHECK_CALL(mode, Alltoallw, alltoallw, sbuf, scounts, sdispls, stypes, im.buf, rcounts,
                        rdispls, rtypes, comm);
      }
    }
    rc = go_check(rc, &req, mode, &im, what);
  }
  done(mode, &req);
  free(send);
  image_free(&im);
}

/* ---- Barrier: nobody leaves before everyone entered ------------------------------------------ */

static void t_barrier(int mode) {
  char what[128];
  snprintf(what, sizeof what, "%s: barrier %s", comm_name, check_modes[mode]);
  MPI_Request req;
  int rc = MPI_SUCCESS;
  for (int s = 0; s < runs(mode); ++s) {
    /* rank 0 sends to everyone once it left the barrier; a rank that finds the message before
     * it entered saw rank 0 leave too early */
    int token = -1, got = 0;
    MPI_Request probe = MPI_REQUEST_NULL;
    if (0 != me) MPI_Irecv(&token, 1, MPI_INT, 0, 77, comm, &probe);
    if (0 != me) {
      struct timespec ts = {0, 2 * 1000 * 1000};
      nanosleep(&ts, NULL);
      MPI_Test(&probe, &got, MPI_STATUS_IGNORE);
      check(!got, "%s: rank 0 left before rank %d entered", what, me);
    }
    if (0 == s) {
      rc = CHECK_CALL(mode, Barrier, barrier, comm);
    }
    rc = go(rc, &req, mode);
    check(MPI_SUCCESS == rc, "%s: rc %d", what, rc);
    if (0 == me) {
      for (int i = 1; i < p; ++i) MPI_Send(&s, 1, MPI_INT, i, 77, comm);
    } else if (!got) {
      MPI_Wait(&probe, MPI_STATUS_IGNORE);
    }
  }
  done(mode, &req);
}

/* ---- reductions -------------------------------------------------------------------------------
 * int SUM; MAXLOC on double-int; a 2x2 int matrix product (non-commutative user op); a struct
 * with a gap summed by a user op (the gap must stay untouched). */

typedef struct dint {
  double v;
  int k;
} dint_t;
typedef struct gap {
  int a;
  int pad;
  double b;
} gap_t;

enum { R_INT, R_MAXLOC, R_MAT, R_GAP, NRED };
typedef struct red {
  const char* name;
  MPI_Datatype type;
  MPI_Op op;
  size_t size; /* C element = extent */
} red_t;
static red_t reds[NRED];

static void mat_mul(void* in, void* inout, int* len, MPI_Datatype* dt) {
  (void)dt;
  int* a = in;
  int* b = inout;
  for (int i = 0; i < *len; ++i, a += 4, b += 4) {
    int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                a[2] * b[1] + a[3] * b[3]};
    memcpy(b, c, sizeof c);
  }
}

static void gap_sum(void* in, void* inout, int* len, MPI_Datatype* dt) {
  (void)dt;
  const gap_t* a = in;
  gap_t* b = inout;
  for (int i = 0; i < *len; ++i) {
    b[i].a += a[i].a;
    b[i].b += a[i].b;
  }
}

static void reds_init(void) {
  MPI_Datatype mat;
  MPI_Type_contiguous(4, MPI_INT, &mat);
  MPI_Type_commit(&mat);
  MPI_Op mop, gop;
  MPI_Op_create(mat_mul, 0, &mop);
  MPI_Op_create(gap_sum, 1, &gop);
  reds[R_INT] = (red_t){"int sum", MPI_INT, MPI_SUM, sizeof(int)};
  reds[R_MAXLOC] = (red_t){"double-int maxloc", MPI_DOUBLE_INT, MPI_MAXLOC, sizeof(dint_t)};
  reds[R_MAT] = (red_t){"2x2 matrix product", mat, mop, 4 * sizeof(int)};
  reds[R_GAP] = (red_t){"struct-gap user sum", kinds[K_STRUCT].type, gop, sizeof(gap_t)};
}

static void reds_free(void) {
  MPI_Type_free(&reds[R_MAT].type);
  MPI_Op_free(&reds[R_MAT].op);
  MPI_Op_free(&reds[R_GAP].op);
}

/* element i of rank r's input, seed s, written field by field (gaps keep the sentinel) */
static void gen(int rk, void* at, int r, size_t i, int s) {
  int x = (int)i;
  switch (rk) {
    case R_INT: {
      int v = (r + 1) * (x + 1) + s * 100;
      memcpy(at, &v, sizeof v);
      break;
    }
    case R_MAXLOC: {
      double v = (double)((r * 7 + x + s) % 3);
      memcpy(at, &v, sizeof v);
      memcpy((char*)at + offsetof(dint_t, k), &r, sizeof r);
      break;
    }
    case R_MAT: {
      int m[4] = {(r + x + s) % 3 + 1, 1, 1, 0};
      memcpy(at, m, sizeof m);
      break;
    }
    case R_GAP: {
      int a = r + x + s;
      double b = 0.5 * r + x;
      memcpy(at, &a, sizeof a);
      memcpy((char*)at + offsetof(gap_t, b), &b, sizeof b);
      break;
    }
  }
}

/* inout = in op inout, for the expectation (written as MPI defines each op) */
static void ref_op(int rk, const void* in, void* inout) {
  int one = 1;
  switch (rk) {
    case R_INT: {
      int a, b;
      memcpy(&a, in, sizeof a);
      memcpy(&b, inout, sizeof b);
      b += a;
      memcpy(inout, &b, sizeof b);
      break;
    }
    case R_MAXLOC: {
      double av, bv;
      int ak, bk;
      memcpy(&av, in, sizeof av);
      memcpy(&bv, inout, sizeof bv);
      memcpy(&ak, (const char*)in + offsetof(dint_t, k), sizeof ak);
      memcpy(&bk, (char*)inout + offsetof(dint_t, k), sizeof bk);
      if (av > bv || (av == bv && ak < bk)) {
        bv = av;
        bk = ak;
      }
      memcpy(inout, &bv, sizeof bv);
      memcpy((char*)inout + offsetof(dint_t, k), &bk, sizeof bk);
      break;
    }
    case R_MAT:
      mat_mul((void*)(uintptr_t)in, inout, &one, NULL);
      break;
    case R_GAP: {
      gap_t a, b;
      memcpy(&a, in, sizeof a);
      memcpy(&b, inout, sizeof b);
      b.a += a.a;
      b.b += a.b;
      /* only the fields: the gap keeps what it held */
      memcpy(inout, &b.a, sizeof b.a);
      memcpy((char*)inout + offsetof(gap_t, b), &b.b, sizeof b.b);
      break;
    }
  }
}

/* the rank-order reduction of element i over ranks [0, upto), into `at` (upto >= 1) */
static void expect(int rk, void* at, int upto, size_t i, int s) {
  size_t sz = reds[rk].size;
  unsigned char acc[32], x[32];
  memset(acc, SENTINEL, sz);
  gen(rk, acc, 0, i, s);
  for (int r = 1; r < upto; ++r) {
    memset(x, SENTINEL, sz);
    gen(rk, x, r, i, s);
    ref_op(rk, acc, x); /* x = acc op x: left to right */
    memcpy(acc, x, sz);
  }
  /* fields only, so that the image keeps the sentinel in gaps */
  if (R_MAXLOC == rk) {
    memcpy(at, acc, sizeof(double));
    memcpy((char*)at + offsetof(dint_t, k), acc + offsetof(dint_t, k), sizeof(int));
  } else if (R_GAP == rk) {
    memcpy(at, acc, sizeof(int));
    memcpy((char*)at + offsetof(gap_t, b), acc + offsetof(gap_t, b), sizeof(double));
  } else {
    memcpy(at, acc, sz);
  }
}

/* MAXLOC's padding is not the test's business (Open MPI's op may copy whole pairs). */
static bool red_check(int rk, image_t* im, const char* what) {
  if (R_MAXLOC == rk) {
    size_t pad = sizeof(double) + sizeof(int);
    for (size_t e = 0; e + sizeof(dint_t) <= im->bytes - GUARD; e += sizeof(dint_t))
      memcpy(im->buf + e + pad, im->want + e + pad, sizeof(dint_t) - pad);
  }
  return image_check(im, what);
}

enum { ALLREDUCE, REDUCE, REDSCAT, REDSCAT_BLOCK, SCAN, EXSCAN };
static const char* const red_names[] = {
    "allreduce", "reduce", "reduce_scatter", "reduce_scatter_block", "scan", "exscan"};

static void t_reduce(int coll, int rk, size_t n, int root, bool in_place, int mode) {
  const red_t* R = &reds[rk];
  char what[256];
  snprintf(what, sizeof what, "%s: %s %s %zu root %d%s %s", comm_name, red_names[coll], R->name, n,
           REDUCE == coll ? root : -1, in_place ? " in place" : "", check_modes[mode]);
  /* input: n elements (the reduce_scatter forms: their blocks back to back) */
  int counts[64];
  size_t in_n = n, out_n = n, out_at = 0;
  if (REDSCAT == coll || REDSCAT_BLOCK == coll) {
    in_n = 0;
    for (int i = 0; i < p; ++i) {
      counts[i] = REDSCAT == coll ? (int)((size_t)(i % 3) * n / 2) : (int)n;
      if (i < me) out_at += (size_t)counts[i];
      in_n += (size_t)counts[i];
    }
    out_n = (size_t)counts[me];
  }
  bool receives = !(REDUCE == coll && me != root) && !(EXSCAN == coll && 0 == me);
  bool can_in_place = !(REDUCE == coll && me != root);
  bool ip = in_place && can_in_place;
  unsigned char* send = malloc(in_n * R->size + GUARD);
  image_t im;
  image_alloc(&im, (ip ? in_n : out_n) * R->size);
  MPI_Request req;
  int rc = MPI_SUCCESS;
  for (int s = 0; s < runs(mode); ++s) {
    image_reset(&im);
    memset(send, SENTINEL, in_n * R->size + GUARD);
    for (size_t i = 0; i < in_n; ++i) gen(rk, (ip ? im.buf : send) + i * R->size, me, i, s);
    if (ip) memcpy(im.want, im.buf, im.bytes); /* what the call does not overwrite stays */
    if (receives) {
      int upto = SCAN == coll ? me + 1 : EXSCAN == coll ? me : p;
      for (size_t i = 0; i < out_n; ++i) {
        /* reduce_scatter: element i of this rank's block is element out_at + i of the input */
        size_t src = i + (REDSCAT == coll || REDSCAT_BLOCK == coll ? out_at : 0);
        unsigned char* at = im.want + i * R->size;
        expect(rk, at, upto, src, s);
      }
    }
    const void* sbuf = ip ? MPI_IN_PLACE : send;
    int c = (int)n;
    if (0 == s) {
      switch (coll) {
        case ALLREDUCE:
          rc = CHECK_CALL(mode, Allreduce, allreduce, sbuf, im.buf, c, R->type, R->op, comm);
          break;
        case REDUCE:
          rc = CHECK_CALL(mode, Reduce, reduce, sbuf, im.buf, c, R->type, R->op, root, comm);
          break;
        case REDSCAT:
          rc = CHECK_CALL(mode, Reduce_scatter, reduce_scatter, sbuf, im.buf, counts, R->type,
                          R->op, comm);
          break;
        case REDSCAT_BLOCK:
          rc = CHECK_CALL(mode, Reduce_scatter_block, reduce_scatter_block, sbuf, im.buf, c,
                          R->type, R->op, comm);
          break;
        case SCAN:
          rc = CHECK_CALL(mode, Scan, scan, sbuf, im.buf, c, R->type, R->op, comm);
          break;
        case EXSCAN:
          rc = CHECK_CALL(mode, Exscan, exscan, sbuf, im.buf, c, R->type, R->op, comm);
          break;
      }
    }
    rc = go(rc, &req, mode);
    if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
      if (EXSCAN == coll && 0 == me) {
        check(true, "%s", what); /* undefined on rank 0 */
      } else if (ip && !receives) {
        check(true, "%s", what);
      } else {
        if (!receives) memcpy(im.want, im.buf, im.bytes); /* REDUCE non-root: rbuf unused */
        /* in place, what follows the result is not specified */
        size_t keep = out_n * R->size;
        if (ip) memcpy(im.want + keep, im.buf + keep, im.bytes - keep);
        red_check(rk, &im, what);
      }
    }
  }
  done(mode, &req);
  free(send);
  image_free(&im);
}

/* ---- driver ---------------------------------------------------------------------------------- */

static void run_all(void) {
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &p);
  for (int mode = 0; mode < 3; ++mode) {
    for (int k = 0; k < NKINDS; ++k) {
      for (int root = 0; root < p; ++root) t_bcast(k, 0 == root ? 6 : 2, root, mode);
    }
    t_bcast(K_INT, 0, p - 1, mode);
    for (int pi = 0; pi < NPAIRS; ++pi) {
      for (int ip = 0; ip < 2; ++ip) {
        for (int root = 0; root < p; ++root) {
          t_scatter(pi, false, 4, root, ip, mode);
          t_scatter(pi, true, 0, root, ip, mode);
          t_gather(pi, false, false, 4, root, ip, mode);
          t_gather(pi, true, false, 0, root, ip, mode);
        }
        t_gather(pi, false, true, 4, 0, ip, mode);
        t_gather(pi, true, true, 0, 0, ip, mode);
        t_alltoall(pi, A2A, 4, ip, mode);
        t_alltoall(pi, A2AV, 0, ip, mode);
        t_alltoall(pi, A2AW, 0, ip, mode);
      }
    }
    t_gather(0, false, true, 0, 0, false, mode); /* nothing to move */
    t_alltoall(0, A2A, 0, false, mode);
    t_barrier(mode);
    for (int rk = 0; rk < NRED; ++rk) {
      for (int ip = 0; ip < 2; ++ip) {
        t_reduce(ALLREDUCE, rk, 5, 0, ip, mode);
        for (int root = 0; root < p; ++root) t_reduce(REDUCE, rk, 3, root, ip, mode);
        t_reduce(REDSCAT, rk, 2, 0, ip, mode);
        t_reduce(REDSCAT_BLOCK, rk, 3, 0, ip, mode);
        t_reduce(SCAN, rk, 4, 0, ip, mode);
        t_reduce(EXSCAN, rk, 4, 0, ip, mode);
      }
    }
  }
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  kinds_init();
  reds_init();
  int wr = 0, wp = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &wp);
  if (wp > 64) {
    if (0 == wr) fprintf(stderr, "floor: at most 64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  comm = MPI_COMM_WORLD;
  comm_name = "world";
  run_all();
  MPI_Comm split;
  MPI_Comm_split(MPI_COMM_WORLD, wr % 2, -wr, &split); /* reverse order: ranks differ */
  comm = split;
  comm_name = "split";
  run_all();
  MPI_Comm_free(&split);
  comm = MPI_COMM_SELF;
  comm_name = "self";
  run_all();
  reds_free();
  kinds_free();
  return check_finish("floor");
}
