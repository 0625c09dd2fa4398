#include "coll_hccl/tools/size_option.hpp"

#include <CLI/CLI.hpp>

#include "algorithms/config_values.hpp"

namespace hccl::tools {

std::uint64_t parseSizeOption(const std::string& s) {
  auto r = algo::parseByteSize("size", s);
  if (!r.ok()) throw CLI::ValidationError(r.error().message);
  return r.value();
}

}  // namespace hccl::tools
