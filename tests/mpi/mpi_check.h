/*
 * mpi_check.h - what every MPI test program shares: failure accounting and options.
 *
 * Tests compute their expected results themselves, with plain loops over the ranks' inputs in
 * rank order; the collective under test is never used to produce an expectation.
 */
#ifndef TESTS_MPI_MPI_CHECK_H
#define TESTS_MPI_MPI_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Atomic: threads of one rank check concurrently (threads.c, and every program run with
 * --thread-multiple). */
static _Atomic int check_failures = 0;
static _Atomic int check_count = 0;

/* Records one check; prints the first few failures of this rank with their context. */
static inline bool check(bool ok, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool check(bool ok, const char* fmt, ...) {
  ++check_count;
  if (ok) return true;
  if (++check_failures <= 10) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL rank %d: %s\n", rank, line);
  }
  return false;
}

static inline bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (0 == strcmp(argv[i], flag)) return true;
  }
  return false;
}

/* MPI_Init, or with --thread-multiple MPI_Init_thread(MPI_THREAD_MULTIPLE), checking that the
 * library provides it: the whole suite runs at both levels. */
static inline void check_init(int* argc, char*** argv) {
  if (!has_flag(*argc, *argv, "--thread-multiple")) {
    MPI_Init(argc, argv);
    return;
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  check(MPI_THREAD_MULTIPLE == provided, "MPI_THREAD_MULTIPLE requested, %d provided", provided);
}

/*
 * Guarded receive buffers, for the write contract: a collective writes nothing but its output.
 * The body sits between two guard zones of patterned bytes. The test fills the body (input for
 * in-place calls, a pattern otherwise), snapshots the whole area, makes the call, and then every
 * byte outside the regions the call may write must equal the snapshot.
 */
enum { GUARD_ZONE = 64 };
typedef struct guarded {
  unsigned char* area; /* guard, body, guard */
  unsigned char* snapshot;
  size_t body;
} guarded_t;

static inline void* guarded_alloc(guarded_t* g, size_t body_bytes) {
  size_t total = body_bytes + 2 * GUARD_ZONE;
  g->body = body_bytes;
  g->area = malloc(total);
  g->snapshot = malloc(total);
  if (NULL == g->area || NULL == g->snapshot) {
    fprintf(stderr, "out of memory for a %zu-byte receive buffer\n", body_bytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (size_t i = 0; i < total; ++i) g->area[i] = (unsigned char)(0xA5 ^ (i * 37));
  return g->area + GUARD_ZONE;
}

static inline void guarded_snapshot(guarded_t* g) {
  memcpy(g->snapshot, g->area, g->body + 2 * GUARD_ZONE);
}

/* Checks every byte outside body[first, first + len) against the snapshot; `what` names the
 * call. Reports the first changed byte relative to the body's start. */
static inline bool guarded_untouched(const guarded_t* g, size_t first, size_t len,
                                     const char* what) {
  size_t total = g->body + 2 * GUARD_ZONE;
  size_t lo = GUARD_ZONE + first, hi = GUARD_ZONE + first + len;
  for (size_t i = 0; i < total; ++i) {
    if (i >= lo && i < hi) continue;
    if (g->area[i] != g->snapshot[i]) {
      return check(false, "%s: wrote byte %td of the receive buffer, outside its output [%zu, %zu)",
                   what, (ptrdiff_t)i - GUARD_ZONE, first, first + len);
    }
  }
  return check(true, "%s", what);
}

static inline void guarded_free(guarded_t* g) {
  free(g->area);
  free(g->snapshot);
  g->area = g->snapshot = NULL;
}

/*
 * The three forms of one collective call: mode 0 blocking, 1 MPI_I*, 2
 * MPIX_*_init. check_complete_with() completes a call posted (rc its return code) in `mode`: a
 * nonblocking one is waited for; a persistent one is started and waited for `starts` times,
 * stopping at the first error, then freed unless `keep` (a caller that starts it again later with
 * new contents frees it itself). check_complete(): started twice (it must be restartable), freed.
 */
static const char* const check_modes[] = {"blocking", "nonblocking", "persistent"};
static inline int check_complete_with(int rc, MPI_Request* req, int mode, int starts, bool keep) {
  if (2 == mode && MPI_SUCCESS == rc) {
    for (int k = 0; k < starts && MPI_SUCCESS == rc; ++k) {
      rc = MPI_Start(req);
      if (MPI_SUCCESS == rc) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    }
    if (!keep) MPI_Request_free(req);
    return rc;
  }
  if (1 == mode && MPI_SUCCESS == rc) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
  return rc;
}
static inline int check_complete(int rc, MPI_Request* req, int mode) {
  return check_complete_with(rc, req, mode, 2, false);
}
/* MPI_Foo / MPI_Ifoo / MPIX_Foo_init with the same arguments (not completed); needs `req` in
 * scope. */
#define CHECK_CALL(mode, Cap, low, ...)          \
  (0 == (mode)   ? MPI_##Cap(__VA_ARGS__)        \
   : 1 == (mode) ? MPI_I##low(__VA_ARGS__, &req) \
                 : MPIX_##Cap##_init(__VA_ARGS__, MPI_INFO_NULL, &req))
/* The same, completed. */
#define CHECK_RUN(mode, Cap, low, ...) \
  check_complete(CHECK_CALL(mode, Cap, low, __VA_ARGS__), &req, mode)

/* What a receive slot nothing may write keeps. */
enum { CHECK_SENTINEL = -7 };
/* n ints and one past them, all CHECK_SENTINEL. */
static inline int* check_ints(size_t n) {
  int* p = malloc((n + 1) * sizeof *p);
  if (NULL == p) MPI_Abort(MPI_COMM_WORLD, 2);
  for (size_t i = 0; i <= n; ++i) p[i] = CHECK_SENTINEL;
  return p;
}
/* Checks the n ints of `buf`, slot `idx` (a name the expressions use) holding `expect` where
 * `defined`, else CHECK_SENTINEL; `ctx->name` and `what` name the call. Stops at the first
 * wrong slot. */
#define CHECK_SLOTS(ctx, what, buf, n, idx, defined, expect)                                       \
  do {                                                                                             \
    for (int idx = 0; idx < (int)(n); ++idx) {                                                     \
      int want_ = (defined) ? (expect) : CHECK_SENTINEL;                                           \
      if (!check((buf)[idx] == want_, "%s %s: slot %d is %d, expected %d", (ctx)->name, what, idx, \
                 (buf)[idx], want_))                                                               \
        break;                                                                                     \
    }                                                                                              \
  } while (0)

/* Every rank learns the total; rank 0 prints one summary line. Returns the process exit code. */
static inline int check_finish(const char* test) {
  int local[2] = {check_failures, check_count};
  int total[2] = {0, 0};
  /* A reduction through the component under test would be circular: use point-to-point. */
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (0 == rank) {
    total[0] = local[0];
    total[1] = local[1];
    for (int r = 1; r < size; ++r) {
      int other[2];
      MPI_Recv(other, 2, MPI_INT, r, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      total[0] += other[0];
      total[1] += other[1];
    }
    printf("%s: %s (%d checks, %d failed, %d ranks)\n", test, 0 == total[0] ? "PASS" : "FAIL",
           total[1], total[0], size);
    fflush(stdout);
  } else {
    MPI_Send(local, 2, MPI_INT, 0, 999, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0 == check_failures ? 0 : 1;
}

#endif /* TESTS_MPI_MPI_CHECK_H */
