// OSU-style timing of one block of calls on one communicator, and the spread across ranks.
#pragma once

#include <mpi.h>

#include <vector>

#include "bench/collective.hpp"

namespace bench {

// Microseconds per call, over the ranks: each rank's mean over the timed iterations, then the
// fastest rank, the mean over ranks (OSU's "Avg Latency") and the slowest rank.
struct RankSpread {
  double min = 0.0;
  double avg = 0.0;
  double max = 0.0;
};

// warmup untimed calls, then iters calls each timed alone with MPI_Wtime, with a barrier on comm
// after every call (the OSU loop: no call overlaps the previous one's stragglers). Returns this
// rank's mean seconds per timed call.
double timeCalls(const Call& call, MPI_Comm comm, int warmup, int iters);

// Gathers every rank's means (one per block) onto rank 0 of control and returns one spread per
// block there (empty elsewhere). Called once per size, after all its blocks: any communication
// between blocks changes the block that follows it (a gather between blocks made the first block
// of every pair about 20% slower at 8 B on this VM, whichever communicator it used).
std::vector<RankSpread> spreadsOnRoot(const std::vector<double>& seconds, MPI_Comm control);

}  // namespace bench
