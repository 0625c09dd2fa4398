/*
 * scan_in_place.c - MPI_Scan and MPI_Exscan with MPI_IN_PLACE on some ranks only (MPI does not
 * ask it of every rank) on coll_hccl's general executor, at sizes from a few ints to several times
 * HCCL_BUFFSIZE (the suite sets 1 MB, so the largest calls run in chunks). In place is one rank's
 * choice, so every rank must choose the algorithm, plan and cut the chunks from the arguments
 * all ranks share: a rank that decided or sized its chunks on its own in-place schedule
 * (hier_scan's in-place Exscan keeps a copy of its input in scratch) could run another schedule
 * than its partners, and the call would hang or mix data. Each call's result is checked against
 * the prefix sums computed here; the receive buffer's guard zones keep what they held.
 */
#include "mpi_check.h"
#include "mpi_ints.h"

static int rank, nranks;

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
        scan_case(rank, 1 == exclusive, sizes[si], masks[k], tag++);
  return check_finish("scan_in_place");
}
