// What each HCCL algorithm is, for listings (hccl_info) and HCCL's own level rules. HCCL's Star
// has no entry: see algorithm.hpp.
#pragma once

#include <array>
#include <span>
#include <string_view>

#include "algorithms/algorithm.hpp"

namespace hccl::algo {

struct AlgorithmInfo {
  Algorithm id;
  std::string_view summary;  // one line
  // Levels where HCCL documents it (level0 = inside a server). coll_hccl's level0 is shared
  // memory, where every pattern works, so the model may also use it there; hccl_rules mode and
  // listings follow HCCL.
  std::array<bool, kNumLevels> hcclLevels;
};

std::span<const AlgorithmInfo> algorithmCatalog();
const AlgorithmInfo& info(Algorithm a);

}  // namespace hccl::algo
