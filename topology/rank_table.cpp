#include "topology/rank_table.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/file_text.hpp"
#include "common/json_text.hpp"
#include "common/utf8.hpp"
#include "topology/error.hpp"

namespace hccl::topo {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxServerIdLength = 64;

// "an object", "a string", ... for messages.
std::string aType(const json& v) {
  const std::string t = v.type_name();
  return (t == "object" || t == "array" ? "an " : "a ") + t;
}

// A value for a message: a string quoted whole (text::quoted), anything else as JSON with every
// non-ASCII and DEL byte escaped (nlohmann's dump leaves DEL raw otherwise; found by fuzzing).
std::string shown(const json& v) {
  if (v.is_string()) return text::quoted(text::truncated(v.get<std::string>(), 35));
  return text::truncated(v.dump(-1, ' ', true), 37);
}

// Ends a message about a rejected value: its first non-ASCII character, named.
std::string hint(std::string_view value) {
  return text::nonAsciiHint(value, 1);
}

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(text::shown(source)) {}

  [[noreturn]] void fail(std::string_view message) const {
    throw TopologyError(fmt::format("rank table {}: {}", source_, message));
  }

  // A name (server_id, super_pod_id) must print as itself: no control characters.
  void checkName(const std::string& name, const std::string& field) const {
    for (std::size_t i = 0; i < name.size(); i += text::decodeAt(name, i).bytes) {
      const char32_t c = text::decodeAt(name, i).code;
      if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f))
        fail(fmt::format(
            "{} {} holds {} at position {}; expected a name without control "
            "characters",
            field, text::quoted(name), text::describe(name, i), text::charPosition(name, i)));
    }
  }

  const json* field(const json& obj, std::string_view key, const std::string& path,
                    std::string_view expected, bool required) const {
    auto it = obj.find(std::string(key));
    if (it == obj.end()) {
      if (!required) return nullptr;
      fail(fmt::format("{} has no field \"{}\"; expected {}", path.empty() ? "the top level" : path,
                       key, expected));
    }
    return &*it;
  }

  std::string fieldPath(const std::string& path, std::string_view key) const {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }

  const json& object(const json& v, const std::string& path) const {
    if (!v.is_object())
      fail(fmt::format("{} is {} ({}); expected an object", path.empty() ? "the top level" : path,
                       aType(v), shown(v)));
    return v;
  }

  const json& array(const json& obj, std::string_view key, const std::string& path,
                    std::string_view what) const {
    const std::string expected = fmt::format("a non-empty array of {}", what);
    const json& v = *field(obj, key, path, expected, true);
    const std::string p = fieldPath(path, key);
    if (!v.is_array())
      fail(fmt::format("{} is {} ({}); expected {}", p, aType(v), shown(v), expected));
    if (v.empty()) fail(fmt::format("{} is empty; expected {}", p, expected));
    return v;
  }

  std::optional<std::string> string(const json& obj, std::string_view key, const std::string& path,
                                    std::string_view expected, bool required) const {
    const json* v = field(obj, key, path, fmt::format("a string holding {}", expected), required);
    if (!v) return std::nullopt;
    if (!v->is_string())
      fail(
          fmt::format("{} is {} ({}); expected a string holding {} (rank table values are "
                      "JSON strings)",
                      fieldPath(path, key), aType(*v), shown(*v), expected));
    return v->get<std::string>();
  }

  std::optional<std::uint32_t> decimal(const json& obj, std::string_view key,
                                       const std::string& path, std::uint32_t max,
                                       bool required) const {
    const std::string expected = fmt::format("a decimal integer from 0 to {}", max);
    const auto s = string(obj, key, path, expected, required);
    if (!s) return std::nullopt;
    std::uint64_t v = 0;
    bool ok = !s->empty() && s->size() <= 10;
    for (char c : *s) {
      if (c < '0' || c > '9') ok = false;
      if (ok) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (!ok || v > max)
      fail(fmt::format("{} is {}; expected {}{}", fieldPath(path, key), text::quoted(*s), expected,
                       hint(*s)));
    return static_cast<std::uint32_t>(v);
  }

  std::optional<std::string> ip(const json& obj, std::string_view key, const std::string& path,
                                bool required) const {
    const auto s = string(obj, key, path, "an IPv4 or IPv6 address", required);
    if (!s) return std::nullopt;
    unsigned char buf[16];
    if (inet_pton(AF_INET, s->c_str(), buf) != 1 && inet_pton(AF_INET6, s->c_str(), buf) != 1)
      fail(fmt::format("{} is {}; expected an IPv4 or IPv6 address{}", fieldPath(path, key),
                       text::quoted(*s), hint(*s)));
    return s;
  }

 private:
  std::string source_;
};

struct Where {
  std::size_t server = 0;
  std::size_t device = 0;
};

void parseServers(const Reader& in, const json& list, bool v12, RankTable& t) {
  const bool multiServer = list.size() > 1;
  std::map<std::string, std::size_t> serverIds;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("server_list[{}]", i);
    const json& s = in.object(list[i], path);
    RankTableServer server;
    server.id = *in.string(s, "server_id", path, "the server's name", true);
    if (server.id.empty() || server.id.size() > kMaxServerIdLength) {
      const std::size_t chars = text::charCount(server.id);
      in.fail(fmt::format("{}.server_id {} is {} bytes{}; expected 1 to {} bytes", path,
                          text::quoted(text::truncated(server.id, 80)), server.id.size(),
                          chars == server.id.size() ? "" : fmt::format(" ({} characters)", chars),
                          kMaxServerIdLength));
    }
    in.checkName(server.id, path + ".server_id");
    auto [it, fresh] = serverIds.emplace(server.id, i);
    if (!fresh)
      in.fail(fmt::format("{}.server_id {} repeats server_list[{}]; expected unique server ids",
                          path, text::quoted(server.id), it->second));
    server.hostIp = in.ip(s, "host_ip", path, false).value_or("");
    const json& devices = in.array(s, "device", path, "devices");
    std::map<std::uint32_t, std::size_t> deviceIds;
    for (std::size_t k = 0; k < devices.size(); ++k) {
      const std::string dpath = fmt::format("{}.device[{}]", path, k);
      const json& d = in.object(devices[k], dpath);
      RankTableDevice dev;
      dev.deviceId = *in.decimal(d, "device_id", dpath, 1u << 16, true);
      auto [dit, dfresh] = deviceIds.emplace(dev.deviceId, k);
      if (!dfresh)
        in.fail(
            fmt::format("{}.device_id \"{}\" repeats {}.device[{}]; expected unique device ids "
                        "within a server",
                        dpath, dev.deviceId, path, dit->second));
      // HCCL needs device_ip to connect servers; a single-server table may omit it.
      dev.deviceIp = in.ip(d, "device_ip", dpath, multiServer).value_or("");
      in.decimal(d, "device_port", dpath, 65535, false);
      in.decimal(d, "host_port", dpath, 65535, false);
      in.ip(d, "backup_device_ip", dpath, false);
      in.decimal(d, "backup_device_port", dpath, 65535, false);
      dev.rank = *in.decimal(d, "rank_id", dpath, (1u << 31) - 1, true);
      if (v12) dev.superDeviceId = in.decimal(d, "super_device_id", dpath, (1u << 31) - 1, true);
      server.devices.push_back(std::move(dev));
    }
    t.servers.push_back(std::move(server));
  }
}

void checkRanks(const Reader& in, RankTable& t, std::optional<std::uint32_t> expectedRanks) {
  std::size_t n = 0;
  for (const auto& s : t.servers) n += s.devices.size();
  if (n > (1u << 31))
    in.fail(fmt::format("the table lists {} devices; at most {} are supported", n, 1u << 31));
  t.ranks = static_cast<std::uint32_t>(n);
  if (expectedRanks && *expectedRanks != t.ranks)
    in.fail(
        fmt::format("the table describes {} ranks but the communicator has {}; expected one "
                    "device entry per rank",
                    t.ranks, *expectedRanks));
  std::map<std::uint32_t, Where> owner;
  std::vector<std::pair<std::uint32_t, Where>> outOfRange;
  for (std::size_t i = 0; i < t.servers.size(); ++i) {
    for (std::size_t k = 0; k < t.servers[i].devices.size(); ++k) {
      const std::uint32_t r = t.servers[i].devices[k].rank;
      auto [it, fresh] = owner.emplace(r, Where{i, k});
      if (!fresh)
        in.fail(
            fmt::format("rank_id \"{}\" appears at server_list[{}].device[{}] and at "
                        "server_list[{}].device[{}]; expected each rank id exactly once",
                        r, it->second.server, it->second.device, i, k));
      if (r >= t.ranks) outOfRange.push_back({r, Where{i, k}});
    }
  }
  if (!outOfRange.empty()) {
    std::uint32_t missing = 0;
    while (owner.count(missing)) ++missing;
    const auto& [r, w] = outOfRange.front();
    in.fail(
        fmt::format("server_list[{}].device[{}].rank_id is \"{}\", outside 0..{}; expected rank "
                    "ids 0..{} without gaps (rank {} is missing)",
                    w.server, w.device, r, t.ranks - 1, t.ranks - 1, missing));
  }
  for (std::size_t i = 0; i < t.servers.size(); ++i) {
    const auto& devices = t.servers[i].devices;
    const auto [lo, hi] =
        std::minmax_element(devices.begin(), devices.end(),
                            [](const auto& a, const auto& b) { return a.rank < b.rank; });
    if (hi->rank - lo->rank + 1 == devices.size()) continue;
    for (std::uint32_t r = lo->rank + 1; r < hi->rank; ++r) {
      const Where w = owner.at(r);
      if (w.server == i) continue;
      in.fail(
          fmt::format("server_list[{}] (\"{}\") holds ranks {} and {} but rank {} between them "
                      "belongs to server_list[{}] (\"{}\"); expected the ranks of each server "
                      "to form a contiguous range (servers must not interleave)",
                      i, t.servers[i].id, lo->rank, hi->rank, r, w.server, t.servers[w.server].id));
    }
  }
}

void parseSupernodes(const Reader& in, const json& top, RankTable& t) {
  const json& pods = in.array(top, "super_pod_list", "", "super pods");
  std::map<std::string, std::size_t> serverIndex, podIds;
  for (std::size_t i = 0; i < t.servers.size(); ++i) serverIndex.emplace(t.servers[i].id, i);
  std::vector<std::optional<std::size_t>> podOf(t.servers.size());
  for (std::size_t p = 0; p < pods.size(); ++p) {
    const std::string path = fmt::format("super_pod_list[{}]", p);
    const json& pod = in.object(pods[p], path);
    RankTableSupernode sn;
    sn.id = *in.string(pod, "super_pod_id", path, "the super pod's id", true);
    if (sn.id.empty()) in.fail(fmt::format("{}.super_pod_id is empty; expected an id", path));
    in.checkName(sn.id, path + ".super_pod_id");
    auto [pit, pfresh] = podIds.emplace(sn.id, p);
    if (!pfresh)
      in.fail(
          fmt::format("{}.super_pod_id \"{}\" repeats super_pod_list[{}]; expected unique "
                      "super pod ids",
                      path, sn.id, pit->second));
    const json& members = in.array(pod, "server_list", path, "{\"server_id\": ...} objects");
    for (std::size_t k = 0; k < members.size(); ++k) {
      const std::string mpath = fmt::format("{}.server_list[{}]", path, k);
      const std::string id = *in.string(in.object(members[k], mpath), "server_id", mpath,
                                        "a server_id from server_list", true);
      auto it = serverIndex.find(id);
      if (it == serverIndex.end())
        in.fail(
            fmt::format("{}.server_id {} is not in server_list; expected one of its "
                        "server_id values",
                        mpath, text::quoted(text::truncated(id, 80))));
      if (podOf[it->second])
        in.fail(
            fmt::format("server \"{}\" appears in super_pod_list[{}] and in {}; expected each "
                        "server in exactly one super pod",
                        id, *podOf[it->second], path));
      podOf[it->second] = p;
      sn.servers.push_back(it->second);
    }
    t.supernodes.push_back(std::move(sn));
  }
  for (std::size_t i = 0; i < t.servers.size(); ++i)
    if (!podOf[i])
      in.fail(
          fmt::format("server_list[{}] (\"{}\") is in no super pod; expected every server "
                      "listed in super_pod_list",
                      i, t.servers[i].id));
  for (std::size_t p = 0; p < t.supernodes.size(); ++p) {
    const auto& members = t.supernodes[p].servers;
    const auto [lo, hi] = std::minmax_element(members.begin(), members.end());
    if (*hi - *lo + 1 == members.size()) continue;
    for (std::size_t i = *lo + 1; i < *hi; ++i) {
      if (*podOf[i] == p) continue;
      in.fail(fmt::format(
          "super pod \"{}\" (super_pod_list[{}]) has servers at server_list[{}] "
          "and server_list[{}] but server_list[{}] (\"{}\") between them belongs "
          "to super pod \"{}\"; expected the servers of one super pod listed "
          "contiguously in server_list",
          t.supernodes[p].id, p, *lo, *hi, i, t.servers[i].id, t.supernodes[*podOf[i]].id));
    }
  }
}

}  // namespace

RankTable parseRankTable(std::string_view jsonText, std::string_view source,
                         std::optional<std::uint32_t> expectedRanks) {
  const Reader in(source);
  std::string error;
  std::optional<json> parsed = text::parseJson(jsonText, error);
  if (!parsed) in.fail(error);
  const json& top = *parsed;
  in.object(top, "");
  RankTable t;
  t.source = std::string(source);
  const std::string status = *in.string(top, "status", "", "\"completed\"", true);
  if (status != "completed")
    in.fail(fmt::format("status is {}; expected \"completed\"{}",
                        text::quoted(text::truncated(status, 40)), hint(status)));
  t.version = *in.string(top, "version", "", "\"1.0\" or \"1.2\"", true);
  if (t.version != "1.0" && t.version != "1.2")
    in.fail(
        fmt::format("version is {}; expected \"1.0\" (server_list) or \"1.2\" "
                    "(super_pod_list); other versions are not supported{}",
                    text::quoted(text::truncated(t.version, 40)), hint(t.version)));
  const bool v12 = t.version == "1.2";
  const std::uint32_t serverCount = *in.decimal(top, "server_count", "", 1u << 20, true);
  const json& list = in.array(top, "server_list", "", "servers");
  if (serverCount != list.size())
    in.fail(
        fmt::format("server_count is \"{}\" but server_list has {} servers; expected them to "
                    "agree",
                    serverCount, list.size()));
  parseServers(in, list, v12, t);
  checkRanks(in, t, expectedRanks);
  if (v12)
    parseSupernodes(in, top, t);
  else if (top.contains("super_pod_list"))
    in.fail(
        "super_pod_list is present but version is \"1.0\"; expected version \"1.2\" for a "
        "table with super pods");
  return t;
}

RankTable loadRankTable(const std::string& path, std::optional<std::uint32_t> expectedRanks) {
  const text::FileText file = text::readRegularFile(path, kMaxRankTableBytes);
  if (!file.text)
    throw TopologyError(fmt::format("rank table {}: {}", text::shown(path), file.error));
  return parseRankTable(*file.text, path, expectedRanks);
}

Hierarchy hierarchyFromRankTable(const RankTable& table) {
  std::vector<RankLabel> labels(table.ranks);
  std::vector<std::string> podOf(table.servers.size(), "0");
  for (const auto& pod : table.supernodes)
    for (std::size_t s : pod.servers) podOf[s] = pod.id;
  for (std::size_t s = 0; s < table.servers.size(); ++s)
    for (const auto& d : table.servers[s].devices)
      labels.at(d.rank) = {table.servers[s].id, podOf[s]};
  return Hierarchy::fromLabels(labels);
}

}  // namespace hccl::topo
