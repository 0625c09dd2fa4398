// Every generator, every rank count 1..64, the counts that break naive slicing, in and out of
// place: the symbolic verifier must find nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "algorithms/verifier.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

using test::problemFor;

class EveryGenerator : public ::testing::TestWithParam<GeneratorSpec> {
 protected:
  void expectClean(const Problem& pb) {
    const GeneratorSpec& spec = GetParam();
    const Schedule s = buildSchedule(spec.generate, pb);
    const auto issues = verify(s, {.requireRankOrder = spec.rankOrdered});
    EXPECT_TRUE(issues.empty()) << toString(pb) << "\n" << describe(issues);
  }
};

TEST_P(EveryGenerator, AllRankCountsAndCounts) {
  const GeneratorSpec& spec = GetParam();
  for (std::uint32_t p = 1; p <= 64; ++p) {
    for (std::uint64_t n :
         {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{p - 1}, std::uint64_t{p},
          std::uint64_t{p + 1}, std::uint64_t{1000}, std::uint64_t{100003}}) {
      for (bool inPlace : {false, true}) {
        if (inPlace && !test::hasInPlaceVariant(spec.coll)) continue;
        // Rooted collectives: a root that moves with p, so the sweep covers many positions.
        Problem pb = problemFor(spec.coll, p, n, inPlace, (p * 7 + 3) % p);
        expectClean(pb);
        if (pb.coll == Collective::ReduceScatter && inPlace && n < 1000) {
          pb.resultInBlock = true;  // the variant hierarchical AllReduce composes with
          expectClean(pb);
        }
        if (HasFailure()) return;  // one clear failure beats a thousand echoes
      }
    }
  }
}

// Thousands of ranks at small counts, through the streamed check (verifyGenerated: a window of
// each rank's steps, empty steps pruned; a ring of 4096 ranks and 7 elements is 8190 steps per
// rank, nearly all empty). The quick tier (CI) runs p <= 256 at one small count (96 and 255 only
// where the count is per rank, so the total grows with p). The full tier adds 1000, 1024 and
// 4096 ranks, both placements, counts 0, 1 and 7 (0 and 1 per rank), and for the blockwise
// collectives that take uneven blocks, blocks of 0, 1, 2 elements by rank (the quick tier too, at
// 96 ranks); it is run by hand, one
// generator at a time or all of them (hours on two cores, see tests/algorithms/README.md):
//   COLL_HCCL_VERIFY_FULL=1 algorithms_sweep_test --gtest_filter='*ThousandsOfRanks/ring_*'
TEST_P(EveryGenerator, ThousandsOfRanks) {
  const GeneratorSpec& spec = GetParam();
  const bool full = std::getenv("COLL_HCCL_VERIFY_FULL") != nullptr;
  // Count as MPI gives it: per rank (or pair) for these, whose total grows with p.
  const bool perRank = spec.coll == Collective::ReduceScatter ||
                       spec.coll == Collective::AllGather || spec.coll == Collective::Scatter ||
                       spec.coll == Collective::Gather || spec.coll == Collective::AllToAll ||
                       spec.coll == Collective::AllToAllV;
  for (std::uint32_t p : {96u, 128u, 255u, 256u, 1000u, 1024u, 4096u}) {
    if (!full && (p > 256 || (perRank && p != 96 && p != 255))) continue;
    std::vector<std::uint64_t> counts;
    if (full)
      counts = perRank ? std::vector<std::uint64_t>{0, 1} : std::vector<std::uint64_t>{0, 1, 7};
    else
      counts = {perRank ? 1u : 7u};
    for (std::uint64_t n : counts)
      for (bool inPlace : {false, true}) {
        if (inPlace && (!test::hasInPlaceVariant(spec.coll) || !full)) continue;
        const Problem pb = problemFor(spec.coll, p, n, inPlace, (p * 7 + 3) % p);
        const auto issues =
            verifyGenerated(pb, spec.generate, {.requireRankOrder = spec.rankOrdered});
        EXPECT_TRUE(issues.empty()) << toString(pb) << "\n" << describe(issues);
        if (HasFailure()) return;
      }
    // Uneven blocks (the V forms; UnevenBlocks goes to 24 ranks): 0, 1, 2 elements by rank, so
    // every third block is empty and no two neighbours are equal. The quick tier at 96 ranks.
    if ((!full && p != 96) || !spec.unevenBlocks || !perRank || spec.coll == Collective::AllToAll ||
        spec.coll == Collective::AllToAllV)
      continue;
    std::vector<std::uint64_t> sizes(p);
    for (std::uint32_t r = 0; r < p; ++r) sizes[r] = r % 3;
    for (bool inPlace : {false, true}) {
      Problem pb = problemFor(spec.coll, p, 0, inPlace, (p * 7 + 3) % p);
      pb.blocks = Blocks::of(sizes);
      const auto issues =
          verifyGenerated(pb, spec.generate, {.requireRankOrder = spec.rankOrdered});
      EXPECT_TRUE(issues.empty()) << toString(pb) << " blocks r % 3\n" << describe(issues);
      if (HasFailure()) return;
    }
  }
}

// The streamed check (verifyGenerated) with the smallest window it keeps (64 transfers and ops
// per rank), so that long schedules are generated again several times as the replay moves on,
// and rank sets dropped as soon as garbage outgrows what is held (their ids reused): clean
// wherever the held check is, rooted at a rank that moves with p.
TEST_P(EveryGenerator, StreamedInSmallWindows) {
  const GeneratorSpec& spec = GetParam();
  for (std::uint32_t p : {1u, 2u, 7u, 64u, 96u})
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{p + 1}})
      for (bool inPlace : {false, true}) {
        if (inPlace && !test::hasInPlaceVariant(spec.coll)) continue;
        const Problem pb = problemFor(spec.coll, p, n, inPlace, (p * 7 + 3) % p);
        const auto issues = verifyGenerated(
            pb, spec.generate, {.requireRankOrder = spec.rankOrdered, .setGarbageBytes = 0}, 1);
        EXPECT_TRUE(issues.empty()) << toString(pb) << "\n" << describe(issues);
        if (HasFailure()) return;
      }
}

TEST_P(EveryGenerator, EveryRoot) {
  const GeneratorSpec& spec = GetParam();
  if (!rooted(spec.coll)) GTEST_SKIP();
  for (std::uint32_t p : {2u, 3u, 5u, 6u, 7u, 8u, 12u, 13u}) {
    for (std::uint32_t root = 0; root < p; ++root) {
      for (bool inPlace : {false, true}) {
        if (inPlace && !test::hasInPlaceVariant(spec.coll)) continue;
        expectClean(problemFor(spec.coll, p, 97, inPlace, root));
        if (HasFailure()) return;
      }
    }
  }
}

// Reduce (NHR's and NB's are a ReduceScatter then a Gather to the root): every root up to 16
// ranks and a spread of roots above, counts that leave blocks empty, uneven and prime.
TEST_P(EveryGenerator, ReduceEveryRootUpTo16AndASpreadAbove) {
  const GeneratorSpec& spec = GetParam();
  if (spec.coll != Collective::Reduce) GTEST_SKIP();
  for (std::uint32_t p = 1; p <= 64; ++p) {
    std::vector<std::uint32_t> roots;
    if (p <= 16)
      for (std::uint32_t r = 0; r < p; ++r) roots.push_back(r);
    else
      roots = {0, 1, p / 3, p / 2, p - 2, p - 1};
    for (std::uint32_t root : roots)
      for (std::uint64_t n : {std::uint64_t{p / 2}, std::uint64_t{2 * p + 3}})
        for (bool inPlace : {false, true}) {
          expectClean(problemFor(spec.coll, p, n, inPlace, root));
          if (HasFailure()) return;
        }
  }
}

// MPI_Reduce_scatter and the V variants: every rank may own a different number of elements,
// including none.
TEST_P(EveryGenerator, UnevenBlocks) {
  const GeneratorSpec& spec = GetParam();
  if (spec.coll != Collective::ReduceScatter && spec.coll != Collective::AllGather &&
      spec.coll != Collective::Scatter && spec.coll != Collective::Gather)
    GTEST_SKIP();
  if (!spec.unevenBlocks) GTEST_SKIP();
  std::mt19937 rng(42);
  for (std::uint32_t p = 1; p <= 24; ++p) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<std::uint64_t> counts(p);
      for (auto& c : counts) c = rng() % 4 == 0 ? 0 : rng() % 50;
      for (bool inPlace : {false, true}) {
        Problem pb = problemFor(spec.coll, p, 0, inPlace, static_cast<std::uint32_t>(trial) % p);
        pb.blocks = Blocks::of(counts);
        expectClean(pb);
        if (pb.coll == Collective::ReduceScatter && inPlace) {
          pb.resultInBlock = true;
          expectClean(pb);
        }
        if (HasFailure()) return;
      }
    }
  }
}

// A random per-pair count matrix (symmetric for in place), some pairs empty.
std::vector<std::uint64_t> randomPairs(std::mt19937& rng, std::uint32_t p, bool symmetric) {
  std::vector<std::uint64_t> m(std::size_t{p} * p);
  for (std::uint32_t i = 0; i < p; ++i)
    for (std::uint32_t j = symmetric ? i : 0; j < p; ++j) {
      const std::uint64_t c = rng() % 4 == 0 ? 0 : rng() % 40;
      m[i * p + j] = c;
      if (symmetric) m[j * p + i] = c;
    }
  return m;
}

// MPI_Alltoallv: every pair its own count.
TEST_P(EveryGenerator, UnevenPairs) {
  const GeneratorSpec& spec = GetParam();
  if (spec.coll != Collective::AllToAllV) GTEST_SKIP();
  std::mt19937 rng(11);
  for (std::uint32_t p = 1; p <= 24; ++p)
    for (int trial = 0; trial < 3; ++trial)
      for (bool inPlace : {false, true}) {
        expectClean(Problem::allToAllV(p, randomPairs(rng, p, inPlace), inPlace));
        if (HasFailure()) return;
      }
}

// What each rank knows (DESIGN-collectives.md): a generator that claims rank-local problems
// builds, from the rank's view alone, exactly the schedule it builds from the whole problem.
TEST_P(EveryGenerator, RankLocalViewGivesTheSameSchedule) {
  const GeneratorSpec& spec = GetParam();
  if (!spec.rankLocal) GTEST_SKIP();
  std::mt19937 rng(7);
  for (std::uint32_t p = 1; p <= 24; ++p) {
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<std::uint64_t> counts(p);
      for (auto& c : counts) c = rng() % 4 == 0 ? 0 : rng() % 50;
      for (bool inPlace : {false, true}) {
        Problem pb = problemFor(spec.coll, p, 0, inPlace, static_cast<std::uint32_t>(trial) % p);
        if (spec.coll == Collective::AllToAllV)
          pb = Problem::allToAllV(p, randomPairs(rng, p, inPlace), inPlace);
        else
          pb.blocks = Blocks::of(counts);
        const bool everyRank = spec.coll == Collective::AllToAllV;
        for (std::uint32_t r = 0; r < p; ++r) {
          const Problem view = pb.localView(r);
          EXPECT_EQ(view.rankLocal(), (everyRank || r != pb.root) && p > 1)
              << toString(pb) << " rank " << r;
          RankSchedule fromView;
          EXPECT_NO_THROW(fromView = spec.generate(view, r)) << toString(view) << " rank " << r;
          EXPECT_EQ(fromView, spec.generate(pb, r)) << toString(view) << " rank " << r;
        }
        expectClean(pb);
        if (HasFailure()) return;
      }
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<GeneratorSpec>& p) {
  return test::specName(p.param);
}
INSTANTIATE_TEST_SUITE_P(Generators, EveryGenerator, ::testing::ValuesIn(generatorSpecs()),
                         paramName);

}  // namespace
}  // namespace hccl::algo
