// Hierarchical schedules: every composition verified symbolically over many layouts, and their
// per-level metrics equal the sum of the phase formulas.
#include "algorithms/hierarchical.hpp"

#include <gtest/gtest.h>

#include "algorithms/metrics.hpp"
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

Schedule composeAll(const Layout& lay, const LevelAlgorithms& algs, const Problem& pb) {
  Schedule s{pb, {}};
  // As the engine runs it: honouring the write contract (in-place ReduceScatter included).
  const RankGenerator compose = [&](const Problem& q, std::uint32_t r) {
    return composeHierarchical(lay, algs, q, r);
  };
  for (std::uint32_t r = 0; r < pb.ranks; ++r) s.ranks.push_back(withPrivateInput(pb, r, compose));
  return s;
}

void expectClean(const Layout& lay, const LevelAlgorithms& algs, const Problem& pb) {
  const bool order = pb.coll != Collective::AllGather && composedRankOrdered(lay, algs, pb.coll);
  const auto issues = verify(composeAll(lay, algs, pb), {.requireRankOrder = order});
  EXPECT_TRUE(issues.empty()) << lay.describe() << " " << toString(pb) << " " << hcclName(algs[0])
                              << "/" << hcclName(algs[1]) << "/" << hcclName(algs[2]) << "\n"
                              << describe(issues);
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
