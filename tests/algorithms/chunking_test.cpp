// Chunk plans cover every user element exactly once, agree with their chunk Problems, and keep
// scratch within the budget.
#include "algorithms/chunking.hpp"

#include <gtest/gtest.h>

#include <map>

#include "algorithms/generators.hpp"

namespace hccl::algo {
namespace {

// How often each user element of a buffer is bound, over all chunks.
std::map<std::uint64_t, int> coverage(const std::vector<Chunk>& chunks, bool input) {
  std::map<std::uint64_t, int> hits;
  for (const Chunk& c : chunks) {
    std::uint64_t expectLogical = 0;
    for (const Segment& s : input ? c.input : c.output) {
      EXPECT_EQ(s.logical, expectLogical) << "maps are sorted and gap-free";
      expectLogical += s.count;
      for (std::uint64_t e = 0; e < s.count; ++e) ++hits[s.physical + e];
    }
  }
  return hits;
}

void expectEachOnce(const std::map<std::uint64_t, int>& hits, std::uint64_t n) {
  ASSERT_EQ(hits.size(), n);
  for (const auto& [elem, times] : hits) {
    EXPECT_LT(elem, n);
    EXPECT_EQ(times, 1) << "element " << elem;
  }
}

TEST(Chunking, AllReduceContiguous) {
  const Problem pb = Problem::allReduce(4, 103);
  const auto chunks = planChunks(pb, 2, 10);
  ASSERT_EQ(chunks.size(), 11u);
  EXPECT_EQ(chunks.back().problem.total(), 3u);
  expectEachOnce(coverage(chunks, true), 103);
  expectEachOnce(coverage(chunks, false), 103);
  for (const Chunk& c : chunks) EXPECT_EQ(c.input.front().count, c.problem.total());
}

TEST(Chunking, NoLimitOrSmallCallIsOneChunk) {
  const Problem pb = Problem::reduceScatter(3, 5);
  EXPECT_EQ(planChunks(pb, 0, 0).size(), 1u);
  EXPECT_EQ(planChunks(pb, 0, 5).size(), 1u);
  EXPECT_EQ(planChunks(pb, 0, 4).size(), 2u);
}

TEST(Chunking, ReduceScatterTakesEveryBlocksSlice) {
  const std::vector<std::uint64_t> counts{7, 0, 12, 5};
  Problem pb = Problem::reduceScatter(4, 0);
  pb.blocks = Blocks::of(counts);
  for (std::uint32_t r = 0; r < 4; ++r) {
    const auto chunks = planChunks(pb, r, 4);
    ASSERT_EQ(chunks.size(), 3u);  // the largest block (12) needs three chunks of 4
    expectEachOnce(coverage(chunks, true), 24);
    const auto out = coverage(chunks, false);
    expectEachOnce(out, counts[r]);
    for (const Chunk& c : chunks) {
      std::uint64_t in = 0;
      for (const Segment& s : c.input) in += s.count;
      EXPECT_EQ(in, c.problem.total());
    }
  }
}

TEST(Chunking, InPlaceReduceScatterEqualBlocks) {
  const Problem pb = Problem::reduceScatter(3, 10, true);
  const auto chunks = planChunks(pb, 1, 4);
  ASSERT_EQ(chunks.size(), 3u);
  expectEachOnce(coverage(chunks, false), 30);
  // The chunk's result (logical [0, c)) lands where the caller wants it: user [start, start+c).
  EXPECT_EQ(chunks[1].output.front().physical, 4u);
  EXPECT_EQ(chunks[1].output.front().logical, 0u);
}

TEST(Chunking, InPlaceReduceScatterUnequalBlocksIsNotSplit) {
  const std::vector<std::uint64_t> counts{1, 9};
  Problem pb = Problem::reduceScatter(2, 0, true);
  pb.blocks = Blocks::of(counts);
  EXPECT_EQ(planChunks(pb, 1, 2).size(), 1u);
}

TEST(Chunking, AllGatherBindsOutputBlocks) {
  const std::vector<std::uint64_t> counts{3, 8, 1};
  Problem pb = Problem::allGather(3, 0);
  pb.blocks = Blocks::of(counts);
  const auto chunks = planChunks(pb, 1, 3);
  ASSERT_EQ(chunks.size(), 3u);
  expectEachOnce(coverage(chunks, true), 8);
  expectEachOnce(coverage(chunks, false), 12);
}

TEST(Chunking, RootedCollectivesHaveOutputOnlyAtTheRoot) {
  const Problem pb = Problem::reduce(4, 50, 3);
  EXPECT_TRUE(planChunks(pb, 0, 20).front().output.empty());
  EXPECT_FALSE(planChunks(pb, 3, 20).front().output.empty());
}

TEST(Chunking, ChunkSizeKeepsScratchWithinBudget) {
  for (const GeneratorSpec& spec : generatorSpecs()) {
    for (std::uint32_t p : {2u, 5u, 8u}) {
      Problem pb{spec.coll, p, 0, false, Blocks::uniform(1000, p)};
      if (spec.coll == Collective::AllReduce || spec.coll == Collective::Broadcast ||
          spec.coll == Collective::Reduce || spec.coll == Collective::Scan ||
          spec.coll == Collective::Exscan)
        pb.blocks = Blocks::even(1000, p);
      if (spec.coll == Collective::Broadcast) pb.inPlace = true;
      // AllToAllV and Barrier run unchunked; out of place they need no scratch at all.
      if (spec.coll == Collective::AllToAllV || spec.coll == Collective::Barrier)
        pb = Problem::fromMpiCount(spec.coll, p, 1000, false);
      const std::uint64_t budget = 300;
      const std::uint64_t c = chunkSizeFor(pb, budget, spec.generate);
      for (const Chunk& ch : planChunks(pb, 0, c))
        for (std::uint32_t r = 0; r < p; ++r)
          EXPECT_LE(scratchCount(spec.generate(ch.problem, r)), budget)
              << hcclName(spec.algorithm) << " " << name(spec.coll) << " p=" << p << " c=" << c;
    }
  }
}

TEST(Chunking, NoChunkingWhenScratchIsNotNeeded) {
  // Out-of-place ring allreduce works in the output buffer alone.
  EXPECT_EQ(chunkSizeFor(Problem::allReduce(4, 1 << 20), 16, ringAllReduce), 0u);
  EXPECT_GT(chunkSizeFor(Problem::allReduce(4, 1 << 20, true), 1024, ringAllReduce), 0u);
}

}  // namespace
}  // namespace hccl::algo

namespace hccl::algo {
namespace {

// Scatter, Gather and AllToAll chunk block by block: chunk j of every block, bound to the
// block's place in user memory.
TEST(Chunking, RootedAndAllToAllChunkPerBlock) {
  const Problem sc = Problem::scatter(3, 10, 1);
  const std::vector<Chunk> root = planChunks(sc, 1, 4);
  ASSERT_EQ(root.size(), 3u);
  EXPECT_EQ(root[1].problem, Problem::scatter(3, 4, 1));
  EXPECT_EQ(root[1].input, (BufferMap{{0, 4, 4}, {4, 14, 4}, {8, 24, 4}}));
  EXPECT_EQ(root[1].output, (BufferMap{{0, 4, 4}}));
  EXPECT_EQ(root[2].problem, Problem::scatter(3, 2, 1));
  const std::vector<Chunk> leaf = planChunks(sc, 0, 4);
  EXPECT_TRUE(leaf[2].input.empty());
  EXPECT_EQ(leaf[2].output, (BufferMap{{0, 8, 2}}));

  const Problem g = Problem::gather(3, 10, 0, true);
  const std::vector<Chunk> groot = planChunks(g, 0, 4);
  EXPECT_TRUE(groot[1].input.empty());  // in place: the root's block is already in Output
  EXPECT_EQ(groot[1].output, (BufferMap{{0, 4, 4}, {4, 14, 4}, {8, 24, 4}}));
  EXPECT_TRUE(planChunks(g, 2, 4)[1].output.empty());  // non-roots have no Output

  const Problem a = Problem::allToAll(2, 6);
  const std::vector<Chunk> ac = planChunks(a, 1, 4);
  ASSERT_EQ(ac.size(), 2u);
  EXPECT_EQ(ac[1].input, (BufferMap{{0, 4, 2}, {2, 10, 2}}));
  EXPECT_EQ(ac[1].output, ac[1].input);
}

// Rank-local problems cannot agree on chunk counts across ranks: one chunk, always.
TEST(Chunking, RankLocalProblemsRunWhole) {
  const Problem v = Problem::gatherVNonRoot(4, 0, 2, 1000);
  EXPECT_EQ(chunkSizeFor(v, 1, meshGather), 0u);
  const std::vector<Chunk> c = planChunks(v, 2, 10);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].input, (BufferMap{{0, 0, 1000}}));
  EXPECT_TRUE(c[0].output.empty());
  const std::vector<std::uint64_t> m(9, 5);
  EXPECT_EQ(planChunks(Problem::allToAllV(3, m), 0, 2).size(), 1u);
}

}  // namespace
}  // namespace hccl::algo
