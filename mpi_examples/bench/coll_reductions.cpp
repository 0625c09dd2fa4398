// The reducing collectives: allreduce, reduce (root 0), reduce_scatter (MPI_Reduce_scatter_block,
// as nccl-tests), reduce_scatter_v (MPI_Reduce_scatter with equal counts, what osu_reduce_scatter
// calls), scan and exscan (each rank checks its own prefix over ranks 0..rank).
#include "bench/coll_specs.hpp"

namespace bench {

using detail::asCount;

namespace {

using detail::scatteredShape;

// The whole count on every rank (allreduce, reduce, the scans).
Shape whole(std::size_t sizeBytes, std::size_t typeSize, double busFactor) {
  return detail::blockShape(sizeBytes, typeSize, 1, 1, busFactor);
}

Shape allreduceShape(std::size_t sizeBytes, std::size_t typeSize, std::size_t n) {
  const double ranks = static_cast<double>(n);
  return whole(sizeBytes, typeSize, 2.0 * (ranks - 1.0) / ranks);
}

Shape wholeOnce(std::size_t sizeBytes, std::size_t typeSize, std::size_t) {
  return whole(sizeBytes, typeSize, 1.0);
}

const void* sendOf(const Call& c) {
  return c.inPlace ? MPI_IN_PLACE : c.send;
}

// ---- allreduce, scan, exscan: the input is the whole count (in recv when in place)
void fillWhole(const Call& c, int rank, int nranks) {
  c.type->fill(c.inPlace ? c.recv : c.send, c.shape.block, Pattern{c.op->op, nranks}, rank, 0);
}

void runAllreduce(const Call& c, MPI_Comm comm) {
  MPI_Allreduce(sendOf(c), c.recv, asCount(c.shape.block), c.type->handle, c.op->handle(), comm);
}

std::size_t wrongAllreduce(const Call& c, int, int nranks) {
  return c.type->countWrongReduced(c.recv, c.shape.block, Pattern{c.op->op, nranks}, 0);
}

void runScan(const Call& c, MPI_Comm comm) {
  MPI_Scan(sendOf(c), c.recv, asCount(c.shape.block), c.type->handle, c.op->handle(), comm);
}

std::size_t wrongScan(const Call& c, int rank, int nranks) {
  return c.type->countWrongPrefix(c.recv, c.shape.block, Pattern{c.op->op, nranks}, rank + 1, 0);
}

void runExscan(const Call& c, MPI_Comm comm) {
  MPI_Exscan(sendOf(c), c.recv, asCount(c.shape.block), c.type->handle, c.op->handle(), comm);
}

std::size_t wrongExscan(const Call& c, int rank, int nranks) {
  if (rank == 0) return 0;  // MPI leaves rank 0's output undefined
  return c.type->countWrongPrefix(c.recv, c.shape.block, Pattern{c.op->op, nranks}, rank, 0);
}

// ---- reduce: in place only at the root, whose input is then in recv
void fillReduce(const Call& c, int rank, int nranks) {
  c.type->fill(c.inPlace && rank == 0 ? c.recv : c.send, c.shape.block, Pattern{c.op->op, nranks},
               rank, 0);
}

void runReduce(const Call& c, MPI_Comm comm) {
  const bool root = detail::commRank(comm) == 0;
  MPI_Reduce(c.inPlace && root ? MPI_IN_PLACE : c.send, c.recv, asCount(c.shape.block),
             c.type->handle, c.op->handle(), 0, comm);
}

std::size_t wrongReduce(const Call& c, int rank, int nranks) {
  return rank == 0 ? wrongAllreduce(c, rank, nranks) : 0;
}

// ---- reduce_scatter(_v): in place the input fills all n blocks of recv, the result lands in
// the first block
void fillScattered(const Call& c, int rank, int nranks) {
  c.type->fill(c.inPlace ? c.recv : c.send, c.shape.sendCount, Pattern{c.op->op, nranks}, rank, 0);
}

void runReduceScatterBlock(const Call& c, MPI_Comm comm) {
  MPI_Reduce_scatter_block(sendOf(c), c.recv, asCount(c.shape.block), c.type->handle,
                           c.op->handle(), comm);
}

void runReduceScatterV(const Call& c, MPI_Comm comm) {
  const detail::EqualBlocks b(detail::commSize(comm), c.shape.block);
  MPI_Reduce_scatter(sendOf(c), c.recv, b.counts.data(), c.type->handle, c.op->handle(), comm);
}

std::size_t wrongScattered(const Call& c, int rank, int nranks) {
  return c.type->countWrongReduced(c.recv, c.shape.block, Pattern{c.op->op, nranks},
                                   static_cast<std::size_t>(rank) * c.shape.block);
}

}  // namespace

const CollSpec kAllreduce{"allreduce",   true,       true,           &allreduceShape,
                          &runAllreduce, &fillWhole, &wrongAllreduce};
const CollSpec kReduce{"reduce", true, true, &wholeOnce, &runReduce, &fillReduce, &wrongReduce};
const CollSpec kReduceScatter{
    "reduce_scatter",       true,           true,           &scatteredShape,
    &runReduceScatterBlock, &fillScattered, &wrongScattered};
const CollSpec kReduceScatterV{"reduce_scatter_v", true,           true,           &scatteredShape,
                               &runReduceScatterV, &fillScattered, &wrongScattered};
const CollSpec kScan{"scan", true, true, &wholeOnce, &runScan, &fillWhole, &wrongScan};
const CollSpec kExscan{"exscan", true, true, &wholeOnce, &runExscan, &fillWhole, &wrongExscan};

}  // namespace bench
