#include "topology/resolve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>

#include "common/utf8.hpp"
#include "topology/emulation.hpp"
#include "topology/error.hpp"
#include "topology/rank_table.hpp"

namespace hccl::topo {
namespace {

// libstdc++'s default executor backtracks: "(a+)+$" against a 64-character hostname would run for
// hours inside MPI_Init. __polynomial (a libstdc++ extension) selects its breadth-first executor,
// linear in the hostname, which refuses back-references when the pattern is compiled. Its
// compiler recurses per nesting level, so the pattern's length is bounded too.
std::regex hostnameRegex(const std::string& pattern) {
  return std::regex(pattern, std::regex::ECMAScript | std::regex_constants::__polynomial);
}

// libstdc++ reads the numbers of "{m,n}" and "\N" into a long without checking for overflow
// (signed overflow, undefined behaviour; found by fuzzing with UBSan). Hostname patterns need no
// long numbers: a run of more than 9 digits is refused before the regex compiler sees it.
void checkNumbers(std::string_view text, std::string_view pattern) {
  std::size_t digits = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    digits = pattern[i] >= '0' && pattern[i] <= '9' ? digits + 1 : 0;
    if (digits > 9)
      throw TopologyError(fmt::format(
          "supernode grouping {}: the number at position {} has more than 9 digits; expected "
          "repetition counts and literal digits of at most 9",
          text::quoted(text::truncated(text, 60)),
          text::charPosition(text, text.size() - pattern.size() + i + 1 - digits)));
  }
}

}  // namespace

SupernodeGrouping SupernodeGrouping::parse(std::string_view text) {
  SupernodeGrouping g;
  if (text.empty() || text == "single") return g;
  constexpr std::string_view kRegex = "regex:";
  if (text.substr(0, kRegex.size()) == kRegex) {
    g.kind = Kind::HostnamePattern;
    g.hostnamePattern = std::string(text.substr(kRegex.size()));
    if (g.hostnamePattern.empty())
      throw TopologyError(
          fmt::format("supernode grouping {}: the pattern is empty; expected regex:<pattern>",
                      text::quoted(text)));
    if (g.hostnamePattern.size() > kMaxHostnamePatternLength)
      throw TopologyError(
          fmt::format("supernode grouping {}: the pattern is {} bytes; expected at most {}",
                      text::quoted(text::truncated(text, 40)), g.hostnamePattern.size(),
                      kMaxHostnamePatternLength));
    checkNumbers(text, g.hostnamePattern);
    try {
      static_cast<void>(hostnameRegex(g.hostnamePattern));
    } catch (const std::regex_error& e) {
      throw TopologyError(
          fmt::format("supernode grouping {}: the pattern is not a valid ECMAScript regex "
                      "without back-references ({})",
                      text::quoted(text), e.what()));
    }
    return g;
  }
  std::uint64_t n = 0;
  bool digits = text.size() <= 9;
  for (char c : text) {
    if (c < '0' || c > '9') digits = false;
    if (digits) n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!digits || n == 0)
    throw TopologyError(fmt::format(
        "supernode grouping {} is not valid; expected \"single\", servers per supernode "
        "(\"4\") or \"regex:<pattern>\"{}",
        text::quoted(text::truncated(text, 40)), text::nonAsciiHint(text, 1)));
  g.kind = Kind::ServersPerSupernode;
  g.serversPerSupernode = static_cast<std::uint32_t>(n);
  return g;
}

Hierarchy hierarchyFromRecords(std::span<const RankRecord> records,
                               const SupernodeGrouping& grouping) {
  if (records.empty()) throw TopologyError("topology: no rank records to build a hierarchy from");
  const std::size_t n = records.size();
  // Servers in order of their lowest rank.
  std::vector<std::size_t> serverOf(n), firstRank;
  std::map<std::pair<std::string, std::optional<BootId>>, std::size_t> serverIndex;
  for (std::size_t r = 0; r < n; ++r) {
    auto [it, fresh] =
        serverIndex.try_emplace({records[r].hostname, records[r].bootId}, firstRank.size());
    if (fresh) firstRank.push_back(r);
    serverOf[r] = it->second;
  }
  std::map<std::string, std::size_t> hostnameUses;
  for (std::size_t first : firstRank) ++hostnameUses[records[first].hostname];
  std::vector<std::string> serverName;
  for (std::size_t first : firstRank) {
    const RankRecord& rec = records[first];
    serverName.push_back(
        hostnameUses[rec.hostname] == 1
            ? rec.hostname
            : fmt::format("{}@{}", rec.hostname,
                          rec.bootId ? formatBootId(*rec.bootId) : "unknown-boot"));
  }

  std::vector<std::string> podOfServer(firstRank.size());
  const auto hinted = static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(),
                    [](const RankRecord& r) { return !r.supernodeHint.empty(); }));
  if (hinted > 0) {
    if (hinted < n) {
      const auto with = std::find_if(records.begin(), records.end(),
                                     [](const RankRecord& r) { return !r.supernodeHint.empty(); });
      const auto without = std::find_if(records.begin(), records.end(), [](const RankRecord& r) {
        return r.supernodeHint.empty();
      });
      throw TopologyError(fmt::format(
          "topology: rank {} gives no supernode hint but rank {} gives \"{}\"; expected every rank "
          "or none to set {}",
          without - records.begin(), with - records.begin(), with->supernodeHint,
          kEnvSupernodeHint));
    }
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t s = serverOf[r];
      const std::size_t first = firstRank[s];
      if (records[r].supernodeHint != records[first].supernodeHint)
        throw TopologyError(fmt::format(
            "topology: ranks {} and {} share server {} but give supernode hints \"{}\" and \"{}\"; "
            "expected one supernode per server",
            first, r, serverName[s], records[first].supernodeHint, records[r].supernodeHint));
      podOfServer[s] = records[r].supernodeHint;
    }
  } else {
    switch (grouping.kind) {
      case SupernodeGrouping::Kind::Single:
        podOfServer.assign(podOfServer.size(), std::string("0"));
        break;
      case SupernodeGrouping::Kind::ServersPerSupernode:
        if (grouping.serversPerSupernode == 0)
          throw TopologyError("topology: supernode grouping by count needs a count >= 1");
        for (std::size_t s = 0; s < podOfServer.size(); ++s)
          podOfServer[s] = std::to_string(s / grouping.serversPerSupernode);
        break;
      case SupernodeGrouping::Kind::HostnamePattern: {
        std::regex re;
        try {
          re = hostnameRegex(grouping.hostnamePattern);
        } catch (const std::regex_error& e) {
          throw TopologyError(
              fmt::format("topology: supernode pattern \"{}\" is not a valid regex "
                          "({})",
                          grouping.hostnamePattern, e.what()));
        }
        for (std::size_t s = 0; s < podOfServer.size(); ++s) {
          const std::string& host = records[firstRank[s]].hostname;
          std::smatch m;
          if (!std::regex_search(host, m, re))
            throw TopologyError(fmt::format(
                "topology: hostname \"{}\" (rank {}) does not match the supernode pattern \"{}\"; "
                "expected every hostname to match",
                host, firstRank[s], grouping.hostnamePattern));
          podOfServer[s] = m.size() > 1 && m[1].matched ? m[1].str() : m[0].str();
        }
        break;
      }
    }
  }
  std::vector<RankLabel> labels(n);
  for (std::size_t r = 0; r < n; ++r)
    labels[r] = {serverName[serverOf[r]], podOfServer[serverOf[r]]};
  return Hierarchy::fromLabels(labels);
}

TopologySource TopologySource::fromEnvironment() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  TopologySource s;
  s.rankTableFile = env(kEnvRankTable);
  s.emulationSpec = env(kEnvEmulate);
  try {
    s.grouping = SupernodeGrouping::parse(env(kEnvSupernodes));
  } catch (const TopologyError& e) {
    throw TopologyError(fmt::format("{}: {}", kEnvSupernodes, e.what()));
  }
  s.supernodeHint = env(kEnvSupernodeHint);
  // The hint travels in every rank's record: printable ASCII of bounded length (RankRecord).
  if (s.supernodeHint.size() > RankRecord::kHintMax)
    throw TopologyError(fmt::format("{}: {} is {} bytes; expected at most {}", kEnvSupernodeHint,
                                    text::quoted(text::truncated(s.supernodeHint, 40)),
                                    s.supernodeHint.size(), RankRecord::kHintMax));
  for (std::size_t i = 0; i < s.supernodeHint.size(); ++i) {
    const char c = s.supernodeHint[i];
    if (c < 0x20 || c > 0x7e)
      throw TopologyError(fmt::format(
          "{}: {} holds {} at position {}; expected printable ASCII (a supernode id such as "
          "\"0\" or \"pod-a\")",
          kEnvSupernodeHint, text::quoted(s.supernodeHint), text::describe(s.supernodeHint, i),
          text::charPosition(s.supernodeHint, i)));
  }
  return s;
}

std::string_view name(SourceKind k) {
  switch (k) {
    case SourceKind::RankTable:
      return "rank table";
    case SourceKind::Emulation:
      return "emulation spec";
    case SourceKind::Discovery:
      return "discovery";
  }
  return "?";
}

ResolvedHierarchy resolveHierarchy(const TopologySource& source, std::uint32_t worldSize,
                                   std::span<const std::uint32_t> worldRanks,
                                   std::span<const RankRecord> records) {
  const std::size_t commSize = worldRanks.empty() ? worldSize : worldRanks.size();
  auto restrict = [&](Hierarchy world) {
    return worldRanks.empty() ? world : world.subset(worldRanks);
  };
  if (!source.rankTableFile.empty()) {
    const RankTable table = loadRankTable(source.rankTableFile, worldSize);
    return {restrict(hierarchyFromRankTable(table)), SourceKind::RankTable, source.rankTableFile};
  }
  if (!source.emulationSpec.empty()) {
    const EmulationSpec spec = parseEmulationSpec(source.emulationSpec);
    if (spec.ranks() != worldSize)
      throw TopologyError(
          fmt::format("emulation spec \"{}\" describes {} ranks but the job has {} "
                      "(MPI_COMM_WORLD); expected a spec of {} ranks",
                      source.emulationSpec, spec.ranks(), worldSize, worldSize));
    return {restrict(Hierarchy::fromSpec(spec)), SourceKind::Emulation, source.emulationSpec};
  }
  if (records.size() != commSize)
    throw TopologyError(
        fmt::format("topology: discovery got {} rank records for a communicator of "
                    "{} ranks",
                    records.size(), commSize));
  return {hierarchyFromRecords(records, source.grouping), SourceKind::Discovery, "discovery"};
}

}  // namespace hccl::topo
