// Hierarchical schedules: every composition verified symbolically over many layouts, and their
// per-level metrics equal the sum of the phase formulas.
#include "algorithms/hierarchical.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>

#include "algorithms/metrics.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/verifier.hpp"
#include "algorithms/write_contract.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

constexpr std::array<Algorithm, 3> kLevel0 = {Algorithm::Ring, Algorithm::Mesh, Algorithm::Rhd};
constexpr std::array<Algorithm, 4> kOuter = {Algorithm::Ring, Algorithm::Rhd, Algorithm::NHR,
                                             Algorithm::NB};
constexpr std::size_t kCombos = kLevel0.size() * kOuter.size();

LevelAlgorithms combo(std::size_t k) {
  const Algorithm outer = kOuter[(k / 3) % kOuter.size()];
  return {kLevel0[k % 3], outer, outer == Algorithm::Ring ? Algorithm::Rhd : Algorithm::Ring};
}

using test::composeAll;

void expectClean(const Layout& lay, const LevelAlgorithms& algs, const Problem& pb) {
  const bool order = pb.coll != Collective::AllGather && composedRankOrdered(lay, algs, pb.coll);
  test::expectCleanComposition(lay, algs, pb, {.requireRankOrder = order});
}

// `algs` made able to compose a Reduce on `lay`: the inner levels need a ReduceScatter and a
// Gather (H-D_R has no Gather: fullmesh instead), the outermost a Reduce (every outer algorithm
// has one; NHR's and NB's are their ReduceScatter then Gather).
LevelAlgorithms forReduce(const Layout& lay, LevelAlgorithms algs) {
  std::vector<LevelGroup> levels = lay.shape().levels;
  if (levels.empty()) levels.push_back({0, 1});  // one rank: level0's algorithm runs it
  for (std::size_t i = 0; i < levels.size(); ++i) {
    Algorithm& a = algs[static_cast<std::size_t>(levels[i].level)];
    if (i + 1 == levels.size() && !findGenerator(a, Collective::Reduce))
      a = a == Algorithm::NHR ? Algorithm::Ring : Algorithm::Rhd;
    else if (i + 1 < levels.size() && !findGenerator(a, Collective::Gather))
      a = Algorithm::Mesh;
  }
  return algs;
}

void sweepLayout(const Layout& lay, const LevelAlgorithms& algs, bool bigCount) {
  const std::uint64_t p = lay.ranks();
  std::vector<std::uint64_t> counts{0, 1, p - 1, p, p + 1, 1000};
  if (bigCount) counts.push_back(100003);
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
    for (std::uint64_t n : counts)
      for (bool inPlace : {false, true}) {
        expectClean(lay, algs, test::problemFor(c, lay.ranks(), n, inPlace));
        if (::testing::Test::HasFailure()) return;
      }
  // Reduce: the first, a middle and the last rank as root (every root: ReduceOverLevels).
  const LevelAlgorithms red = forReduce(lay, algs);
  for (std::uint32_t root : {std::uint32_t{0}, lay.ranks() / 2, lay.ranks() - 1})
    for (std::uint64_t n : counts)
      for (bool inPlace : {false, true}) {
        expectClean(lay, red, test::problemFor(Collective::Reduce, lay.ranks(), n, inPlace, root));
        if (::testing::Test::HasFailure()) return;
      }
}

// Servers 1..16 x ranks per server 1..8, every pair; the algorithms per level rotate through all
// level0 x level1 combinations. Split in four by server count so meson can run them side by side.
class ServersByRanks : public ::testing::TestWithParam<int> {};

TEST_P(ServersByRanks, EveryPairVerifies) {
  for (std::uint32_t servers = 1; servers <= 16; ++servers) {
    if (servers % 4 != static_cast<std::uint32_t>(GetParam())) continue;
    for (std::uint32_t perServer = 1; perServer <= 8; ++perServer) {
      sweepLayout(Layout::servers(servers, perServer), combo(servers * 8 + perServer),
                  servers * perServer <= 16);
      if (HasFailure()) return;
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Quarter, ServersByRanks, ::testing::Values(0, 1, 2, 3));

TEST(Hierarchical, EveryAlgorithmCombination) {
  for (std::size_t k = 0; k < kCombos; ++k)
    for (const Layout& lay :
         {Layout::servers(3, 4), Layout::servers(4, 3), Layout::pods(2, 2, 2)}) {
      sweepLayout(lay, combo(k), false);
      if (HasFailure()) return;
    }
}

TEST(Hierarchical, ThreeLevels) {
  for (std::uint32_t pods = 2; pods <= 3; ++pods)
    for (std::uint32_t servers = 1; servers <= 3; ++servers)
      for (std::uint32_t perServer = 1; perServer <= 4; ++perServer) {
        sweepLayout(Layout::pods(pods, servers, perServer), combo(pods + servers + perServer),
                    false);
        if (HasFailure()) return;
      }
}

TEST(Hierarchical, InterleavedRankOrder) {
  for (const auto& sizes :
       std::vector<std::vector<std::uint32_t>>{{3, 3}, {2, 2, 2}, {4, 4, 4, 4}}) {
    const Layout lay = Layout::uneven(sizes, true);
    EXPECT_FALSE(lay.blockOrder());
    for (std::size_t k = 0; k < kCombos; ++k) sweepLayout(lay, combo(k), false);
  }
}

// Scatter (outer level first) and Gather (its reverse) over levels: every root, in and out of
// place, equal and uneven blocks, with algorithms that have both at every level.
TEST(Hierarchical, ScatterAndGatherOverLevels) {
  const std::vector<LevelAlgorithms> algSets = {
      {Algorithm::Ring, Algorithm::NHR, Algorithm::NB},
      {Algorithm::Mesh, Algorithm::Ring, Algorithm::NHR},
      {Algorithm::NB, Algorithm::NB, Algorithm::Ring},
      {Algorithm::Mesh, Algorithm::Mesh, Algorithm::Mesh}};
  std::vector<Layout> layouts;
  for (std::uint32_t servers = 1; servers <= 5; ++servers)
    for (std::uint32_t perServer = 1; perServer <= 4; ++perServer)
      layouts.push_back(Layout::servers(servers, perServer));
  layouts.push_back(Layout::pods(2, 2, 2));
  layouts.push_back(Layout::pods(2, 3, 2));
  layouts.push_back(Layout::pods(3, 2, 1));
  layouts.push_back(Layout::uneven({3, 3}, true));  // interleaved: runs flat
  std::mt19937 rng(5);
  std::size_t k = 0;
  for (const Layout& lay : layouts) {
    const std::uint32_t p = lay.ranks();
    for (Collective c : {Collective::Scatter, Collective::Gather}) {
      for (std::uint32_t root = 0; root < p; ++root, ++k) {
        const LevelAlgorithms& algs = algSets[k % algSets.size()];
        for (bool inPlace : {false, true}) {
          expectClean(lay, algs, test::problemFor(c, p, root % 3 == 0 ? 0 : 5, inPlace, root));
          Problem v = test::problemFor(c, p, 0, inPlace, root);
          std::vector<std::uint64_t> counts(p);
          for (auto& n : counts) n = rng() % 3 == 0 ? 0 : rng() % 9;
          v.blocks = Blocks::of(counts);
          expectClean(lay, algs, v);
          if (HasFailure()) return;
        }
      }
    }
  }
}

// Broadcast on two levels: every root, algorithms with Broadcast and AllGather at level0.
TEST(Hierarchical, BroadcastOnTwoLevels) {
  const std::vector<LevelAlgorithms> algSets = {{Algorithm::Ring, Algorithm::NHR, Algorithm::Ring},
                                                {Algorithm::Mesh, Algorithm::Rhd, Algorithm::Ring},
                                                {Algorithm::NB, Algorithm::Ring, Algorithm::Ring},
                                                {Algorithm::Mesh, Algorithm::NB, Algorithm::Ring}};
  std::size_t k = 0;
  for (std::uint32_t servers = 2; servers <= 5; ++servers)
    for (std::uint32_t perServer = 2; perServer <= 4; ++perServer) {
      const Layout lay = Layout::servers(servers, perServer);
      for (std::uint32_t root = 0; root < lay.ranks(); ++root, ++k)
        for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{perServer + 1},
                                std::uint64_t{1000}}) {
          expectClean(lay, algSets[k % algSets.size()], Problem::broadcast(lay.ranks(), n, root));
          if (HasFailure()) return;
        }
    }
  // Each piece crosses the server links once: the level1 bytes are n per receiving server.
  const Layout lay = Layout::servers(3, 4);
  const Schedule s = composeAll(lay, algSets[1], Problem::broadcast(12, 1200, 5));
  std::uint64_t level1 = 0;
  for (const RankSchedule& rs : s.ranks)
    for (const Step& st : rs.steps)
      for (const Transfer& t : st.xfers)
        if (t.level == 1 && t.dir == Dir::Recv) level1 += t.slice.count;
  EXPECT_EQ(level1, 2u * 1200);
}

// Reduce over levels (hier_reduce.cpp): every root, in and out of place, counts that leave
// uneven and empty slices, every inner algorithm with a Gather under both outer ones with a
// Reduce; block-order and interleaved servers, two and three levels.
TEST(Hierarchical, ReduceOverLevels) {
  const std::vector<LevelAlgorithms> algSets = {{Algorithm::Ring, Algorithm::Ring, Algorithm::Rhd},
                                                {Algorithm::Mesh, Algorithm::Rhd, Algorithm::Ring},
                                                {Algorithm::NHR, Algorithm::Ring, Algorithm::Rhd},
                                                {Algorithm::NB, Algorithm::Rhd, Algorithm::Ring},
                                                {Algorithm::Mesh, Algorithm::NB, Algorithm::Rhd}};
  std::vector<Layout> layouts;
  for (std::uint32_t servers = 1; servers <= 5; ++servers)
    for (std::uint32_t perServer = 1; perServer <= 4; ++perServer)
      layouts.push_back(Layout::servers(servers, perServer));
  layouts.push_back(Layout::pods(2, 2, 2));
  layouts.push_back(Layout::pods(2, 3, 2));
  layouts.push_back(Layout::pods(3, 1, 2));
  layouts.push_back(Layout::uneven({3, 3}, true));
  layouts.push_back(Layout::uneven({2, 2, 2}, true));
  std::size_t k = 0;
  for (const Layout& lay : layouts) {
    const std::uint64_t g = lay.shape().levels.empty() ? 1 : lay.shape().levels.front().size;
    for (std::uint32_t root = 0; root < lay.ranks(); ++root, ++k) {
      const LevelAlgorithms algs = forReduce(lay, algSets[k % algSets.size()]);
      for (std::uint64_t n :
           {std::uint64_t{0}, std::uint64_t{1}, g - 1, g + 1, 7 * g + 3, std::uint64_t{1000}})
        for (bool inPlace : {false, true}) {
          expectClean(lay, algs, Problem::reduce(lay.ranks(), n, root, inPlace));
          if (HasFailure()) return;
        }
    }
  }
}

// Reduce's rank order: consecutive servers under rank-ordered levels keep it; ring's
// ReduceScatter, or interleaved servers, do not.
TEST(Hierarchical, ReduceRankOrder) {
  const LevelAlgorithms ordered{Algorithm::Mesh, Algorithm::Rhd, Algorithm::Rhd};
  const LevelAlgorithms ring{Algorithm::Ring, Algorithm::Rhd, Algorithm::Rhd};
  EXPECT_TRUE(composedRankOrdered(Layout::servers(3, 4), ordered, Collective::Reduce));
  // H-D_R's ReduceScatter (an inner phase on three levels) pairs ranks p/2 apart.
  EXPECT_FALSE(composedRankOrdered(Layout::pods(2, 2, 2), ordered, Collective::Reduce));
  EXPECT_TRUE(composedRankOrdered(Layout::pods(2, 2, 2),
                                  {Algorithm::Mesh, Algorithm::Mesh, Algorithm::Rhd},
                                  Collective::Reduce));
  EXPECT_FALSE(composedRankOrdered(Layout::servers(3, 4), ring, Collective::Reduce));
  EXPECT_FALSE(composedRankOrdered(Layout::uneven({3, 3}, true), ordered, Collective::Reduce));
  for (std::uint32_t root : {0u, 5u, 11u})
    EXPECT_TRUE(verify(composeAll(Layout::servers(3, 4), ordered, Problem::reduce(12, 50, root)),
                       {.requireRankOrder = true})
                    .empty());
}

// Each slice crosses the server links once and only towards the root's server; the closing
// Gather runs on the root's server alone.
TEST(Hierarchical, ReducePhasesAndVolumes) {
  const Layout lay = Layout::servers(3, 4);
  const LevelAlgorithms algs{Algorithm::Mesh, Algorithm::Ring, Algorithm::Ring};
  const Schedule s = composeAll(lay, algs, Problem::reduce(12, 1200, 6));
  std::uint64_t level1 = 0;
  for (std::uint32_t r = 0; r < 12; ++r) {
    std::uint64_t gathered = 0;
    for (const Step& st : s.ranks[r].steps)
      for (const Transfer& t : st.xfers) {
        if (t.level == 1 && t.dir == Dir::Recv) level1 += t.slice.count;
        if (t.level == 0 && t.dir == Dir::Recv && r == 6) gathered += t.slice.count;
      }
    if (r == 6) {
      EXPECT_EQ(gathered, 3u * 300 + 3u * 300);  // its RS piece from 3 peers, their 3 slices
    }
  }
  // A ring Reduce over three servers: two hops for every 300-element slice.
  EXPECT_EQ(level1, 2u * 1200);
}

// AllToAll over levels (hier_alltoall.cpp): in and out of place, block-order and interleaved
// servers, two and three levels, both level algorithms that have it at any level; unequal
// servers run flat.
TEST(Hierarchical, AllToAllOverLevels) {
  const std::vector<LevelAlgorithms> algSets = {
      {Algorithm::Mesh, Algorithm::Pairwise, Algorithm::Pairwise},
      {Algorithm::Pairwise, Algorithm::Mesh, Algorithm::Mesh},
      {Algorithm::Mesh, Algorithm::Mesh, Algorithm::Pairwise},
      {Algorithm::Pairwise, Algorithm::Pairwise, Algorithm::Mesh}};
  std::vector<Layout> layouts;
  for (std::uint32_t servers = 1; servers <= 5; ++servers)
    for (std::uint32_t perServer = 1; perServer <= 4; ++perServer)
      layouts.push_back(Layout::servers(servers, perServer));
  for (const auto& sizes :
       std::vector<std::vector<std::uint32_t>>{{3, 3}, {2, 2, 2}, {4, 4}, {3, 5}})
    layouts.push_back(Layout::uneven(sizes, true));
  for (const auto& [pods, servers, perServer] : std::vector<std::array<std::uint32_t, 3>>{
           {2, 2, 2}, {2, 3, 2}, {3, 2, 2}, {2, 2, 3}, {3, 3, 1}, {2, 1, 3}})
    layouts.push_back(Layout::pods(pods, servers, perServer));
  std::size_t k = 0;
  for (const Layout& lay : layouts)
    for (std::uint64_t n : {0u, 1u, 3u, 50u})
      for (bool inPlace : {false, true}) {
        expectClean(lay, algSets[k++ % algSets.size()], Problem::allToAll(lay.ranks(), n, inPlace));
        if (HasFailure()) return;
      }
}

// Between servers a rank sends one message of g*c to each other server's rank of its index.
TEST(Hierarchical, AllToAllAggregatesBetweenServers) {
  const Layout lay = Layout::servers(3, 4);
  const Schedule s = composeAll(lay, {Algorithm::Mesh, Algorithm::Pairwise, Algorithm::Ring},
                                Problem::allToAll(12, 10));
  for (std::uint32_t r = 0; r < 12; ++r) {
    std::uint64_t messages = 0, elements = 0;
    for (const Step& st : s.ranks[r].steps)
      for (const Transfer& t : st.xfers)
        if (t.level == 1 && t.dir == Dir::Send) {
          ++messages;
          elements += t.slice.count;
          EXPECT_EQ(t.peer % 4, r % 4) << "rank " << r;
        }
    EXPECT_EQ(messages, 2u) << "rank " << r;
    EXPECT_EQ(elements, 2u * 4 * 10) << "rank " << r;
  }
}

// Three levels: each byte crosses each level's links at most once, one message per group
// member at each level, and the bytes a rank sends at level l are what the blocks for the other
// members of its level-l group add up to (p/g_l blocks per member).
TEST(Hierarchical, AllToAllThreeLevelsCrossesEachLinkOnce) {
  const std::uint32_t P = 2, S = 3, g = 2, p = P * S * g;
  const std::uint64_t c = 5;
  const Layout lay = Layout::pods(P, S, g);
  const Schedule s = composeAll(lay, {Algorithm::Mesh, Algorithm::Pairwise, Algorithm::Pairwise},
                                Problem::allToAll(p, c));
  EXPECT_TRUE(verify(s).empty());
  const std::array<std::uint32_t, 3> size{g, S, P};
  for (std::uint32_t r = 0; r < p; ++r) {
    std::array<std::uint64_t, 3> messages{}, elements{};
    for (const Step& st : s.ranks[r].steps)
      for (const Transfer& t : st.xfers)
        if (t.dir == Dir::Send) {
          ++messages[t.level];
          elements[t.level] += t.slice.count;
        }
    for (std::size_t l = 0; l < 3; ++l) {
      EXPECT_EQ(messages[l], size[l] - 1) << "rank " << r << " level " << l;
      EXPECT_EQ(elements[l], (size[l] - 1) * (p / size[l]) * c) << "rank " << r << " level " << l;
    }
  }
  // Every block crosses a pod link once when its ends are in different pods: the pod links carry
  // (pods' ranks) x (ranks elsewhere) blocks in all, as flat.
  std::uint64_t podBytes = 0;
  for (const RankSchedule& rs : s.ranks)
    for (const Step& st : rs.steps)
      for (const Transfer& t : st.xfers)
        if (t.dir == Dir::Send && t.level == 2) podBytes += t.slice.count;
  EXPECT_EQ(podBytes, std::uint64_t{p} * (p - S * g) * c);
}

// Phases: the Scatter runs at every level, outer first; a carrier receives its unit once.
TEST(Hierarchical, ScatterPhasesAndVolumes) {
  const Layout lay = Layout::servers(4, 2);
  const LevelAlgorithms algs{Algorithm::Mesh, Algorithm::Ring, Algorithm::Ring};
  const Problem pb = Problem::scatter(8, 10, 3);
  const Schedule s = composeAll(lay, algs, pb);
  // Rank 3 (server 1, local 1) sends the other servers' units (20 elements each) to their
  // ranks of local index 1 over level1 links, then its server peer's block over level0.
  std::uint64_t level1 = 0, level0 = 0;
  for (const Step& st : s.ranks[3].steps)
    for (const Transfer& t : st.xfers) {
      EXPECT_EQ(t.dir, Dir::Send);
      (t.level == 1 ? level1 : level0) += t.slice.count;
    }
  EXPECT_EQ(level1, 60u);
  EXPECT_EQ(level0, 10u);
  // Rank 5 (server 2, local 1) receives its server's unit and hands its peer rank 4 its block.
  for (const Step& st : s.ranks[4].steps)
    for (const Transfer& t : st.xfers) {
      EXPECT_EQ(t.peer, 5u);
      EXPECT_EQ(t.level, 0);
    }
}

// The collectives not split by level run flat with the outermost level's algorithm.
TEST(Hierarchical, OtherCollectivesRunFlatOnTheOuterLevel) {
  for (const Layout& lay : {Layout::servers(3, 2), Layout::pods(2, 2, 2)}) {
    const std::uint32_t p = lay.ranks();
    const int top = lay.shape().levels.back().level;
    for (const GeneratorSpec& spec : generatorSpecs()) {
      const Collective c = spec.coll;
      if (c == Collective::AllReduce || c == Collective::ReduceScatter ||
          c == Collective::AllGather || c == Collective::Scatter || c == Collective::Gather ||
          c == Collective::Reduce)
        continue;
      // Over levels too (hier_broadcast.cpp, hier_barrier.cpp, hier_scan.cpp, hier_alltoall.cpp).
      if (c == Collective::Broadcast || c == Collective::Barrier || c == Collective::Scan ||
          c == Collective::Exscan || c == Collective::AllToAll)
        continue;
      LevelAlgorithms algs{Algorithm::Ring, Algorithm::Ring, Algorithm::Ring};
      algs[static_cast<std::size_t>(top)] = spec.algorithm;
      if (planOwning(spec.algorithm)) continue;
      for (bool inPlace : {false, true}) {
        if (inPlace && !test::hasInPlaceVariant(c)) continue;
        const Problem pb = test::problemFor(c, p, 7, inPlace, p - 1);
        expectClean(lay, algs, pb);
        for (std::uint32_t r = 0; r < p; ++r)
          EXPECT_EQ(composeHierarchical(lay, algs, pb, r),
                    composeFlat(lay, spec.algorithm, top, pb, r))
              << test::specName(spec) << " rank " << r;
        if (HasFailure()) return;
      }
    }
  }
}

TEST(Hierarchical, AsymmetricLayoutsRunFlat) {
  for (const auto& sizes : std::vector<std::vector<std::uint32_t>>{{3, 5}, {1, 4, 2}, {5, 3}}) {
    for (bool interleaved : {false, true}) {
      const Layout lay = Layout::uneven(sizes, interleaved);
      EXPECT_FALSE(lay.symmetric());
      const CommShape shape = lay.shape();
      ASSERT_EQ(shape.levels.size(), 1u);
      EXPECT_EQ(shape.levels[0].size, lay.ranks());
      EXPECT_EQ(shape.levels[0].level, 1);
      for (std::size_t k = 0; k < kCombos; ++k) sweepLayout(lay, combo(k), false);
    }
  }
}

TEST(Hierarchical, UnevenReduceScatterBlocks) {
  const Layout lay = Layout::servers(3, 2);
  const std::vector<std::uint64_t> counts{4, 0, 7, 1, 3, 9};
  for (bool inPlace : {false, true})
    for (std::size_t k = 0; k < kCombos; ++k) {
      Problem pb = Problem::reduceScatter(6, 0, inPlace);
      pb.blocks = Blocks::of(counts);
      expectClean(lay, combo(k), pb);
      Problem ag = Problem::allGather(6, 0, inPlace);
      ag.blocks = Blocks::of(counts);
      expectClean(lay, combo(k), ag);
    }
}

TEST(Hierarchical, PipelineOnTwoLevels) {
  const LevelAlgorithms pipe{Algorithm::Mesh, Algorithm::Pipeline, Algorithm::Ring};
  for (std::uint32_t servers = 1; servers <= 6; ++servers)
    for (std::uint32_t perServer = 1; perServer <= 5; ++perServer) {
      sweepLayout(Layout::servers(servers, perServer), pipe, servers * perServer <= 8);
      if (HasFailure()) return;
    }
  for (const auto& sizes : std::vector<std::vector<std::uint32_t>>{{3, 3}, {2, 2, 2, 2}})
    sweepLayout(Layout::uneven(sizes, true), pipe, false);
  // Uneven ReduceScatter blocks, in place with the result at the start.
  const std::vector<std::uint64_t> counts{4, 0, 7, 1, 3, 9};
  for (bool inPlace : {false, true}) {
    Problem pb = Problem::reduceScatter(6, 0, inPlace);
    pb.blocks = Blocks::of(counts);
    expectClean(Layout::servers(3, 2), pipe, pb);
  }
}

// Pipeline's cost row: max(inter, intra) per ring step, then one intra step.
TEST(Hierarchical, PipelineMetricsFollowTheFormula) {
  const std::uint32_t S = 4, L = 3;
  const std::uint64_t perRank = 100;
  Schedule s =
      composeAll(Layout::servers(S, L), {Algorithm::Mesh, Algorithm::Pipeline, Algorithm::Ring},
                 Problem::allGather(S * L, perRank));
  CostParams cp = CostParams::uniform(1e-6, 1e-10, 0);
  cp.alpha[1] = 1e-5;
  cp.beta[1] = 1e-9;
  const Metrics m = criticalPath(s, 1, cp);
  const double inter = 1e-5 + 100 * 1e-9, intra = 1e-6 + 100 * 1e-10;
  EXPECT_NEAR(m.time, std::max(inter, intra) * (S - 1) + intra, 1e-12);
  EXPECT_EQ(m.level[1].steps, S - 1);
  EXPECT_EQ(m.level[0].steps, 1u);
}

TEST(Hierarchical, RankOrderNeedsBlockOrderAndOrderedLevels) {
  const LevelAlgorithms ordered{Algorithm::Mesh, Algorithm::Rhd, Algorithm::Ring};
  EXPECT_TRUE(composedRankOrdered(Layout::servers(2, 4), ordered, Collective::AllReduce));
  EXPECT_FALSE(composedRankOrdered(Layout::uneven({4, 4}, true), ordered, Collective::AllReduce));
  const LevelAlgorithms ring{Algorithm::Mesh, Algorithm::Ring, Algorithm::Ring};
  EXPECT_FALSE(composedRankOrdered(Layout::servers(2, 4), ring, Collective::AllReduce));
}

// Per level, the composition costs the sum of its phases' reference rows. 4 servers x 3 ranks,
// ring everywhere: level0 RS+AG on n (2(L-1) steps, 2(L-1)/L n), level1 AR on n/L
// (2(S-1) steps, 2(S-1)/S n/L).
TEST(Hierarchical, MetricsPerLevelFollowThePhases) {
  const std::uint32_t S = 4, L = 3;
  const std::uint64_t count = 1200, elem = 4;
  const double n = double(count * elem);
  const Layout lay = Layout::servers(S, L);
  const Schedule s = composeAll(lay, {Algorithm::Ring, Algorithm::Ring, Algorithm::Ring},
                                Problem::allReduce(S * L, count));
  CostParams cp = CostParams::uniform();
  cp.alpha[1] = 1e-4;  // a slow outer link keeps the critical path through every phase
  const Metrics m = criticalPath(s, elem, cp);
  EXPECT_EQ(m.level[0].steps, 2 * (L - 1));
  EXPECT_DOUBLE_EQ(double(m.level[0].bytes), 2.0 * (L - 1) / L * n);
  EXPECT_EQ(m.level[1].steps, 2 * (S - 1));
  EXPECT_DOUBLE_EQ(double(m.level[1].bytes), 2.0 * (S - 1) / S * n / L);
  // Reductions: (L-1)/L n inside the server, then (S-1)/S of the n/L piece.
  EXPECT_DOUBLE_EQ(double(m.reducedBytes), (L - 1.0) / L * n + (S - 1.0) / S * n / L);

  // ReduceScatter: level1 RS on the whole vector, then level0 RS on the server's share.
  const Schedule rs = composeAll(lay, {Algorithm::Ring, Algorithm::Ring, Algorithm::Ring},
                                 Problem::reduceScatter(S * L, count / (S * L)));
  const Metrics mr = criticalPath(rs, elem, cp);
  EXPECT_EQ(mr.level[1].steps, S - 1);
  EXPECT_DOUBLE_EQ(double(mr.level[1].bytes), (S - 1.0) / S * n);
  EXPECT_EQ(mr.level[0].steps, L - 1);
  EXPECT_DOUBLE_EQ(double(mr.level[0].bytes), (L - 1.0) / L * n / S);
}

}  // namespace
}  // namespace hccl::algo
