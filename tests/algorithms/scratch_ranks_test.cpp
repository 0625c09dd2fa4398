// Chunk sizing from the edge ranks' schedules (scratch_ranks.hpp) against every rank's: equal for
// every generator and plan that claims GeneratorSpec::edgeScratch / Plan::scratchAtEdges, so the
// engine's chunks never differ from the ones the whole communicator's schedules give.
//
// Quick tier (CI): every p <= 24, 33, 64, 96, 128 for the generators; servers x ranks up to 17x4
// for the plans. COLL_HCCL_COST_FULL=1 (by hand): every p <= 64 and 96, 128, 255, 256, 1000,
// 1024; plans up to 33x8.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "algorithms/chunking.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/scratch_ranks.hpp"
#include "problems.hpp"

namespace hccl::algo {
namespace {

bool fullTier() {
  return std::getenv("COLL_HCCL_COST_FULL") != nullptr;
}

std::vector<std::uint32_t> generatorRanks() {
  std::vector<std::uint32_t> ps;
  const std::uint32_t upTo = fullTier() ? 64 : 24;
  for (std::uint32_t p = 2; p <= upTo; ++p) ps.push_back(p);
  if (fullTier())
    ps.insert(ps.end(), {96, 128, 255, 256, 1000, 1024});
  else
    ps.insert(ps.end(), {33, 64, 96, 128});
  return ps;
}

// Collectives chunk sizing asks about (chunkSizeFor runs AllToAllV and Barrier whole).
bool sized(Collective c) {
  return c != Collective::AllToAllV && c != Collective::Barrier;
}

// Counts around the ranks (empty blocks, one a rank, a remainder) and larger ones.
std::vector<std::uint64_t> countsFor(std::uint32_t p) {
  return {1, 3, p - 1, p + 1, 2ull * p + 3, 1001};
}

std::vector<std::uint32_t> rootsFor(Collective c, std::uint32_t p) {
  if (!rooted(c)) return {0};
  return {0, 1, p / 2, p - 1};
}

class EdgeScratch : public ::testing::TestWithParam<GeneratorSpec> {};

TEST_P(EdgeScratch, EdgeRanksHoldTheLargestScratch) {
  const GeneratorSpec& g = GetParam();
  int compared = 0;
  for (std::uint32_t p : generatorRanks()) {
    // Large p: fewer counts (every rank's schedule is the reference, p^2 steps for the rings).
    const std::vector<std::uint64_t> counts =
        p > 256 ? std::vector<std::uint64_t>{3, p + 1} : countsFor(p);
    const Layout lay = Layout::servers(1, p);
    const RankGenerator gen = [&g](const Problem& q, std::uint32_t r) {
      return withPrivateInput(q, r, g.generate);
    };
    for (std::uint64_t n : counts)
      for (bool inPlace : {false, true}) {
        if (inPlace && !test::hasInPlaceVariant(g.coll)) continue;
        for (std::uint32_t root : rootsFor(g.coll, p)) {
          const Problem pb = test::problemFor(g.coll, p, n, inPlace, root);
          std::uint64_t edges = 0;
          for (std::uint32_t r : edgeRanks(lay, root))
            edges = std::max(edges, scratchCount(gen(pb, r)));
          ASSERT_EQ(edges, scratchOfEveryRank(gen, pb)) << toString(pb);
          ++compared;
        }
      }
  }
  EXPECT_GT(compared, 0);
}

std::vector<GeneratorSpec> claiming() {
  std::vector<GeneratorSpec> out;
  for (const GeneratorSpec& g : generatorSpecs())
    if (g.edgeScratch && sized(g.coll)) out.push_back(g);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Generators, EdgeScratch, ::testing::ValuesIn(claiming()),
                         [](const auto& param) { return test::specName(param.param); });

// The claim is per entry: NHR's AllReduce does not hold it (a middle rank's scratch is larger at
// p = 9, count 3), so scratchNeed builds every rank there.
TEST(EdgeScratchClaims, NhrAllReduceIsNotClaimed) {
  EXPECT_FALSE(generatorsAtEdges(Algorithm::NHR, Collective::AllReduce));
  EXPECT_FALSE(generatorsAtEdges(Algorithm::NHR));
  EXPECT_TRUE(generatorsAtEdges(Algorithm::NHR, Collective::Broadcast));
  EXPECT_TRUE(generatorsAtEdges(Algorithm::Rhd));
  EXPECT_FALSE(generatorsAtEdges(Algorithm::Pipeline));  // no generator of its own
  const GeneratorSpec& nhr = *findGenerator(Algorithm::NHR, Collective::AllReduce);
  const Problem pb = Problem::allReduce(9, 3);
  const Layout lay = Layout::servers(1, 9);
  const RankGenerator gen = [&](const Problem& q, std::uint32_t r) { return nhr.generate(q, r); };
  std::uint64_t edges = 0;
  for (std::uint32_t r : edgeRanks(lay, 0)) edges = std::max(edges, scratchCount(gen(pb, r)));
  EXPECT_LT(edges, scratchOfEveryRank(gen, pb));
  const PlanKey key{0, {Algorithm::Ring, Algorithm::NHR, Algorithm::Ring}, std::nullopt};
  EXPECT_EQ(scratchNeed(Layout::servers(9, 1), key, gen)(pb), scratchOfEveryRank(gen, pb));
}

TEST(EdgeRanks, EveryRankOfAnAsymmetricLayout) {
  EXPECT_EQ(edgeRanks(Layout::uneven({3, 5}), 0).size(), 8u);
  // 64 servers of 2: the first and last four servers and the root's neighbours, both ranks each.
  const std::vector<std::uint32_t> e = edgeRanks(Layout::servers(64, 2), 64);
  EXPECT_EQ(e.size(), 2u * (4 + 4 + 7));
  EXPECT_EQ(e.front(), 0u);
  EXPECT_EQ(e.back(), 127u);
}

// The plans, as the engine sizes them: scratchNeed() against every rank's composed schedule.
TEST(EdgeScratchPlans, PlansAgreeWithEveryRank) {
  const std::vector<std::uint32_t> servers =
      fullTier() ? std::vector<std::uint32_t>{2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 33}
                 : std::vector<std::uint32_t>{2, 3, 5, 8, 9, 17};
  const std::vector<std::uint32_t> perServer =
      fullTier() ? std::vector<std::uint32_t>{1, 2, 3, 4, 8} : std::vector<std::uint32_t>{1, 2, 4};
  using A = Algorithm;
  const std::vector<A> inner{A::Ring, A::Mesh, A::Rhd},
      outer{A::Ring, A::Rhd, A::NB, A::NHR, A::Mesh, A::Pairwise};
  int compared = 0;
  std::vector<Layout> layouts;
  for (std::uint32_t s : servers)
    for (std::uint32_t l : perServer) layouts.push_back(Layout::servers(s, l));
  layouts.push_back(Layout::pods(2, 3, 2));  // three levels
  layouts.push_back(Layout::pods(3, 5, 1));
  for (const Layout& lay : layouts) {
    const std::uint32_t p = lay.ranks();
    for (std::uint8_t plan = 0; plan < 3; ++plan)  // per-level, flat, pipeline
      for (A a0 : inner)
        for (A a1 : outer) {
          const PlanKey key{plan, {a0, plan == 2 ? A::Pipeline : a1, A::Ring}, std::nullopt};
          if (plan == 2 && (a1 != A::Ring || !planOf(key).whyNotOn(lay).empty())) continue;
          const RankGenerator gen = [&](const Problem& q, std::uint32_t r) {
            return withPrivateInput(
                q, r, [&](const Problem& x, std::uint32_t y) { return compose(lay, key, x, y); });
          };
          const ScratchNeed need = scratchNeed(lay, key, gen);
          for (int ci = 0; ci < kNumCollectives; ++ci) {
            const auto c = static_cast<Collective>(ci);
            if (!sized(c) || !scratchAtEdges(lay, key, c)) continue;
            for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{p + 1}, std::uint64_t{97}})
              for (bool inPlace : {false, true})
                for (std::uint32_t root : rootsFor(c, p)) {
                  const Problem pb = test::problemFor(c, p, n, inPlace, root);
                  std::uint64_t every = 0;
                  try {
                    every = scratchOfEveryRank(gen, pb);
                  } catch (const std::invalid_argument&) {
                    continue;  // the key cannot compose this collective here
                  }
                  ASSERT_EQ(need(pb), every)
                      << lay.describe() << " " << toString(key) << " " << toString(pb);
                  ++compared;
                }
          }
        }
  }
  EXPECT_GT(compared, 1000);
}

// Chunk sizing sizes the first chunk without planning every chunk.
TEST(FirstChunk, EqualsPlannedFirstChunk) {
  const std::vector<std::uint64_t> uneven{5, 9, 0, 7};
  const std::vector<Problem> problems{Problem::allReduce(4, 1000),
                                      Problem::reduceScatter(4, 250),
                                      Problem::reduceScatter(4, 250, true),
                                      Problem::allGatherV(uneven),
                                      Problem::gather(5, 33, 2),
                                      Problem::allToAll(3, 17),
                                      Problem::exscan(6, 100),
                                      Problem::broadcast(7, 99, 3)};
  for (const Problem& pb : problems)
    for (std::uint64_t c : {0u, 1u, 3u, 8u, 64u, 5000u})
      EXPECT_EQ(firstChunkProblem(pb, c), planChunks(pb, 0, c).front().problem)
          << toString(pb) << " chunk " << c;
}

}  // namespace
}  // namespace hccl::algo
