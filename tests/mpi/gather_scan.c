/*
 * gather_scan.c - MPI_Gather, MPI_Scan, MPI_Exscan and MPI_Barrier (blocking, nonblocking,
 * persistent): every root, in place at the root, zero and uneven sizes, every layout of
 * mpi_layouts.h for Gather; every predefined type with every op MPI defines on it and a
 * non-commutative user ops for the scans (one keeping the left operand, one composing affine
 * maps, which reveals any other grouping), compared with the rank-order prefix the test computes;
 * a barrier's ordering checked through point-to-point. Guard zones around receive buffers:
 * nothing on Gather non-roots, nothing on Exscan's rank 0.
 *
 * Options: --quick (fewer types and layouts).
 */
#include <stdlib.h>

#include "mpi_check.h" /* mpi.h, which mpi-ext.h needs first */
#include "mpi_layouts.h"
#include "mpi_values.h"

#include <mpi-ext.h>

static int rank, nranks;
static bool quick;

/* A persistent request is started once, then freed. */
static int complete(int rc, MPI_Request* req, int mode) {
  return check_complete_with(rc, req, mode, 1, false);
}

static void gather_case(const layout_t* sl, const layout_t* rl, size_t ints, int root,
                        bool in_place, int mode) {
  if (0 == sl->ints || 0 == rl->ints) {
    if (sl != rl) return;
  } else if (ints % (size_t)sl->ints || ints % (size_t)rl->ints) {
    return;
  }
  size_t scount = 0 == sl->ints ? ints : ints / (size_t)sl->ints;
  size_t rcount = 0 == rl->ints ? ints : ints / (size_t)rl->ints;
  const size_t p = (size_t)nranks;
  bool is_root = rank == root;
  char what[200];
  snprintf(what, sizeof what, "gather %s -> %s, %zu per rank, root %d%s %s", sl->name, rl->name,
           ints, root, in_place ? " in place" : "", check_modes[mode]);
  guarded_t g;
  unsigned char* send = malloc(layout_span(sl, scount) + 1);
  unsigned char* recv = guarded_alloc(&g, is_root ? layout_span(rl, p * rcount) : 16);
  const size_t ext = (size_t)rl->extent;
  if (is_root && in_place) {
    layout_fill(rl, recv + (size_t)root * rcount * ext, rcount, root, 0);
  } else {
    layout_fill(sl, send, scount, rank, 0);
  }
  guarded_snapshot(&g);
  const void* sbuf = is_root && in_place ? MPI_IN_PLACE : send;
  MPI_Request req;
  int rc = 0 == mode   ? MPI_Gather(sbuf, (int)scount, sl->type, recv, (int)rcount, rl->type, root,
                                    MPI_COMM_WORLD)
           : 1 == mode ? MPI_Igather(sbuf, (int)scount, sl->type, recv, (int)rcount, rl->type, root,
                                     MPI_COMM_WORLD, &req)
                       : MPIX_Gather_init(sbuf, (int)scount, sl->type, recv, (int)rcount, rl->type,
                                          root, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
  rc = complete(rc, &req, mode);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    if (!is_root) {
      guarded_untouched(&g, 0, 0, what);
    } else {
      for (int r = 0; r < nranks; ++r)
        if (!layout_check(rl, recv + (size_t)r * rcount * ext, rcount, r, 0, what)) break;
      guarded_untouched(&g, 0, layout_span(rl, p * rcount), what);
      layout_gaps_untouched(&g, 0, rl, p * rcount, what);
    }
  }
  free(send);
  guarded_free(&g);
}

static void scan_case(const test_type_t* t, int oi, const test_op_t* op, size_t count,
                      bool exclusive, bool in_place, int mode) {
  char what[200];
  snprintf(what, sizeof what, "%s %s %s count %zu%s %s", exclusive ? "exscan" : "scan", t->name,
           op->name, count, in_place ? " in place" : "", check_modes[mode]);
  guarded_t g;
  unsigned char* send = malloc(count * t->size + 1);
  unsigned char* recv = guarded_alloc(&g, count * t->size);
  unsigned char* input = in_place ? recv : send;
  for (size_t i = 0; i < count; ++i) {
    long double re, im;
    test_value(oi, t, rank, i, &re, &im);
    t->set(input, i, re, im);
  }
  guarded_snapshot(&g);
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Request req;
  int c = (int)count;
  int rc;
  if (exclusive) {
    rc = 0 == mode   ? MPI_Exscan(sbuf, recv, c, t->type, op->op, w)
         : 1 == mode ? MPI_Iexscan(sbuf, recv, c, t->type, op->op, w, &req)
                     : MPIX_Exscan_init(sbuf, recv, c, t->type, op->op, w, MPI_INFO_NULL, &req);
  } else {
    rc = 0 == mode   ? MPI_Scan(sbuf, recv, c, t->type, op->op, w)
         : 1 == mode ? MPI_Iscan(sbuf, recv, c, t->type, op->op, w, &req)
                     : MPIX_Scan_init(sbuf, recv, c, t->type, op->op, w, MPI_INFO_NULL, &req);
  }
  rc = complete(rc, &req, mode);
  int upto = exclusive ? rank : rank + 1; /* ranks 0 .. upto-1 are folded */
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    if (exclusive && 0 == rank) {
      /* rank 0's receive buffer is undefined after MPI_Exscan; in place it still holds input */
      guarded_untouched(&g, 0, in_place ? 0 : count * t->size, what);
    } else {
      for (size_t j = 0; j < count; ++j) {
        long double ere, eim, gre, gim;
        test_expected(oi, t, upto, j, &ere, &eim);
        t->get(recv, j, &gre, &gim);
        if (!check(ere == gre && eim == gim, "%s: element %zu is (%Lg,%Lg), expected (%Lg,%Lg)",
                   what, j, gre, gim, ere, eim))
          break;
      }
      guarded_untouched(&g, 0, count * t->size, what);
    }
  }
  free(send);
  guarded_free(&g);
}

/* Non-commutative: keep the left operand, so the prefix is always rank 0's value. */
static void left_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  memcpy(inout, in, (size_t)*len * sizeof(int));
}

static void scan_user(MPI_Op left, bool exclusive, int mode) {
  enum { C = 103 };
  int send[C], recv[C];
  for (int i = 0; i < C; ++i) {
    send[i] = rank * 1000 + i;
    recv[i] = -1;
  }
  MPI_Request req;
  int rc = exclusive
               ? (0 == mode   ? MPI_Exscan(send, recv, C, MPI_INT, left, MPI_COMM_WORLD)
                  : 1 == mode ? MPI_Iexscan(send, recv, C, MPI_INT, left, MPI_COMM_WORLD, &req)
                              : MPIX_Exscan_init(send, recv, C, MPI_INT, left, MPI_COMM_WORLD,
                                                 MPI_INFO_NULL, &req))
               : (0 == mode   ? MPI_Scan(send, recv, C, MPI_INT, left, MPI_COMM_WORLD)
                  : 1 == mode ? MPI_Iscan(send, recv, C, MPI_INT, left, MPI_COMM_WORLD, &req)
                              : MPIX_Scan_init(send, recv, C, MPI_INT, left, MPI_COMM_WORLD,
                                               MPI_INFO_NULL, &req));
  rc = complete(rc, &req, mode);
  check(MPI_SUCCESS == rc, "user-op scan rc %d", rc);
  if (exclusive && 0 == rank) return;
  for (int i = 0; i < C; ++i)
    if (!check(recv[i] == i, "%s user op (non-commutative) %s: element %d is %d, expected %d",
               exclusive ? "exscan" : "scan", check_modes[mode], i, recv[i], i))
      break;
}

/* Non-commutative and order-revealing: an element is the affine map x -> a x + b (two unsigned,
 * one contiguous datatype), and in (+) inout is their composition in(inout(x)) with the lower
 * rank's map outside: (a1, b1) (+) (a2, b2) = (a1 a2, a1 b2 + b1) mod 2^32. Any other grouping
 * order of the ranks gives another pair. */
static void affine_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  const unsigned* x = in;
  unsigned* y = inout;
  for (int i = 0; i < *len; ++i) {
    const unsigned a = x[2 * i] * y[2 * i], b = x[2 * i] * y[2 * i + 1] + x[2 * i + 1];
    y[2 * i] = a;
    y[2 * i + 1] = b;
  }
}

static void affine_value(int r, int i, unsigned* ab) {
  ab[0] = 2u * (unsigned)r + 3u + 4u * (unsigned)i;
  ab[1] = 7u * (unsigned)r + (unsigned)i + 1u;
}

static void scan_affine(MPI_Op affine, MPI_Datatype pair, bool exclusive, bool in_place, int mode) {
  enum { C = 37 };
  unsigned send[2 * C], recv[2 * C], expect[2 * C];
  for (int i = 0; i < C; ++i) {
    affine_value(rank, i, &send[2 * i]);
    recv[2 * i] = recv[2 * i + 1] = 0xdeadu;
    /* the rank-order prefix over ranks 0 .. last, computed left to right */
    const int last = exclusive ? rank - 1 : rank;
    unsigned acc[2] = {1u, 0u};
    for (int r = 0; r <= last; ++r) {
      unsigned v[2];
      affine_value(r, i, v);
      const unsigned a = acc[0] * v[0], b = acc[0] * v[1] + acc[1];
      acc[0] = a;
      acc[1] = b;
    }
    expect[2 * i] = acc[0];
    expect[2 * i + 1] = acc[1];
  }
  if (in_place) memcpy(recv, send, sizeof send);
  const void* sb = in_place ? MPI_IN_PLACE : (const void*)send;
  MPI_Request req;
  int rc =
      exclusive
          ? (0 == mode ? MPI_Exscan(sb, recv, C, pair, affine, MPI_COMM_WORLD)
             : 1 == mode
                 ? MPI_Iexscan(sb, recv, C, pair, affine, MPI_COMM_WORLD, &req)
                 : MPIX_Exscan_init(sb, recv, C, pair, affine, MPI_COMM_WORLD, MPI_INFO_NULL, &req))
          : (0 == mode ? MPI_Scan(sb, recv, C, pair, affine, MPI_COMM_WORLD)
             : 1 == mode
                 ? MPI_Iscan(sb, recv, C, pair, affine, MPI_COMM_WORLD, &req)
                 : MPIX_Scan_init(sb, recv, C, pair, affine, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
  rc = complete(rc, &req, mode);
  check(MPI_SUCCESS == rc, "affine scan rc %d", rc);
  if (exclusive && 0 == rank) return;
  for (int i = 0; i < 2 * C; ++i)
    if (!check(recv[i] == expect[i],
               "%s affine user op (non-commutative)%s %s: word %d is %u, expected %u",
               exclusive ? "exscan" : "scan", in_place ? " in place" : "", check_modes[mode], i,
               recv[i], expect[i]))
      break;
}

/* After a barrier every rank's message sent before it has arrived: rank r sends to r+1 before
 * the barrier, and r+1 tests (without waiting) after it. */
static void barrier_case(int mode) {
  int out = rank, in = -1, flag = 0;
  MPI_Request rreq, sreq, breq;
  MPI_Irecv(&in, 1, MPI_INT, (rank + nranks - 1) % nranks, 11, MPI_COMM_WORLD, &rreq);
  MPI_Send(&out, 1, MPI_INT, (rank + 1) % nranks, 11, MPI_COMM_WORLD); /* small: eager */
  (void)sreq;
  int rc = 0 == mode   ? MPI_Barrier(MPI_COMM_WORLD)
           : 1 == mode ? MPI_Ibarrier(MPI_COMM_WORLD, &breq)
                       : MPIX_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &breq);
  rc = complete(rc, &breq, mode);
  check(MPI_SUCCESS == rc, "barrier %s: rc %d", check_modes[mode], rc);
  MPI_Wait(&rreq, MPI_STATUS_IGNORE);
  flag = in == (rank + nranks - 1) % nranks;
  check(flag, "barrier %s: ring message %d", check_modes[mode], in);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  quick = has_flag(argc, argv, "--quick");
  layouts_init();
  size_t gints[] = {0, 4, 12, 148};
  for (int mode = 0; mode < 3; ++mode)
    for (int root = 0; root < nranks; ++root)
      for (int si = 0; si < num_layouts; ++si)
        for (int ri = 0; ri < num_layouts; ++ri)
          for (size_t ci = 0; ci < 4; ++ci)
            for (int ip = 0; ip < 2; ++ip) {
              if (quick && (si != ri || (root != 0 && root != nranks - 1))) continue;
              gather_case(&layouts[si], &layouts[ri], gints[ci], root, 1 == ip, mode);
            }

  test_type_t types[MAX_TEST_TYPES];
  int ntypes = test_types(types);
  test_op_t ops[16];
  int nops = test_ops(ops);
  for (int ti = 0; ti < ntypes; ++ti) {
    const test_type_t* t = &types[ti];
    if (quick && MPI_INT != t->type && MPI_DOUBLE != t->type && MPI_C_BOOL != t->type) continue;
    for (int oi = 0; oi < nops; ++oi) {
      if (0 == (ops[oi].groups & GBIT(t->group))) continue;
      size_t counts[] = {1, (size_t)nranks + 2, 517};
      for (size_t ci = 0; ci < 3; ++ci)
        for (int ex = 0; ex < 2; ++ex)
          for (int ip = 0; ip < 2; ++ip)
            scan_case(t, oi, &ops[oi], counts[ci], 1 == ex, 1 == ip, (int)(ci + (size_t)ip) % 3);
    }
  }
  MPI_Op left;
  MPI_Op_create(left_op, 0, &left);
  for (int mode = 0; mode < 3; ++mode) {
    scan_user(left, false, mode);
    scan_user(left, true, mode);
    barrier_case(mode);
  }
  MPI_Op_free(&left);
  MPI_Op affine;
  MPI_Datatype pair;
  MPI_Op_create(affine_op, 0, &affine);
  MPI_Type_contiguous(2, MPI_UNSIGNED, &pair);
  MPI_Type_commit(&pair);
  for (int mode = 0; mode < 3; ++mode)
    for (int ip = 0; ip < 2; ++ip) {
      scan_affine(affine, pair, false, 1 == ip, mode);
      scan_affine(affine, pair, true, 1 == ip, mode);
    }
  MPI_Type_free(&pair);
  MPI_Op_free(&affine);
  layouts_free();
  return check_finish("gather_scan");
}
