#include "bench/measure.hpp"

#include <algorithm>
#include <numeric>
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

RankSpread spreadOnRoot(double seconds, MPI_Comm control) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(control, &rank);
  MPI_Comm_size(control, &size);
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(size) : 0);
  MPI_Gather(&seconds, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, control);
  RankSpread s;
  if (rank != 0) return s;
  const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
  s.min = *lo * 1e6;
  s.max = *hi * 1e6;
  s.avg = std::accumulate(all.begin(), all.end(), 0.0) / size * 1e6;
  return s;
}

}  // namespace bench
