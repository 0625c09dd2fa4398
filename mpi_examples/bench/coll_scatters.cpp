// Root 0 sends: bcast (one buffer, the root's input is its output, so --in-place changes
// nothing), scatter and scatterv with equal counts (osu_scatterv); in place only at the root,
// whose block stays in the send buffer.
#include "bench/coll_specs.hpp"

namespace bench {

using detail::asCount;

namespace {

using detail::scatteredShape;

// One buffer, the whole count: nothing sent from a separate buffer.
Shape bcastShape(std::size_t sizeBytes, std::size_t typeSize, std::size_t) {
  return detail::blockShape(sizeBytes, typeSize, 0, 1, 1.0);
}

void fillBcast(const Call& c, int rank, int nranks) {
  if (rank == 0) c.type->fill(c.recv, c.shape.block, Pattern{c.op->op, nranks}, 0, 0);
}

void runBcast(const Call& c, MPI_Comm comm) {
  MPI_Bcast(c.recv, asCount(c.shape.block), c.type->handle, 0, comm);
}

std::size_t wrongBcast(const Call& c, int, int nranks) {
  return c.type->countWrongValues(c.recv, c.shape.block, Pattern{c.op->op, nranks}, 0, 0);
}

void fillScatter(const Call& c, int rank, int nranks) {
  if (rank == 0) c.type->fill(c.send, c.shape.sendCount, Pattern{c.op->op, nranks}, 0, 0);
}

void* scatterRecv(const Call& c, MPI_Comm comm) {
  return c.inPlace && detail::commRank(comm) == 0 ? MPI_IN_PLACE : c.recv;
}

void runScatter(const Call& c, MPI_Comm comm) {
  MPI_Scatter(c.send, asCount(c.shape.block), c.type->handle, scatterRecv(c, comm),
              asCount(c.shape.block), c.type->handle, 0, comm);
}

void runScatterV(const Call& c, MPI_Comm comm) {
  const detail::EqualBlocks b(detail::commSize(comm), c.shape.block);
  MPI_Scatterv(c.send, b.counts.data(), b.displs.data(), c.type->handle, scatterRecv(c, comm),
               asCount(c.shape.block), c.type->handle, 0, comm);
}

std::size_t wrongScatter(const Call& c, int rank, int nranks) {
  if (c.inPlace && rank == 0) return 0;  // nothing is written at an in-place root
  return c.type->countWrongValues(c.recv, c.shape.block, Pattern{c.op->op, nranks}, 0,
                                  static_cast<std::size_t>(rank) * c.shape.block);
}

}  // namespace

const CollSpec kBcast{"bcast", false, true, &bcastShape, &runBcast, &fillBcast, &wrongBcast};
const CollSpec kScatter{"scatter",   false,        true,         &scatteredShape,
                        &runScatter, &fillScatter, &wrongScatter};
const CollSpec kScatterV{"scatterv",   false,        true,         &scatteredShape,
                         &runScatterV, &fillScatter, &wrongScatter};

}  // namespace bench
