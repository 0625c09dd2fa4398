#include "coll_hccl/engine/hierarchy_layout.hpp"

namespace hccl::engine {

static_assert(topo::kNumLevels == algo::kNumLevels);

algo::Layout layoutOf(const topo::Hierarchy& h) {
  std::array<algo::Layout::Groups, algo::kNumLevels> groups;
  for (int l = 0; l < algo::kNumLevels; ++l) groups[static_cast<std::size_t>(l)] = h.groups(l);
  return algo::Layout(h.size(), std::move(groups));
}

}  // namespace hccl::engine
