#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "support.hpp"
#include "topology/emulation.hpp"
#include "topology/hierarchy.hpp"

using hccl::topo::EmulationSpec;
using hccl::topo::formatRankList;
using hccl::topo::Hierarchy;
using hccl::topo::HierarchyShape;
using hccl::topo::parseEmulationSpec;
using hccl::topo::RankLabel;
using hccl::topo::RankOrder;
using topo_test::expectError;
using topo_test::expectMatchesReference;

using Ranks = std::vector<std::uint32_t>;

namespace {

// Labels of an emulation spec, computed independently of serverOfRank for block order: rank r
// belongs to the server whose prefix-sum range holds r.
std::vector<RankLabel> blockLabels(const std::vector<std::vector<std::uint32_t>>& pods) {
  std::vector<RankLabel> labels;
  std::uint32_t server = 0;
  for (std::uint32_t p = 0; p < pods.size(); ++p)
    for (std::uint32_t size : pods[p]) {
      for (std::uint32_t k = 0; k < size; ++k)
        labels.push_back({"node" + std::to_string(server), "pod" + std::to_string(p)});
      ++server;
    }
  return labels;
}

Hierarchy fromSpec(const char* s) {
  return Hierarchy::fromSpec(parseEmulationSpec(s));
}

}  // namespace

TEST(Hierarchy, OneServerIsOneLevel) {
  const Hierarchy h = fromSpec("4");
  EXPECT_EQ(h.levels(), 1u);
  EXPECT_TRUE(h.symmetric());
  EXPECT_EQ(h.level0Group(2), (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(h.level1Group(2), (Ranks{2}));
  EXPECT_EQ(h.level2Group(2), (Ranks{2}));
  EXPECT_EQ(h.describe(), "1 server x 4 ranks");
  expectMatchesReference(h, blockLabels({{4}}));
}

TEST(Hierarchy, SingleRank) {
  const Hierarchy h = fromSpec("1");
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(h.levels(), 1u);
  EXPECT_EQ(h.describe(), "1 server x 1 rank");
  const HierarchyShape s = h.shape(0);
  for (const auto& l : s.level) {
    EXPECT_EQ(l.groupSize, 1u);
    EXPECT_TRUE(l.uniform);
  }
}

TEST(Hierarchy, TwoLevelsSymmetric) {
  const Hierarchy h = fromSpec("3x4");
  EXPECT_EQ(h.levels(), 2u);
  EXPECT_TRUE(h.symmetric());
  EXPECT_EQ(h.describe(), "3 servers x 4 ranks");
  // Same-index groups: local index i of every server.
  EXPECT_EQ(h.level1Group(5), (Ranks{1, 5, 9}));
  EXPECT_EQ(h.level2Group(5), (Ranks{5}));
  expectMatchesReference(h, blockLabels({{4, 4, 4}}));
  const HierarchyShape s = h.shape(5);
  EXPECT_EQ(s.levels, 2u);
  EXPECT_EQ(s.level[0].groupSize, 4u);
  EXPECT_EQ(s.level[0].groups, 3u);
  EXPECT_EQ(s.level[1].groupSize, 3u);
  EXPECT_EQ(s.level[1].groups, 4u);
  EXPECT_EQ(s.level[2].groupSize, 1u);
  EXPECT_EQ(s.level[2].groups, 12u);
  EXPECT_TRUE(s.level[0].uniform && s.level[1].uniform && s.level[2].uniform);
}

TEST(Hierarchy, ThreeLevelsSymmetric) {
  const Hierarchy h = fromSpec("2x2x4");
  EXPECT_EQ(h.levels(), 3u);
  EXPECT_TRUE(h.symmetric());
  EXPECT_EQ(h.describe(), "2 supernodes x 2 servers x 4 ranks");
  EXPECT_EQ(h.level0Group(13), (Ranks{12, 13, 14, 15}));
  EXPECT_EQ(h.level1Group(13), (Ranks{9, 13}));
  EXPECT_EQ(h.level2Group(13), (Ranks{5, 13}));
  EXPECT_EQ(h.supernodeServers(1).size(), 2u);
  expectMatchesReference(h, blockLabels({{4, 4}, {4, 4}}));
}

TEST(Hierarchy, SupernodesOfOneServerStillUseLevelTwo) {
  const Hierarchy h = fromSpec("3x1x2");
  EXPECT_EQ(h.levels(), 3u);
  EXPECT_EQ(h.level1Group(3), (Ranks{3}));
  EXPECT_EQ(h.level2Group(3), (Ranks{1, 3, 5}));
  expectMatchesReference(h, blockLabels({{2}, {2}, {2}}));
}

TEST(Hierarchy, AsymmetricThreePlusFive) {
  const Hierarchy h = fromSpec("3+5");
  EXPECT_FALSE(h.symmetric());
  EXPECT_EQ(h.levels(), 2u);
  EXPECT_EQ(h.describe(), "servers of 3+5 ranks");
  EXPECT_EQ(h.level1Group(1), (Ranks{1, 4}));
  EXPECT_EQ(h.level1Group(7), (Ranks{7}));  // local 4 exists only on the larger server
  expectMatchesReference(h, blockLabels({{3, 5}}));
  const HierarchyShape s = h.shape(7);
  EXPECT_FALSE(s.symmetric);
  EXPECT_FALSE(s.level[0].uniform);
  EXPECT_EQ(s.level[0].minGroupSize, 3u);
  EXPECT_EQ(s.level[0].maxGroupSize, 5u);
  EXPECT_EQ(s.level[1].groupSize, 1u);
  EXPECT_EQ(s.level[1].groups, 5u);
  EXPECT_FALSE(s.level[1].uniform);
}

TEST(Hierarchy, AsymmetricOneFourTwo) {
  const Hierarchy h = fromSpec("1+4+2");
  EXPECT_FALSE(h.symmetric());
  EXPECT_EQ(h.describe(), "servers of 1+4+2 ranks");
  EXPECT_EQ(h.level1Group(0), (Ranks{0, 1, 5}));
  EXPECT_EQ(h.level1Group(6), (Ranks{2, 6}));
  EXPECT_EQ(h.level1Group(4), (Ranks{4}));
  expectMatchesReference(h, blockLabels({{1, 4, 2}}));
}

TEST(Hierarchy, SupernodesOfUnequalServers) {
  const Hierarchy h = fromSpec("(4+4),(4)");
  EXPECT_FALSE(h.symmetric());  // same ranks per server, but 2 servers against 1
  EXPECT_EQ(h.levels(), 3u);
  EXPECT_EQ(h.describe(), "supernodes of (4+4),(4) ranks");
  EXPECT_EQ(h.level2Group(1), (Ranks{1, 9}));
  EXPECT_EQ(h.level2Group(5), (Ranks{5}));
  expectMatchesReference(h, blockLabels({{4, 4}, {4}}));
}

TEST(Hierarchy, RoundRobinRanksInterleaveServers) {
  const Hierarchy h = fromSpec("rr:3+5");
  // By hand: servers take turns, server 0 fills after three rounds.
  EXPECT_EQ(Ranks(h.serverMembers(0).begin(), h.serverMembers(0).end()), (Ranks{0, 2, 4}));
  EXPECT_EQ(Ranks(h.serverMembers(1).begin(), h.serverMembers(1).end()), (Ranks{1, 3, 5, 6, 7}));
  EXPECT_EQ(h.level1Group(4), (Ranks{4, 5}));
  EXPECT_EQ(h.level1Group(6), (Ranks{6}));
  EXPECT_EQ(h.rankOrder(), RankOrder::RoundRobin);
  EXPECT_EQ(h.describe(), "servers of 3+5 ranks, round-robin ranks");
  std::vector<RankLabel> labels;
  for (std::uint32_t s : {0u, 1u, 0u, 1u, 0u, 1u, 1u, 1u})
    labels.push_back({"node" + std::to_string(s), "pod0"});
  expectMatchesReference(h, labels);
}

TEST(Hierarchy, RoundRobinAcrossSupernodes) {
  const Hierarchy h = fromSpec("rr:2x2x2");
  // rank r is on server r % 4; servers 0,1 in pod 0 and 2,3 in pod 1.
  std::vector<RankLabel> labels;
  for (std::uint32_t r = 0; r < 8; ++r)
    labels.push_back({"node" + std::to_string(r % 4), "pod" + std::to_string((r % 4) / 2)});
  expectMatchesReference(h, labels);
  EXPECT_EQ(h.level1Group(0), (Ranks{0, 1}));
  EXPECT_EQ(h.level2Group(0), (Ranks{0, 2}));
  EXPECT_EQ(h.describe(), "2 supernodes x 2 servers x 2 ranks, round-robin ranks");
}

TEST(Hierarchy, ArbitraryRankOrdersMatchTheReference) {
  // Random layouts (1..3 levels, symmetric or not) with ranks shuffled over servers: MPI rank
  // order is arbitrary, so nothing may assume contiguous servers.
  std::mt19937 gen(12345);
  auto rng = [&] { return static_cast<std::uint32_t>(gen()); };
  for (int trial = 0; trial < 200; ++trial) {
    const std::uint32_t pods = 1 + rng() % 3;
    std::vector<std::uint32_t> serverPod;
    std::vector<std::uint32_t> serverSize;
    for (std::uint32_t p = 0; p < pods; ++p) {
      const std::uint32_t servers = 1 + rng() % 4;
      for (std::uint32_t s = 0; s < servers; ++s) {
        serverPod.push_back(p);
        serverSize.push_back(1 + rng() % 5);
      }
    }
    std::vector<RankLabel> labels;
    for (std::uint32_t s = 0; s < serverSize.size(); ++s)
      for (std::uint32_t k = 0; k < serverSize[s]; ++k)
        labels.push_back({"host-" + std::to_string(s), "sp-" + std::to_string(serverPod[s])});
    std::shuffle(labels.begin(), labels.end(), gen);
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Hierarchy h = Hierarchy::fromLabels(labels);
    expectMatchesReference(h, labels);
    // symmetric() and levels() from their definitions.
    const bool sameSize = std::all_of(serverSize.begin(), serverSize.end(),
                                      [&](std::uint32_t s) { return s == serverSize[0]; });
    std::vector<std::uint32_t> perPod(pods, 0);
    for (std::uint32_t p : serverPod) ++perPod[p];
    const bool samePods =
        std::all_of(perPod.begin(), perPod.end(), [&](std::uint32_t c) { return c == perPod[0]; });
    EXPECT_EQ(h.symmetric(), sameSize && samePods);
    EXPECT_EQ(h.levels(), serverSize.size() == 1 ? 1u : pods == 1 ? 2u : 3u);
    // A layout description that names an order must reproduce the placement.
    if (const auto spec = h.toSpec()) {
      EXPECT_TRUE(Hierarchy::fromSpec(*spec).sameLayout(h));
    }
  }
}

TEST(Hierarchy, IrregularOrderIsReported) {
  std::vector<RankLabel> labels;
  for (const char* s : {"a", "b", "b", "a"}) labels.push_back({s, "0"});
  const Hierarchy h = Hierarchy::fromLabels(labels);
  EXPECT_FALSE(h.rankOrder().has_value());
  EXPECT_FALSE(h.toSpec().has_value());
  EXPECT_EQ(h.describe(), "2 servers x 2 ranks, irregular rank order");
  EXPECT_EQ(Ranks(h.serverMembers(0).begin(), h.serverMembers(0).end()), (Ranks{0, 3}));
  EXPECT_EQ(h.level1Group(3), (Ranks{3, 2}));  // local 1 of server a (rank 3), then of server b
}

TEST(Hierarchy, SupernodesAreOrderedByLowestRankAndServersAreGroupedByThem) {
  // Pod "y" owns rank 0, so it is supernode 0 even though "x" sorts first.
  std::vector<RankLabel> labels = {{"s1", "y"}, {"s2", "x"}, {"s3", "y"}, {"s2", "x"}};
  const Hierarchy h = Hierarchy::fromLabels(labels);
  EXPECT_EQ(h.supernodeName(0), "y");
  EXPECT_EQ(h.serverName(0), "s1");
  EXPECT_EQ(h.serverName(1), "s3");
  EXPECT_EQ(h.serverName(2), "s2");
  expectMatchesReference(h, labels);
}

TEST(Hierarchy, ServerInTwoSupernodesIsRejected) {
  std::vector<RankLabel> labels = {{"s1", "p0"}, {"s1", "p1"}};
  expectError([&] { Hierarchy::fromLabels(labels); },
              {"server \"s1\"", "\"p0\" by rank 0", "\"p1\" by rank 1", "exactly one supernode"});
  expectError([] { Hierarchy::fromLabels({}); }, {"at least one rank"});
}

TEST(Hierarchy, SubsetOfWorldRanks) {
  const Hierarchy world = fromSpec("2x2x4");
  // A communicator of world ranks 13, 1, 5, 9, 12 (in that communicator order).
  const Ranks worldRanks = {13, 1, 5, 9, 12};
  const Hierarchy sub = world.subset(worldRanks);
  std::vector<RankLabel> labels;
  for (std::uint32_t w : worldRanks)
    labels.push_back(
        {world.serverName(world.serverOf(w)), world.supernodeName(world.supernodeOf(w))});
  expectMatchesReference(sub, labels);
  EXPECT_EQ(sub.size(), 5u);
  EXPECT_EQ(sub.numServers(), 4u);
  EXPECT_EQ(sub.level0Group(0), (Ranks{0, 4}));  // world 13 and 12 share node3
  expectError([&] { world.subset(Ranks{1, 16}); }, {"rank 16", "0..15"});
  expectError([&] { world.subset(Ranks{3, 3}); }, {"both map to rank 3"});
}

TEST(Hierarchy, LevelOutOfRange) {
  const Hierarchy h = fromSpec("2x2");
  expectError([&] { h.group(3, 0); }, {"level 3", "0, 1, 2"});
  expectError([&] { h.groups(-1); }, {"level -1"});
}

TEST(Hierarchy, FormatRankList) {
  EXPECT_EQ(formatRankList(Ranks{0, 1, 2, 3, 4, 5, 6, 7}), "0-7");
  EXPECT_EQ(formatRankList(Ranks{0, 8}), "0,8");
  EXPECT_EQ(formatRankList(Ranks{0, 1, 2, 5, 9, 10, 11}), "0-2,5,9-11");
  EXPECT_EQ(formatRankList(Ranks{3, 4}), "3,4");
  EXPECT_EQ(formatRankList(Ranks{}), "");
}
