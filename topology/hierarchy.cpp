#include "topology/hierarchy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "topology/error.hpp"

namespace hccl::topo {

Hierarchy Hierarchy::fromLabels(std::span<const RankLabel> labels) {
  if (labels.empty()) throw TopologyError("topology: a hierarchy needs at least one rank");
  struct Pending {
    std::string name;
    std::uint32_t pod = 0;
    std::vector<std::uint32_t> members;
  };
  // Visiting ranks in ascending order makes "order of first appearance" the "lowest rank" order
  // the canonical numbering asks for.
  std::vector<Pending> servers;
  std::vector<std::string> podNames;
  std::unordered_map<std::string, std::uint32_t> serverIndex, podIndex;
  for (std::uint32_t r = 0; r < labels.size(); ++r) {
    const RankLabel& l = labels[r];
    auto [pit, newPod] =
        podIndex.try_emplace(l.supernode, static_cast<std::uint32_t>(podNames.size()));
    if (newPod) podNames.push_back(l.supernode);
    auto [sit, newServer] =
        serverIndex.try_emplace(l.server, static_cast<std::uint32_t>(servers.size()));
    if (newServer) servers.push_back({l.server, pit->second, {}});
    Pending& s = servers[sit->second];
    if (s.pod != pit->second)
      throw TopologyError(fmt::format(
          "topology: server \"{}\" is placed in supernode \"{}\" by rank {} and in supernode "
          "\"{}\" by rank {}; a server belongs to exactly one supernode",
          s.name, podNames[s.pod], s.members.front(), l.supernode, r));
    s.members.push_back(r);
  }
  std::stable_sort(servers.begin(), servers.end(),
                   [](const Pending& a, const Pending& b) { return a.pod < b.pod; });

  Hierarchy h;
  h.places_.resize(labels.size());
  h.supernodes_.resize(podNames.size());
  for (std::uint32_t p = 0; p < podNames.size(); ++p) h.supernodes_[p].name = podNames[p];
  for (std::uint32_t s = 0; s < servers.size(); ++s) {
    Pending& pending = servers[s];
    Supernode& pod = h.supernodes_[pending.pod];
    const auto inPod = static_cast<std::uint32_t>(pod.servers.size());
    pod.servers.push_back(s);
    for (std::uint32_t l = 0; l < pending.members.size(); ++l)
      h.places_[pending.members[l]] = RankPlace{pending.pod, s, inPod, l};
    h.servers_.push_back({std::move(pending.name), pending.pod, std::move(pending.members)});
  }
  return h;
}

Hierarchy Hierarchy::fromSpec(const EmulationSpec& spec) {
  std::vector<std::uint32_t> podOfServer;
  for (std::uint32_t p = 0; p < spec.supernodes.size(); ++p)
    podOfServer.insert(podOfServer.end(), spec.supernodes[p].size(), p);
  const std::vector<std::uint32_t> owner = serverOfRank(spec);
  std::vector<RankLabel> labels;
  labels.reserve(owner.size());
  for (std::uint32_t s : owner)
    labels.push_back({fmt::format("node{}", s), fmt::format("pod{}", podOfServer[s])});
  return fromLabels(labels);
}

std::vector<std::uint32_t> Hierarchy::group(int level, std::uint32_t rank) const {
  const RankPlace& me = place(rank);
  std::vector<std::uint32_t> out;
  switch (level) {
    case 0:
      return servers_[me.server].members;
    case 1:
      for (std::uint32_t s : supernodes_[me.supernode].servers)
        if (servers_[s].members.size() > me.local) out.push_back(servers_[s].members[me.local]);
      return out;
    case 2:
      for (const Supernode& pod : supernodes_) {
        if (pod.servers.size() <= me.serverInSupernode) continue;
        const Server& s = servers_[pod.servers[me.serverInSupernode]];
        if (s.members.size() > me.local) out.push_back(s.members[me.local]);
      }
      return out;
    default:
      throw TopologyError(fmt::format("topology: level {} does not exist (valid: 0, 1, 2)", level));
  }
}

std::uint32_t Hierarchy::groupSize(int level, std::uint32_t rank) const {
  return static_cast<std::uint32_t>(group(level, rank).size());
}

std::vector<std::vector<std::uint32_t>> Hierarchy::groups(int level) const {
  std::vector<std::vector<std::uint32_t>> out;
  auto widest = [&](auto&& serverIndices) {
    std::size_t w = 0;
    for (std::uint32_t s : serverIndices) w = std::max(w, servers_[s].members.size());
    return w;
  };
  switch (level) {
    case 0:
      for (const Server& s : servers_) out.push_back(s.members);
      return out;
    case 1:
      for (const Supernode& pod : supernodes_) {
        const std::size_t w = widest(pod.servers);
        for (std::size_t l = 0; l < w; ++l) {
          auto& g = out.emplace_back();
          for (std::uint32_t s : pod.servers)
            if (servers_[s].members.size() > l) g.push_back(servers_[s].members[l]);
        }
      }
      return out;
    case 2: {
      std::size_t positions = 0;
      for (const Supernode& pod : supernodes_) positions = std::max(positions, pod.servers.size());
      for (std::size_t j = 0; j < positions; ++j) {
        std::vector<std::uint32_t> atJ;
        for (const Supernode& pod : supernodes_)
          if (pod.servers.size() > j) atJ.push_back(pod.servers[j]);
        const std::size_t w = widest(atJ);
        for (std::size_t l = 0; l < w; ++l) {
          auto& g = out.emplace_back();
          for (std::uint32_t s : atJ)
            if (servers_[s].members.size() > l) g.push_back(servers_[s].members[l]);
        }
      }
      return out;
    }
    default:
      throw TopologyError(fmt::format("topology: level {} does not exist (valid: 0, 1, 2)", level));
  }
}

std::uint32_t Hierarchy::levels() const {
  if (numServers() <= 1) return 1;
  return numSupernodes() == 1 ? 2 : 3;
}

bool Hierarchy::symmetric() const {
  const auto sameServers = std::all_of(servers_.begin(), servers_.end(), [&](const Server& s) {
    return s.members.size() == servers_.front().members.size();
  });
  const auto samePods = std::all_of(
      supernodes_.begin(), supernodes_.end(),
      [&](const Supernode& p) { return p.servers.size() == supernodes_.front().servers.size(); });
  return sameServers && samePods;
}

HierarchyShape Hierarchy::shape(std::uint32_t rank) const {
  HierarchyShape out;
  out.ranks = size();
  out.levels = levels();
  out.symmetric = symmetric();
  for (int level = 0; level < kNumLevels; ++level) {
    const auto all = groups(level);
    LevelShape& ls = out.level[static_cast<std::size_t>(level)];
    ls.groupSize = groupSize(level, rank);
    ls.groups = static_cast<std::uint32_t>(all.size());
    const auto [mn, mx] = std::minmax_element(
        all.begin(), all.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    ls.minGroupSize = static_cast<std::uint32_t>(mn->size());
    ls.maxGroupSize = static_cast<std::uint32_t>(mx->size());
    ls.uniform = ls.minGroupSize == ls.maxGroupSize;
  }
  return out;
}

std::optional<RankOrder> Hierarchy::rankOrder() const {
  EmulationSpec spec;
  for (const Supernode& pod : supernodes_) {
    auto& sizes = spec.supernodes.emplace_back();
    for (std::uint32_t s : pod.servers)
      sizes.push_back(static_cast<std::uint32_t>(servers_[s].members.size()));
  }
  auto matches = [&](RankOrder order) {
    spec.order = order;
    const std::vector<std::uint32_t> owner = serverOfRank(spec);
    for (std::uint32_t r = 0; r < size(); ++r)
      if (owner[r] != places_[r].server) return false;
    return true;
  };
  if (matches(RankOrder::Block)) return RankOrder::Block;
  if (matches(RankOrder::RoundRobin)) return RankOrder::RoundRobin;
  return std::nullopt;
}

std::optional<EmulationSpec> Hierarchy::toSpec() const {
  const auto order = rankOrder();
  if (!order) return std::nullopt;
  EmulationSpec spec;
  spec.order = *order;
  for (const Supernode& pod : supernodes_) {
    auto& sizes = spec.supernodes.emplace_back();
    for (std::uint32_t s : pod.servers)
      sizes.push_back(static_cast<std::uint32_t>(servers_[s].members.size()));
  }
  return spec;
}

namespace {
std::string counted(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}
}  // namespace

std::string Hierarchy::describe() const {
  if (servers_.empty()) return "no ranks";
  std::string out;
  const std::size_t perServer = servers_.front().members.size();
  if (symmetric()) {
    const std::size_t perPod = supernodes_.front().servers.size();
    if (numSupernodes() > 1) out = counted(numSupernodes(), "supernode") + " x ";
    out += counted(perPod, "server") + " x " + counted(perServer, "rank");
  } else {
    EmulationSpec spec;
    for (const Supernode& pod : supernodes_) {
      auto& sizes = spec.supernodes.emplace_back();
      for (std::uint32_t s : pod.servers)
        sizes.push_back(static_cast<std::uint32_t>(servers_[s].members.size()));
    }
    out = fmt::format("{} of {} ranks", numSupernodes() > 1 ? "supernodes" : "servers",
                      formatEmulationSpec(spec));
  }
  const auto order = rankOrder();
  if (!order)
    out += ", irregular rank order";
  else if (*order == RankOrder::RoundRobin)
    out += ", round-robin ranks";
  return out;
}

Hierarchy Hierarchy::subset(std::span<const std::uint32_t> parentRanks) const {
  std::vector<RankLabel> labels;
  labels.reserve(parentRanks.size());
  std::vector<std::int64_t> seenAt(size(), -1);
  for (std::size_t i = 0; i < parentRanks.size(); ++i) {
    const std::uint32_t p = parentRanks[i];
    if (p >= size())
      throw TopologyError(fmt::format(
          "topology: sub-communicator rank {} maps to rank {}, but the hierarchy has ranks 0..{}",
          i, p, size() - 1));
    if (seenAt[p] >= 0)
      throw TopologyError(fmt::format(
          "topology: sub-communicator ranks {} and {} both map to rank {}", seenAt[p], i, p));
    seenAt[p] = static_cast<std::int64_t>(i);
    labels.push_back({servers_[places_[p].server].name, supernodes_[places_[p].supernode].name});
  }
  return fromLabels(labels);
}

bool Hierarchy::sameLayout(const Hierarchy& o) const {
  return places_ == o.places_;
}

std::string formatRankList(std::span<const std::uint32_t> ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i + 1;
    while (j < ranks.size() && ranks[j] == ranks[j - 1] + 1) ++j;
    // Runs of three or more read better as a range; "0,1" reads better than "0-1".
    if (j - i >= 3) {
      out += fmt::format("{}{}-{}", out.empty() ? "" : ",", ranks[i], ranks[j - 1]);
    } else {
      for (std::size_t k = i; k < j; ++k)
        out += fmt::format("{}{}", out.empty() ? "" : ",", ranks[k]);
    }
    i = j;
  }
  return out;
}

}  // namespace hccl::topo
