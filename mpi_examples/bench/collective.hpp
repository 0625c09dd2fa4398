// The collectives the benchmark measures. Each is one table entry (a CollSpec, defined in the
// coll_*.cpp file of its family and listed in collective.cpp): its buffer shape, the call itself,
// how inputs are filled and how one call's result is checked against the locally computed
// expectation.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/elements.hpp"

namespace bench {

// Sizes follow nccl-tests: `bytes` is the whole per-rank output for allreduce, allgather(v),
// gather(v), bcast, reduce, scan and exscan, and the whole per-rank input for reduce_scatter,
// scatter(v) (the root's) and alltoall(v,w) (n blocks); `block` is the element count per rank
// (allgather/gather send count, reduce_scatter and scatter receive count, alltoall count per
// pair; for allreduce, bcast, reduce and the scans the whole count). OSU labels allgather by the
// per-rank send size: its row S is this benchmark's n x S. Barrier moves nothing: one row, 0 bytes.
struct Shape {
  std::size_t block = 0;
  std::size_t sendCount = 0;  // elements in the send buffer (out of place)
  std::size_t recvCount = 0;  // elements in the receive buffer
  std::size_t bytes = 0;
  // nccl-tests busbw = algbw x factor: 2(n-1)/n for allreduce, 1 for bcast, reduce and the scans,
  // (n-1)/n for the others, 0 for barrier.
  double busFactor = 0.0;
};

struct Call;

struct CollSpec {
  std::string_view name;
  bool reduces;  // combines data with the reduction op
  bool moves;    // false for barrier: measured once, at 0 bytes
  // The shape for a size; block == 0 (for a collective that moves data) skips the size.
  Shape (*shape)(std::size_t sizeBytes, std::size_t typeSize, std::size_t nranks);
  void (*run)(const Call& call, MPI_Comm comm);
  // Fills the input from the pattern; the output is already painted with the sentinel.
  void (*prepare)(const Call& call, int rank, int nranks);
  // Wrong elements in this rank's output after run() following prepare().
  std::size_t (*countWrong)(const Call& call, int rank, int nranks);
};

using Coll = const CollSpec*;

std::string_view name(Coll c);
// nullptr when the name is unknown.
Coll parseColl(std::string_view s);
std::vector<std::string> collNames();
// True for the collectives that combine data with the reduction op.
bool reduces(Coll c);

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

  void run(MPI_Comm comm) const { coll->run(*this, comm); }
  // Fills the input from the pattern and paints the rest of the output with the sentinel.
  void prepare(int rank, int nranks) const;
  std::size_t countWrong(int rank, int nranks) const {
    return coll->countWrong(*this, rank, nranks);
  }
};

}  // namespace bench
