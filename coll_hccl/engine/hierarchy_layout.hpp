// From topology's Hierarchy to the composer's Layout: the same groups per level, as plain data.
#pragma once

#include "algorithms/layout.hpp"
#include "topology/hierarchy.hpp"

namespace hccl::engine {

algo::Layout layoutOf(const topo::Hierarchy& h);

}  // namespace hccl::engine
