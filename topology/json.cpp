#include "topology/json.hpp"

#include <fmt/format.h>

#include <set>

#include "topology/error.hpp"

namespace hccl::topo {

using nlohmann::json;

json toJson(const Hierarchy& h) {
  json j;
  j["format"] = kHierarchyJsonFormat;
  j["shape"] = h.describe();
  j["ranks"] = h.size();
  j["levels"] = h.levels();
  j["symmetric"] = h.symmetric();
  json pods = json::array();
  for (std::uint32_t p = 0; p < h.numSupernodes(); ++p) {
    const auto servers = h.supernodeServers(p);
    pods.push_back({{"name", h.supernodeName(p)},
                    {"servers", std::vector<std::uint32_t>(servers.begin(), servers.end())}});
  }
  j["supernodes"] = pods;
  json servers = json::array();
  for (std::uint32_t s = 0; s < h.numServers(); ++s) {
    const auto members = h.serverMembers(s);
    servers.push_back({{"name", h.serverName(s)},
                       {"supernode", h.supernodeOfServer(s)},
                       {"ranks", std::vector<std::uint32_t>(members.begin(), members.end())}});
  }
  j["servers"] = servers;
  j["level1_groups"] = h.groups(1);
  j["level2_groups"] = h.groups(2);
  return j;
}

namespace {

std::string aType(const json& v) {
  const std::string t = v.type_name();
  return (t == "object" || t == "array" ? "an " : "a ") + t;
}

class JsonReader {
 public:
  explicit JsonReader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(std::string_view message) const {
    throw TopologyError(fmt::format("hierarchy JSON {}: {}", source_, message));
  }

  const json& get(const json& obj, const char* key, std::string_view path) const {
    if (!obj.is_object()) fail(fmt::format("{} is {}; expected an object", path, aType(obj)));
    if (!obj.contains(key)) fail(fmt::format("{} has no field \"{}\"", path, key));
    return obj.at(key);
  }

  std::uint32_t index(const json& v, std::string_view path) const {
    // Parsed text gives unsigned numbers, but a program may build the JSON with signed ones.
    const bool ok = v.is_number_unsigned() ? v.get<std::uint64_t>() <= 0xffffffffu
                    : v.is_number_integer()
                        ? v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= 0xffffffff
                        : false;
    if (!ok) fail(fmt::format("{} is {}; expected a non-negative integer", path, v.dump()));
    return static_cast<std::uint32_t>(v.get<std::uint64_t>());
  }

  const json& array(const json& v, std::string_view path) const {
    if (!v.is_array()) fail(fmt::format("{} is {}; expected an array", path, aType(v)));
    return v;
  }

  std::string string(const json& v, std::string_view path) const {
    if (!v.is_string()) fail(fmt::format("{} is {}; expected a string", path, aType(v)));
    return v.get<std::string>();
  }

 private:
  std::string_view source_;
};

}  // namespace

Hierarchy hierarchyFromJson(const json& j, std::string_view source) {
  const JsonReader in(source);
  if (!j.is_object()) in.fail(fmt::format("the top level is {}; expected an object", aType(j)));
  const std::string format = in.string(in.get(j, "format", "the top level"), "format");
  if (format != kHierarchyJsonFormat)
    in.fail(fmt::format("format is \"{}\"; expected \"{}\"", format, kHierarchyJsonFormat));
  const std::uint32_t n = in.index(in.get(j, "ranks", "the top level"), "ranks");
  if (n == 0) in.fail("ranks is 0; expected at least one rank");

  const json& pods = in.array(in.get(j, "supernodes", "the top level"), "supernodes");
  if (pods.empty()) in.fail("supernodes is empty; expected at least one supernode");
  std::vector<std::string> podNames;
  std::set<std::string> seenPods;
  for (std::size_t p = 0; p < pods.size(); ++p) {
    const std::string path = fmt::format("supernodes[{}]", p);
    podNames.push_back(in.string(in.get(pods[p], "name", path), path + ".name"));
    if (!seenPods.insert(podNames.back()).second)
      in.fail(fmt::format("{}.name \"{}\" repeats; expected unique names", path, podNames.back()));
  }

  const json& servers = in.array(in.get(j, "servers", "the top level"), "servers");
  if (servers.empty()) in.fail("servers is empty; expected at least one server");
  std::vector<RankLabel> labels(n);
  std::vector<bool> assigned(n, false);
  std::set<std::string> seenServers;
  std::vector<std::vector<std::uint32_t>> serversOfPod(pods.size());
  for (std::size_t s = 0; s < servers.size(); ++s) {
    const std::string path = fmt::format("servers[{}]", s);
    const json& server = servers[s];
    const std::string name = in.string(in.get(server, "name", path), path + ".name");
    if (!seenServers.insert(name).second)
      in.fail(fmt::format("{}.name \"{}\" repeats; expected unique names", path, name));
    const std::uint32_t pod = in.index(in.get(server, "supernode", path), path + ".supernode");
    if (pod >= pods.size())
      in.fail(fmt::format("{}.supernode is {}; expected 0..{}", path, pod, pods.size() - 1));
    serversOfPod[pod].push_back(static_cast<std::uint32_t>(s));
    const json& ranks = in.array(in.get(server, "ranks", path), path + ".ranks");
    if (ranks.empty()) in.fail(fmt::format("{}.ranks is empty; expected at least one rank", path));
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      const std::uint32_t r = in.index(ranks[k], fmt::format("{}.ranks[{}]", path, k));
      if (r >= n) in.fail(fmt::format("{}.ranks[{}] is {}; expected 0..{}", path, k, r, n - 1));
      if (assigned[r])
        in.fail(fmt::format("rank {} is listed on two servers (again in {})", r, path));
      assigned[r] = true;
      labels[r] = {name, podNames[pod]};
    }
  }
  for (std::uint32_t r = 0; r < n; ++r)
    if (!assigned[r])
      in.fail(fmt::format("rank {} is on no server; expected ranks 0..{}", r, n - 1));
  for (std::size_t p = 0; p < pods.size(); ++p) {
    if (serversOfPod[p].empty())
      in.fail(fmt::format("supernodes[{}] (\"{}\") has no server", p, podNames[p]));
    if (pods[p].contains("servers") && pods[p]["servers"] != json(serversOfPod[p]))
      in.fail(fmt::format("supernodes[{}].servers is {} but the servers naming it are {}", p,
                          pods[p]["servers"].dump(), json(serversOfPod[p]).dump()));
  }

  Hierarchy h = Hierarchy::fromLabels(labels);
  auto check = [&](const char* key, const json& expected) {
    if (j.contains(key) && j[key] != expected)
      in.fail(fmt::format("{} is {} but the servers imply {}; fix or remove the field", key,
                          j[key].dump(), expected.dump()));
  };
  check("levels", h.levels());
  check("symmetric", h.symmetric());
  check("shape", h.describe());
  check("level1_groups", h.groups(1));
  check("level2_groups", h.groups(2));
  return h;
}

json toJson(const LocalSummary& s) {
  auto index = [](std::int32_t v) { return v < 0 ? json(nullptr) : json(v); };
  json nics = json::array();
  for (const Nic& n : s.nics)
    nics.push_back({{"pci_bus_id", n.pciBusId},
                    {"pci_class", fmt::format("{:04x}", n.pciClass)},
                    {"netdev", n.netdev},
                    {"verbs", n.verbs},
                    {"kind", name(n.kind)},
                    {"package", index(n.package)},
                    {"numa", index(n.numa)}});
  return {{"packages", s.packages},
          {"numa_nodes", s.numaNodes},
          {"cores", s.cores},
          {"pus", s.pus},
          {"binding", s.binding},
          {"binding_package", index(s.bindingPackage)},
          {"binding_numa", index(s.bindingNuma)},
          {"nics", nics},
          {"nearest_nic", s.nearestNic ? json(*s.nearestNic) : json(nullptr)}};
}

json toJson(const RankRecord& r) {
  auto index = [](std::int32_t v) { return v < 0 ? json(nullptr) : json(v); };
  return {{"hostname", r.hostname},
          {"boot_id", r.bootId ? json(formatBootId(*r.bootId)) : json(nullptr)},
          {"package", index(r.package)},
          {"numa", index(r.numa)},
          {"nic_kind", name(r.nicKind)},
          {"nic_verbs", r.nicVerbs},
          {"nic_netdev", r.nicNetdev},
          {"nic_pci_bus_id", r.nicPciBusId},
          {"nic_package", index(r.nicPackage)},
          {"nic_numa", index(r.nicNuma)},
          {"supernode_hint", r.supernodeHint},
          {"bytes", RankRecord::kSize}};
}

}  // namespace hccl::topo
