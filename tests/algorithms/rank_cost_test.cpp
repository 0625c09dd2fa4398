// The selector's fast costing (rank_cost.hpp, each registry entry's `cost`) equals the critical
// path of the whole-communicator replay (metrics.hpp), for every generator and collective, every
// p <= 256 and a spread to 1024 (full tier; the quick tier every p <= 64 and a spread to 1024),
// counts that divide evenly, unevenly and fewer than p, roots 0 and p/3, out of place and in place,
// under two parameter sets (HCCL's one-link-per-peer model, and links = 1 with a slow start as the
// shared-memory link is priced). A generator whose schedule changes shape so that its costing no
// longer describes it fails here.
//
// Lockstep costing may differ from the replay where blocks differ by one element (which rank
// carries the larger block when): the tolerance is two elements' beta and gamma per step of the
// path (plus rounding), a bound that at any count worth costing is far below what a change of
// schedule shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "algorithms/ahc.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/pipeline.hpp"
#include "algorithms/rank_cost.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

constexpr std::size_t kElem = 4;

std::vector<CostParams> paramSets() {
  // steppedParams: every closed form must add the block round where the replay does. Full
  // duplex here: under half duplex a rank that sends and receives in a step is slower than its
  // partner that only receives, which then waits for it, and a lockstep path (rhd_scan, NHR and NB
  // Broadcast) falls short of the replay by one direction's transfer, beyond this test's
  // tolerance; the exact costings (rank_path, closed_cost, pipeline_cost) run half duplex.
  CostParams stepped = test::steppedParams();
  stepped.halfDuplex.fill(false);
  return {test::hcclLikeParams(), stepped};
}

// The tiers (tests/algorithms/README.md): the quick one (CI) every p <= 64 and the spread 96, 128,
// 255, 256, 1000, 1024; COLL_HCCL_COST_FULL=1 (run by hand) every p <= 256 and 384, 511, 512,
// 1000, 1024. The replay is p^2 per case for the rings and the trees, so the full tier takes tens
// of minutes on the 2-core VM.
bool fullTier() {
  return std::getenv("COLL_HCCL_COST_FULL") != nullptr;
}

std::vector<std::uint32_t> rankCounts(std::uint32_t from = 1) {
  const bool full = fullTier();
  std::vector<std::uint32_t> ps;
  for (std::uint32_t p = from; p <= (full ? 256u : 64u); ++p) ps.push_back(p);
  if (full)
    for (std::uint32_t p : {384u, 511u, 512u}) ps.push_back(p);
  else
    for (std::uint32_t p : {96u, 128u, 255u, 256u}) ps.push_back(p);
  for (std::uint32_t p : {1000u, 1024u}) ps.push_back(p);
  return ps;
}

class RankCost : public ::testing::TestWithParam<GeneratorSpec> {};

TEST_P(RankCost, EqualsTheReplayedCriticalPath) {
  const GeneratorSpec& g = GetParam();
  const std::vector<CostParams> params = paramSets();
  for (std::uint32_t p : rankCounts()) {
    // An entry costed by the replay (replayCost; none now) is the replay whatever p: the quick
    // tier checks it up to 128 ranks, where p^2 replays (a full mesh's) stay cheap.
    if (g.cost == replayCost && !fullTier() && p > 128) continue;
    // Beyond 256 ranks: one count and one parameter set (the replay is p^2 for the rings).
    const bool big = p > 256;
    std::vector<std::uint64_t> counts{std::uint64_t{p} * 3 + 1};
    if (!big) counts.push_back(7);
    // Fewer elements than ranks (empty blocks) at the large p too, for the entries with their own
    // costing (their empty-block paths are what lockstep cannot do); a replayed entry is the
    // replay, nothing to check.
    if (big && g.cost && g.cost != replayCost) counts.push_back(p / 3 + 1);
    if (p <= 64) counts.push_back(std::uint64_t{p} * 16);
    // Every root up to 16 ranks, then 0 and p/3.
    std::vector<std::uint32_t> roots{0};
    if (rooted(g.coll))
      for (std::uint32_t root = 1; root < p; ++root)
        if (p <= 16 || root == p / 3) roots.push_back(root);
    for (std::uint64_t count : counts)
      for (std::uint32_t root : roots)
        for (bool inPlace : {false, true}) {
          if (inPlace && (!test::hasInPlaceVariant(g.coll) || big || count == 7)) continue;
          const Problem pb = test::problemFor(g.coll, p, count, inPlace, root);
          const Schedule whole = buildSchedule(g.generate, pb);
          for (std::size_t k = 0; k < (big ? 1 : params.size()); ++k) {
            const double exact = criticalPath(whole, kElem, params[k]).time;
            const Metrics m = predictedPath(g, pb, kElem, params[k]);
            const double fast = m.time;
            const double perStep =
                2.0 * kElem *
                (*std::max_element(params[k].beta.begin(), params[k].beta.end()) + params[k].gamma);
            ASSERT_NEAR(fast, exact, 1e-9 * exact + double(m.steps()) * perStep + 1e-15)
                << test::specName(g) << " p=" << p << " count=" << count << " root=" << root
                << (inPlace ? " in place" : "") << " params " << k;
          }
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Generators, RankCost,
                         ::testing::ValuesIn(generatorSpecs().begin(), generatorSpecs().end()),
                         [](const auto& param) { return test::specName(param.param); });

// The entries that apply the replay's rules to every rank's per-step counts (tree::phasesPath
// for NHR and NB with empty blocks, rhdReduceCost) are exact, not within the lockstep tolerance
// above: the replay's critical path to rounding (1e-9 relative, no per-step slack), at the ranks
// of rankCounts() from 2 (full tier every p <= 256) for roots 0, p/3 and p-1 (every root up to 16
// ranks), in and out of place, under both parameter sets, counts of 1, p/2 and p-1 (fewer
// elements than ranks: the trees' lockstep otherwise) and for rhdReduceCost also 7, 3p+1 and 16p;
// and the spread to 1024 at count p/2, root p/3, out of place.
class ExactCost : public ::testing::TestWithParam<GeneratorSpec> {};

bool onlyEmpty(const GeneratorSpec& g) {
  return g.cost == nhrAllReduceCost || g.cost == nbAllReduceCost || g.cost == nhrBroadcastCost ||
         g.cost == nbBroadcastCost || g.cost == nhrReduceCost || g.cost == nbReduceCost;
}

std::vector<GeneratorSpec> exactlyCosted() {
  std::vector<GeneratorSpec> out;
  for (const GeneratorSpec& g : generatorSpecs())
    if (onlyEmpty(g) || g.cost == rhdReduceCost) out.push_back(g);
  return out;
}

TEST_P(ExactCost, EqualsTheReplay) {
  const GeneratorSpec& g = GetParam();
  const std::vector<CostParams> params = paramSets();
  std::size_t cases = 0;
  for (std::uint32_t p : rankCounts(2)) {
    // Beyond 256 ranks one case (the replay lists p/2 slices a rank).
    const bool big = p > 256;
    std::vector<std::uint64_t> counts{p / 2};
    if (!big) counts.insert(counts.end(), {1, p - 1});
    if (!onlyEmpty(g) && !big) counts.insert(counts.end(), {7, 3 * std::uint64_t{p} + 1, 16 * p});
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    std::erase(counts, 0);
    std::vector<std::uint32_t> roots{0};
    if (rooted(g.coll))
      for (std::uint32_t root = 1; root < p; ++root)
        if (p <= 16 || root == p / 3 || (root == p - 1 && !big)) roots.push_back(root);
    if (big && roots.size() > 1) roots.erase(roots.begin());
    for (std::uint64_t count : counts)
      for (std::uint32_t root : roots)
        for (bool inPlace : {false, true}) {
          if (inPlace && (!test::hasInPlaceVariant(g.coll) || big)) continue;
          const Problem pb = test::problemFor(g.coll, p, count, inPlace, root);
          if (onlyEmpty(g)) {
            ASSERT_TRUE(someBlockEmpty(pb)) << p << " ranks, count " << count;
          }
          const Schedule whole = buildSchedule(g.generate, pb);
          for (const CostParams& cp : params) {
            const Metrics exact = criticalPath(whole, kElem, cp);
            const Metrics m = predictedPath(g, pb, kElem, cp);
            ++cases;
            ASSERT_NEAR(m.time, exact.time, 1e-9 * exact.time)
                << test::specName(g) << " p=" << p << " count=" << count << " root=" << root
                << (inPlace ? " in place" : "") << ": steps " << m.steps() << " vs "
                << exact.steps() << ", bytes " << m.bytes() << " vs " << exact.bytes();
          }
        }
  }
  EXPECT_GT(cases, fullTier() ? 1000u : 300u);
}

INSTANTIATE_TEST_SUITE_P(PerStepCounts, ExactCost, ::testing::ValuesIn(exactlyCosted()),
                         [](const auto& param) { return test::specName(param.param); });

}  // namespace
}  // namespace hccl::algo

namespace hccl::algo {
namespace {

// The pipeline plan is costed by the selector from representative ranks (Selection::predict,
// planRepresentatives()); the same check against the replay of every rank.
// `fewerThanRanks`: also a count of 7, fewer elements than ranks from 8 ranks on.
void expectPlanCost(const Layout& lay, const RankGenerator& gen, Collective c, const char* what,
                    bool fewerThanRanks = true) {
  const std::vector<CostParams> params = paramSets();
  const std::uint64_t small = fewerThanRanks ? 7 : lay.ranks();
  for (std::uint64_t count : {small, std::uint64_t{lay.ranks()} * 5 + 3}) {
    const Problem pb = Problem::fromMpiCount(c, lay.ranks(), count, false);
    Schedule whole{pb, {}};
    for (std::uint32_t r = 0; r < lay.ranks(); ++r) whole.ranks.push_back(gen(pb, r));
    const std::vector<std::uint32_t> reps = planRepresentatives(lay);
    for (const CostParams& cp0 : params) {
      CostParams cp = cp0;
      cp.alpha[1] *= 5;  // the levels differ, as they do between servers
      cp.beta[1] *= 3;
      const double exact = criticalPath(whole, kElem, cp).time;
      const Metrics m = slowestRank(gen, withoutEmptyBlocks(pb), reps, kElem, cp);
      const double perStep =
          2.0 * kElem * (*std::max_element(cp.beta.begin(), cp.beta.end()) + cp.gamma);
      ASSERT_NEAR(m.time, exact, 1e-9 * exact + double(m.steps()) * perStep + 1e-15)
          << what << " " << name(c) << " on " << lay.ranks() << " ranks, count " << count;
    }
  }
}

TEST(RankCostPlans, PipelineEqualsTheReplay) {
  for (std::uint32_t servers : {2u, 3u, 4u, 5u, 8u, 16u, 32u})
    for (std::uint32_t per : {1u, 2u, 3u, 4u, 8u}) {
      const Layout lay = Layout::servers(servers, per);
      for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
        expectPlanCost(
            lay, [&](const Problem& pb, std::uint32_t r) { return pipelineSchedule(lay, pb, r); },
            c, "pipeline");
    }
}

// AHC on servers of unequal size is not lockstep (the logical same-index groups differ): the
// selector replays every rank of it. On equal servers with a lockstep inter algorithm (ring, NB;
// H-D_R and NHR over a power of two) and every rank a non-empty block it costs the
// representatives (plan_ahc.cpp): checked here. (With fewer elements than ranks the empty
// segments break the lockstep: 32 ranks, count 7 differ, so the plan replays those.)
TEST(RankCostPlans, AhcOnEqualServersEqualsTheReplay) {
  for (std::uint32_t servers : {2u, 3u, 4u, 5u, 8u, 16u})
    for (std::uint32_t per : {1u, 2u, 3u, 4u})
      for (Algorithm inter : {Algorithm::Ring, Algorithm::NB, Algorithm::NHR, Algorithm::Rhd}) {
        if ((inter == Algorithm::NHR || inter == Algorithm::Rhd) && (servers & (servers - 1)) != 0)
          continue;
        const Layout lay = Layout::servers(servers, per);
        for (Algorithm intra : {Algorithm::Ring, Algorithm::Mesh})
          for (Collective c :
               {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
            expectPlanCost(
                lay,
                [&](const Problem& pb, std::uint32_t r) {
                  return ahcSchedule(lay, intra, inter, pb, r);
                },
                c, "AHC", false);
      }
}

}  // namespace
}  // namespace hccl::algo
