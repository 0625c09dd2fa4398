// What a per-level algorithm selector needs to know about a communicator, as plain data.
//
// Deliberately free of every other topology type (only <array> and <cstdint>), so that the engine
// can hand it to algorithms/ without algorithms/ including topology headers: copy the fields, or
// move this header under algorithms/ unchanged.
#pragma once

#include <array>
#include <cstdint>

namespace hccl::topo {

// One level of the hierarchy as seen from one rank. level0 groups are servers; level1 groups are
// the same-local-index ranks of the servers of one supernode; level2 groups are the ranks at the
// same position (server-in-supernode, local index) across supernodes.
struct LevelShape {
  std::uint32_t groupSize = 1;     // size of this rank's group at this level
  std::uint32_t groups = 1;        // number of groups at this level, over the whole communicator
  std::uint32_t minGroupSize = 1;  // smallest and largest group at this level
  std::uint32_t maxGroupSize = 1;
  bool uniform = true;  // every group at this level has the same size
};

// The levels as one rank sees them (algo::CommShape is the selector's own, per-group view).
struct HierarchyShape {
  std::uint32_t ranks = 1;
  std::uint32_t levels =
      1;                  // 1: one server; 2: several servers, one supernode; 3: several supernodes
  bool symmetric = true;  // same ranks per server and same servers per supernode
  std::array<LevelShape, 3> level{};  // kNumLevels (hierarchy.hpp asserts it)
};

}  // namespace hccl::topo
