/*
 * bcast_barrier.c - MPI_Barrier right after MPI_Bcast, where at 2-8 ranks the slots run the
 * Barrier gathered at the Bcast's root (algo::gatheredBarrier: the root leaves first), and in the
 * other places a Barrier follows: another Barrier, an Allreduce, an Ibcast, a large Bcast, a Bcast
 * from the other root. Back to back, with delays before either call on either rank (both arrival
 * orders at every Barrier), the root changing. Every Bcast's data is checked against what the
 * root wrote; every Barrier by the clock: no rank leaves it before every rank entered it
 * (CLOCK_MONOTONIC, which every process of one machine shares; the times travel by
 * point-to-point at the end).
 *
 * Options: --calls N (default 1000 rounds).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../mpi_check.h"

static int rank, nranks;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* A deterministic delay per rank and call: none most of the time, else up to 40 us. */
static void maybe_wait(uint64_t* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  const unsigned r = (unsigned)(*state >> 33);
  if (r % 4) return;
  const double until = now_us() + (double)(r % 40);
  while (now_us() < until) {
  }
}

static unsigned char value(int call, int root, size_t i) {
  return (unsigned char)(call * 31 + root * 7 + (int)i * 13 + 1);
}

static void bcast(unsigned char* buf, size_t n, int root, int call, bool nonblocking,
                  uint64_t* state) {
  if (rank == root)
    for (size_t i = 0; i < n; ++i) buf[i] = value(call, root, i);
  else
    memset(buf, 0xEE, n);
  maybe_wait(state);
  int rc;
  if (nonblocking) {
    MPI_Request req;
    rc = MPI_Ibcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD, &req);
    if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
  }
  check(MPI_SUCCESS == rc, "bcast call %d: rc %d", call, rc);
  size_t bad = n;
  for (size_t i = 0; i < n && bad == n; ++i)
    if (buf[i] != value(call, root, i)) bad = i;
  check(bad == n, "bcast call %d of %zu bytes from root %d%s: byte %zu is %u, expected %u", call, n,
        root, nonblocking ? " (Ibcast)" : "", bad, bad < n ? buf[bad] : 0,
        bad < n ? value(call, root, bad) : 0);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int rounds = 1000;
  for (int i = 1; i + 1 < argc; ++i)
    if (0 == strcmp(argv[i], "--calls")) rounds = atoi(argv[i + 1]);
  static const size_t sizes[] = {8, 64, 256, 1000, 4096};
  const size_t large = 65536 + 3;
  unsigned char* buf = malloc(large);
  /* Up to two Barriers a round. */
  const size_t most = 2 * (size_t)rounds;
  double* enter = malloc(most * sizeof(double));
  double* leave = malloc(most * sizeof(double));
  size_t barriers = 0;
  uint64_t state = 0x9E3779B97F4A7C15ULL * (uint64_t)(rank + 1);
  for (int call = 0; call < rounds; ++call) {
    const int root = (call / 8) % nranks;
    const size_t n = sizes[(call / 3) % 5];
    int nbar = 1;
    switch (call % 8) {
      case 4: /* a Barrier after a Barrier */
        nbar = 2;
        bcast(buf, n, root, call, false, &state);
        break;
      case 5: { /* after an Allreduce */
        int in = rank + call, out = -1;
        maybe_wait(&state);
        int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check(MPI_SUCCESS == rc && out == nranks * call + nranks * (nranks - 1) / 2,
              "allreduce call %d: rc %d, %d", call, rc, out);
        break;
      }
      case 6: /* after an Ibcast */
        bcast(buf, n, root, call, true, &state);
        break;
      case 7: /* after a large Bcast (off the slots' small path) */
        bcast(buf, large, root, call, false, &state);
        break;
      default: /* after a Bcast, the root changing every 8 calls */
        bcast(buf, n, (root + call) % nranks, call, false, &state);
    }
    for (int b = 0; b < nbar; ++b) {
      maybe_wait(&state);
      enter[barriers] = now_us();
      int rc = MPI_Barrier(MPI_COMM_WORLD);
      leave[barriers] = now_us();
      check(MPI_SUCCESS == rc, "barrier after call %d: rc %d", call, rc);
      ++barriers;
    }
  }
  /* Rank 0 checks every Barrier: the last entry before the first exit. */
  if (0 == rank) {
    double* e = malloc(barriers * sizeof(double));
    double* l = malloc(barriers * sizeof(double));
    double* first_leave = malloc(barriers * sizeof(double));
    double* last_enter = malloc(barriers * sizeof(double));
    memcpy(first_leave, leave, barriers * sizeof(double));
    memcpy(last_enter, enter, barriers * sizeof(double));
    for (int r = 1; r < nranks; ++r) {
      MPI_Recv(e, (int)barriers, MPI_DOUBLE, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Recv(l, (int)barriers, MPI_DOUBLE, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (size_t i = 0; i < barriers; ++i) {
        if (e[i] > last_enter[i]) last_enter[i] = e[i];
        if (l[i] < first_leave[i]) first_leave[i] = l[i];
      }
    }
    size_t early = 0;
    for (size_t i = 0; i < barriers; ++i)
      if (first_leave[i] < last_enter[i]) {
        if (!early)
          check(false, "barrier %zu: a rank left at %.3f us before the last entered at %.3f us", i,
                first_leave[i], last_enter[i]);
        ++early;
      }
    check(0 == early, "%zu of %zu barriers left early", early, barriers);
    free(e);
    free(l);
    free(first_leave);
    free(last_enter);
  } else {
    MPI_Send(enter, (int)barriers, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
    MPI_Send(leave, (int)barriers, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
  }
  free(enter);
  free(leave);
  free(buf);
  return check_finish("bcast_barrier");
}
