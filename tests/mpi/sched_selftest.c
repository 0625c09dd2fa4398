/*
 * sched_selftest.c - the schedule API of coll_hccl_sched.h on its own, compiled into an MPI
 * program (with Open MPI's internal headers, like the adapter) and progressed from Open MPI's
 * loop through its own registration: rounds of sends, receives, copies and reductions (a ring
 * all-reduce checked against the sum), MPI_PROC_NULL peers as no-ops, sub-requests (a
 * nonblocking MPI_Ibcast on another communicator inside a round, and one that fails to start,
 * which must fail the schedule with its error), the three forms (persistent started several
 * times), many schedules outstanding at once completed in reverse order, a request freed while
 * in flight, and threads running schedules concurrently on their own communicators.
 *
 * The collectives used to set up and compare are plain MPI; what is checked is computed here.
 */
#include "coll_hccl_sched.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"

static int failures, checks;
static int me, p;

static void check(bool ok, const char* what) {
  ++checks;
  if (ok) return;
  if (++failures <= 10) fprintf(stderr, "FAIL rank %d: %s\n", me, what);
}

/* Ring all-reduce of n ints as p-1 rounds: pass the block received last round on, add it. */
static mca_coll_hccl_sched_t* ring_sum(MPI_Comm comm, const int* in, int* out, size_t n) {
  int r = 0, q = 1;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &q);
  mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(comm);
  int* cur = mca_coll_hccl_sched_tmp(s, n * sizeof(int));
  int* next = mca_coll_hccl_sched_tmp(s, n * sizeof(int));
  mca_coll_hccl_sched_copy(s, in, n, MPI_INT, out, n, MPI_INT);
  mca_coll_hccl_sched_copy(s, in, n, MPI_INT, cur, n, MPI_INT);
  for (int k = 1; k < q; ++k) {
    mca_coll_hccl_sched_round(s);
    mca_coll_hccl_sched_send(s, cur, n, MPI_INT, (r + 1) % q);
    mca_coll_hccl_sched_recv(s, next, n, MPI_INT, (r - 1 + q) % q);
    mca_coll_hccl_sched_round(s);
    mca_coll_hccl_sched_reduce(s, next, out, n, MPI_INT, MPI_SUM);
    mca_coll_hccl_sched_copy(s, next, n, MPI_INT, cur, n, MPI_INT);
  }
  return s;
}

static bool sum_ok(MPI_Comm comm, const int* out, size_t n, int seed) {
  int q = 1;
  MPI_Comm_size(comm, &q);
  for (size_t i = 0; i < n; ++i) {
    int want = 0;
    for (int r = 0; r < q; ++r) want += r * 100 + (int)i + seed;
    if (out[i] != want) return false;
  }
  return true;
}

static void fill(MPI_Comm comm, int* in, size_t n, int seed) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  for (size_t i = 0; i < n; ++i) in[i] = r * 100 + (int)i + seed;
}

static void forms(void) {
  enum { N = 7 };
  int in[N], out[N];
  fill(MPI_COMM_WORLD, in, N, 0);
  check(OMPI_SUCCESS == mca_coll_hccl_sched_run(ring_sum(MPI_COMM_WORLD, in, out, N)),
        "blocking ring rc");
  check(sum_ok(MPI_COMM_WORLD, out, N, 0), "blocking ring sum");

  MPI_Request req;
  fill(MPI_COMM_WORLD, in, N, 1);
  check(OMPI_SUCCESS == mca_coll_hccl_sched_start(ring_sum(MPI_COMM_WORLD, in, out, N), &req),
        "nonblocking ring start");
  check(MPI_SUCCESS == MPI_Wait(&req, MPI_STATUS_IGNORE), "nonblocking ring wait");
  check(sum_ok(MPI_COMM_WORLD, out, N, 1), "nonblocking ring sum");

  check(OMPI_SUCCESS == mca_coll_hccl_sched_persistent(ring_sum(MPI_COMM_WORLD, in, out, N), &req),
        "persistent ring init");
  for (int k = 0; k < 4; ++k) {
    fill(MPI_COMM_WORLD, in, N, 10 + k);
    memset(out, 0, sizeof out);
    check(MPI_SUCCESS == MPI_Start(&req), "persistent start");
    check(MPI_SUCCESS == MPI_Wait(&req, MPI_STATUS_IGNORE), "persistent wait");
    check(sum_ok(MPI_COMM_WORLD, out, N, 10 + k), "persistent ring sum");
  }
  MPI_Request_free(&req);
}

static void proc_null(void) {
  int buf[3] = {1, 2, 3};
  mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(MPI_COMM_WORLD);
  mca_coll_hccl_sched_send(s, buf, 3, MPI_INT, MPI_PROC_NULL);
  mca_coll_hccl_sched_recv(s, buf, 3, MPI_INT, MPI_PROC_NULL);
  mca_coll_hccl_sched_round(s);
  mca_coll_hccl_sched_round(s);
  check(OMPI_SUCCESS == mca_coll_hccl_sched_run(s), "PROC_NULL rc");
  check(1 == buf[0] && 2 == buf[1] && 3 == buf[2], "PROC_NULL receive left the buffer alone");
}

typedef struct bcast_ctx {
  MPI_Comm comm;
  int* buf;
  int n;
} bcast_ctx_t;

static int start_bcast(void* ctx, ompi_request_t** req) {
  bcast_ctx_t* c = ctx;
  return MPI_Ibcast(c->buf, c->n, MPI_INT, 0, c->comm, req);
}

static int start_fails(void* ctx, ompi_request_t** req) {
  (void)ctx;
  (void)req;
  return MPI_ERR_OTHER;
}

static void subs(void) {
  MPI_Comm other;
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  for (int form = 0; form < 2; ++form) {
    int got[4] = {0, 0, 0, 0}, copy[4] = {0, 0, 0, 0};
    if (0 == me)
      for (int i = 0; i < 4; ++i) got[i] = 40 + i + form;
    mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(MPI_COMM_WORLD);
    /* a first round of messages, so that the sub starts from the progress loop */
    int token = me, from = -1;
    mca_coll_hccl_sched_send(s, &token, 1, MPI_INT, (me + 1) % p);
    mca_coll_hccl_sched_recv(s, &from, 1, MPI_INT, (me - 1 + p) % p);
    mca_coll_hccl_sched_round(s);
    bcast_ctx_t* c = mca_coll_hccl_sched_tmp(s, sizeof *c);
    *c = (bcast_ctx_t){other, got, 4};
    mca_coll_hccl_sched_sub(s, start_bcast, c);
    mca_coll_hccl_sched_round(s);
    mca_coll_hccl_sched_copy(s, got, 4, MPI_INT, copy, 4, MPI_INT);
    int rc = OMPI_SUCCESS;
    if (0 == form) {
      rc = mca_coll_hccl_sched_run(s);
    } else {
      MPI_Request req;
      rc = mca_coll_hccl_sched_start(s, &req);
      if (OMPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    check(OMPI_SUCCESS == rc, "sub-request schedule rc");
    bool ok = from == (me - 1 + p) % p;
    for (int i = 0; i < 4; ++i) ok = ok && copy[i] == 40 + i + form;
    check(ok, "sub-request MPI_Ibcast inside a round, then a copy of its result");
  }
  /* A sub that fails to start fails the schedule with its error; nothing after it runs. */
  for (int form = 0; form < 2; ++form) {
    int a = 5, b = 0;
    mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(MPI_COMM_SELF);
    mca_coll_hccl_sched_sub(s, start_fails, NULL);
    mca_coll_hccl_sched_round(s);
    mca_coll_hccl_sched_copy(s, &a, 1, MPI_INT, &b, 1, MPI_INT);
    int rc = OMPI_SUCCESS;
    if (0 == form) {
      rc = mca_coll_hccl_sched_run(s);
    } else {
      MPI_Request req;
      rc = mca_coll_hccl_sched_start(s, &req);
      if (OMPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    check(MPI_ERR_OTHER == rc || MPI_ERR_OTHER == ompi_errcode_get_mpi_code(rc),
          "a failed sub-request fails the schedule");
    check(0 == b, "nothing runs after the failed round");
  }
  MPI_Comm_free(&other);
}

static void many_outstanding(void) {
  enum { K = 40, N = 3 };
  static int in[K][N], out[K][N];
  MPI_Request reqs[K];
  for (int k = 0; k < K; ++k) {
    fill(MPI_COMM_WORLD, in[k], N, k);
    check(OMPI_SUCCESS ==
              mca_coll_hccl_sched_start(ring_sum(MPI_COMM_WORLD, in[k], out[k], N), &reqs[k]),
          "outstanding start");
  }
  for (int k = K - 1; k >= 0; --k) {
    check(MPI_SUCCESS == MPI_Wait(&reqs[k], MPI_STATUS_IGNORE), "outstanding wait");
    check(sum_ok(MPI_COMM_WORLD, out[k], N, k), "outstanding schedules do not mix");
  }
  /* freed in flight: completes and frees itself; the next schedule still matches */
  static int fin[N], fout[N];
  fill(MPI_COMM_WORLD, fin, N, 7);
  MPI_Request lost;
  check(OMPI_SUCCESS == mca_coll_hccl_sched_start(ring_sum(MPI_COMM_WORLD, fin, fout, N), &lost),
        "start of the one freed in flight");
  MPI_Request_free(&lost);
  int in2[N], out2[N];
  fill(MPI_COMM_WORLD, in2, N, 3);
  check(OMPI_SUCCESS == mca_coll_hccl_sched_run(ring_sum(MPI_COMM_WORLD, in2, out2, N)),
        "after a freed request rc");
  check(sum_ok(MPI_COMM_WORLD, out2, N, 3), "after a freed request");
  MPI_Barrier(MPI_COMM_WORLD);
}

static MPI_Comm thread_comms[3];
static void* thread_main(void* arg) {
  MPI_Comm comm = thread_comms[(intptr_t)arg];
  enum { N = 5 };
  for (int k = 0; k < 20; ++k) {
    int in[N], out[N];
    fill(comm, in, N, k);
    MPI_Request req;
    if (OMPI_SUCCESS != mca_coll_hccl_sched_start(ring_sum(comm, in, out, N), &req) ||
        MPI_SUCCESS != MPI_Wait(&req, MPI_STATUS_IGNORE) || !sum_ok(comm, out, N, k)) {
      __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
    }
    __atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void threads(void) {
  for (int t = 0; t < 3; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &thread_comms[t]);
  pthread_t th[3];
  for (intptr_t t = 0; t < 3; ++t) pthread_create(&th[t], NULL, thread_main, (void*)t);
  for (int t = 0; t < 3; ++t) pthread_join(th[t], NULL);
  for (int t = 0; t < 3; ++t) MPI_Comm_free(&thread_comms[t]);
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  opal_progress_register(mca_coll_hccl_sched_progress);
  forms();
  proc_null();
  subs();
  many_outstanding();
  if (MPI_THREAD_MULTIPLE == provided) threads();
  opal_progress_unregister(mca_coll_hccl_sched_progress);
  int local[2] = {failures, checks}, total[2] = {0, 0};
  MPI_Reduce(local, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (0 == me) {
    printf("sched_selftest: %s (%d checks, %d failed, %d ranks)\n", total[0] ? "FAIL" : "PASS",
           total[1], total[0], p);
  }
  MPI_Finalize();
  return 0 == failures ? 0 : 1;
}
