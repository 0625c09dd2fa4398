// Every rank sends block r of its input to rank r: alltoall, alltoallv with equal counts
// (osu_alltoallv) and alltoallw (equal counts, byte displacements, one type for every peer). In
// place the input is in recv and is replaced.
#include "bench/coll_specs.hpp"

namespace bench {

using detail::asCount;
using detail::at;

namespace {

// n blocks in, n blocks out.
Shape alltoallShape(std::size_t sizeBytes, std::size_t typeSize, std::size_t n) {
  return detail::blockShape(sizeBytes, typeSize, n, n, detail::spreadFactor(n));
}

const void* sendOf(const Call& c) {
  return c.inPlace ? MPI_IN_PLACE : c.send;
}

void fill(const Call& c, int rank, int nranks) {
  c.type->fill(c.inPlace ? c.recv : c.send, c.shape.sendCount, Pattern{c.op->op, nranks}, rank, 0);
}

void runAlltoall(const Call& c, MPI_Comm comm) {
  MPI_Alltoall(sendOf(c), asCount(c.shape.block), c.type->handle, c.recv, asCount(c.shape.block),
               c.type->handle, comm);
}

void runAlltoallV(const Call& c, MPI_Comm comm) {
  const detail::EqualBlocks b(detail::commSize(comm), c.shape.block);
  MPI_Alltoallv(sendOf(c), b.counts.data(), b.displs.data(), c.type->handle, c.recv,
                b.counts.data(), b.displs.data(), c.type->handle, comm);
}

void runAlltoallW(const Call& c, MPI_Comm comm) {
  const int n = detail::commSize(comm);
  const detail::EqualBlocks b(n, c.shape.block, c.type->size);
  const std::vector<MPI_Datatype> types(static_cast<std::size_t>(n), c.type->handle);
  MPI_Alltoallw(sendOf(c), b.counts.data(), b.displs.data(), types.data(), c.recv, b.counts.data(),
                b.displs.data(), types.data(), comm);
}

std::size_t wrong(const Call& c, int rank, int nranks) {
  const Pattern p{c.op->op, nranks};
  std::size_t bad = 0;
  for (int r = 0; r < nranks; ++r) {  // block r came from rank r, its block `rank`
    bad += c.type->countWrongValues(
        at(c.recv, static_cast<std::size_t>(r) * c.shape.block, c.type->size), c.shape.block, p, r,
        static_cast<std::size_t>(rank) * c.shape.block);
  }
  return bad;
}

}  // namespace

const CollSpec kAlltoall{"alltoall", false, true, &alltoallShape, &runAlltoall, &fill, &wrong};
const CollSpec kAlltoallV{"alltoallv", false, true, &alltoallShape, &runAlltoallV, &fill, &wrong};
const CollSpec kAlltoallW{"alltoallw", false, true, &alltoallShape, &runAlltoallW, &fill, &wrong};

}  // namespace bench
