/*
 * neighbor.c - every neighbourhood collective (Neighbor_allgather(v), Neighbor_alltoall(v,w)),
 * blocking, nonblocking and persistent, on Cartesian communicators (1-D and 2-D, periodic and
 * not), a graph (MPI_Graph_create, symmetric, with an isolated rank and a duplicated edge) and a
 * distributed graph (MPI_Dist_graph_create_adjacent, irregular degrees, an isolated rank, a
 * duplicated edge and a self loop).
 *
 * The test knows every rank's neighbour lists from the topology's definition (never from MPI's
 * neighbour queries), so it computes what each receive slot must hold: slot k receives from
 * sources[k]. When one rank sends to another through several slots: on a graph (duplicated
 * edges) the j-th message from that sender to this receiver lands in the j-th slot naming that
 * sender (ordered matching); on a Cartesian communicator (a periodic dimension of size 1 or 2
 * makes the -1 and +1 neighbours one rank) by direction, as MPI 4.0 states it: the slot of the
 * -1 neighbour receives what that neighbour sent to its +1 neighbour, and conversely. A Cartesian
 * MPI_PROC_NULL neighbour keeps its slot in the buffers and moves nothing: its slot must keep its
 * contents.
 *
 * Options: --quick (fewer topologies); --stock (validating the test against Open MPI's own
 * components: libnbc 4.1.4 matches Cartesian messages by order, not direction, in the
 * nonblocking and persistent forms, so those are checked by order there).
 */
#include <stdlib.h>

#include "mpi_check.h" /* mpi.h, which mpi-ext.h needs first */

#include <mpi-ext.h>

enum { MAXN = 64 };

static int wrank, wsize;
static bool stock;
static int cur_mode;        /* the form under test, for --stock */
static MPI_Datatype gapint; /* one MPI_INT, extent two ints */

/* One topology: every rank's lists, and the communicator. */
typedef struct topo {
  const char* name;
  MPI_Comm comm;
  bool cart;
  int indeg[MAXN], outdeg[MAXN];
  int src[MAXN][MAXN], dst[MAXN][MAXN];
} topo_t;

static int val(int r, int i) {
  return r * 1000 + i;
}
/* Element i of what rank r sends through its out-slot j. */
static int a2a(int r, int j, int i) {
  return r * 100000 + j * 100 + i;
}

/* The sender's out-slot whose message lands in receiver `me`'s in-slot k (-1: none). */
static int paired_slot(const topo_t* t, int me, int k) {
  int s = t->src[me][k];
  if (MPI_PROC_NULL == s) return -1;
  /* by direction: from the -1 neighbour (even slot) what it sent to its +1 one (odd slot) */
  if (t->cart && !(stock && 0 != cur_mode)) return k ^ 1;
  int nth = 0;
  for (int q = 0; q < k; ++q) nth += t->src[me][q] == s;
  for (int j = 0; j < t->outdeg[s]; ++j)
    if (t->dst[s][j] == me && 0 == nth--) return j;
  return -1;
}

/* Sizes of what rank r sends through out-slot j, for the v and w forms (zero included). */
static int vcount(int r, int j) {
  return (r + 2 * j) % 3;
}
/* Allgatherv: rank r sends r % 3 + 1 ints to everybody. */
static int gvcount(int r) {
  return r % 3 + 1;
}

static void allgather_case(const topo_t* t, int mode, MPI_Datatype rdt) {
  const int c = 3;
  const int in = t->indeg[wrank], st = gapint == rdt ? 2 : 1;
  int* s = check_ints(c);
  for (int i = 0; i < c; ++i) s[i] = val(wrank, i);
  size_t rn = (size_t)(in * c * st);
  int* r = check_ints(rn);
  MPI_Request req;
  int rc =
      CHECK_RUN(mode, Neighbor_allgather, neighbor_allgather, s, c, MPI_INT, r, c, rdt, t->comm);
  char what[96];
  snprintf(what, sizeof what, "neighbor_allgather%s %s", 2 == st ? " strided" : "",
           check_modes[mode]);
  if (check(MPI_SUCCESS == rc, "%s %s: rc %d", t->name, what, rc)) {
    CHECK_SLOTS(t, what, r, rn + 1, e,
                e < (int)rn && 0 == e % st && MPI_PROC_NULL != t->src[wrank][e / st / c],
                val(t->src[wrank][e / st / c], e / st % c));
  }
  free(s);
  free(r);
}

static void allgatherv_case(const topo_t* t, int mode) {
  const int in = t->indeg[wrank];
  int sc = gvcount(wrank);
  int* s = check_ints((size_t)sc);
  for (int i = 0; i < sc; ++i) s[i] = val(wrank, i);
  int counts[MAXN], disps[MAXN], total = 0;
  /* reversed placement with one-int gaps */
  for (int k = in - 1; k >= 0; --k) {
    int from = t->src[wrank][k];
    counts[k] = MPI_PROC_NULL == from ? 1 : gvcount(from);
    disps[k] = total;
    total += counts[k] + 1;
  }
  int* r = check_ints((size_t)total);
  MPI_Request req;
  int rc = CHECK_RUN(mode, Neighbor_allgatherv, neighbor_allgatherv, s, sc, MPI_INT, r, counts,
                     disps, MPI_INT, t->comm);
  char what[64];
  snprintf(what, sizeof what, "neighbor_allgatherv %s", check_modes[mode]);
  if (check(MPI_SUCCESS == rc, "%s %s: rc %d", t->name, what, rc)) {
    for (int k = 0; k < in; ++k) {
      int from = t->src[wrank][k];
      CHECK_SLOTS(t, what, r + disps[k], counts[k] + 1, e, MPI_PROC_NULL != from && e < counts[k],
                  val(from, e));
    }
  }
  free(s);
  free(r);
}

static void alltoall_case(const topo_t* t, int mode, MPI_Datatype sdt) {
  const int c = 2;
  const int in = t->indeg[wrank], out = t->outdeg[wrank], st = gapint == sdt ? 2 : 1;
  int* s = check_ints((size_t)(out * c * st));
  for (int j = 0; j < out; ++j)
    for (int i = 0; i < c; ++i) s[(j * c + i) * st] = a2a(wrank, j, i);
  size_t rn = (size_t)(in * c);
  int* r = check_ints(rn);
  MPI_Request req;
  int rc = CHECK_RUN(mode, Neighbor_alltoall, neighbor_alltoall, s, c, sdt, r, c, MPI_INT, t->comm);
  char what[96];
  snprintf(what, sizeof what, "neighbor_alltoall%s %s", 2 == st ? " strided" : "",
           check_modes[mode]);
  if (check(MPI_SUCCESS == rc, "%s %s: rc %d", t->name, what, rc)) {
    CHECK_SLOTS(t, what, r, rn + 1, e, e < (int)rn && paired_slot(t, wrank, e / c) >= 0,
                a2a(t->src[wrank][e / c], paired_slot(t, wrank, e / c), e % c));
  }
  free(s);
  free(r);
}

static void alltoallv_case(const topo_t* t, int mode, bool w) {
  const int in = t->indeg[wrank], out = t->outdeg[wrank];
  int sc[MAXN], sd[MAXN], rcnt[MAXN], rd[MAXN];
  MPI_Datatype stypes[MAXN], rtypes[MAXN];
  int stotal = 0, rtotal = 0;
  for (int j = 0; j < out; ++j) {
    stypes[j] = w && 1 == j % 2 ? gapint : MPI_INT;
    sc[j] = vcount(wrank, j);
    sd[j] = stotal;
    stotal += sc[j] * (gapint == stypes[j] ? 2 : 1) + 1;
  }
  for (int k = in - 1; k >= 0; --k) {
    int j = paired_slot(t, wrank, k);
    rtypes[k] = MPI_INT;
    rcnt[k] = j < 0 ? 2 : vcount(t->src[wrank][k], j); /* a PROC_NULL slot: any count */
    rd[k] = rtotal;
    rtotal += rcnt[k] + 1;
  }
  int* s = check_ints((size_t)stotal);
  int* r = check_ints((size_t)rtotal);
  for (int j = 0; j < out; ++j)
    for (int i = 0; i < sc[j]; ++i) s[sd[j] + i * (gapint == stypes[j] ? 2 : 1)] = a2a(wrank, j, i);
  MPI_Request req;
  int rc;
  if (w) {
    MPI_Aint sdb[MAXN], rdb[MAXN];
    for (int j = 0; j < out; ++j) sdb[j] = (MPI_Aint)sd[j] * (MPI_Aint)sizeof(int);
    for (int k = 0; k < in; ++k) rdb[k] = (MPI_Aint)rd[k] * (MPI_Aint)sizeof(int);
    rc = CHECK_RUN(mode, Neighbor_alltoallw, neighbor_alltoallw, s, sc, sdb, stypes, r, rcnt, rdb,
                   rtypes, t->comm);
  } else {
    rc = CHECK_RUN(mode, Neighbor_alltoallv, neighbor_alltoallv, s, sc, sd, MPI_INT, r, rcnt, rd,
                   MPI_INT, t->comm);
  }
  char what[64];
  snprintf(what, sizeof what, "%s %s", w ? "neighbor_alltoallw" : "neighbor_alltoallv",
           check_modes[mode]);
  if (check(MPI_SUCCESS == rc, "%s %s: rc %d", t->name, what, rc)) {
    for (int k = 0; k < in; ++k) {
      int j = paired_slot(t, wrank, k);
      CHECK_SLOTS(t, what, r + rd[k], rcnt[k] + 1, e, j >= 0 && e < rcnt[k],
                  a2a(t->src[wrank][k], j, e));
    }
  }
  free(s);
  free(r);
}

static void run_all(const topo_t* t) {
  int in = -1, out = -1, weighted = 0, kind = MPI_UNDEFINED;
  MPI_Topo_test(t->comm, &kind);
  if (MPI_DIST_GRAPH == kind) {
    MPI_Dist_graph_neighbors_count(t->comm, &in, &out, &weighted);
    check(in == t->indeg[wrank] && out == t->outdeg[wrank], "%s: degrees %d/%d, expected %d/%d",
          t->name, in, out, t->indeg[wrank], t->outdeg[wrank]);
  }
  for (int mode = 0; mode < 3; ++mode) {
    cur_mode = mode;
    allgather_case(t, mode, MPI_INT);
    allgather_case(t, mode, gapint);
    allgatherv_case(t, mode);
    alltoall_case(t, mode, MPI_INT);
    alltoall_case(t, mode, gapint);
    alltoallv_case(t, mode, false);
    alltoallv_case(t, mode, true);
  }
}

/* Cartesian: row-major ranks; per dimension the -1 then the +1 neighbour. */
static void make_cart(topo_t* t, const char* name, int ndims, const int* periods) {
  int dims[4] = {0, 0, 0, 0};
  MPI_Dims_create(wsize, ndims, dims);
  t->name = name;
  t->cart = true;
  MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &t->comm);
  MPI_Comm_set_name(t->comm, (char*)name);
  for (int r = 0; r < wsize; ++r) {
    int coord[4], rest = r;
    for (int d = ndims - 1; d >= 0; --d) {
      coord[d] = rest % dims[d];
      rest /= dims[d];
    }
    t->indeg[r] = t->outdeg[r] = 2 * ndims;
    for (int d = 0; d < ndims; ++d)
      for (int side = 0; side < 2; ++side) {
        int c = coord[d] + (0 == side ? -1 : 1), peer = MPI_PROC_NULL;
        if (periods[d]) c = (c + dims[d]) % dims[d];
        if (c >= 0 && c < dims[d]) {
          peer = 0;
          for (int e = 0; e < ndims; ++e) peer = peer * dims[e] + (e == d ? c : coord[e]);
        }
        t->src[r][2 * d + side] = t->dst[r][2 * d + side] = peer;
      }
  }
}

/* Graph: ranks 0..m-1 (m = size - 1) on a ring, edge 0-1 twice, the last rank isolated. */
static void make_graph(topo_t* t) {
  int m = wsize - 1, edges[MAXN][2], ne = 0;
  if (m >= 3)
    for (int r = 0; r < m; ++r) edges[ne][0] = r, edges[ne][1] = (r + 1) % m, ++ne;
  if (2 == m) edges[ne][0] = 0, edges[ne][1] = 1, ++ne;
  if (m >= 2) edges[ne][0] = 0, edges[ne][1] = 1, ++ne; /* duplicated */
  for (int r = 0; r < wsize; ++r) t->indeg[r] = 0;
  for (int e = 0; e < ne; ++e) {
    int a = edges[e][0], b = edges[e][1];
    t->src[a][t->indeg[a]++] = b;
    t->src[b][t->indeg[b]++] = a;
  }
  int index[MAXN], flat[2 * MAXN], n = 0;
  for (int r = 0; r < wsize; ++r) {
    t->outdeg[r] = t->indeg[r];
    for (int k = 0; k < t->indeg[r]; ++k) flat[n++] = t->dst[r][k] = t->src[r][k];
    index[r] = n;
  }
  t->name = "graph";
  t->cart = false;
  MPI_Graph_create(MPI_COMM_WORLD, wsize, index, flat, 0, &t->comm);
  MPI_Comm_set_name(t->comm, (char*)t->name);
}

/* Distributed graph: directed edges r -> r+1 on a ring of 0..m-1, r -> r+2 from even ranks, 0 -> 1
 * again, a self loop on 1; the last rank has no neighbours. */
static void make_dist_graph(topo_t* t) {
  int m = wsize - 1, edges[4 * MAXN][2], ne = 0;
  for (int r = 0; r < m && m >= 2; ++r) edges[ne][0] = r, edges[ne][1] = (r + 1) % m, ++ne;
  for (int r = 0; r < m; r += 2)
    if ((r + 2) % m != r) edges[ne][0] = r, edges[ne][1] = (r + 2) % m, ++ne;
  if (m >= 2) edges[ne][0] = 0, edges[ne][1] = 1, ++ne;
  if (m >= 2) edges[ne][0] = 1, edges[ne][1] = 1, ++ne;
  for (int r = 0; r < wsize; ++r) t->indeg[r] = t->outdeg[r] = 0;
  for (int e = 0; e < ne; ++e) {
    int a = edges[e][0], b = edges[e][1];
    t->dst[a][t->outdeg[a]++] = b;
    t->src[b][t->indeg[b]++] = a;
  }
  t->name = "dist_graph";
  t->cart = false;
/* MPI_UNWEIGHTED is a small pointer constant, which gcc takes for an array of size 0 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, t->indeg[wrank], t->src[wrank], MPI_UNWEIGHTED,
                                 t->outdeg[wrank], t->dst[wrank], MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                 &t->comm);
#pragma GCC diagnostic pop
  MPI_Comm_set_name(t->comm, (char*)t->name);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  bool quick = has_flag(argc, argv, "--quick");
  stock = has_flag(argc, argv, "--stock");
  if (wsize > MAXN / 4) {
    fprintf(stderr, "neighbor runs on at most %d ranks\n", MAXN / 4);
    MPI_Finalize();
    return 77;
  }
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &gapint);
  MPI_Type_commit(&gapint);

  static topo_t t; /* large: not on the stack */
  const int periodic[2] = {1, 1}, open_[2] = {0, 0}, mixed[2] = {1, 0};
  make_cart(&t, "cart-1d-periodic", 1, periodic);
  run_all(&t);
  MPI_Comm_free(&t.comm);
  make_cart(&t, "cart-1d-open", 1, open_);
  run_all(&t);
  MPI_Comm_free(&t.comm);
  if (!quick) {
    make_cart(&t, "cart-2d-periodic", 2, periodic);
    run_all(&t);
    MPI_Comm_free(&t.comm);
  }
  make_cart(&t, "cart-2d-mixed", 2, mixed);
  run_all(&t);
  MPI_Comm_free(&t.comm);
  make_graph(&t);
  run_all(&t);
  MPI_Comm_free(&t.comm);
  make_dist_graph(&t);
  run_all(&t);
  /* a duplicate keeps the topology */
  MPI_Comm dup;
  MPI_Comm_dup(t.comm, &dup);
  MPI_Comm_free(&t.comm);
  t.comm = dup;
  t.name = "dist_graph-dup";
  run_all(&t);
  MPI_Comm_free(&t.comm);
  MPI_Type_free(&gapint);
  return check_finish("neighbor");
}
