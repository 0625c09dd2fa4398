// Barrier, Scan, Exscan and Broadcast over levels (hier_barrier.cpp, hier_scan.cpp,
// hier_broadcast.cpp): every symmetric layout of 1..64 ranks on two levels and a set on three,
// the counts of the generator sweep, in and out of place, every root at p <= 16 and a spread
// above, every level algorithm that serves the phases; symbolically verified (the verifier
// always requires rank order of Scan and Exscan and checks that no rank leaves a Barrier before
// hearing of every rank). Per-level metrics against the phases' reference rows.
#include <gtest/gtest.h>

#include "algorithms/hierarchical.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/verifier.hpp"
#include "algorithms/write_contract.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

using test::composeAll;

void expectClean(const Layout& lay, const LevelAlgorithms& algs, const Problem& pb) {
  test::expectCleanComposition(lay, algs, pb);
}

// The level algorithms that serve each collective's phases at every level.
const std::vector<Algorithm>& servers(Collective c) {
  static const std::vector<Algorithm> barrier{Algorithm::Mesh, Algorithm::NHR, Algorithm::NB};
  static const std::vector<Algorithm> scan{Algorithm::Rhd, Algorithm::Mesh};
  static const std::vector<Algorithm> bcast{Algorithm::Ring, Algorithm::Rhd, Algorithm::Mesh,
                                            Algorithm::NHR, Algorithm::NB};
  return c == Collective::Barrier ? barrier : c == Collective::Broadcast ? bcast : scan;
}

// Combination k of `c`'s algorithms over the three levels.
LevelAlgorithms combo(Collective c, std::size_t k) {
  const auto& a = servers(c);
  return {a[k % a.size()], a[(k / a.size()) % a.size()], a[(k / a.size() + 1) % a.size()]};
}

constexpr std::array kColls = {Collective::Barrier, Collective::Scan, Collective::Exscan,
                               Collective::Broadcast};

std::vector<std::uint32_t> rootsFor(std::uint32_t p) {
  if (p <= 16) {
    std::vector<std::uint32_t> all(p);
    for (std::uint32_t r = 0; r < p; ++r) all[r] = r;
    return all;
  }
  return {0, 1, p / 3, p / 2, p - 2, p - 1};
}

void sweepLayout(const Layout& lay, std::size_t k, bool bigCount) {
  const std::uint32_t p = lay.ranks();
  std::vector<std::uint64_t> counts{0, 1, p - 1u, p, p + 1u, 1000};
  if (bigCount) counts.push_back(100003);
  for (Collective c : kColls) {
    const LevelAlgorithms algs = combo(c, k);
    if (c == Collective::Barrier) {
      expectClean(lay, algs, Problem::barrier(p));
      continue;
    }
    for (std::uint64_t n : counts) {
      if (c == Collective::Broadcast) {
        const auto roots = rootsFor(p);
        for (std::size_t i = 0; i < roots.size(); ++i)
          if (n < 1000 || i % 3 == 0) expectClean(lay, algs, Problem::broadcast(p, n, roots[i]));
      } else {
        for (bool inPlace : {false, true})
          expectClean(lay, algs, test::problemFor(c, p, n, inPlace));
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// Two levels: every servers x ranks-per-server with at most 64 ranks, split by server count.
class LevelsUpTo64 : public ::testing::TestWithParam<int> {};

TEST_P(LevelsUpTo64, EveryShapeVerifies) {
  std::size_t k = 0;
  for (std::uint32_t servers = 1; servers <= 64; ++servers) {
    if (servers % 4 != static_cast<std::uint32_t>(GetParam())) continue;
    for (std::uint32_t perServer = 1; servers * perServer <= 64; ++perServer, ++k) {
      sweepLayout(Layout::servers(servers, perServer), k, servers * perServer <= 16);
      if (HasFailure()) return;
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Quarter, LevelsUpTo64, ::testing::Values(0, 1, 2, 3));

TEST(HierCollectives, ThreeLevels) {
  std::size_t k = 0;
  for (std::uint32_t pods = 2; pods <= 3; ++pods)
    for (std::uint32_t servers = 1; servers <= 3; ++servers)
      for (std::uint32_t perServer = 1; perServer <= 4; ++perServer, ++k) {
        sweepLayout(Layout::pods(pods, servers, perServer), k, false);
        if (HasFailure()) return;
      }
  for (std::size_t j = 0; j < 9; ++j) sweepLayout(Layout::pods(2, 2, 2), j, true);
}

// Interleaved and unequal servers: Scan and Exscan run flat (a server's ranks are no prefix
// range), the others compose (symmetric) or run flat (asymmetric); all verify.
TEST(HierCollectives, InterleavedAndUnequalServers) {
  for (const auto& sizes : std::vector<std::vector<std::uint32_t>>{{3, 3}, {2, 2, 2}, {3, 5}})
    for (bool interleaved : {true, false}) {
      const Layout lay = Layout::uneven(sizes, interleaved);
      for (std::size_t k = 0; k < 6; ++k) sweepLayout(lay, k, false);
      if (!lay.symmetric() || lay.blockOrder()) continue;
      const LevelAlgorithms algs{Algorithm::Mesh, Algorithm::Rhd, Algorithm::Rhd};
      for (Collective c : {Collective::Scan, Collective::Exscan}) {
        const Problem pb = test::problemFor(c, lay.ranks(), 5, false);
        for (std::uint32_t r = 0; r < lay.ranks(); ++r)
          EXPECT_EQ(composeHierarchical(lay, algs, pb, r),
                    composeFlat(lay, Algorithm::Rhd, 1, pb, r));
      }
    }
}

std::uint64_t log2ceil(std::uint64_t x) {
  std::uint64_t k = 0;
  while ((std::uint64_t{1} << k) < x) ++k;
  return k;
}

// Barrier: ceil(log2 g) level0 steps and ceil(log2 S) level1 steps (NB's dissemination), no
// bytes; the flat NB Barrier would pay ceil(log2 gS) steps on level1.
TEST(HierCollectives, BarrierMetrics) {
  for (const auto& [S, g] : {std::pair{4u, 3u}, std::pair{2u, 8u}, std::pair{5u, 2u}}) {
    const Schedule s =
        composeAll(Layout::servers(S, g), {Algorithm::NB, Algorithm::NB, Algorithm::NB},
                   Problem::barrier(S * g));
    const Metrics m = criticalPath(s, 4, CostParams::uniform());
    EXPECT_EQ(m.level[0].steps, log2ceil(g)) << S << "x" << g;
    EXPECT_EQ(m.level[1].steps, log2ceil(S)) << S << "x" << g;
    EXPECT_EQ(m.level[0].bytes + m.level[1].bytes, 0u);
  }
}

// Scan, H-D_R everywhere, 4 servers x 4 ranks, slow server links: level0 Scan (log2 4 steps of
// n) and Broadcast of E (log2 4 steps of n), level1 Exscan (log2 4 steps of n).
TEST(HierCollectives, ScanMetrics) {
  const std::uint32_t S = 4, g = 4;
  const std::uint64_t count = 100, elem = 4;
  CostParams cp = CostParams::uniform();
  cp.alpha[1] = 1e-4;
  for (Collective c : {Collective::Scan, Collective::Exscan}) {
    const Schedule s =
        composeAll(Layout::servers(S, g), {Algorithm::Rhd, Algorithm::Rhd, Algorithm::Rhd},
                   test::problemFor(c, S * g, count, false));
    const Metrics m = criticalPath(s, elem, cp);
    EXPECT_EQ(m.level[1].steps, log2ceil(S)) << name(c);
    EXPECT_EQ(m.level[1].bytes, log2ceil(S) * count * elem) << name(c);
    EXPECT_EQ(m.level[0].steps, 2 * log2ceil(g)) << name(c);
    EXPECT_EQ(m.level[0].bytes, 2 * log2ceil(g) * count * elem) << name(c);
  }
}

// Broadcast on three levels (2 supernodes x 2 servers x 2 ranks), ring everywhere, slow outer
// links: critical path Bc_L0(n) + Bc_L1(n/2) + Bc_L2(n/4) + AG_L1(n/2) + AG_L0(n), ring's rows
// (p-1)(a + n b) for Broadcast, (p-1)(a + n/p b) for AllGather.
TEST(HierCollectives, BroadcastThreeLevelMetrics) {
  const std::uint64_t count = 1200, elem = 4;
  const double n = double(count * elem);
  CostParams cp = CostParams::uniform();
  cp.alpha[1] = 1e-4;
  cp.alpha[2] = 1e-3;
  const Schedule s =
      composeAll(Layout::pods(2, 2, 2), {Algorithm::Ring, Algorithm::Ring, Algorithm::Ring},
                 Problem::broadcast(8, count, 0));
  const Metrics m = criticalPath(s, elem, cp);
  EXPECT_EQ(m.level[2].steps, 1u);
  EXPECT_DOUBLE_EQ(double(m.level[2].bytes), n / 4);
  EXPECT_EQ(m.level[1].steps, 2u);
  EXPECT_DOUBLE_EQ(double(m.level[1].bytes), n / 2 + n / 4);
  EXPECT_EQ(m.level[0].steps, 2u);
  EXPECT_DOUBLE_EQ(double(m.level[0].bytes), n + n / 2);
  // Every byte crosses the supernode links once: n/4 from each of the root supernode's 4 ranks.
  std::uint64_t level2 = 0;
  for (const RankSchedule& r : s.ranks)
    for (const Step& st : r.steps)
      for (const Transfer& t : st.xfers)
        if (t.level == 2 && t.dir == Dir::Recv) level2 += t.slice.count;
  EXPECT_EQ(level2, count);
}

// The plan: Scan and Exscan on interleaved servers are refused by the levels with the reason,
// and the flat plan serves them; on consecutive servers the levels do.
TEST(HierCollectives, RankOrderHoldsOnConsecutiveServers) {
  const LevelAlgorithms algs{Algorithm::Mesh, Algorithm::Rhd, Algorithm::Rhd};
  EXPECT_TRUE(composedRankOrdered(Layout::servers(3, 4), algs, Collective::Scan));
  EXPECT_TRUE(composedRankOrdered(Layout::pods(2, 2, 2), algs, Collective::Exscan));
  // Interleaved: flat H-D_R (rank-ordered too, over every rank).
  EXPECT_TRUE(composedRankOrdered(Layout::uneven({3, 3}, true), algs, Collective::Scan));
}

// The tree plan (plan_tree.cpp): the whole vector level by level, outer first, every root, every
// Broadcast algorithm at every level, symbolically verified; the outermost links carry at least
// the whole vector into every other unit.
TEST(HierCollectives, TreePlanBroadcast) {
  std::size_t tree = 0;
  const auto table = planTable();
  while (tree < table.size() && table[tree]->name() != "tree") ++tree;
  ASSERT_LT(tree, table.size());
  std::size_t k = 0;
  for (const Layout& lay :
       {Layout::servers(2, 2), Layout::servers(3, 4), Layout::servers(8, 8), Layout::pods(2, 2, 2),
        Layout::pods(3, 2, 3), Layout::uneven({3, 3}, true)}) {
    const std::uint32_t p = lay.ranks();
    for (std::uint32_t root : rootsFor(p))
      for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1000}}) {
        const LevelAlgorithms algs = combo(Collective::Broadcast, k++);
        const PlanKey key{static_cast<std::uint8_t>(tree), algs, std::nullopt};
        Schedule s{Problem::broadcast(p, n, root), {}};
        for (std::uint32_t r = 0; r < p; ++r) s.ranks.push_back(compose(lay, key, s.problem, r));
        const auto issues = verify(s, {});
        EXPECT_TRUE(issues.empty()) << lay.describe() << " " << toString(s.problem) << "\n"
                                    << describe(issues);
        std::uint64_t top = 0;
        const int outer = lay.shape().levels.back().level;
        for (const RankSchedule& r : s.ranks)
          for (const Step& st : r.steps)
            for (const Transfer& t : st.xfers)
              if (t.level == outer && t.dir == Dir::Recv) top += t.slice.count;
        // At least the whole vector into every other unit (scatter-based Broadcasts forward
        // pieces through intermediate ranks, so more for some algorithms).
        EXPECT_GE(top, n * (lay.shape().levels.back().size - 1)) << lay.describe();
        if (HasFailure()) return;
      }
  }
}

}  // namespace
}  // namespace hccl::algo
