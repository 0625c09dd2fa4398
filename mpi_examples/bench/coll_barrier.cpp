// MPI_Barrier moves no data: one row at 0 bytes (whatever -b says), nothing to check beyond
// every rank returning.
#include "bench/coll_specs.hpp"

namespace bench {

namespace {

Shape noData(std::size_t, std::size_t, std::size_t) {
  return Shape{};
}

void runBarrier(const Call&, MPI_Comm comm) {
  MPI_Barrier(comm);
}

void nothingToFill(const Call&, int, int) {}

std::size_t nothingWrong(const Call&, int, int) {
  return 0;
}

}  // namespace

const CollSpec kBarrier{"barrier",   false,          false,        &noData,
                        &runBarrier, &nothingToFill, &nothingWrong};

}  // namespace bench
