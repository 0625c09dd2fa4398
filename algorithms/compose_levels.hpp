// Internal to the per-level compositions (hierarchical.cpp and one file per newer composition,
// such as hier_reduce.cpp): the helper that runs one group collective of a rank at one level and
// appends it to the rank's schedule, peers mapped to communicator ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/layout.hpp"

namespace hccl::algo {

struct Composer {
  const Layout& layout;
  const LevelAlgorithms& algs;
  std::uint32_t me;
  RankSchedule& out;

  // Rank `me`'s part of `q` on its group at `level`, the generator's Input, Output and Scratch
  // mapped to `in`, `outRegion` and `scratchRegion`.
  void phase(int level, const Problem& q, BufferRegion in, BufferRegion outRegion,
             BufferRegion scratchRegion) const {
    Embedding e;
    e.members = layout.groupOf(level, me);
    e.level = static_cast<std::uint8_t>(level);
    e.to = {in, outRegion, scratchRegion};
    const Generator g =
        phaseGenerator(algs[static_cast<std::size_t>(level)], q.coll, "the hierarchy");
    embed(out, g(q, layout.indexIn(level, me)), e);
  }
};

// hier_reduce.cpp: Reduce over the levels `used` (shape levels in use, inner first, at least 2).
void composeReduce(const Composer& c, const std::vector<int>& used, const Problem& pb);
// hier_alltoall.cpp: AllToAll over the levels `used` (inner first, at least 2).
void composeAllToAll(const Composer& c, const std::vector<int>& used, const Problem& pb);
// hier_barrier.cpp: Barrier over the levels `used` (inner first, at least 2).
void composeBarrier(const Composer& c, const std::vector<int>& used);
// hier_scan.cpp: Scan and Exscan over the levels `used`; servers must hold consecutive ranks.
void composeScan(const Composer& c, const std::vector<int>& used, const Problem& pb);
// hier_broadcast.cpp: Broadcast over the levels `used` (inner first, at least 2).
void composeBroadcast(const Composer& c, const std::vector<int>& used, const Problem& pb);

}  // namespace hccl::algo
