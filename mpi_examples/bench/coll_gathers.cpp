// Every rank's block to every rank (allgather, allgatherv with equal counts: osu_allgatherv) or
// to root 0 (gather, gatherv with equal counts: osu_gatherv). In place a rank's own block already
// sits at its offset in recv (at the root only, for the rooted ones).
#include "bench/coll_specs.hpp"

namespace bench {

using detail::asCount;
using detail::at;

namespace {

// One block in, n blocks out.
Shape gatheredShape(std::size_t sizeBytes, std::size_t typeSize, std::size_t n) {
  return detail::blockShape(sizeBytes, typeSize, 1, n, detail::spreadFactor(n));
}

bool ownBlockInRecv(const Call& c, int rank, bool rooted) {
  return c.inPlace && (!rooted || rank == 0);
}

void fill(const Call& c, int rank, int nranks, bool rooted) {
  void* in = ownBlockInRecv(c, rank, rooted)
                 ? at(c.recv, static_cast<std::size_t>(rank) * c.shape.block, c.type->size)
                 : c.send;
  c.type->fill(in, c.shape.block, Pattern{c.op->op, nranks}, rank, 0);
}

void fillAll(const Call& c, int rank, int nranks) {
  fill(c, rank, nranks, false);
}
void fillRooted(const Call& c, int rank, int nranks) {
  fill(c, rank, nranks, true);
}

void runAllgather(const Call& c, MPI_Comm comm) {
  // In place the send count and type are ignored.
  MPI_Allgather(c.inPlace ? MPI_IN_PLACE : c.send, asCount(c.shape.block), c.type->handle, c.recv,
                asCount(c.shape.block), c.type->handle, comm);
}

void runAllgatherV(const Call& c, MPI_Comm comm) {
  const detail::EqualBlocks b(detail::commSize(comm), c.shape.block);
  MPI_Allgatherv(c.inPlace ? MPI_IN_PLACE : c.send, asCount(c.shape.block), c.type->handle, c.recv,
                 b.counts.data(), b.displs.data(), c.type->handle, comm);
}

const void* rootedSend(const Call& c, MPI_Comm comm) {
  return c.inPlace && detail::commRank(comm) == 0 ? MPI_IN_PLACE : c.send;
}

void runGather(const Call& c, MPI_Comm comm) {
  MPI_Gather(rootedSend(c, comm), asCount(c.shape.block), c.type->handle, c.recv,
             asCount(c.shape.block), c.type->handle, 0, comm);
}

void runGatherV(const Call& c, MPI_Comm comm) {
  const detail::EqualBlocks b(detail::commSize(comm), c.shape.block);
  MPI_Gatherv(rootedSend(c, comm), asCount(c.shape.block), c.type->handle, c.recv, b.counts.data(),
              b.displs.data(), c.type->handle, 0, comm);
}

std::size_t wrongAll(const Call& c, int, int nranks) {
  return detail::wrongPerRankBlocks(c, c.recv, nranks);
}

std::size_t wrongRooted(const Call& c, int rank, int nranks) {
  return rank == 0 ? detail::wrongPerRankBlocks(c, c.recv, nranks) : 0;
}

}  // namespace

const CollSpec kAllgather{"allgather",   false,    true,     &gatheredShape,
                          &runAllgather, &fillAll, &wrongAll};
const CollSpec kAllgatherV{"allgatherv",   false,    true,     &gatheredShape,
                           &runAllgatherV, &fillAll, &wrongAll};
const CollSpec kGather{"gather",   false,       true,        &gatheredShape,
                       &runGather, &fillRooted, &wrongRooted};
const CollSpec kGatherV{"gatherv",   false,       true,        &gatheredShape,
                        &runGatherV, &fillRooted, &wrongRooted};

}  // namespace bench
