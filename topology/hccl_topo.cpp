// hccl_topo: print the level0/level1/level2 hierarchy of a rank table, an emulation spec or a
// saved hierarchy, and the local hwloc summary, as text or JSON.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/file_text.hpp"
#include "common/json_text.hpp"
#include "common/utf8.hpp"
#include "topology/emulation.hpp"
#include "topology/error.hpp"
#include "topology/hierarchy.hpp"
#include "topology/json.hpp"
#include "topology/local.hpp"
#include "topology/rank_table.hpp"
#include "topology/resolve.hpp"

namespace {

using namespace hccl::topo;
namespace text = hccl::text;
using nlohmann::json;

struct Options {
  std::string rankTable;
  std::string emulate;
  std::string fromJson;
  std::optional<std::uint32_t> size;
  std::optional<std::uint32_t> rank;
  bool local = false;
  std::string hwlocXml;
  std::string hwlocSynthetic;
  std::string cpuset;
  bool json = false;
  bool brief = false;
};

std::string groupSizes(const std::vector<std::vector<std::uint32_t>>& groups) {
  std::size_t lo = groups.front().size(), hi = lo;
  for (const auto& g : groups) {
    lo = std::min(lo, g.size());
    hi = std::max(hi, g.size());
  }
  const std::string of = lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi);
  return fmt::format("{} group{} of {}", groups.size(), groups.size() == 1 ? "" : "s", of);
}

void printHierarchy(const Hierarchy& h, const std::string& origin, bool brief) {
  fmt::print("source: {}\n", origin);
  fmt::print("shape: {} ({} ranks, {} level{}, {})\n", h.describe(), h.size(), h.levels(),
             h.levels() == 1 ? "" : "s", h.symmetric() ? "symmetric" : "asymmetric");
  if (brief) return;
  fmt::print("supernodes: {}\n", h.numSupernodes());
  for (std::uint32_t p = 0; p < h.numSupernodes(); ++p) {
    const auto servers = h.supernodeServers(p);
    fmt::print("  supernode {} \"{}\": servers {}\n", p, h.supernodeName(p),
               formatRankList(servers));
  }
  const auto l0 = h.groups(0);
  fmt::print("level0 (ranks of one server): {}\n", groupSizes(l0));
  for (std::uint32_t s = 0; s < h.numServers(); ++s)
    fmt::print("  server {} \"{}\" supernode {}: {}\n", s, h.serverName(s), h.supernodeOfServer(s),
               formatRankList(h.serverMembers(s)));
  const auto l1 = h.groups(1);
  fmt::print("level1 (same local index across the servers of a supernode): {}\n", groupSizes(l1));
  for (const auto& g : l1) {
    const RankPlace& p = h.place(g.front());
    fmt::print("  supernode {} local {}: {}\n", p.supernode, p.local, formatRankList(g));
  }
  const auto l2 = h.groups(2);
  fmt::print("level2 (same position across supernodes): {}\n", groupSizes(l2));
  for (const auto& g : l2) {
    const RankPlace& p = h.place(g.front());
    fmt::print("  server-in-supernode {} local {}: {}\n", p.serverInSupernode, p.local,
               formatRankList(g));
  }
}

void printRank(const Hierarchy& h, std::uint32_t r) {
  const RankPlace& p = h.place(r);
  fmt::print("rank {}: supernode {}, server {} (\"{}\"), server-in-supernode {}, local {}\n", r,
             p.supernode, p.server, h.serverName(p.server), p.serverInSupernode, p.local);
  const CommShape shape = h.shape(r);
  for (int level = 0; level < kNumLevels; ++level) {
    const LevelShape& ls = shape.level[static_cast<std::size_t>(level)];
    fmt::print(
        "  level{} group ({}{}): {}\n", level, ls.groupSize,
        ls.uniform ? "" : fmt::format(", groups of {} to {}", ls.minGroupSize, ls.maxGroupSize),
        formatRankList(h.group(level, r)));
  }
}

json rankJson(const Hierarchy& h, std::uint32_t r) {
  const RankPlace& p = h.place(r);
  const CommShape shape = h.shape(r);
  json levels = json::array();
  for (int level = 0; level < kNumLevels; ++level) {
    const LevelShape& ls = shape.level[static_cast<std::size_t>(level)];
    levels.push_back({{"group", h.group(level, r)},
                      {"groups", ls.groups},
                      {"min_group_size", ls.minGroupSize},
                      {"max_group_size", ls.maxGroupSize},
                      {"uniform", ls.uniform}});
  }
  return {{"rank", r},          {"supernode", p.supernode},
          {"server", p.server}, {"server_in_supernode", p.serverInSupernode},
          {"local", p.local},   {"levels", levels}};
}

std::string nicLabel(const Nic& n) {
  std::string label = n.verbs;
  if (!n.netdev.empty()) label += (label.empty() ? "" : "/") + n.netdev;
  return label;
}

void printLocal(const LocalSummary& s, const RankRecord& record) {
  auto idx = [](std::int32_t v) { return v < 0 ? std::string("several") : std::to_string(v); };
  fmt::print(
      "local: {} package{}, {} NUMA node{}, {} cores, {} PUs; binding {} (package {}, NUMA {})\n",
      s.packages, s.packages == 1 ? "" : "s", s.numaNodes, s.numaNodes == 1 ? "" : "s", s.cores,
      s.pus, s.binding, idx(s.bindingPackage), idx(s.bindingNuma));
  if (s.nics.empty()) fmt::print("  no network device in hwloc's view\n");
  for (std::size_t i = 0; i < s.nics.size(); ++i) {
    const Nic& n = s.nics[i];
    fmt::print("  NIC {} {} ({}, PCI {}, package {}, NUMA {}){}\n", i, nicLabel(n), name(n.kind),
               n.pciBusId.empty() ? "?" : n.pciBusId, idx(n.package), idx(n.numa),
               s.nearestNic == i ? " <- nearest" : "");
  }
  fmt::print("record ({} bytes): {}\n", RankRecord::kSize, describe(record));
}

json readJsonFile(const std::string& path) {
  // As large as the largest rank table: one entry per rank.
  const text::FileText file = text::readRegularFile(path, kMaxRankTableBytes);
  if (!file.text)
    throw TopologyError(fmt::format("hierarchy JSON {}: {}", text::shown(path), file.error));
  std::string error;
  std::optional<json> parsed = text::parseJson(*file.text, error);
  if (!parsed) throw TopologyError(fmt::format("hierarchy JSON {}: {}", text::shown(path), error));
  return std::move(*parsed);
}

int run(const Options& o) {
  json out = json::object();
  std::optional<Hierarchy> h;
  std::string origin;
  std::string rankTable = o.rankTable, emulate = o.emulate;
  const bool anySource = !rankTable.empty() || !emulate.empty() || !o.fromJson.empty();
  if (!anySource && !o.local) {
    // Same precedence as the component: RANK_TABLE_FILE, then HCCL_TOPO_EMULATE.
    const TopologySource env = TopologySource::fromEnvironment();
    rankTable = env.rankTableFile;
    if (rankTable.empty()) emulate = env.emulationSpec;
  }
  if (!rankTable.empty()) {
    h = hierarchyFromRankTable(loadRankTable(rankTable, o.size));
    origin = fmt::format("rank table {}", rankTable);
  } else if (!emulate.empty()) {
    const EmulationSpec spec = parseEmulationSpec(emulate);
    if (o.size && *o.size != spec.ranks())
      throw TopologyError(
          fmt::format("emulation spec \"{}\" describes {} ranks; expected {} "
                      "(--size)",
                      emulate, spec.ranks(), *o.size));
    h = Hierarchy::fromSpec(spec);
    origin = fmt::format("emulation spec \"{}\"", emulate);
  } else if (!o.fromJson.empty()) {
    const json j = readJsonFile(o.fromJson);
    h = hierarchyFromJson(j.is_object() && j.contains("hierarchy") ? j["hierarchy"] : j,
                          o.fromJson);
    if (o.size && *o.size != h->size())
      throw TopologyError(fmt::format("hierarchy JSON {} has {} ranks; expected {} (--size)",
                                      o.fromJson, h->size(), *o.size));
    origin = fmt::format("hierarchy JSON {}", o.fromJson);
  }
  if (o.rank && (!h || *o.rank >= h->size()))
    throw TopologyError(h ? fmt::format("--rank {} is outside 0..{}", *o.rank, h->size() - 1)
                          : std::string("--rank needs a hierarchy (--rank-table, --emulate or "
                                        "--from-json)"));
  const bool local = o.local || !h;
  if (h) {
    if (o.json) {
      out["source"] = origin;
      out["hierarchy"] = toJson(*h);
      if (o.rank) out["rank"] = rankJson(*h, *o.rank);
    } else {
      printHierarchy(*h, origin, o.brief);
      if (o.rank) printRank(*h, *o.rank);
    }
  }
  if (local) {
    std::optional<LocalTopology> topo;
    HostIdentity host;
    if (!o.hwlocXml.empty()) {
      topo.emplace(LocalTopology::xmlFile(o.hwlocXml));
      host.hostname = "xml";
    } else if (!o.hwlocSynthetic.empty()) {
      topo.emplace(LocalTopology::synthetic(o.hwlocSynthetic));
      host.hostname = "synthetic";
    } else {
      topo.emplace(LocalTopology::discover());
      host = localHostIdentity();
    }
    const LocalSummary s = o.cpuset.empty() ? topo->summarize() : topo->summarize(o.cpuset);
    const RankRecord record = makeRecord(host, s, TopologySource::fromEnvironment().supernodeHint);
    if (o.json) {
      out["local"] = toJson(s);
      out["record"] = toJson(record);
    } else {
      if (h) fmt::print("\n");
      printLocal(s, record);
    }
  }
  if (o.json) fmt::print("{}\n", out.dump(2));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hccl_topo: the level0/level1/level2 hierarchy that coll_hccl uses, from an HCCL rank table, "
      "an emulation spec or a saved hierarchy, and the local hwloc summary (packages, NUMA nodes, "
      "binding, NICs) that each rank contributes."};
  app.footer(fmt::format(
      "Without --rank-table, --emulate, --from-json or --local, the {} and {} environment "
      "variables are used, else --local.\n\n{}",
      kEnvRankTable, kEnvEmulate, kEmulationGrammar));
  Options o;
  auto* table = app.add_option("--rank-table", o.rankTable, "HCCL rank table (version 1.0 or 1.2)")
                    ->check(CLI::ExistingFile);
  auto* emulate =
      app.add_option("--emulate", o.emulate, "emulation spec, e.g. \"2x2x8\" (grammar below)");
  auto* fromJson = app.add_option("--from-json", o.fromJson,
                                  "a hierarchy saved with --json (re-printed after validation)")
                       ->check(CLI::ExistingFile);
  table->excludes(emulate, fromJson);
  emulate->excludes(fromJson);
  app.add_option("--size", o.size,
                 "expected communicator size: reject a table or spec of another size")
      ->check(CLI::PositiveNumber);
  app.add_option("--rank", o.rank, "also print what this rank sees: its groups and level shapes");
  app.add_flag("--local", o.local, "print the local hwloc summary and this process's rank record");
  auto* xml = app.add_option("--hwloc-xml", o.hwlocXml,
                             "with --local: read an hwloc XML topology instead of this machine")
                  ->check(CLI::ExistingFile);
  auto* syn =
      app.add_option("--hwloc-synthetic", o.hwlocSynthetic,
                     "with --local: use an hwloc synthetic topology, e.g. \"pack:2 core:4 pu:2\"");
  xml->excludes(syn);
  app.add_option("--cpuset", o.cpuset,
                 "with --local: the binding to assume, as PU OS indices (\"0-3\")");
  app.add_flag("--json", o.json, "machine-readable output");
  app.add_flag("--brief", o.brief, "print only the source and shape lines of a hierarchy");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run(o);
  } catch (const TopologyError& e) {
    fmt::print(stderr, "hccl_topo: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hccl_topo: error: {}\n", e.what());
    return 2;
  }
}
