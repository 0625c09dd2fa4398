/*
 * scan_in_place.c - MPI_Scan and MPI_Exscan with MPI_IN_PLACE on some ranks only (MPI does not
 * ask it of every rank) on coll_hccl's general executor, at sizes from a few ints to several times
 * HCCL_BUFFSIZE (the suite sets 1 MB, so the largest calls run in chunks). In place is one rank's
 * choice, so every rank must choose the algorithm, plan and cut the chunks from the arguments
 * all ranks share: a rank that sized its chunks on its own in-place schedule (hier_scan's in-place
 * Exscan keeps a copy of its input in scratch) cut fewer, larger chunks than its partners and the
 * ranks ran different schedules. Each call's result is checked against the prefix sums computed
 * here; the receive buffer's guard zones keep what they held.
 */
#include <stdlib.h>

#include "mpi_check.h"

static int rank, nranks;

static int input_int(int r, size_t i, int tag) {
  return (int)((size_t)r * 1009 + i * 7 % 1000 + 1 + (size_t)tag * 3);
}

/* in_place_mask: bit r set = rank r passes MPI_IN_PLACE. */
static void scan_case(bool exclusive, size_t n, unsigned in_place_mask, int tag) {
  const bool ip = 0 != (in_place_mask >> rank & 1u);
  char what[160];
  snprintf(what, sizeof what, "%s %zu ints, in place on ranks mask %#x (call %d)",
           exclusive ? "exscan" : "scan", n, in_place_mask, tag);
  guarded_t g;
  int* rbuf = guarded_alloc(&g, n * sizeof(int));
  int* sbuf = ip ? rbuf : malloc(n * sizeof(int) + 1);
  for (size_t i = 0; i < n; ++i) sbuf[i] = input_int(rank, i, tag);
  guarded_snapshot(&g);
  const void* s = ip ? MPI_IN_PLACE : sbuf;
  int rc = exclusive ? MPI_Exscan(s, rbuf, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD)
                     : MPI_Scan(s, rbuf, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    /* Exscan leaves rank 0's buffer undefined: only its guards are checked there */
    const int upto = exclusive ? rank : rank + 1;
    size_t wrong = 0, first = n;
    for (size_t i = 0; upto > 0 && i < n; ++i) {
      int want = 0;
      for (int r = 0; r < upto; ++r) want += input_int(r, i, tag);
      if (rbuf[i] != want && 0 == wrong++) first = i;
    }
    check(0 == wrong, "%s: %zu ints wrong, the first at %zu", what, wrong, first);
    guarded_untouched(&g, 0, n * sizeof(int), what);
  }
  if (!ip) free(sbuf);
  guarded_free(&g);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const unsigned every = (1u << nranks) - 1;
  /* none, all, the even ranks, the odd ranks, the first only, the last only */
  const unsigned masks[] = {0, every, 0x5555u & every, 0xaaaau & every, 1u, 1u << (nranks - 1)};
  /* the largest is 4 MiB and a few ints: five chunks or more at HCCL_BUFFSIZE=1 */
  const size_t sizes[] = {4, 4099, ((size_t)1 << 20) + 3};
  int tag = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si)
    for (size_t k = 0; k < sizeof masks / sizeof masks[0]; ++k)
      for (int exclusive = 0; exclusive < 2; ++exclusive)
        scan_case(1 == exclusive, sizes[si], masks[k], tag++);
  return check_finish("scan_in_place");
}
