/*
 * comms.c - collectives on communicators other than MPI_COMM_WORLD, and user-defined ops.
 *
 *  - MPI_Comm_split with reversed keys, MPI_Comm_dup, MPI_Comm_idup, MPI_Comm_split_type,
 * single-rank communicators, MPI_COMM_SELF and an intercommunicator (no engine on the last
 * three: coll_hccl hands single ranks to the previous component or its floor and does not take
 * intercommunicators; the results must still be right);
 *  - MAXLOC and MINLOC on pair types;
 *  - commutative and non-commutative user ops: the result must equal the reduction in the
 *    communicator's rank order, on a predefined type, a contiguous derived type and a vector type;
 *  - collectives interleaved over several communicators.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_check.h"

#define MOD 1000003LL

static int world_rank, world_size;
static MPI_Datatype affine_contig, affine_vector;

/* An affine map x -> a*x + b (mod MOD). Composition is associative and not commutative. */
typedef struct {
  long long a, b;
} affine_t;

/* (f op g)(x) = f(g(x)) */
static affine_t compose(affine_t f, affine_t g) {
  affine_t h = {(f.a * g.a) % MOD, (f.a * g.b + f.b) % MOD};
  return h;
}

static affine_t affine_of(int who, int i) {
  affine_t f = {(who * 7 + i * 3) % 11 + 2, (who * 5 + i) % 13 + 1};
  return f;
}

/* MPI calls this with invec from lower ranks: inout = in op inout. The vector type holds (a, b)
 * 16 bytes apart with a gap between. */
static void affine_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  const bool vec = *type == affine_vector;
  const int stride = vec ? 3 : 2;
  long long* x = in;
  long long* y = inout;
  for (int i = 0; i < *len; ++i) {
    affine_t f = {x[i * stride], x[i * stride + (vec ? 2 : 1)]};
    affine_t g = {y[i * stride], y[i * stride + (vec ? 2 : 1)]};
    affine_t h = compose(f, g);
    y[i * stride] = h.a;
    y[i * stride + (vec ? 2 : 1)] = h.b;
  }
}

/* Non-commutative on a predefined type: keeps the left operand, so the result is the value of
 * rank 0 of the communicator. */
static void left_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  memcpy(inout, in, (size_t)*len * sizeof(int));
}

/* Commutative user op on a predefined type: sum modulo 1000. */
static void summod_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  int* x = in;
  int* y = inout;
  for (int i = 0; i < *len; ++i) y[i] = (x[i] + y[i]) % 1000;
}

static MPI_Op op_affine, op_left, op_summod;

/* MAXLOC/MINLOC on pair types (coll_hccl leaves them to the previous component). Ties go to the
 * lowest index, as MPI defines. */
static void loc_ops(void) {
  struct {
    double v;
    int i;
  } d[3], dr[3];
  struct {
    int v, i;
  } n[3], nr[3];
  for (int k = 0; k < 3; ++k) {
    d[k].v = (double)((world_rank * 5 + k * 3) % 4); /* ties between ranks */
    d[k].i = world_rank;
    n[k].v = (world_rank * 7 + k) % 3;
    n[k].i = world_rank + 10;
  }
  MPI_Allreduce(d, dr, 3, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  MPI_Allreduce(n, nr, 3, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
  for (int k = 0; k < 3; ++k) {
    double best = -1;
    int at = -1, nbest = 1 << 30, nat = -1;
    for (int r = 0; r < world_size; ++r) {
      double v = (double)((r * 5 + k * 3) % 4);
      if (v > best) {
        best = v;
        at = r;
      }
      int w = (r * 7 + k) % 3;
      if (w < nbest) {
        nbest = w;
        nat = r + 10;
      }
    }
    check(dr[k].v == best && dr[k].i == at, "MAXLOC element %d: (%g,%d) expected (%g,%d)", k,
          dr[k].v, dr[k].i, best, at);
    check(nr[k].v == nbest && nr[k].i == nat, "MINLOC element %d: (%d,%d) expected (%d,%d)", k,
          nr[k].v, nr[k].i, nbest, nat);
  }
}

/* world ranks of the communicator's members, in its rank order */
static void members(MPI_Comm comm, int* world_of) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  MPI_Group g, wg;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int* ranks = malloc((size_t)n * sizeof(int));
  for (int i = 0; i < n; ++i) ranks[i] = i;
  MPI_Group_translate_ranks(g, n, ranks, wg, world_of);
  free(ranks);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
}

static affine_t affine_expected(const int* world_of, int n, int i) {
  affine_t acc = affine_of(world_of[0], i);
  for (int r = 1; r < n; ++r) acc = compose(acc, affine_of(world_of[r], i));
  return acc;
}

/* Allreduce, reduce_scatter_block and reduce_scatter with the non-commutative affine op, on
 * the contiguous pair type and on the vector type. */
static void user_ops(MPI_Comm comm, const char* label) {
  int n, me;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  int* world_of = malloc((size_t)n * sizeof(int));
  members(comm, world_of);
  const int count = 5;
  for (int vec = 0; vec < 2; ++vec) {
    MPI_Datatype t = vec ? affine_vector : affine_contig;
    const int stride = vec ? 3 : 2;
    const int total = count * n;
    const size_t bytes = (size_t)total * (size_t)stride * sizeof(long long);
    guarded_t g;
    long long* in = calloc((size_t)total * (size_t)stride, sizeof(long long));
    long long* out = guarded_alloc(&g, bytes);
    memset(out, 0, bytes);
    /* Output of an element: its whole extent (the vector type's gap included, which MPI leaves
     * to the implementation); nothing beyond the elements the call names. */
    const size_t elem = (size_t)stride * sizeof(long long);
    char what[160];
    for (int i = 0; i < total; ++i) {
      affine_t f = affine_of(world_rank, i);
      in[i * stride] = f.a;
      in[i * stride + stride - 1] = f.b;
    }
    const char* tn = vec ? "vector" : "contiguous";
    /* allreduce over `total` elements */
    guarded_snapshot(&g);
    MPI_Allreduce(in, out, total, t, op_affine, comm);
    snprintf(what, sizeof what, "%s allreduce affine %s", label, tn);
    guarded_untouched(&g, 0, (size_t)total * elem, what);
    for (int i = 0; i < total; ++i) {
      affine_t e = affine_expected(world_of, n, i);
      if (!check(out[i * stride] == e.a && out[i * stride + stride - 1] == e.b,
                 "%s allreduce affine %s element %d: (%lld,%lld) expected (%lld,%lld)", label, tn,
                 i, out[i * stride], out[i * stride + stride - 1], e.a, e.b)) {
        break;
      }
    }
    /* reduce_scatter_block: my block is elements [me*count, (me+1)*count) */
    guarded_snapshot(&g);
    MPI_Reduce_scatter_block(in, out, count, t, op_affine, comm);
    snprintf(what, sizeof what, "%s reduce_scatter_block affine %s", label, tn);
    guarded_untouched(&g, 0, (size_t)count * elem, what);
    for (int i = 0; i < count; ++i) {
      affine_t e = affine_expected(world_of, n, me * count + i);
      if (!check(out[i * stride] == e.a && out[i * stride + stride - 1] == e.b,
                 "%s reduce_scatter_block affine %s element %d", label, tn, i)) {
        break;
      }
    }
    /* reduce_scatter with counts r % 3 + 1 */
    int* counts = malloc((size_t)n * sizeof(int));
    int first = 0, sum = 0;
    for (int r = 0; r < n; ++r) {
      counts[r] = r % 3 + 1;
      if (r == me) first = sum;
      sum += counts[r];
    }
    guarded_snapshot(&g);
    MPI_Reduce_scatter(in, out, counts, t, op_affine, comm);
    snprintf(what, sizeof what, "%s reduce_scatter affine %s", label, tn);
    guarded_untouched(&g, 0, (size_t)counts[me] * elem, what);
    for (int i = 0; i < counts[me]; ++i) {
      affine_t e = affine_expected(world_of, n, first + i);
      if (!check(out[i * stride] == e.a && out[i * stride + stride - 1] == e.b,
                 "%s reduce_scatter affine %s element %d", label, tn, i)) {
        break;
      }
    }
    free(counts);
    free(in);
    guarded_free(&g);
  }
  /* predefined type, non-commutative and commutative user ops, in place too */
  int v[3] = {world_rank * 10 + 1, world_rank * 10 + 2, world_rank * 10 + 3}, w[3];
  MPI_Allreduce(v, w, 3, MPI_INT, op_left, comm);
  check(w[0] == world_of[0] * 10 + 1 && w[2] == world_of[0] * 10 + 3,
        "%s allreduce left op: %d, expected %d (rank 0 of the communicator)", label, w[0],
        world_of[0] * 10 + 1);
  memcpy(w, v, sizeof v);
  MPI_Allreduce(MPI_IN_PLACE, w, 3, MPI_INT, op_summod, comm);
  int expect = 0;
  for (int r = 0; r < n; ++r) expect = (expect + world_of[r] * 10 + 2) % 1000;
  check(w[1] == expect, "%s allreduce summod in place: %d, expected %d", label, w[1], expect);
  free(world_of);
}

/* SUM of ints on any intracommunicator, checked against its membership. */
static void sum_check(MPI_Comm comm, const char* label, int salt) {
  int n;
  MPI_Comm_size(comm, &n);
  int* world_of = malloc((size_t)n * sizeof(int));
  members(comm, world_of);
  int v[4], w[4];
  for (int i = 0; i < 4; ++i) v[i] = world_rank * 3 + i + salt;
  MPI_Allreduce(v, w, 4, MPI_INT, MPI_SUM, comm);
  for (int i = 0; i < 4; ++i) {
    int e = 0;
    for (int r = 0; r < n; ++r) e += world_of[r] * 3 + i + salt;
    if (!check(w[i] == e, "%s sum element %d: %d expected %d", label, i, w[i], e)) break;
  }
  guarded_t guard;
  int* g = guarded_alloc(&guard, (size_t)n * sizeof(int));
  guarded_snapshot(&guard);
  int mine = world_rank + salt;
  MPI_Allgather(&mine, 1, MPI_INT, g, 1, MPI_INT, comm);
  for (int r = 0; r < n; ++r) {
    if (!check(g[r] == world_of[r] + salt, "%s allgather slot %d", label, r)) break;
  }
  guarded_untouched(&guard, 0, (size_t)n * sizeof(int), label);
  guarded_free(&guard);
  free(world_of);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Type_contiguous(2, MPI_LONG_LONG, &affine_contig);
  MPI_Type_vector(2, 1, 2, MPI_LONG_LONG, &affine_vector);
  MPI_Type_commit(&affine_contig);
  MPI_Type_commit(&affine_vector);
  MPI_Op_create(affine_op, 0, &op_affine);
  MPI_Op_create(left_op, 0, &op_left);
  MPI_Op_create(summod_op, 1, &op_summod);

  /* The affine op must really be non-commutative, or the rank-order checks prove nothing. */
  affine_t f = affine_of(0, 0), g = affine_of(1, 0);
  check(compose(f, g).b != compose(g, f).b, "affine op is commutative for these inputs");

  user_ops(MPI_COMM_WORLD, "world");
  loc_ops();

  MPI_Comm dup, split, shared, single;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_size - world_rank, &split); /* reversed */
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank, 0, &single);
  int split_rank, split_size;
  MPI_Comm_rank(split, &split_rank);
  MPI_Comm_size(split, &split_size);
  int higher_same_color = 0;
  for (int r = world_rank + 1; r < world_size; ++r) higher_same_color += r % 2 == world_rank % 2;
  check(split_rank == higher_same_color, "split with reversed keys: rank %d, expected %d",
        split_rank, higher_same_color);

  /* MPI_Comm_idup: coll_hccl's set-up then runs inside Open MPI's progress loop. */
  MPI_Comm idup;
  MPI_Request idup_req;
  MPI_Comm_idup(MPI_COMM_WORLD, &idup, &idup_req);
  MPI_Wait(&idup_req, MPI_STATUS_IGNORE);
  user_ops(idup, "idup");
  MPI_Comm_free(&idup);

  user_ops(dup, "dup");
  user_ops(split, "split(reversed)");
  user_ops(shared, "split_type(shared)");
  user_ops(single, "single rank");
  user_ops(MPI_COMM_SELF, "self");

  /* Interleaved: every round touches every communicator in a different order. */
  MPI_Comm comms[] = {MPI_COMM_WORLD, dup, split, shared, single};
  const char* names[] = {"world", "dup", "split", "shared", "single"};
  for (int round = 0; round < 6; ++round) {
    for (int k = 0; k < 5; ++k) {
      int c = (k + round) % 5;
      sum_check(comms[c], names[c], round);
    }
  }

  /* Intercommunicator between the two halves of split: coll_hccl declines it. */
  if (world_size >= 2) {
    MPI_Comm inter;
    /* The other half's rank 0 is its highest world rank (keys reversed). */
    int last_even = (world_size - 1) % 2 == 0 ? world_size - 1 : world_size - 2;
    int last_odd = (world_size - 1) % 2 == 1 ? world_size - 1 : world_size - 2;
    int remote_leader = world_rank % 2 == 0 ? last_odd : last_even;
    MPI_Intercomm_create(split, 0, MPI_COMM_WORLD, remote_leader, 77, &inter);
    int v = world_rank + 1, w = -1;
    MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, inter);
    int e = 0; /* sum over the other colour */
    for (int r = 0; r < world_size; ++r) e += r % 2 != world_rank % 2 ? r + 1 : 0;
    check(w == e, "intercommunicator allreduce: %d expected %d", w, e);
    MPI_Comm_free(&inter);
  }

  MPI_Comm_free(&dup);
  MPI_Comm_free(&split);
  MPI_Comm_free(&shared);
  MPI_Comm_free(&single);
  MPI_Op_free(&op_affine);
  MPI_Op_free(&op_left);
  MPI_Op_free(&op_summod);
  MPI_Type_free(&affine_contig);
  MPI_Type_free(&affine_vector);
  return check_finish("comms");
}
