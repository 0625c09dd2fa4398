#include "algorithms/layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace hccl::algo {
namespace {

Layout::Groups singletons(std::uint32_t n) {
  Layout::Groups g(n);
  for (std::uint32_t r = 0; r < n; ++r) g[r] = {r};
  return g;
}

// Same-index groups across the given sets of servers: member i of every server in a set.
void sameIndex(const Layout::Groups& servers, const std::vector<std::vector<std::uint32_t>>& sets,
               Layout::Groups& out) {
  for (const auto& set : sets) {
    std::size_t width = 0;
    for (std::uint32_t s : set) width = std::max(width, servers[s].size());
    for (std::size_t i = 0; i < width; ++i) {
      std::vector<std::uint32_t> g;
      for (std::uint32_t s : set)
        if (i < servers[s].size()) g.push_back(servers[s][i]);
      out.push_back(std::move(g));
    }
  }
}

}  // namespace

Layout::Layout(std::uint32_t ranks, std::array<Groups, kNumLevels> groups)
    : ranks_(ranks), groups_(std::move(groups)) {
  for (int l = 0; l < kNumLevels; ++l) {
    auto& gi = groupIndex_[static_cast<std::size_t>(l)];
    auto& pos = position_[static_cast<std::size_t>(l)];
    gi.assign(ranks, ~0u);
    pos.assign(ranks, ~0u);
    const Groups& gs = groups_[static_cast<std::size_t>(l)];
    for (std::uint32_t g = 0; g < gs.size(); ++g) {
      if (gs[g].size() != gs[0].size()) symmetric_ = false;
      for (std::uint32_t i = 0; i < gs[g].size(); ++i) {
        const std::uint32_t r = gs[g][i];
        if (r >= ranks || gi[r] != ~0u)
          throw std::invalid_argument(
              fmt::format("level{} groups do not partition {} ranks (rank {})", l, ranks, r));
        gi[r] = g;
        pos[r] = i;
      }
    }
    for (std::uint32_t r = 0; r < ranks; ++r)
      if (gi[r] == ~0u)
        throw std::invalid_argument(fmt::format("level{} groups miss rank {}", l, r));
  }
  positionOf_.assign(ranks, 0);
  serverOf_.assign(ranks, 0);
  for (std::uint32_t s = 0; s < groups_[0].size(); ++s) {
    const auto first = static_cast<std::uint32_t>(order_.size());
    for (std::uint32_t r : groups_[0][s]) {
      positionOf_[r] = static_cast<std::uint32_t>(order_.size());
      serverOf_[r] = s;
      order_.push_back(r);
    }
    serverSpan_.push_back({first, static_cast<std::uint32_t>(order_.size())});
  }
  for (std::uint32_t i = 0; i < ranks; ++i)
    if (order_[i] != i) blockOrder_ = false;
  // Supernodes: servers joined by a level1 group. Servers are listed supernode-major, so a
  // supernode is a run of consecutive servers.
  // Server s is joined to s-1 when a level1 group holds both (adjacent in its sorted servers):
  // one pass over the groups, not every rank's group for every rank (ranks x servers).
  std::vector<bool> joined(groups_[0].size(), false);
  for (const std::vector<std::uint32_t>& g : groups_[1]) {
    std::vector<std::uint32_t> servers;
    servers.reserve(g.size());
    for (std::uint32_t q : g) servers.push_back(serverOf_[q]);
    std::sort(servers.begin(), servers.end());
    for (std::size_t i = 1; i < servers.size(); ++i)
      if (servers[i] == servers[i - 1] + 1) joined[servers[i]] = true;
  }
  std::vector<std::uint32_t> podOfServer(groups_[0].size());
  std::uint32_t pod = 0;
  for (std::uint32_t s = 0; s < groups_[0].size(); ++s) {
    if (s > 0 && !joined[s]) ++pod;
    podOfServer[s] = pod;
  }
  podOf_.assign(ranks, 0);
  podSpan_.assign(pod + 1, {ranks, 0});
  for (std::uint32_t r = 0; r < ranks; ++r) {
    podOf_[r] = podOfServer[serverOf_[r]];
    auto& span = podSpan_[podOf_[r]];
    span.first = std::min(span.first, positionOf_[r]);
    span.second = std::max(span.second, positionOf_[r] + 1);
  }
}

std::pair<std::uint32_t, std::uint32_t> Layout::unit(int level, std::uint32_t r) const {
  if (level == 0) return {positionOf_[r], positionOf_[r] + 1};
  if (level == 1) return serverSpan_[serverOf_[r]];
  return podSpan_[podOf_[r]];
}

Layout Layout::servers(std::uint32_t servers, std::uint32_t perServer) {
  return pods(1, servers, perServer);
}

Layout Layout::pods(std::uint32_t pods, std::uint32_t serversPerPod, std::uint32_t perServer) {
  const std::uint32_t n = pods * serversPerPod * perServer;
  Groups servers;
  for (std::uint32_t s = 0; s < pods * serversPerPod; ++s) {
    std::vector<std::uint32_t> m;
    for (std::uint32_t i = 0; i < perServer; ++i) m.push_back(s * perServer + i);
    servers.push_back(std::move(m));
  }
  Groups l1, l2;
  std::vector<std::vector<std::uint32_t>> podSets(pods);
  for (std::uint32_t s = 0; s < pods * serversPerPod; ++s) podSets[s / serversPerPod].push_back(s);
  sameIndex(servers, podSets, l1);
  // level2: same (server within pod, local index) across pods.
  std::vector<std::vector<std::uint32_t>> across(serversPerPod);
  for (std::uint32_t s = 0; s < pods * serversPerPod; ++s) across[s % serversPerPod].push_back(s);
  sameIndex(servers, across, l2);
  if (pods == 1) l2 = singletons(n);
  return Layout(n, {servers, l1, l2});
}

Layout Layout::uneven(const std::vector<std::uint32_t>& perServer, bool interleaved) {
  std::uint32_t n = 0;
  for (std::uint32_t c : perServer) n += c;
  Groups servers(perServer.size());
  if (!interleaved) {
    std::uint32_t r = 0;
    for (std::size_t s = 0; s < perServer.size(); ++s)
      for (std::uint32_t i = 0; i < perServer[s]; ++i) servers[s].push_back(r++);
  } else {
    std::uint32_t r = 0;
    for (std::uint32_t round = 0; r < n; ++round)
      for (std::size_t s = 0; s < perServer.size(); ++s)
        if (round < perServer[s]) servers[s].push_back(r++);
  }
  Groups l1;
  std::vector<std::uint32_t> all(perServer.size());
  for (std::uint32_t s = 0; s < all.size(); ++s) all[s] = s;
  sameIndex(servers, {all}, l1);
  return Layout(n, {servers, l1, singletons(n)});
}

const std::vector<std::uint32_t>& Layout::groupOf(int level, std::uint32_t r) const {
  const auto l = static_cast<std::size_t>(level);
  return groups_[l][groupIndex_[l][r]];
}

std::uint32_t Layout::indexIn(int level, std::uint32_t r) const {
  return position_[static_cast<std::size_t>(level)][r];
}

CommShape Layout::shape() const {
  CommShape s;
  s.ranks = ranks_;
  s.symmetric = symmetric_;
  s.blockOrder = blockOrder_;
  for (int l = 0; l < kNumLevels; ++l) {
    const Groups& gs = groups_[static_cast<std::size_t>(l)];
    const std::uint32_t size = static_cast<std::uint32_t>(gs.front().size());
    if (size > 1) s.levels.push_back({l, size});
  }
  if (!symmetric_) {
    // Unequal groups cannot be composed level by level: one flat group over the slowest link.
    int top = 0;
    for (int l = 0; l < kNumLevels; ++l)
      for (const auto& g : groups_[static_cast<std::size_t>(l)])
        if (g.size() > 1) top = l;
    s.levels = {{top, ranks_}};
    if (ranks_ == 1) s.levels.clear();
    if (top == 1)
      for (const auto& server : groups_[0])
        s.serverSizes.push_back(static_cast<std::uint32_t>(server.size()));
  }
  return s;
}

std::string Layout::describe() const {
  std::string out = fmt::format("{} servers (", groups_[0].size());
  for (std::size_t s = 0; s < groups_[0].size(); ++s)
    out += fmt::format("{}{}", s ? "+" : "", groups_[0][s].size());
  out += " ranks)";
  if (!blockOrder_) out += ", interleaved ranks";
  return out;
}

}  // namespace hccl::algo
