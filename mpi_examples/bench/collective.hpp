// The collectives the benchmark measures: buffer shapes, the call itself, and the check of one
// call's result against the locally computed expectation.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/elements.hpp"

namespace bench {

// ReduceScatter is MPI_Reduce_scatter_block (as nccl-tests measures it); ReduceScatterV is
// MPI_Reduce_scatter with equal counts, the call osu_reduce_scatter times; AllgatherV is
// MPI_Allgatherv with equal counts (osu_allgatherv). Bcast, Reduce and Scatter use root 0.
enum class Coll {
  Allreduce,
  Allgather,
  ReduceScatter,
  ReduceScatterV,
  Bcast,
  Reduce,
  Scatter,
  Alltoall,
  AllgatherV
};

std::string_view name(Coll c);
std::optional<Coll> parseColl(std::string_view s);
std::vector<std::string> collNames();
// True for the collectives that combine data with the reduction op.
bool reduces(Coll c);

// Sizes follow nccl-tests: `bytes` is the whole per-rank output for allreduce, allgather(v),
// bcast and reduce, and the whole per-rank input for reduce_scatter, scatter (the root's) and
// alltoall (n blocks); `block` is the element count per rank (allgather send count,
// reduce_scatter and scatter receive count, alltoall count per pair; for allreduce, bcast and
// reduce the whole count). OSU labels allgather by the per-rank send size: its row S is this
// benchmark's n x S.
struct Shape {
  std::size_t block = 0;
  std::size_t sendCount = 0;  // elements in the send buffer (out of place)
  std::size_t recvCount = 0;  // elements in the receive buffer
  std::size_t bytes = 0;
  // nccl-tests busbw = algbw x factor: 2(n-1)/n for allreduce, 1 for bcast and reduce, (n-1)/n
  // for the others.
  double busFactor = 0.0;
};

// nullopt when the size holds less than one element per rank for this collective.
std::optional<Shape> shapeFor(Coll c, std::size_t sizeBytes, std::size_t typeSize, int nranks);

// One collective call with fixed arguments, on the communicator it is given.
struct Call {
  Coll coll;
  Shape shape;
  const TypeInfo* type;
  const OpInfo* op;
  bool inPlace;
  void* send;
  void* recv;

  void run(MPI_Comm comm) const;
  // Fills the input from the pattern and paints the rest of the output with the sentinel.
  void prepare(int rank, int nranks) const;
  // Wrong elements in this rank's output after run() following prepare().
  std::size_t countWrong(int rank, int nranks) const;
};

}  // namespace bench
