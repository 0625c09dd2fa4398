/*
 * persistent.c - persistent collectives (MPIX_*_init, Open MPI 4.1's pcollreq extension):
 * Allreduce, Reduce_scatter_block, Reduce_scatter, Allgather, Allgatherv, Alltoall, Bcast, Reduce
 * and Scatter, each initialised once and started --rounds times (default 100) with new buffer
 * contents every round, one by one with MPI_Start and all together with MPI_Startall, some on
 * derived layouts (staged through a temporary that each start refills) and with a
 * non-commutative user op. Every round's result is compared with what the test computes itself;
 * guard zones around receive buffers.
 *
 * Options: --rounds N.
 */
#include <stdlib.h>

#include "mpi_check.h" /* mpi.h, which mpi-ext.h needs first */
#include "mpi_layouts.h"

#include <mpi-ext.h>

static int rank, nranks;

enum { N = 37 }; /* elements per rank or block: odd, so blocks do not divide evenly */
enum { KINDS = 9 };
static const char* const kind_names[KINDS] = {"allreduce",      "reduce_scatter_block",
                                              "reduce_scatter", "allgather",
                                              "allgatherv",     "alltoall",
                                              "bcast",          "reduce",
                                              "scatter"};

/* The input of `who` at element i in round k. */
static int value(int who, size_t i, int k) {
  return (who * 31 + (int)i * 7 + k * 13) % 1000 - 500;
}

#define MOD 1000003LL
/* x -> a*x + b (mod MOD) on two ints: associative, not commutative; inout = in o inout. */
static void affine_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  long long* f = in;
  long long* g = inout;
  for (int i = 0; i < *len; ++i) {
    long long a = (f[2 * i] * g[2 * i]) % MOD, b = (f[2 * i] * g[2 * i + 1] + f[2 * i + 1]) % MOD;
    g[2 * i] = a;
    g[2 * i + 1] = b;
  }
}

typedef struct {
  int kind;
  MPI_Request req;
  int* send;
  int* recv;
  size_t send_elems, recv_elems;
  int counts[64], displs[64];
  guarded_t g;
} pcoll_t;

static void setup(pcoll_t* c, int kind) {
  const size_t p = (size_t)nranks;
  memset(c, 0, sizeof *c);
  c->kind = kind;
  int root = nranks - 1;
  for (int r = 0; r < nranks; ++r) c->counts[r] = N + r % 3;
  for (int r = 0, at = 0; r < nranks; ++r) {
    c->displs[r] = at;
    at += c->counts[r];
  }
  size_t total = (size_t)c->displs[nranks - 1] + (size_t)c->counts[nranks - 1];
  switch (kind) {
    case 0:
      c->send_elems = c->recv_elems = N;
      break;
    case 1:
      c->send_elems = p * N, c->recv_elems = N;
      break;
    case 2:
      c->send_elems = total, c->recv_elems = (size_t)c->counts[rank];
      break;
    case 3:
      c->send_elems = N, c->recv_elems = p * N;
      break;
    case 4:
      c->send_elems = (size_t)c->counts[rank], c->recv_elems = total;
      break;
    case 5:
      c->send_elems = c->recv_elems = p * N;
      break;
    case 6:
      c->send_elems = 0, c->recv_elems = N;
      break;
    case 7:
      c->send_elems = N, c->recv_elems = rank == root ? N : 0;
      break;
    default:
      c->send_elems = rank == root ? p * N : 0, c->recv_elems = N;
      break;
  }
  c->send = malloc(c->send_elems * sizeof(int) + 1);
  c->recv = guarded_alloc(&c->g, c->recv_elems * sizeof(int));
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Info i = MPI_INFO_NULL;
  int rc = MPI_SUCCESS;
  switch (kind) {
    case 0:
      rc = MPIX_Allreduce_init(c->send, c->recv, N, MPI_INT, MPI_SUM, w, i, &c->req);
      break;
    case 1:
      rc = MPIX_Reduce_scatter_block_init(c->send, c->recv, N, MPI_INT, MPI_MAX, w, i, &c->req);
      break;
    case 2:
      rc = MPIX_Reduce_scatter_init(c->send, c->recv, c->counts, MPI_INT, MPI_SUM, w, i, &c->req);
      break;
    case 3:
      rc = MPIX_Allgather_init(c->send, N, MPI_INT, c->recv, N, MPI_INT, w, i, &c->req);
      break;
    case 4:
      rc = MPIX_Allgatherv_init(c->send, c->counts[rank], MPI_INT, c->recv, c->counts, c->displs,
                                MPI_INT, w, i, &c->req);
      break;
    case 5:
      rc = MPIX_Alltoall_init(c->send, N, MPI_INT, c->recv, N, MPI_INT, w, i, &c->req);
      break;
    case 6:
      rc = MPIX_Bcast_init(c->recv, N, MPI_INT, 0, w, i, &c->req);
      break;
    case 7:
      rc = MPIX_Reduce_init(c->send, c->recv, N, MPI_INT, MPI_SUM, root, w, i, &c->req);
      break;
    default:
      rc = MPIX_Scatter_init(c->send, N, MPI_INT, c->recv, N, MPI_INT, root, w, i, &c->req);
      break;
  }
  check(MPI_SUCCESS == rc, "%s_init: rc %d", kind_names[kind], rc);
}

/* New contents for round k: the inputs change, and the receive buffer is reset to its pattern so
 * that stale results from the previous round cannot pass. */
static void fill(pcoll_t* c, int k) {
  for (size_t i = 0; i < c->send_elems; ++i) c->send[i] = value(rank, i, k);
  if (6 == c->kind) {
    for (size_t i = 0; i < c->recv_elems; ++i) c->recv[i] = 0 == rank ? value(0, i, k) : -7;
  } else {
    for (size_t i = 0; i < c->recv_elems; ++i) c->recv[i] = -7;
  }
  guarded_snapshot(&c->g);
}

static int expect(const pcoll_t* c, size_t j, int k) {
  long long acc = 0;
  switch (c->kind) {
    case 0:
    case 7:
      for (int r = 0; r < nranks; ++r) acc += value(r, j, k);
      return (int)acc;
    case 1: {
      int best = value(0, (size_t)rank * N + j, k);
      for (int r = 1; r < nranks; ++r) {
        int v = value(r, (size_t)rank * N + j, k);
        if (v > best) best = v;
      }
      return best;
    }
    case 2:
      for (int r = 0; r < nranks; ++r) acc += value(r, (size_t)c->displs[rank] + j, k);
      return (int)acc;
    case 3:
      return value((int)(j / N), j % N, k);
    case 4: {
      int r = 0;
      while (r + 1 < nranks && (size_t)c->displs[r + 1] <= j) ++r;
      return value(r, j - (size_t)c->displs[r], k);
    }
    case 5:
      return value((int)(j / N), (size_t)rank * N + j % N, k);
    case 6:
      return value(0, j, k);
    default:
      return value(nranks - 1, (size_t)rank * N + j, k);
  }
}

static void verify(pcoll_t* c, int k) {
  char what[96];
  snprintf(what, sizeof what, "persistent %s round %d", kind_names[c->kind], k);
  for (size_t j = 0; j < c->recv_elems; ++j) {
    int e = expect(c, j, k);
    if (!check(c->recv[j] == e, "%s: element %zu is %d, expected %d", what, j, c->recv[j], e))
      break;
  }
  bool written = !(6 == c->kind && 0 == rank);
  guarded_untouched(&c->g, 0, written ? c->recv_elems * sizeof(int) : 0, what);
}

/* A staged persistent Alltoall (vector send layout, shifted receive layout) and a persistent
 * Reduce with a non-commutative user op: each start must reload the staged inputs. */
static void staged(int rounds) {
  const size_t p = (size_t)nranks;
  layout_t* vec = &layouts[1];
  layout_t* shifted = &layouts[3];
  const size_t ints = 8; /* per pair */
  size_t scount = ints / 2, rcount = ints / 4;
  unsigned char* send = malloc(layout_span(vec, p * scount));
  guarded_t g;
  unsigned char* recv = guarded_alloc(&g, layout_span(shifted, p * rcount));
  MPI_Request a2a;
  check(MPI_SUCCESS == MPIX_Alltoall_init(send, (int)scount, vec->type, recv, (int)rcount,
                                          shifted->type, MPI_COMM_WORLD, MPI_INFO_NULL, &a2a),
        "staged alltoall_init");
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_LONG_LONG, &pair);
  MPI_Type_commit(&pair);
  MPI_Op op;
  MPI_Op_create(affine_op, 0, &op);
  long long f[2 * N], res[2 * N];
  MPI_Request red;
  check(
      MPI_SUCCESS == MPIX_Reduce_init(f, res, N, pair, op, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &red),
      "user-op reduce_init");
  for (int k = 0; k < rounds; ++k) {
    for (int r = 0; r < nranks; ++r)
      layout_fill(vec, send + (size_t)r * scount * (size_t)vec->extent, scount, rank + 17 * k, r);
    guarded_snapshot(&g);
    for (int i = 0; i < N; ++i) {
      f[2 * i] = (rank * 7 + i * 3 + k) % 11 + 2;
      f[2 * i + 1] = (rank * 5 + i + k) % 13 + 1;
    }
    MPI_Request both[2] = {a2a, red};
    MPI_Startall(2, both);
    MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
    char what[96];
    snprintf(what, sizeof what, "persistent staged alltoall round %d", k);
    for (int r = 0; r < nranks; ++r)
      if (!layout_check(shifted, recv + (size_t)r * rcount * (size_t)shifted->extent, rcount,
                        r + 17 * k, rank, what))
        break;
    guarded_untouched(&g, 0, layout_span(shifted, p * rcount), what);
    if (0 == rank) {
      for (int i = 0; i < N; ++i) {
        long long ea = (0 * 7 + i * 3 + k) % 11 + 2, eb = (0 * 5 + i + k) % 13 + 1;
        for (int r = 1; r < nranks; ++r) {
          long long fa = (r * 7 + i * 3 + k) % 11 + 2, fb = (r * 5 + i + k) % 13 + 1;
          long long a = (ea * fa) % MOD, b = (ea * fb + eb) % MOD;
          ea = a;
          eb = b;
        }
        if (!check(res[2 * i] == ea && res[2 * i + 1] == eb,
                   "persistent user-op reduce round %d element %d", k, i))
          break;
      }
    }
  }
  MPI_Request_free(&a2a);
  MPI_Request_free(&red);
  MPI_Op_free(&op);
  MPI_Type_free(&pair);
  free(send);
  guarded_free(&g);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int rounds = 100;
  for (int i = 1; i + 1 < argc; ++i)
    if (0 == strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
  layouts_init();
  pcoll_t c[KINDS];
  for (int kind = 0; kind < KINDS; ++kind) setup(&c[kind], kind);
  for (int k = 0; k < rounds; ++k) {
    if (k % 2 == 0) { /* one after the other */
      for (int kind = 0; kind < KINDS; ++kind) {
        fill(&c[kind], k);
        MPI_Start(&c[kind].req);
        MPI_Wait(&c[kind].req, MPI_STATUS_IGNORE);
        verify(&c[kind], k);
      }
    } else { /* all in flight at once, in the same order on every rank */
      MPI_Request all[KINDS];
      for (int kind = 0; kind < KINDS; ++kind) {
        fill(&c[kind], k);
        all[kind] = c[kind].req;
      }
      MPI_Startall(KINDS, all);
      MPI_Waitall(KINDS, all, MPI_STATUSES_IGNORE);
      for (int kind = 0; kind < KINDS; ++kind) verify(&c[kind], k);
    }
  }
  for (int kind = 0; kind < KINDS; ++kind) {
    MPI_Request_free(&c[kind].req);
    free(c[kind].send);
    guarded_free(&c[kind].g);
  }
  staged(rounds);
  layouts_free();
  return check_finish("persistent");
}
