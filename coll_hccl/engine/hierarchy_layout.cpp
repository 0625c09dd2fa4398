#include "coll_hccl/engine/hierarchy_layout.hpp"

namespace hccl::engine {

// The one place both level counts meet: topology must not depend on algorithms, or the reverse.
static_assert(topo::kNumLevels == algo::kNumLevels,
              "topology and algorithms must agree on the levels");

algo::Layout layoutOf(const topo::Hierarchy& h) {
  std::array<algo::Layout::Groups, algo::kNumLevels> groups;
  for (int l = 0; l < algo::kNumLevels; ++l) groups[static_cast<std::size_t>(l)] = h.groups(l);
  return algo::Layout(h.size(), std::move(groups));
}

}  // namespace hccl::engine
