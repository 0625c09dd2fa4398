// JSON forms of a hierarchy and a local summary, as hccl_topo --json prints them.
//
// Hierarchy:
//   {"format": "hccl_topo.hierarchy/1", "shape": "...", "ranks": N, "levels": L,
//    "symmetric": bool,
//    "supernodes": [{"name": "0", "servers": [0, 1]}, ...],
//    "servers": [{"name": "nodeA", "supernode": 0, "ranks": [0, 1, ...]}, ...],
//    "level1_groups": [[0, 8], ...], "level2_groups": [[0, 16], ...]}
// hierarchyFromJson rebuilds the hierarchy from "servers" (names, supernode, ranks) and the
// supernode names, then checks every other field that is present against the rebuilt hierarchy,
// so an edited file that contradicts itself is rejected rather than half-used.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "topology/hierarchy.hpp"
#include "topology/local.hpp"
#include "topology/records.hpp"

namespace hccl::topo {

inline constexpr std::string_view kHierarchyJsonFormat = "hccl_topo.hierarchy/1";

nlohmann::json toJson(const Hierarchy& h);
// Throws TopologyError naming `source` and the offending field.
Hierarchy hierarchyFromJson(const nlohmann::json& j, std::string_view source);

nlohmann::json toJson(const LocalSummary& s);
nlohmann::json toJson(const RankRecord& r);

}  // namespace hccl::topo
