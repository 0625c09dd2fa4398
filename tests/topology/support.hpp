// Shared test helpers: fixture paths, error checks, and a brute-force reference for hierarchies.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "topology/error.hpp"
#include "topology/hierarchy.hpp"

namespace topo_test {

inline std::string fixture(const std::string& name) {
  const char* dir = std::getenv("TOPOLOGY_FIXTURES");
  return std::string(dir ? dir : "tests/topology") + "/" + name;
}

// Runs f, expects a TopologyError whose message contains every one of `parts` (and `also`).
inline void expectError(const std::function<void()>& f, const std::vector<std::string>& parts,
                        const std::string& also = "") {
  try {
    f();
  } catch (const hccl::topo::TopologyError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(also), std::string::npos) << "missing \"" << also << "\" in: " << msg;
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "missing \"" << p << "\" in: " << msg;
    return;
  }
  ADD_FAILURE() << "expected a TopologyError mentioning " << ::testing::PrintToString(parts);
}

// The hierarchy a list of labels should give, computed the slow and obvious way from the
// definitions (lowest-rank ordering, local index = same-server ranks below, groups by filtering
// every rank), independently of Hierarchy's own bookkeeping.
struct Reference {
  std::vector<std::uint32_t> pod, server, serverInPod, local;
  std::uint32_t numServers = 0, numPods = 0;

  explicit Reference(const std::vector<hccl::topo::RankLabel>& labels) {
    const auto n = static_cast<std::uint32_t>(labels.size());
    auto lowest = [&](auto same) {
      std::uint32_t r = 0;
      while (!same(r)) ++r;
      return r;
    };
    // Pods are numbered by their lowest rank; servers by (pod, lowest rank).
    std::vector<std::uint32_t> podLowest(n), serverLowest(n);
    for (std::uint32_t r = 0; r < n; ++r) {
      podLowest[r] =
          lowest([&](std::uint32_t q) { return labels[q].supernode == labels[r].supernode; });
      serverLowest[r] =
          lowest([&](std::uint32_t q) { return labels[q].server == labels[r].server; });
    }
    pod.resize(n);
    server.resize(n);
    serverInPod.resize(n);
    local.resize(n);
    std::vector<std::uint32_t> pods(podLowest);
    std::sort(pods.begin(), pods.end());
    pods.erase(std::unique(pods.begin(), pods.end()), pods.end());
    numPods = static_cast<std::uint32_t>(pods.size());
    for (std::uint32_t r = 0; r < n; ++r)
      pod[r] = static_cast<std::uint32_t>(std::find(pods.begin(), pods.end(), podLowest[r]) -
                                          pods.begin());
    // Servers sorted by (pod, lowest rank).
    std::vector<std::pair<std::uint32_t, std::uint32_t>> keys;
    for (std::uint32_t r = 0; r < n; ++r) keys.push_back({pod[r], serverLowest[r]});
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    numServers = static_cast<std::uint32_t>(keys.size());
    for (std::uint32_t r = 0; r < n; ++r) {
      const std::pair<std::uint32_t, std::uint32_t> key{pod[r], serverLowest[r]};
      server[r] =
          static_cast<std::uint32_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
      serverInPod[r] =
          static_cast<std::uint32_t>(std::count_if(keys.begin(), keys.end(), [&](const auto& k) {
            return k.first == pod[r] && k.second < serverLowest[r];
          }));
      local[r] = 0;
      for (std::uint32_t q = 0; q < r; ++q) local[r] += labels[q].server == labels[r].server;
    }
  }

  // Members sorted by server index (level1), pod index (level2), rank (level0).
  std::vector<std::uint32_t> group(int level, std::uint32_t r) const {
    std::vector<std::uint32_t> out;
    const auto n = static_cast<std::uint32_t>(pod.size());
    for (std::uint32_t q = 0; q < n; ++q) {
      const bool in = level == 0   ? server[q] == server[r]
                      : level == 1 ? pod[q] == pod[r] && local[q] == local[r]
                                   : serverInPod[q] == serverInPod[r] && local[q] == local[r];
      if (in) out.push_back(q);
    }
    std::sort(out.begin(), out.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (level == 1) return server[a] < server[b];
      if (level == 2) return pod[a] < pod[b];
      return a < b;
    });
    return out;
  }
};

// Checks every per-rank query of h against the reference built from the same labels.
inline void expectMatchesReference(const hccl::topo::Hierarchy& h,
                                   const std::vector<hccl::topo::RankLabel>& labels) {
  const Reference ref(labels);
  ASSERT_EQ(h.size(), labels.size());
  EXPECT_EQ(h.numServers(), ref.numServers);
  EXPECT_EQ(h.numSupernodes(), ref.numPods);
  for (std::uint32_t r = 0; r < h.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(h.supernodeOf(r), ref.pod[r]);
    EXPECT_EQ(h.serverOf(r), ref.server[r]);
    EXPECT_EQ(h.place(r).serverInSupernode, ref.serverInPod[r]);
    EXPECT_EQ(h.localIndexOf(r), ref.local[r]);
    EXPECT_EQ(h.serverName(h.serverOf(r)), labels[r].server);
    EXPECT_EQ(h.supernodeName(h.supernodeOf(r)), labels[r].supernode);
    for (int level = 0; level < 3; ++level) {
      EXPECT_EQ(h.group(level, r), ref.group(level, r)) << "level " << level;
      EXPECT_EQ(h.groupSize(level, r), ref.group(level, r).size());
    }
  }
  // groups(level) is a partition of the ranks whose parts are exactly the per-rank groups.
  for (int level = 0; level < 3; ++level) {
    std::vector<int> seen(h.size(), 0);
    for (const auto& g : h.groups(level)) {
      ASSERT_FALSE(g.empty());
      EXPECT_EQ(g, h.group(level, g.front())) << "level " << level;
      for (std::uint32_t r : g) ++seen[r];
    }
    for (std::uint32_t r = 0; r < h.size(); ++r)
      EXPECT_EQ(seen[r], 1) << "level " << level << " rank " << r;
  }
}

}  // namespace topo_test
