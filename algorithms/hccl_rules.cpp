#include "algorithms/hccl_rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

namespace hccl::algo {
namespace {

using nlohmann::json;

constexpr const char* kMembers =
    "level, algorithm, within, collectives, min_bytes, max_bytes, min_bytes_per_rank, "
    "group_size, servers, ranks_per_server, deterministic, why, source";

struct RowReader {
  const std::string& origin;
  std::vector<std::string>& warnings;

  ConfigError error(const std::string& where, const std::string& what) const {
    return {"tuning file", where, 0, fmt::format("{}: {}: {}", origin, where, what), origin};
  }
  void warn(const std::string& where, const std::string& what) const {
    warnings.push_back(fmt::format("{}: {}: {}", origin, where, what));
  }

  std::optional<ConfigError> count(const json& v, const std::string& where, std::uint64_t max,
                                   std::uint64_t& out) const {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max)
      return error(where, fmt::format("expected an integer from 0 to {}, found {}", max, v.dump()));
    out = v.get<std::uint64_t>();
    return std::nullopt;
  }

  std::optional<ConfigError> range(const json& v, const std::string& where, CountRange& out) const {
    if (!v.is_object())
      return error(where, "expected an object of min, max and power_of_two, such as {\"min\": 2}");
    for (const auto& [key, x] : v.items()) {
      std::uint64_t n = 0;
      if (key == "min" || key == "max") {
        if (auto e = count(x, where + "." + key, std::numeric_limits<std::uint32_t>::max(), n))
          return e;
        (key == "min" ? out.min : out.max) = static_cast<std::uint32_t>(n);
      } else if (key == "power_of_two") {
        if (!x.is_boolean()) return error(where + ".power_of_two", "expected true or false");
        out.powerOfTwo = x.get<bool>();
      } else {
        warn(where,
             fmt::format("unknown member \"{}\" skipped (valid: min, max, power_of_two)", key));
      }
    }
    if (out.min > out.max) return error(where, "min is larger than max");
    return std::nullopt;
  }

  // One row; nullopt with no error: skipped (a name this version does not know).
  std::optional<ConfigError> row(const json& r, const std::string& where,
                                 std::optional<HcclRule>& out) const {
    if (!r.is_object()) return error(where, "expected an object");
    if (!r.contains("level") || !r["level"].is_number_integer() || r["level"].get<int>() < 0 ||
        r["level"].get<int>() >= kNumLevels)
      return error(where + ".level", "expected 0, 1 or 2");
    if (!r.contains("algorithm") || !r["algorithm"].is_string())
      return error(where + ".algorithm", "expected an algorithm name such as \"ring\"");
    HcclRule rule;
    rule.level = r["level"].get<int>();
    const auto alg = parseAlgorithm(r["algorithm"].get<std::string>());
    if (!alg) {
      warn(where,
           fmt::format("unknown algorithm \"{}\"; row skipped", r["algorithm"].get<std::string>()));
      return std::nullopt;
    }
    rule.algorithm = *alg;
    for (const auto& [key, v] : r.items()) {
      const std::string at = where + "." + key;
      std::optional<ConfigError> e;
      if (key == "level" || key == "algorithm") continue;
      if (key == "within") {
        if (!v.is_string() || v.get<std::string>() != "AHC")
          return error(at, fmt::format("expected \"AHC\", found {}", v.dump()));
        rule.within = RuleScope::AhcInter;
      } else if (key == "collectives") {
        if (!v.is_array()) return error(at, "expected an array of collective names");
        for (const json& c : v) {
          const auto coll = c.is_string() ? parseCollective(c.get<std::string>()) : std::nullopt;
          if (!coll) {
            warn(at, fmt::format("unknown collective {}; row skipped", c.dump()));
            return std::nullopt;
          }
          rule.collectives.push_back(*coll);
        }
      } else if (key == "min_bytes" || key == "max_bytes" || key == "min_bytes_per_rank") {
        std::uint64_t& field = key == "min_bytes"   ? rule.minBytes
                               : key == "max_bytes" ? rule.maxBytes
                                                    : rule.minBytesPerRank;
        e = count(v, at, std::numeric_limits<std::uint64_t>::max(), field);
      } else if (key == "group_size") {
        e = range(v, at, rule.groupSize);
      } else if (key == "servers") {
        e = range(v, at, rule.servers);
      } else if (key == "ranks_per_server") {
        e = range(v, at, rule.ranksPerServer);
      } else if (key == "deterministic") {
        if (!v.is_boolean()) return error(at, "expected true or false");
        rule.deterministic = v.get<bool>();
      } else if (key == "why" || key == "source") {
        if (!v.is_string()) return error(at, "expected a string");
        (key == "why" ? rule.why : rule.source) = v.get<std::string>();
      } else {
        warn(where, fmt::format("unknown member \"{}\" skipped (valid: {})", key, kMembers));
      }
      if (e) return e;
    }
    if (rule.minBytes > rule.maxBytes) return error(where, "min_bytes is larger than max_bytes");
    out = std::move(rule);
    return std::nullopt;
  }
};

json rangeJson(const CountRange& r) {
  json j = json::object();
  if (r.min != CountRange{}.min) j["min"] = r.min;
  if (r.max != CountRange{}.max) j["max"] = r.max;
  if (r.powerOfTwo) j["power_of_two"] = *r.powerOfTwo;
  return j;
}

}  // namespace

bool CountRange::contains(std::uint32_t n) const {
  return n >= min && n <= max && (!powerOfTwo || std::has_single_bit(n) == *powerOfTwo);
}

bool matches(const HcclRule& rule, const RuleQuery& q) {
  const auto& cs = rule.collectives;
  return rule.level == q.level && rule.within == q.within &&
         (cs.empty() || std::find(cs.begin(), cs.end(), q.coll) != cs.end()) &&
         q.bytes >= rule.minBytes && q.bytes <= rule.maxBytes &&
         q.bytes / std::max<std::uint32_t>(q.ranks, 1) >= rule.minBytesPerRank &&
         rule.groupSize.contains(q.groupSize) && rule.servers.contains(q.servers) &&
         rule.ranksPerServer.contains(q.ranksPerServer) &&
         (!rule.deterministic || *rule.deterministic == q.deterministic);
}

ConfigResult<std::vector<HcclRule>> readHcclRules(const json& j, const std::string& origin,
                                                  std::vector<std::string>& warnings) {
  const RowReader rd{origin, warnings};
  if (!j.is_array()) return rd.error("hccl_rules", "expected an array of rows");
  std::vector<HcclRule> rules;
  for (std::size_t i = 0; i < j.size(); ++i) {
    std::optional<HcclRule> rule;
    if (auto e = rd.row(j[i], fmt::format("hccl_rules[{}]", i), rule)) return *e;
    if (rule) rules.push_back(std::move(*rule));
  }
  return rules;
}

json hcclRulesJson(std::span<const HcclRule> rules) {
  const HcclRule none;
  json out = json::array();
  for (const HcclRule& r : rules) {
    json j;
    j["level"] = r.level;
    j["algorithm"] = std::string(hcclName(r.algorithm));
    if (r.within == RuleScope::AhcInter) j["within"] = "AHC";
    if (!r.collectives.empty()) {
      json cs = json::array();
      for (Collective c : r.collectives) cs.push_back(std::string(name(c)));
      j["collectives"] = cs;
    }
    if (r.minBytes != none.minBytes) j["min_bytes"] = r.minBytes;
    if (r.maxBytes != none.maxBytes) j["max_bytes"] = r.maxBytes;
    if (r.minBytesPerRank != none.minBytesPerRank) j["min_bytes_per_rank"] = r.minBytesPerRank;
    if (r.groupSize != none.groupSize) j["group_size"] = rangeJson(r.groupSize);
    if (r.servers != none.servers) j["servers"] = rangeJson(r.servers);
    if (r.ranksPerServer != none.ranksPerServer)
      j["ranks_per_server"] = rangeJson(r.ranksPerServer);
    if (r.deterministic) j["deterministic"] = *r.deterministic;
    if (!r.why.empty()) j["why"] = r.why;
    if (!r.source.empty()) j["source"] = r.source;
    out.push_back(j);
  }
  return out;
}

}  // namespace hccl::algo
