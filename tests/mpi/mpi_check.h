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
#include <stdio.h>
#include <string.h>

static int check_failures = 0;
static int check_count = 0;

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
