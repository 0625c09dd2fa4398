#include "coll_hccl/tools/size_option.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

namespace hccl::tools {

std::uint64_t parseSizeOption(const std::string& s) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &used);
  } catch (const std::exception&) {
    throw CLI::ValidationError("size",
                               fmt::format("\"{}\" is not a size (e.g. 4096, 64K, 16M)", s));
  }
  const std::string unit = s.substr(used);
  if (unit.empty() || unit == "B") return v;
  if (unit == "K" || unit == "KiB") return v << 10;
  if (unit == "M" || unit == "MiB") return v << 20;
  if (unit == "G" || unit == "GiB") return v << 30;
  throw CLI::ValidationError("size", fmt::format("unknown unit in \"{}\" (B, K, M, G)", s));
}

}  // namespace hccl::tools
