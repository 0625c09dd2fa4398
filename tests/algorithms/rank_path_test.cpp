// The registry's rank paths (GeneratorSpec::path, rank_cost.hpp's PathFn: a rank's path summed
// from its per-step counts, no schedule built) equal rankPath() of the rank's built schedule
// (withPrivateInput, as lockstepCost built it), to the last bit: the same time, steps, bytes and
// reduced bytes. Every rank of every p <= 64 and of 96, 127, 128, 255, 256; beyond (500, 1000,
// 1024, 4096) the representative ranks and a few others. Counts that divide evenly, unevenly, fewer
// than p (empty blocks), 7 and 16p; roots 0, 1, p/3 and p-1; in and out of place; both parameter
// sets of rank_cost_test.cpp. rank_cost_test.cpp checks what lockstepCost makes of these paths
// against the whole-communicator replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/rank_cost.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

constexpr std::size_t kElem = 4;

std::vector<CostParams> paramSets() {
  return {test::hcclLikeParams(), test::oneLinkParams(), test::steppedParams()};
}

std::vector<GeneratorSpec> withPaths() {
  std::vector<GeneratorSpec> out;
  for (const GeneratorSpec& g : generatorSpecs())
    if (g.path) out.push_back(g);
  return out;
}

TEST(RankPath, RingNhrAndNbHaveThem) {
  // Every Ring, NHR and NB generator but the rings' chains and the Barriers (O(1) and O(log p)
  // steps a rank to build) is costed without building: 5 + 7 + 7 entries; and pairwise AllToAll
  // (p-1 steps a rank) and fullmesh AllToAll (one step of 2(p-1) transfers).
  EXPECT_EQ(withPaths().size(), 21u);
}

class RankPath : public ::testing::TestWithParam<GeneratorSpec> {};

TEST_P(RankPath, EqualsTheBuiltRanksPath) {
  const GeneratorSpec& g = GetParam();
  const std::vector<CostParams> params = paramSets();
  std::vector<std::uint32_t> ps;
  for (std::uint32_t p = 1; p <= 64; ++p) ps.push_back(p);
  for (std::uint32_t p : {96u, 127u, 128u, 255u, 256u, 500u, 1000u, 1024u, 4096u}) ps.push_back(p);
  std::size_t cases = 0;
  for (std::uint32_t p : ps) {
    const bool big = p > 256;
    std::vector<std::uint64_t> counts{std::uint64_t{p} * 3 + 1, p / 2 + 1};
    if (!big) counts.insert(counts.end(), {7, std::uint64_t{p} * 16, p});
    std::vector<std::uint32_t> roots{0};
    if (rooted(g.coll))
      for (std::uint32_t root : {1u, p / 3, p - 1})
        if (root < p && std::find(roots.begin(), roots.end(), root) == roots.end())
          roots.push_back(root);
    for (std::uint64_t count : counts)
      for (std::uint32_t root : roots)
        for (bool inPlace : {false, true}) {
          if (inPlace && !test::hasInPlaceVariant(g.coll)) continue;
          const Problem pb = test::problemFor(g.coll, p, count, inPlace, root);
          std::vector<std::uint32_t> ranks;
          if (big) {
            ranks = representativeRanks(pb);
            for (std::uint32_t r : {1u, 2u, p / 2, p / 2 + 1, p - 2}) ranks.push_back(r);
          } else {
            for (std::uint32_t r = 0; r < p; ++r) ranks.push_back(r);
          }
          for (std::uint32_t r : ranks) {
            const RankSchedule built = withPrivateInput(pb, r, g.generate);
            for (const CostParams& cp : params) {
              const Metrics want = rankPath(built, kElem, cp);
              const Metrics got = g.path(pb, r, kElem, cp);
              ++cases;
              ASSERT_TRUE(got.time == want.time && got.level == want.level &&
                          got.reducedBytes == want.reducedBytes)
                  << test::specName(g) << " p=" << p << " count=" << count << " root=" << root
                  << " rank " << r << (inPlace ? " in place" : "") << ": time " << got.time
                  << " vs " << want.time << ", steps " << got.steps() << " vs " << want.steps()
                  << ", bytes " << got.bytes() << " vs " << want.bytes() << ", reduced "
                  << got.reducedBytes << " vs " << want.reducedBytes;
            }
          }
        }
  }
  EXPECT_GT(cases, 10000u);
}

INSTANTIATE_TEST_SUITE_P(Generators, RankPath, ::testing::ValuesIn(withPaths()),
                         [](const auto& param) { return test::specName(param.param); });

}  // namespace
}  // namespace hccl::algo
