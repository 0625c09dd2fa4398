#include "bench/measure.hpp"

#include <algorithm>
#include <vector>

namespace bench {

double timeCalls(const Call& call, MPI_Comm comm, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) {
    call.run(comm);
    MPI_Barrier(comm);
  }
  MPI_Barrier(comm);
  double total = 0.0;
  for (int i = 0; i < iters; ++i) {
    const double start = MPI_Wtime();
    call.run(comm);
    total += MPI_Wtime() - start;
    MPI_Barrier(comm);
  }
  return total / iters;
}

std::vector<RankSpread> spreadsOnRoot(const std::vector<double>& seconds, MPI_Comm control) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(control, &rank);
  MPI_Comm_size(control, &size);
  const std::size_t blocks = seconds.size();
  const auto ranks = static_cast<std::size_t>(size);
  std::vector<double> all(rank == 0 ? blocks * ranks : 0);
  MPI_Gather(seconds.data(), static_cast<int>(blocks), MPI_DOUBLE, all.data(),
             static_cast<int>(blocks), MPI_DOUBLE, 0, control);
  std::vector<RankSpread> spreads;
  if (rank != 0) return spreads;
  for (std::size_t b = 0; b < blocks; ++b) {
    RankSpread s{all[b], 0.0, all[b]};
    double sum = 0.0;
    for (std::size_t r = 0; r < ranks; ++r) {
      const double v = all[r * blocks + b];
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      sum += v;
    }
    s.min *= 1e6;
    s.max *= 1e6;
    s.avg = sum / static_cast<double>(ranks) * 1e6;
    spreads.push_back(s);
  }
  return spreads;
}

}  // namespace bench
