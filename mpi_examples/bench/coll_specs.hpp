// The table entries of collective.cpp, one family per file, and the helpers they share.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "bench/collective.hpp"

namespace bench {

// coll_reductions.cpp
extern const CollSpec kAllreduce, kReduceScatter, kReduceScatterV, kReduce, kScan, kExscan;
// coll_gathers.cpp
extern const CollSpec kAllgather, kAllgatherV, kGather, kGatherV;
// coll_scatters.cpp (one root sends)
extern const CollSpec kBcast, kScatter, kScatterV;
// coll_alltoall.cpp
extern const CollSpec kAlltoall, kAlltoallV, kAlltoallW;
// coll_barrier.cpp
extern const CollSpec kBarrier;

namespace detail {

inline int asCount(std::size_t n) {
  return static_cast<int>(n);
}  // callers keep counts <= INT_MAX

inline char* at(void* base, std::size_t elements, std::size_t typeSize) {
  return static_cast<char*>(base) + elements * typeSize;
}

inline int commSize(MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  return n;
}

inline int commRank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

// Every collective that moves data: `sendBlocks` and `recvBlocks` blocks of `block` elements in
// the send and receive buffers, the larger of the two holding the size (whole elements only).
inline Shape blockShape(std::size_t sizeBytes, std::size_t typeSize, std::size_t sendBlocks,
                        std::size_t recvBlocks, double busFactor) {
  const std::size_t blocks = std::max(sendBlocks, recvBlocks);
  Shape s;
  s.block = sizeBytes / typeSize / blocks;
  s.sendCount = s.block * sendBlocks;
  s.recvCount = s.block * recvBlocks;
  s.bytes = s.block * blocks * typeSize;
  s.busFactor = busFactor;
  return s;
}

// nccl-tests' bus factor of the collectives that spread or gather blocks: (n-1)/n.
inline double spreadFactor(std::size_t n) {
  return (static_cast<double>(n) - 1.0) / static_cast<double>(n);
}

// n blocks in, one block out (reduce_scatter(_v), scatter(v)).
inline Shape scatteredShape(std::size_t sizeBytes, std::size_t typeSize, std::size_t n) {
  return blockShape(sizeBytes, typeSize, n, 1, spreadFactor(n));
}

// Equal counts of `block` per rank and packed displacements, in elements (or bytes with
// `unit` = the type size, as MPI_Alltoallw wants).
struct EqualBlocks {
  std::vector<int> counts, displs;
  EqualBlocks(int nranks, std::size_t block, std::size_t unit = 1)
      : counts(static_cast<std::size_t>(nranks), asCount(block)), displs(counts.size()) {
    for (std::size_t r = 0; r < displs.size(); ++r) displs[r] = asCount(r * block * unit);
  }
};

// Blocks r = 0..n-1 of `buf` hold rank r's values (the gathers' output).
std::size_t wrongPerRankBlocks(const Call& call, const void* buf, int nranks);

}  // namespace detail

}  // namespace bench
