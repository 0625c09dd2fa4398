#include "algorithms/cost_model.hpp"

#include <fmt/format.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "common/file_text.hpp"
#include "common/json_text.hpp"
#include "common/utf8.hpp"

#include "algorithms/defaults.hpp"

namespace hccl::algo {
namespace {

using nlohmann::json;

std::string levelName(int l) {
  return fmt::format("level{}", l);
}

struct Reader {
  const std::string& origin;
  std::vector<std::string>& warnings;

  ConfigError error(const std::string& where, const std::string& what) const {
    return {"tuning file", where, 0, fmt::format("{}: {}: {}", origin, where, what), origin};
  }
  std::optional<ConfigError> positive(const json& j, const std::string& where, double& out,
                                      bool allowZero = false) const {
    if (!j.is_number()) return error(where, fmt::format("expected a number, found {}", j.dump()));
    out = j.get<double>();
    if (!(out > 0 || (allowZero && out == 0)))
      return error(where, fmt::format("expected a positive number, found {}", j.dump()));
    return std::nullopt;
  }
  std::optional<ConfigError> byteCount(const json& j, const std::string& where,
                                       std::uint64_t& out) const {
    if (!j.is_number_unsigned())
      return error(where,
                   fmt::format("expected a byte count (an integer >= 0), found {}", j.dump()));
    out = j.get<std::uint64_t>();
    return std::nullopt;
  }
  void unknown(const std::string& where, const std::string& key, const std::string& valid) {
    warnings.push_back(fmt::format("{}: {}: unknown member {} skipped (valid: {}){}", origin, where,
                                   text::quoted(key), valid, text::nonAsciiHint(key, 1)));
  }
};

// single_copy's object of collective: [from, below] bytes; `put` takes each known collective's.
std::optional<ConfigError> readRanges(
    const json& v, const std::string& where, Reader& rd,
    const std::function<void(Collective, LinkParams::ByteRange)>& put) {
  if (!v.is_object())
    return rd.error(where, fmt::format("expected an object of collective: [from, below] bytes, "
                                       "found {}",
                                       v.dump()));
  for (const auto& [key, range] : v.items()) {
    const std::string at = where + "." + key;
    if (!range.is_array() || range.size() != 2 || !range[0].is_number_unsigned() ||
        !range[1].is_number_unsigned() ||
        range[0].get<std::uint64_t>() > range[1].get<std::uint64_t>())
      return rd.error(at, fmt::format("expected [from, below] byte counts (integers, from <= "
                                      "below), found {}",
                                      range.dump()));
    const auto coll = parseCollective(key);
    if (!coll) {
      rd.warnings.push_back(
          fmt::format("{}: {}: unknown collective \"{}\"; skipped", rd.origin, at, key));
      continue;
    }
    put(*coll, LinkParams::ByteRange{range[0].get<std::uint64_t>(), range[1].get<std::uint64_t>()});
  }
  return std::nullopt;
}

std::optional<ConfigError> readFastSingleCopy(const json& v, const std::string& where, Reader& rd,
                                              LinkParams::FastSingleCopy& f) {
  if (!v.is_object()) return rd.error(where, fmt::format("expected an object, found {}", v.dump()));
  for (const auto& [field, x] : v.items()) {
    if (field == "below_ratio") {
      if (auto e = rd.positive(x, where + ".below_ratio", f.belowRatio, true)) return e;
    } else if (field == "stream_from_bytes") {
      std::uint64_t n = 0;
      if (auto e = rd.byteCount(x, where + ".stream_from_bytes", n)) return e;
      f.streamFrom = n;
    } else if (field == "single_copy") {
      if (auto e =
              readRanges(x, where + ".single_copy", rd, [&](Collective c, LinkParams::ByteRange r) {
                f.singleCopy[static_cast<std::size_t>(c)] = r;
              }))
        return e;
    } else {
      rd.unknown(where, field, "below_ratio, stream_from_bytes, single_copy");
    }
  }
  return std::nullopt;
}

std::optional<ConfigError> readLinkParams(const json& val, const std::string& where, Reader& rd,
                                          LinkParams& lp) {
  if (!val.is_object()) return rd.error(where, "expected an object");
  for (const auto& [field, v] : val.items()) {
    double x = 0;
    if (field == "alpha_us") {
      if (auto e = rd.positive(v, where + ".alpha_us", x, true)) return e;
      lp.alpha = x * 1e-6;
    } else if (field == "bandwidth_GBps") {
      if (auto e = rd.positive(v, where + ".bandwidth_GBps", x)) return e;
      lp.beta = 1.0 / (x * 1e9);
    } else if (field == "links") {
      if (auto e = rd.positive(v, where + ".links", x)) return e;
      lp.links = x;
    } else if (field == "step_us") {
      if (auto e = rd.positive(v, where + ".step_us", x, true)) return e;
      lp.step = x * 1e-6;
    } else if (field == "step_from_bytes") {
      if (auto e = rd.byteCount(v, where + ".step_from_bytes", lp.stepFrom)) return e;
    } else if (field == "post_step_us") {
      if (auto e = rd.positive(v, where + ".post_step_us", x, true)) return e;
      lp.posts = true;
      lp.postStep = x * 1e-6;
    } else if (field == "half_duplex") {
      if (!v.is_boolean())
        return rd.error(where + ".half_duplex",
                        fmt::format("expected true or false, found {}", v.dump()));
      lp.halfDuplex = v.get<bool>();
    } else if (field == "stream_from_bytes") {
      // 0 turns streaming off.
      if (auto e = rd.byteCount(v, where + ".stream_from_bytes", lp.streamFrom)) return e;
      // A value given here holds on every machine: not replaced by the built-in guess for a
      // fast single copy (fast_single_copy, below, may give its own again).
      lp.fastSingleCopy.streamFrom.reset();
    } else if (field == "memory_GBps") {
      // 0 turns the term off (a calibration that measured no saving writes it).
      if (auto e = rd.positive(v, where + ".memory_GBps", x, true)) return e;
      lp.memory = x > 0 ? 1.0 / (x * 1e9) : 0.0;
    } else if (field == "single_copy") {
      if (auto e =
              readRanges(v, where + ".single_copy", rd, [&](Collective c, LinkParams::ByteRange r) {
                lp.singleCopy[static_cast<std::size_t>(c)] = r;
                lp.fastSingleCopy.singleCopy[static_cast<std::size_t>(c)].reset();
              }))
        return e;
    } else if (field == "fast_single_copy") {
      continue;  // after the class's own fields, which reset the parts they give
    } else {
      rd.unknown(where, field,
                 "alpha_us, bandwidth_GBps, links, step_us, step_from_bytes, half_duplex, "
                 "memory_GBps, stream_from_bytes, single_copy, fast_single_copy, post_step_us");
    }
  }
  if (val.contains("fast_single_copy"))
    if (auto e = readFastSingleCopy(val.at("fast_single_copy"), where + ".fast_single_copy", rd,
                                    lp.fastSingleCopy))
      return e;
  return std::nullopt;
}

// pathsToo: the shared-memory class, whose stream_from_bytes and single_copy are written even when
// off (0, empty) and fast_single_copy with its below_ratio even when 0: read back over the
// built-in defaults, an omitted "off" would turn them on again.
json linkJson(const LinkParams& lp, bool pathsToo) {
  json j;
  j["alpha_us"] = lp.alpha * 1e6;
  j["bandwidth_GBps"] = lp.beta > 0 ? 1.0 / lp.beta / 1e9 : 0.0;
  if (lp.links < 1e300) j["links"] = lp.links;
  if (lp.step > 0) {
    j["step_us"] = lp.step * 1e6;
    j["step_from_bytes"] = lp.stepFrom;
  }
  if (lp.halfDuplex) j["half_duplex"] = true;
  if (lp.posts) j["post_step_us"] = lp.postStep * 1e6;
  if (lp.memory > 0) j["memory_GBps"] = 1.0 / lp.memory / 1e9;
  if (lp.streamFrom > 0 || pathsToo) j["stream_from_bytes"] = lp.streamFrom;
  for (int c = 0; c < kNumCollectives; ++c) {
    const LinkParams::ByteRange& r = lp.singleCopy[static_cast<std::size_t>(c)];
    if (!r.empty() || pathsToo)
      j["single_copy"][std::string(name(static_cast<Collective>(c)))] =
          json::array({r.empty() ? 0 : r.from, r.empty() ? 0 : r.below});
  }
  const LinkParams::FastSingleCopy& f = lp.fastSingleCopy;
  if (f.belowRatio > 0 || pathsToo) {
    json& fj = j["fast_single_copy"];
    fj["below_ratio"] = f.belowRatio;
    if (f.streamFrom) fj["stream_from_bytes"] = *f.streamFrom;
    for (int c = 0; c < kNumCollectives; ++c)
      if (const auto& r = f.singleCopy[static_cast<std::size_t>(c)])
        fj["single_copy"][std::string(name(static_cast<Collective>(c)))] =
            json::array({r->from, r->below});
  }
  return j;
}

std::optional<ConfigError> readLevels(const json& j, Reader& rd, CostModel& m) {
  if (!j.is_object()) return rd.error("levels", "expected an object of level0/level1/level2");
  for (const auto& [key, val] : j.items()) {
    int l = -1;
    for (int i = 0; i < kNumLevels; ++i)
      if (key == levelName(i)) l = i;
    if (l < 0) {
      rd.unknown("levels", key, "level0, level1, level2");
      continue;
    }
    if (auto e = readLinkParams(val, "levels." + key, rd, m.level[static_cast<std::size_t>(l)]))
      return e;
  }
  return std::nullopt;
}

// Link classes a level may ride instead of its default one; so far the shared-memory link.
std::optional<ConfigError> readLinkClasses(const json& j, Reader& rd, CostModel& m) {
  if (!j.is_object()) return rd.error("link_classes", "expected an object of link class names");
  for (const auto& [key, val] : j.items()) {
    if (key != kSharedMemoryClass) {
      rd.unknown("link_classes", key, kSharedMemoryClass);
      continue;
    }
    LinkParams lp = m.sharedMemory.value_or(m.level[0]);
    if (auto e = readLinkParams(val, "link_classes." + key, rd, lp)) return e;
    m.sharedMemory = lp;
  }
  return std::nullopt;
}

std::optional<ConfigError> readGamma(const json& j, Reader& rd, CostModel& m) {
  if (!j.is_object()) return rd.error("gamma", "expected an object of datatype names");
  for (const auto& [tname, ops] : j.items()) {
    std::optional<DataType> t;
    if (tname != "*") {
      t = parseDataType(tname);
      if (!t) {
        rd.unknown("gamma", tname, "a datatype name such as fp32, int64, bf16, or *");
        continue;
      }
    }
    const std::string where = "gamma." + tname;
    if (!ops.is_object()) return rd.error(where, "expected an object of op names");
    for (const auto& [oname, v] : ops.items()) {
      std::optional<ReduceOp> op;
      if (oname != "*") {
        op = parseReduceOp(oname);
        if (!op) {
          rd.unknown(where, oname, "sum, prod, max, min, land, lor, lxor, band, bor, bxor, *");
          continue;
        }
      }
      double gbps = 0;
      if (auto e = rd.positive(v, where + "." + oname, gbps)) return e;
      m.setGamma(t, op, 1.0 / (gbps * 1e9));
    }
  }
  return std::nullopt;
}

std::optional<ConfigError> readRules(const json& j, Reader& rd, CostModel& m) {
  if (!j.is_array()) return rd.error("rules", "expected an array of rules");
  m.rules.clear();
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& r = j[i];
    const std::string where = fmt::format("rules[{}]", i);
    if (!r.is_object()) return rd.error(where, "expected an object");
    if (!r.contains("collective") || !r["collective"].is_string())
      return rd.error(where + ".collective", "expected a collective name such as \"allreduce\"");
    if (!r.contains("algorithm") || !r["algorithm"].is_string())
      return rd.error(where + ".algorithm", "expected an algorithm name such as \"ring\"");
    const auto coll = parseCollective(r["collective"].get<std::string>());
    const auto alg = parseAlgorithm(r["algorithm"].get<std::string>());
    if (!coll) {
      rd.warnings.push_back(fmt::format("{}: {}: unknown collective \"{}\"; rule skipped",
                                        rd.origin, where, r["collective"].get<std::string>()));
      continue;
    }
    if (!alg) {
      rd.warnings.push_back(fmt::format("{}: {}: unknown algorithm \"{}\"; rule skipped", rd.origin,
                                        where, r["algorithm"].get<std::string>()));
      continue;
    }
    SizeRule rule{*coll, 1, 0, std::numeric_limits<std::uint64_t>::max(), *alg};
    if (r.contains("level")) {
      if (!r["level"].is_number_integer() || r["level"].get<int>() < 0 ||
          r["level"].get<int>() >= kNumLevels)
        return rd.error(where + ".level", "expected 0, 1 or 2");
      rule.level = r["level"].get<int>();
    }
    for (const char* bound : {"min_bytes", "max_bytes"}) {
      if (!r.contains(bound)) continue;
      if (!r[bound].is_number_unsigned())
        return rd.error(where + "." + bound, "expected a non-negative integer");
      (std::string(bound) == "min_bytes" ? rule.minBytes : rule.maxBytes) =
          r[bound].get<std::uint64_t>();
    }
    if (rule.minBytes > rule.maxBytes) return rd.error(where, "min_bytes is larger than max_bytes");
    m.rules.push_back(rule);
  }
  return std::nullopt;
}

}  // namespace

double CostModel::gamma(DataType type, ReduceOp op) const {
  const auto t = static_cast<std::size_t>(type), o = static_cast<std::size_t>(op);
  for (const auto& v : {gamma_[t][o], gamma_[t][kNumReduceOps], gamma_[kNumDataTypes][o],
                        gamma_[kNumDataTypes][kNumReduceOps]})
    if (v) return *v;
  return 0;
}

void CostModel::setGamma(std::optional<DataType> type, std::optional<ReduceOp> op,
                         double secondsPerByte) {
  const std::size_t t = type ? static_cast<std::size_t>(*type) : kNumDataTypes;
  const std::size_t o = op ? static_cast<std::size_t>(*op) : kNumReduceOps;
  gamma_[t][o] = secondsPerByte;
}

CostParams CostModel::params(std::optional<DataType> type, std::optional<ReduceOp> op) const {
  CostParams p;
  for (std::size_t l = 0; l < kNumLevels; ++l) {
    p.alpha[l] = level[l].alpha;
    p.beta[l] = level[l].beta;
    p.links[l] = level[l].links;
    p.step[l] = level[l].step;
    p.stepFrom[l] = level[l].stepFrom;
    p.halfDuplex[l] = level[l].halfDuplex;
    p.memory[l] = level[l].memory;
    p.posts[l] = level[l].posts;
    p.postStep[l] = level[l].postStep;
  }
  p.gamma = type && op ? gamma(*type, *op) : 0;
  return p;
}

std::optional<Algorithm> CostModel::rule(Collective c, int lvl, std::uint64_t bytes) const {
  for (const SizeRule& r : rules)
    if (r.coll == c && r.level == lvl && bytes >= r.minBytes && bytes <= r.maxBytes)
      return r.algorithm;
  return std::nullopt;
}

std::string CostModel::toJson() const {
  json doc;
  doc["version"] = 1;
  doc["description"] = source;
  for (int l = 0; l < kNumLevels; ++l)
    doc["levels"][levelName(l)] = linkJson(level[static_cast<std::size_t>(l)], false);
  if (sharedMemory) doc["link_classes"][kSharedMemoryClass] = linkJson(*sharedMemory, true);
  json g = json::object();
  for (std::size_t t = 0; t <= kNumDataTypes; ++t) {
    for (std::size_t o = 0; o <= kNumReduceOps; ++o) {
      if (!gamma_[t][o]) continue;
      const std::string tn = t == kNumDataTypes ? "*" : std::string(name(static_cast<DataType>(t)));
      const std::string on = o == kNumReduceOps ? "*" : std::string(name(static_cast<ReduceOp>(o)));
      g[tn][on] = 1.0 / *gamma_[t][o] / 1e9;
    }
  }
  doc["gamma"] = g;
  json rs = json::array();
  for (const SizeRule& r : rules)
    rs.push_back({{"collective", std::string(name(r.coll))},
                  {"level", r.level},
                  {"min_bytes", r.minBytes},
                  {"max_bytes", r.maxBytes},
                  {"algorithm", std::string(hcclName(r.algorithm))}});
  doc["rules"] = rs;
  doc["hccl_rules"] = hcclRulesJson(hcclRules);
  return doc.dump(2);
}

LinkParams::Paths LinkParams::pathsFor(double copyRatio) const {
  Paths p{streamFrom, singleCopy, false};
  const FastSingleCopy& f = fastSingleCopy;
  if (!(copyRatio > 0 && copyRatio <= f.belowRatio)) return p;
  p.fast = true;
  if (f.streamFrom) p.streamFrom = *f.streamFrom;
  for (std::size_t c = 0; c < p.singleCopy.size(); ++c)
    if (f.singleCopy[c]) p.singleCopy[c] = *f.singleCopy[c];
  return p;
}

CostModel CostModel::withLevel0OnSharedMemory() const {
  CostModel m = *this;
  m.level0SharedMemory = true;
  if (!sharedMemory) return m;
  m.level[0] = *sharedMemory;
  m.source += " (level0 on the shared-memory link)";
  return m;
}

std::uint64_t CostModel::fingerprint() const {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : toJson()) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

ConfigResult<CostModel> applyTuning(const CostModel& base, const std::string& jsonText,
                                    const std::string& origin, std::vector<std::string>& warnings) {
  Reader rd{origin, warnings};
  std::string parseError;
  std::optional<json> parsed = text::parseJson(jsonText, parseError);
  if (!parsed) return rd.error("(document)", parseError);
  const json& doc = *parsed;
  if (!doc.is_object()) return rd.error("(document)", "expected a JSON object");
  CostModel m = base;
  for (const auto& [key, val] : doc.items()) {
    std::optional<ConfigError> err;
    if (key == "version") {
      if (!val.is_number_integer() || val.get<int>() != 1)
        err = rd.error("version", fmt::format("expected 1, found {}", val.dump()));
    } else if (key == "description") {
      if (val.is_string()) m.source = val.get<std::string>();
    } else if (key == "levels") {
      err = readLevels(val, rd, m);
    } else if (key == "link_classes") {
      err = readLinkClasses(val, rd, m);
    } else if (key == "gamma") {
      err = readGamma(val, rd, m);
    } else if (key == "rules") {
      err = readRules(val, rd, m);
    } else if (key == "hccl_rules") {
      auto r = readHcclRules(val, origin, warnings);
      if (r.ok())
        m.hcclRules = std::move(r.value());
      else
        err = r.error();
    } else {
      rd.unknown("(document)", key,
                 "version, description, levels, link_classes, gamma, rules, hccl_rules");
    }
    if (err) return *err;
  }
  if (origin != "built-in defaults") m.source = fmt::format("{} ({})", origin, m.source);
  return m;
}

ConfigResult<CostModel> loadTuningFile(const CostModel& base, const std::string& path,
                                       std::vector<std::string>& warnings) {
  const text::FileText file = text::readRegularFile(path, kMaxTuningFileBytes);
  if (!file.text)
    return ConfigError{"tuning file", path, 0,
                       fmt::format("tuning file {}: {}", text::shown(path), file.error), path};
  return applyTuning(base, *file.text, path, warnings);
}

const CostModel& defaultCostModel() {
  static const CostModel model = [] {
    std::vector<std::string> warnings;
    CostModel m;
    // The defaults are tested to parse cleanly and without warnings.
    for (std::string_view doc : {builtinCostModelJson(), builtinHcclRulesJson()})
      if (auto r = applyTuning(m, std::string(doc), "built-in defaults", warnings); r.ok())
        m = std::move(r.value());
    return m;
  }();
  return model;
}

}  // namespace hccl::algo
