// Scratch formulas (Plan::scratchOf) against the schedules they stand for: chunk sizing asks a
// plan's formula instead of building each edge rank's schedule, so every formula must give
// scratchCount() of the schedule, rank by rank, and scratchNeed() (formula, withPrivateInput's
// rule, edge ranks) the largest scratch of every rank's composed schedule.
//
// Segmented pipelines (PlanKey::segments, 2, 3, 4 and 8 segments) up to p = 64. The generators'
// formulas (GeneratorSpec::scratch) rank by rank for every p <= 64 (CI) or 256 (by hand) and a
// spread to 1000, every root class, in and out of place, even, uneven and empty blocks; the
// per-level plan's (one level: the generator's; AllToAll over levels: its pack areas and the
// levels' generators) on the same layouts as the pipeline's and flat ones.
// Reduce over levels bounds the non-roots whose phases need no scratch (Plan::scratchBound):
// chunk sizing with those bounds against every rank's built schedule, every root.
// Quick tier (CI): servers x ranks per server for every p <= 24 and a spread to 1024 (64x2, 16x8,
// 32x4, 128x2, 128x8). COLL_HCCL_COST_FULL=1 (by hand): every factorisation of every p <= 256
// and 255x4, 512x2, 128x8, 1024x1.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <numeric>

#include "algorithms/chunking.hpp"
#include "algorithms/generators.hpp"
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
        // In segments each segment's pass has slots of its own (the plan uses up to 32, on up
        // to 16 servers): every rank of the smaller layouts, and uneven segments (3).
        if (p > 64) continue;
        for (std::uint32_t m : {2u, 3u, 8u, 32u}) {
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

// The problems a generator's formula is held to: its collective in and out of place, counts that
// leave blocks empty, fill them evenly and unevenly, at roots 0, 1, p/2 and p-1; uneven (and
// partly empty) blocks where the generator takes them.
std::vector<Problem> generatorProblems(const GeneratorSpec& g, std::uint32_t p) {
  std::vector<Problem> out;
  std::vector<std::uint32_t> roots{0};
  if (rooted(g.coll))
    for (std::uint32_t r : {1u, p / 2, p - 1})
      if (r < p && std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  std::vector<std::uint64_t> uneven(p);
  for (std::uint32_t i = 0; i < p; ++i) uneven[i] = (i * 7 + 3) % 5;  // 0..4, zeros included
  for (bool inPlace : {false, true})
    for (std::uint32_t root : roots) {
      for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{3}})
        out.push_back(Problem::fromMpiCount(g.coll, p, n, inPlace, root));
      if (!g.unevenBlocks) continue;
      Problem q = Problem::fromMpiCount(g.coll, p, 1, inPlace, root);
      q.blocks = Blocks::of(uneven);
      out.push_back(q);
    }
  return out;
}

std::vector<std::uint32_t> generatorRankCounts() {
  std::vector<std::uint32_t> out;
  for (std::uint32_t p = 1; p <= (fullTier() ? 256u : 64u); ++p) out.push_back(p);
  for (std::uint32_t p : {100u, 255u, 1000u}) out.push_back(p);
  return out;
}

TEST(GeneratorScratch, EqualsTheScheduleOfEveryRank) {
  int compared = 0, entries = 0;
  for (const GeneratorSpec& g : generatorSpecs()) {
    if (!g.scratch) continue;
    ++entries;
    std::uint64_t largest = 0;
    for (std::uint32_t p : generatorRankCounts()) {
      const std::uint32_t stride = p > 256 ? 37 : 1;  // every rank's schedule is O(p) at 1000
      for (const Problem& pb : generatorProblems(g, p))
        for (std::uint32_t r = 0; r < p; r += stride) {
          const std::uint64_t s = scratchCount(g.generate(pb, r));
          ASSERT_EQ(g.scratch(pb, r), s)
              << test::specName(g) << " rank " << r << " " << toString(pb);
          largest = std::max(largest, s);
          ++compared;
        }
    }
    // Only a formula whose schedules use scratch somewhere can tell a wrong one from a right one;
    // noScratch says the schedules never do, which the comparisons above hold it to.
    if (g.scratch == noScratch)
      EXPECT_EQ(largest, 0u) << test::specName(g);
    else
      EXPECT_GT(largest, 0u) << test::specName(g);
  }
  EXPECT_GE(entries, 38);
  EXPECT_GT(compared, 100000);
}

// The per-level plan's scratchOf against the composed schedule of every rank, and scratchNeed
// through it against every rank's composed schedule as the engine runs it; the flat plan's (the
// outermost level's generator over every rank) the same way.
std::uint8_t planIndex(std::string_view name) {
  const auto table = planTable();
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i]->name() == name) return static_cast<std::uint8_t>(i);
  ADD_FAILURE() << "no " << name << " plan";
  return 0;
}
std::uint8_t flatIndex() {
  return planIndex("flat");
}

TEST(LevelsScratch, EqualsTheComposedScheduleOfEveryRank) {
  using A = Algorithm;
  struct Case {
    Collective coll;
    LevelAlgorithms algs;
  };
  const std::vector<Case> cases{
      {Collective::AllToAll, {A::Pairwise, A::Pairwise, A::Pairwise}},
      {Collective::AllToAll, {A::Mesh, A::Pairwise, A::Pairwise}},
      {Collective::AllToAll, {A::Mesh, A::Mesh, A::Mesh}},
      {Collective::Scatter, {A::NHR, A::NHR, A::NHR}},
      {Collective::Gather, {A::NB, A::NB, A::NB}},
      {Collective::AllReduce, {A::Mesh, A::NB, A::NB}},
      {Collective::AllReduce, {A::NB, A::NB, A::NB}},
      {Collective::Reduce, {A::Mesh, A::NB, A::NB}},
      {Collective::Reduce, {A::NB, A::NHR, A::NHR}},
      {Collective::Reduce, {A::Mesh, A::Mesh, A::Mesh}},
      {Collective::Broadcast, {A::Mesh, A::NHR, A::NB}},
      {Collective::Broadcast, {A::Ring, A::Rhd, A::Mesh}},
      {Collective::Scatter, {A::Mesh, A::NB, A::NHR}},
      {Collective::Gather, {A::Mesh, A::NHR, A::NHR}},
      {Collective::Gather, {A::NHR, A::Mesh, A::NB}},
      // Ring's ReduceScatter and Gather formulas as phases (issue 14: 2048x2 chunk sizing).
      {Collective::AllReduce, {A::Ring, A::NB, A::NB}},
      {Collective::Reduce, {A::Ring, A::NB, A::NB}},
      {Collective::Gather, {A::Ring, A::Ring, A::Ring}},
      {Collective::Scatter, {A::Ring, A::NHR, A::Ring}},
      // ReduceScatter and AllGather over levels (issue 14: three-level chunk sizing).
      {Collective::ReduceScatter, {A::Mesh, A::Mesh, A::Mesh}},
      {Collective::ReduceScatter, {A::Ring, A::NB, A::NHR}},
      {Collective::ReduceScatter, {A::NHR, A::Ring, A::NB}},
      {Collective::AllGather, {A::Mesh, A::NB, A::NHR}},
      {Collective::AllGather, {A::Ring, A::Rhd, A::Mesh}},
      // H-D_R's AllReduce, ReduceScatter and Reduce formulas as phases (16x16x16's choices; it
      // has no Gather, so its Reduce runs at the top level only, on the three-level layouts).
      {Collective::Reduce, {A::Mesh, A::NHR, A::Rhd}},
      {Collective::Reduce, {A::NHR, A::NB, A::Rhd}},
      {Collective::AllReduce, {A::Mesh, A::Rhd, A::Rhd}},
      {Collective::AllReduce, {A::Rhd, A::NB, A::Rhd}},
      // Ring's AllReduce and Reduce formulas at the top level (2x2x1024's choices).
      {Collective::AllReduce, {A::Mesh, A::Ring, A::Ring}},
      {Collective::Reduce, {A::Mesh, A::Ring, A::Ring}},
      // Scan and Exscan over levels (issue 14: 8x8x64's fullmesh, H-D_R, H-D_R).
      {Collective::Scan, {A::Mesh, A::Rhd, A::Rhd}},
      {Collective::Exscan, {A::Mesh, A::Rhd, A::Rhd}},
      {Collective::Scan, {A::Rhd, A::Mesh, A::Mesh}},
      {Collective::Exscan, {A::Rhd, A::Mesh, A::Rhd}},
      {Collective::Exscan, {A::Mesh, A::Mesh, A::Mesh}},
  };
  std::vector<std::pair<std::uint32_t, std::uint32_t>> layouts = gridLayouts();
  for (std::uint32_t p : {1u, 2u, 5u, 8u, 13u, 64u}) {
    layouts.emplace_back(1, p);  // one server: level0 only
    layouts.emplace_back(p, 1);  // one rank a server: level1 only
  }
  std::vector<Layout> all;
  for (const auto& [servers, perServer] : layouts)
    all.push_back(Layout::servers(servers, perServer));
  // Three levels (pods x servers x ranks), and servers not in rank order.
  for (const auto& [pods, servers, perServer] :
       std::vector<std::array<std::uint32_t, 3>>{{2, 2, 2}, {2, 3, 4}, {3, 2, 1}, {4, 4, 8}})
    all.push_back(Layout::pods(pods, servers, perServer));
  all.push_back(Layout::uneven({3, 3, 3}, true));
  all.push_back(Layout::uneven({4, 4}, true));
  int compared = 0, formulas = 0, unanswered = 0;
  for (const Layout& lay : all) {
    const std::uint32_t p = lay.ranks();
    const bool large = p > 256;
    for (const Case& c : cases)
      for (bool flatPlan : {false, true}) {
        PlanKey key = planKeyFor(lay, c.algs);
        const bool flat = levelsInUse(lay).size() <= 1;
        if (flatPlan) {
          if (flat) continue;  // the same schedules as the per-level plan's
          key.plan = flatIndex();
        }
        if (flat) {  // one level: that level's generator, where it has a formula
          const std::vector<int> used = levelsInUse(lay);
          const GeneratorSpec* g = findGenerator(
              c.algs[static_cast<std::size_t>(used.empty() ? 0 : used.back())], c.coll);
          if (!g || !g->scratch) continue;
        }
        const RankGenerator gen = composedGenerator(lay, key);
        const ScratchNeed need = scratchNeed(lay, key, gen);
        for (bool inPlace : {false, true})
          for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{3},
                                  std::uint64_t{5ull * p + 3}}) {
            const Problem pb = Problem::fromMpiCount(c.coll, p, n, inPlace,
                                                     c.coll == Collective::AllToAll ? 0 : p / 2);
            for (std::uint32_t r = 0; r < p; r += large ? 7 : 1) {
              const auto s = planOf(key).scratchOf(lay, key, pb, r);
              // Reduce over levels bounds a non-root whose phases need no scratch by its working
              // vector, Scratch[0, n).
              if (!s && c.coll == Collective::Reduce && !flat && !flatPlan && r != pb.root) {
                const auto b = planOf(key).scratchBound(lay, key, pb, r);
                ASSERT_TRUE(b) << lay.describe() << " rank " << r << " " << toString(pb);
                ASSERT_EQ(*b, pb.total()) << lay.describe() << " rank " << r << " " << toString(pb);
                ASSERT_LE(scratchCount(compose(lay, key, pb, r)), *b)
                    << lay.describe() << " rank " << r << " " << toString(pb);
                ++unanswered;
                continue;
              }
              ASSERT_EQ(planOf(key).scratchBound(lay, key, pb, r), s)
                  << lay.describe() << " rank " << r << " " << toString(pb);
              ASSERT_TRUE(s) << lay.describe() << " rank " << r << " flat plan " << flatPlan << " "
                             << toString(pb);
              ASSERT_EQ(*s, scratchCount(compose(lay, key, pb, r)))
                  << lay.describe() << " rank " << r << " " << toString(pb);
              ++formulas;
            }
            if (p > 64) continue;
            ASSERT_EQ(need(pb), scratchOfEveryRank(gen, pb))
                << lay.describe() << " " << toString(pb);
            ++compared;
          }
      }
  }
  EXPECT_GT(formulas, 20000);
  EXPECT_LT(unanswered, formulas / 20);
  EXPECT_GT(compared, 1000);
}

// The tree plan's Broadcast (plan_tree.cpp: the whole vector level by level, outer first) against
// every rank's composed schedule, every root, two and three levels, and scratchNeed through it
// (issue 14: 2x2048's small Broadcasts, fullmesh_oneshot inside, built 4096 schedules per chunk
// tried). Every Broadcast generator uses no scratch today, so the formula's answers are 0; the
// comparisons hold it there should one start to, and it must answer every symmetric layout.
TEST(TreeScratch, EqualsTheComposedScheduleOfEveryRank) {
  using A = Algorithm;
  const std::vector<LevelAlgorithms> cases{{A::MeshOneShot, A::Ring, A::Rhd},
                                           {A::Mesh, A::Rhd, A::NHR},
                                           {A::NB, A::MeshOneShot, A::Ring},
                                           {A::Rhd, A::NB, A::MeshOneShot}};
  std::vector<Layout> all{Layout::servers(2, 2),  Layout::servers(2, 8), Layout::servers(3, 5),
                          Layout::servers(8, 1),  Layout::servers(1, 8), Layout::servers(16, 4),
                          Layout::servers(2, 64), Layout::pods(2, 2, 2), Layout::pods(2, 3, 4),
                          Layout::pods(3, 2, 1),  Layout::pods(4, 4, 8), Layout::pods(2, 2, 16)};
  const std::uint8_t tree = planIndex("tree");
  int compared = 0, needs = 0;
  for (const Layout& lay : all) {
    const std::uint32_t p = lay.ranks();
    for (const LevelAlgorithms& algs : cases) {
      PlanKey key = planKeyFor(lay, algs);
      key.plan = tree;
      const RankGenerator gen = composedGenerator(lay, key);
      const ScratchNeed need = scratchNeed(lay, key, gen);
      for (std::uint32_t root = 0; root<p; root += p> 64 ? 5 : 1)
        for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{5ull * p + 3}}) {
          const Problem pb = Problem::fromMpiCount(Collective::Broadcast, p, n, true, root);
          for (std::uint32_t r = 0; r < p; ++r) {
            const auto s = planOf(key).scratchOf(lay, key, pb, r);
            ASSERT_TRUE(s) << lay.describe() << " rank " << r << " " << toString(pb);
            ASSERT_EQ(*s, scratchCount(compose(lay, key, pb, r)))
                << lay.describe() << " rank " << r << " " << toString(pb);
            ++compared;
          }
          if (root % 3 != 0) continue;
          ASSERT_EQ(need(pb), scratchOfEveryRank(gen, pb)) << lay.describe() << " " << toString(pb);
          ++needs;
        }
    }
  }
  // Servers of unequal size run composeLevels: no formula, their schedules are built.
  const Layout uneven = Layout::uneven({3, 5}, true);
  PlanKey key = planKeyFor(uneven, cases.front());
  key.plan = tree;
  EXPECT_FALSE(planOf(key).scratchOf(uneven, key, Problem::broadcast(8, 9, 0), 0));
  EXPECT_GT(compared, 20000);
  EXPECT_GT(needs, 500);
}

// Reduce over levels: with its non-roots' bounds (Plan::scratchBound) chunk sizing builds a
// schedule only where a bound passes what the other edge ranks need, and must still find the
// largest scratch and cut the same chunks as from every rank's built schedule. One server (the
// generator's formula), S x 2, S x 8 and three levels, every root; a few of the larger layouts'.
TEST(LevelsScratch, ReduceChunkSizingEqualsTheBuiltSchedules) {
  using A = Algorithm;
  const std::vector<LevelAlgorithms> cases{
      {A::Mesh, A::NHR, A::Rhd}, {A::Mesh, A::NB, A::NB},     {A::Ring, A::NB, A::NB},
      {A::NB, A::NHR, A::NHR},   {A::Mesh, A::Mesh, A::Mesh}, {A::Mesh, A::Ring, A::Ring}};
  std::vector<Layout> layouts{Layout::servers(1, 8),  Layout::servers(1, 13), Layout::servers(3, 2),
                              Layout::servers(16, 2), Layout::servers(2, 8),  Layout::servers(5, 8),
                              Layout::pods(2, 2, 2),  Layout::pods(2, 3, 4),  Layout::pods(3, 2, 2),
                              Layout::pods(4, 4, 8)};
  int compared = 0, chunked = 0, deferred = 0, built = 0;  // deferred: bounded ranks
  for (const Layout& lay : layouts) {
    const std::uint32_t p = lay.ranks();
    std::vector<std::uint32_t> roots;
    for (std::uint32_t root = 0; root<p; root += p> 40 ? 13 : 1) roots.push_back(root);
    roots.push_back(p - 1);
    for (const LevelAlgorithms& algs : cases) {
      const PlanKey key = planKeyFor(lay, algs);
      const RankGenerator gen = composedGenerator(lay, key);
      // The reference: every rank's schedule built.
      const ScratchNeed every = [&](const Problem& q) { return scratchOfEveryRank(gen, q); };
      // Schedules chunk sizing builds for ranks it has a bound of.
      const RankGenerator counted = [&](const Problem& q, std::uint32_t r) {
        if (!planOf(key).scratchOf(lay, key, q, r) && planOf(key).scratchBound(lay, key, q, r))
          ++built;
        return gen(q, r);
      };
      const ScratchNeed need = scratchNeed(lay, key, counted);
      for (std::uint32_t root : roots)
        for (std::uint64_t n :
             {std::uint64_t{3}, std::uint64_t{5ull * p + 3}, std::uint64_t{64ull * p + 7}}) {
          const Problem pb = Problem::fromMpiCount(Collective::Reduce, p, n, false, root);
          for (std::uint32_t r = 0; r < p; ++r)
            if (!planOf(key).scratchOf(lay, key, pb, r) &&
                planOf(key).scratchBound(lay, key, pb, r))
              ++deferred;
          const std::uint64_t whole = every(pb);
          ASSERT_EQ(need(pb), whole) << lay.describe() << " " << toString(pb);
          ++compared;
          for (std::uint64_t budget : {whole / 2, whole / 5}) {
            if (budget == 0) continue;
            const std::uint64_t c = engineChunkSize(lay, key, pb, false, budget);
            ASSERT_EQ(c, chunkSizeFor(pb, budget, every))
                << lay.describe() << " budget " << budget << " " << toString(pb);
            if (c == 0) continue;
            const Problem first = firstChunkProblem(pb, c);
            ASSERT_EQ(need(first), every(first))
                << lay.describe() << " chunk " << c << " " << toString(pb);
            ++chunked;
          }
        }
    }
  }
  EXPECT_GT(compared, 500);
  EXPECT_GT(chunked, 500);
  // The bounds stand in for most of the schedules they would have built.
  EXPECT_GT(deferred, 0);
  EXPECT_LT(built * 4, deferred) << built << " built for " << deferred << " bounded";
}

}  // namespace
}  // namespace hccl::algo
