// Scratch formulas (Plan::scratchOf) against the schedules they stand for: chunk sizing asks a
// plan's formula instead of building each edge rank's schedule, so every formula must give
// scratchCount() of the schedule, rank by rank, and scratchNeed() (formula, withPrivateInput's
// rule, edge ranks) the largest scratch of every rank's composed schedule.
//
// Segmented pipelines (PlanKey::segments, 2, 3, 4 and 8 segments) up to p = 64.
// Quick tier (CI): servers x ranks per server for every p <= 24 and a spread to 1024 (64x2, 16x8,
// 32x4, 128x2, 128x8). COLL_HCCL_COST_FULL=1 (by hand): every factorisation of every p <= 256
// and 255x4, 512x2, 128x8, 1024x1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

#include "algorithms/chunking.hpp"
#include "algorithms/pipeline.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/scratch_ranks.hpp"
#include "problems.hpp"

namespace hccl::algo {
namespace {

bool fullTier() {
  return std::getenv("COLL_HCCL_COST_FULL") != nullptr;
}

// Servers x ranks per server, at least two servers (the pipeline's layouts).
std::vector<std::pair<std::uint32_t, std::uint32_t>> gridLayouts() {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  const std::uint32_t upTo = fullTier() ? 256 : 24;
  for (std::uint32_t p = 2; p <= upTo; ++p)
    for (std::uint32_t l = 1; l * 2 <= p; ++l)
      if (p % l == 0) out.emplace_back(p / l, l);
  if (fullTier())
    out.insert(out.end(), {{255, 4}, {512, 2}, {128, 8}, {1024, 1}});
  else
    out.insert(out.end(), {{64, 2}, {16, 8}, {32, 4}, {128, 2}, {128, 8}});
  return out;
}

// Even, uneven (with empty blocks) and chunked problems of the pipeline's collectives.
std::vector<Problem> pipelineProblems(std::uint32_t p) {
  std::vector<Problem> out;
  std::vector<std::uint64_t> uneven(p);
  for (std::uint32_t i = 0; i < p; ++i) uneven[i] = (i * 7 + 3) % 5;  // 0..4, zeros included
  for (bool inPlace : {false, true}) {
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{p + 1}, std::uint64_t{3ull * p + 2}}) {
      out.push_back(Problem::allReduce(p, n, inPlace));
      out.push_back(firstChunkProblem(Problem::allReduce(p, n, inPlace), 1));
    }
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{5}}) {
      out.push_back(Problem::reduceScatter(p, n, inPlace));
      out.push_back(Problem::allGather(p, n, inPlace));
    }
    Problem rs = Problem::reduceScatter(p, 1, inPlace);
    rs.blocks = Blocks::of(uneven);
    out.push_back(rs);
    out.push_back(firstChunkProblem(rs, 2));
    // 1, 2, 3, 4, ..: in place, rank 1's result [0, 2) half-covers its own block [1, 3) (the
    // schedule builds it past the pass's scratch).
    std::vector<std::uint64_t> rising(p);
    for (std::uint32_t i = 0; i < p; ++i) rising[i] = i % 4 + 1;
    rs.blocks = Blocks::of(rising);
    out.push_back(rs);
    out.push_back(Problem::allGatherV(uneven, inPlace));
  }
  return out;
}

TEST(PipelineScratch, EqualsTheScheduleOfEveryRank) {
  int compared = 0;
  for (const auto& [servers, perServer] : gridLayouts()) {
    const std::uint32_t p = servers * perServer;
    // Every rank's schedule is O(p) transfers: thin the problems at the spread's largest p.
    const bool large = p > 256;
    const Layout lay = Layout::servers(servers, perServer);
    const std::vector<Problem> problems = pipelineProblems(p);
    for (std::size_t i = 0; i < problems.size(); i += large ? 3 : 1) {
      const Problem& pb = problems[i];
      for (std::uint32_t r = 0; r < p; r += large ? 7 : 1) {
        ASSERT_EQ(pipelineScratch(lay, pb, r), scratchCount(pipelineSchedule(lay, pb, r)))
            << lay.describe() << " rank " << r << " " << toString(pb);
        ++compared;
        // In segments each segment's pass has slots of its own (the plan uses up to 8, on up to
        // 16 servers): every rank of the smaller layouts, and uneven segments (3).
        if (p > 64) continue;
        for (std::uint32_t m : {2u, 3u, 8u}) {
          ASSERT_EQ(pipelineScratch(lay, pb, r, m), scratchCount(pipelineSchedule(lay, pb, r, m)))
              << lay.describe() << " rank " << r << " " << m << " segments " << toString(pb);
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 5000);
}

// scratchNeed() through the plan's formula against every rank's composed schedule (through
// withPrivateInput, as the engine runs it).
TEST(PipelineScratch, ScratchNeedEqualsEveryRank) {
  int compared = 0;
  const PlanKey key =
      planKeyFor(Layout::servers(2, 2), {Algorithm::Ring, Algorithm::Pipeline, Algorithm::Ring});
  ASSERT_TRUE(planOf(key).scratchOf(Layout::servers(2, 2), key, Problem::allReduce(4, 8), 0));
  for (const auto& [servers, perServer] : gridLayouts()) {
    const std::uint32_t p = servers * perServer;
    if (p > 256) continue;  // every rank's composed schedule per problem
    const Layout lay = Layout::servers(servers, perServer);
    PlanKey segmented = key;
    segmented.segments = 4;
    for (const PlanKey& k : {key, segmented}) {
      if (k.segments > 1 && p > 64) continue;
      const RankGenerator gen = composedGenerator(lay, k);
      const ScratchNeed need = scratchNeed(lay, k, gen);
      for (const Problem& pb : pipelineProblems(p)) {
        ASSERT_EQ(need(pb), scratchOfEveryRank(gen, pb))
            << lay.describe() << " " << k.segments << " segments " << toString(pb);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 500);
}

}  // namespace
}  // namespace hccl::algo
