// HCCL's default selection (reference section 3) as data, for `coll_hccl_selection=hccl_rules`.
//
// The rows ship as the document algorithms/data/hccl_rules.json, embedded in the library next to
// the cost model's constants (data/cost_model.json). They are the member "hccl_rules" of a tuning
// document: `hccl_info tuning` prints them and a tuning file's own list replaces them. For each
// question (a level, or the algorithm AHC runs between its logical same-index cards) the first
// row that matches the call and the communicator wins.
//
// A row (level and algorithm required, every qualifier optional):
//   {"level": 1, "algorithm": "pipeline", "collectives": ["allgather"], "min_bytes": 32768,
//    "ranks_per_server": {"min": 2}, "why": "...", "source": "..."}
//   level            0 inside a server, 1 between servers, 2 between supernodes
//   algorithm        the HCCL_ALGO word chosen; a whole plan's word (pipeline) selects that plan
//   within           "AHC": the algorithm AHC runs between its logical same-index cards
//   collectives      the collectives it applies to (default: all)
//   min_bytes        the call's size as selection keys it (per rank for allgather and
//   max_bytes          reducescatter), inclusive bounds
//   min_bytes_per_rank   the call's size divided by the communicator's ranks
//   group_size       {"min": n, "max": n, "power_of_two": bool}: the members of the level's groups
//                    (ranks per server at level0, servers at level1, supernodes at level2; AHC's
//                    groups between servers: the servers)
//   servers          the same form, for the number of servers of the communicator
//   ranks_per_server the same form, for the ranks of a server (the smallest server's)
//   deterministic    true: only with HCCL_DETERMINISTIC true or strict; false: only without
//   why              what it is the default for, shown in decisions as "HCCL default for <why>"
//   source           where HCCL documents it (free text)
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_result.hpp"
#include "algorithms/types.hpp"

namespace hccl::algo {

// An inclusive range of counts, optionally restricted to powers of two or to the others.
struct CountRange {
  std::uint32_t min = 0, max = std::numeric_limits<std::uint32_t>::max();
  std::optional<bool> powerOfTwo;
  bool contains(std::uint32_t n) const;
  bool operator==(const CountRange&) const = default;
};

// Which question a row answers: a level's algorithm, or AHC's between the servers.
enum class RuleScope : std::uint8_t { Level, AhcInter };

struct HcclRule {
  int level = 1;
  Algorithm algorithm = Algorithm::Ring;
  RuleScope within = RuleScope::Level;
  std::vector<Collective> collectives;  // empty: every collective
  std::uint64_t minBytes = 0, maxBytes = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t minBytesPerRank = 0;
  CountRange groupSize, servers, ranksPerServer;
  std::optional<bool> deterministic;
  std::string why, source;
  bool operator==(const HcclRule&) const = default;
};

// What a row is matched against.
struct RuleQuery {
  int level = 1;
  RuleScope within = RuleScope::Level;
  Collective coll = Collective::AllReduce;
  std::uint64_t bytes = 0;
  std::uint32_t ranks = 1, groupSize = 1, servers = 1, ranksPerServer = 1;
  bool deterministic = false;
};

bool matches(const HcclRule& rule, const RuleQuery& q);
// The first row matching `q` whose algorithm `accept` takes (nullptr: none).
template <typename Accept>
const HcclRule* firstMatch(std::span<const HcclRule> rules, const RuleQuery& q, Accept accept) {
  for (const HcclRule& r : rules)
    if (matches(r, q) && accept(r.algorithm)) return &r;
  return nullptr;
}

// The rows of a tuning document's "hccl_rules" member. Errors name the origin and the member;
// rows naming an unknown algorithm or collective are skipped with a warning.
ConfigResult<std::vector<HcclRule>> readHcclRules(const nlohmann::json& j,
                                                  const std::string& origin,
                                                  std::vector<std::string>& warnings);
nlohmann::json hcclRulesJson(std::span<const HcclRule> rules);

}  // namespace hccl::algo
