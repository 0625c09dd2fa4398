// The one exception type of topology/: every rejected input (rank table, emulation spec, record,
// hwloc failure) throws it with a message that names the input, the field and what was expected.
#pragma once

#include <stdexcept>

namespace hccl::topo {

class TopologyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace hccl::topo
