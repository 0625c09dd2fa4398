/*
 * mpi_ints.h - ints for the reduction tests that check sums (slots_rooted.c, scan_in_place.c):
 * each rank's input, and the buffers of a call that may be in place on this rank only.
 */
#ifndef TESTS_MPI_MPI_INTS_H
#define TESTS_MPI_MPI_INTS_H

#include "mpi_check.h"

/* Element i of rank r's input in the call numbered `tag`: small enough that sums of a few ranks
 * stay exact, and different from call to call. */
static inline int input_int(int r, size_t i, int tag) {
  return (int)((size_t)r * 1009 + i * 7 % 1000 + 1 + (size_t)tag * 3);
}

static inline void fill_ints(int* v, size_t n, int r, int tag) {
  for (size_t i = 0; i < n; ++i) v[i] = input_int(r, i, tag);
}

/* A guarded receive buffer of n ints, holding rank r's input when in place. */
static inline int* int_recv(guarded_t* g, size_t n, bool in_place, int r, int tag) {
  int* rbuf = guarded_alloc(g, n * sizeof(int));
  if (in_place) fill_ints(rbuf, n, r, tag);
  guarded_snapshot(g);
  return rbuf;
}

/* Rank r's input of n ints (a byte more, so that n = 0 allocates), or NULL in place. */
static inline int* int_send(size_t n, bool in_place, int r, int tag) {
  if (in_place) return NULL;
  int* sbuf = malloc(n * sizeof(int) + 1);
  fill_ints(sbuf, n, r, tag);
  return sbuf;
}

/* Checks n ints at v against the sum of ranks [0, upto) of the inputs. */
static inline bool check_sum(const int* v, size_t n, int upto, int tag, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    int want = 0;
    for (int r = 0; r < upto; ++r) want += input_int(r, i, tag);
    if (v[i] != want) return check(false, "%s: int %zu is %d, expected %d", what, i, v[i], want);
  }
  return check(true, "%s", what);
}

/* MPI_Scan or MPI_Exscan of n ints (MPI_SUM) on MPI_COMM_WORLD, called by rank `me`, in place
 * where bit r of in_place_mask is set for rank r (MPI lets each rank choose); checked against the
 * inputs' prefix sums, the receive buffer's guards against the snapshot. */
static inline void scan_case(int me, bool exclusive, size_t n, unsigned in_place_mask, int tag) {
  const bool ip = 0 != (in_place_mask >> me & 1u);
  char what[160];
  snprintf(what, sizeof what, "%s %zu ints, in place on ranks mask %#x (call %d)",
           exclusive ? "exscan" : "scan", n, in_place_mask, tag);
  guarded_t g;
  int* rbuf = int_recv(&g, n, ip, me, tag);
  int* sbuf = int_send(n, ip, me, tag);
  const void* s = ip ? MPI_IN_PLACE : sbuf;
  int rc = exclusive ? MPI_Exscan(s, rbuf, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD)
                     : MPI_Scan(s, rbuf, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    /* Exscan leaves rank 0's buffer undefined: only its guards are checked there */
    if (!(exclusive && 0 == me)) check_sum(rbuf, n, exclusive ? me : me + 1, tag, what);
    guarded_untouched(&g, 0, n * sizeof(int), what);
  }
  free(sbuf);
  guarded_free(&g);
}

#endif
