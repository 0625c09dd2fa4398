// Problem builders shared by the algorithm tests.
#pragma once

#include <string>
#include <vector>

#include "algorithms/generators.hpp"

namespace hccl::algo::test {

// The MPI-level count: elements per rank for ReduceScatter/AllGather/Scatter, per pair for
// AllToAll, the whole vector otherwise.
inline Problem problemFor(Collective c, std::uint32_t p, std::uint64_t count, bool inPlace,
                          std::uint32_t root = 0) {
  return Problem::fromMpiCount(c, p, count, inPlace, root);
}

// In place is meaningless for Broadcast (one buffer).
inline bool hasInPlaceVariant(Collective c) {
  return c != Collective::Broadcast;
}

// Test names use the internal name (rhd_allreduce), which is also the file's and the functions'.
inline std::string specName(const GeneratorSpec& s) {
  return std::string(internalName(s.algorithm)) + "_" + std::string(name(s.coll));
}

}  // namespace hccl::algo::test
