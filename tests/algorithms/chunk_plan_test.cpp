// ChunkPlan (chunks cut lazily, equal chunks sharing one Problem) against the eager cut it
// replaced, chunk by chunk, for a spread of shapes; and its memory: O(p) once, not per chunk.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "algorithms/chunking.hpp"

// Bytes allocated by this process (gtest's too: tests read differences around the code they
// measure, on one thread).
#include "tests/alloc_counter.hpp"

namespace hccl::algo {
namespace {

// The eager cut the engine used before ChunkPlan (every chunk's Problem and maps built up
// front), kept verbatim as the reference.
bool blockwise(Collective c) {
  return c == Collective::ReduceScatter || c == Collective::AllGather || c == Collective::Scatter ||
         c == Collective::Gather || c == Collective::AllToAll;
}
bool unchunked(const Problem& pb) {
  return pb.rankLocal() || pb.coll == Collective::AllToAllV || pb.coll == Collective::Barrier;
}
std::uint64_t extent(const Problem& pb) {
  return blockwise(pb.coll) ? pb.blocks.largest() : pb.total();
}
BufferMap identity(std::uint64_t count) {
  if (count == 0) return {};
  return {Segment{0, 0, count}};
}
BufferMap perBlock(const Problem& whole, const Blocks& chunk, std::uint64_t start) {
  BufferMap m;
  for (std::uint32_t i = 0; i < whole.ranks; ++i)
    if (chunk.count(i) > 0)
      m.push_back({chunk.offset(i), whole.blocks.offset(i) + start, chunk.count(i)});
  return m;
}

std::vector<Chunk> eagerChunks(const Problem& pb, std::uint32_t rank, std::uint64_t chunkElems) {
  if (unchunked(pb))
    return {Chunk{pb, identity(pb.bufferCount(Buf::Input, rank)),
                  identity(pb.bufferCount(Buf::Output, rank))}};
  const std::uint64_t m = extent(pb);
  const bool unsplittable =
      pb.coll == Collective::ReduceScatter && pb.inPlace && !pb.blocks.isUniform();
  if (chunkElems == 0 || chunkElems >= m || unsplittable) {
    return {Chunk{pb, identity(pb.bufferCount(Buf::Input, rank)),
                  identity(pb.bufferCount(Buf::Output, rank))}};
  }
  std::vector<Chunk> out;
  for (std::uint64_t start = 0; start < m; start += chunkElems) {
    Chunk c{pb, {}, {}};
    if (!blockwise(pb.coll)) {
      const std::uint64_t len = std::min(chunkElems, m - start);
      c.problem.blocks = Blocks::even(len, pb.ranks);
      if (pb.bufferCount(Buf::Input, rank) > 0) c.input = {Segment{0, start, len}};
      if (pb.bufferCount(Buf::Output, rank) > 0) c.output = {Segment{0, start, len}};
      out.push_back(std::move(c));
      continue;
    }
    std::vector<std::uint64_t> counts(pb.ranks);
    for (std::uint32_t i = 0; i < pb.ranks; ++i) {
      const std::uint64_t ci = pb.blocks.count(i);
      counts[i] = ci > start ? std::min(chunkElems, ci - start) : 0;
    }
    c.problem.blocks = Blocks::of(counts);
    const std::uint64_t mine = counts[rank];
    if (pb.coll == Collective::ReduceScatter) {
      if (!pb.inPlace) {
        c.input = perBlock(pb, c.problem.blocks, start);
        if (mine > 0) c.output = {Segment{0, start, mine}};
      } else {
        c.output = perBlock(pb, c.problem.blocks, start);
      }
    } else if (pb.coll == Collective::AllGather) {
      if (!pb.inPlace && mine > 0) c.input = {Segment{0, start, mine}};
      c.output = perBlock(pb, c.problem.blocks, start);
    } else if (pb.coll == Collective::Scatter) {
      const bool root = rank == pb.root;
      if (root && !pb.inPlace) c.input = perBlock(pb, c.problem.blocks, start);
      if (root && pb.inPlace)
        c.output = perBlock(pb, c.problem.blocks, start);
      else if (mine > 0)
        c.output = {Segment{0, start, mine}};
    } else if (pb.coll == Collective::Gather) {
      const bool root = rank == pb.root;
      if (!(root && pb.inPlace) && mine > 0) c.input = {Segment{0, start, mine}};
      if (root) c.output = perBlock(pb, c.problem.blocks, start);
    } else {
      if (!pb.inPlace) c.input = perBlock(pb, c.problem.blocks, start);
      c.output = perBlock(pb, c.problem.blocks, start);
    }
    out.push_back(std::move(c));
  }
  return out;
}

// Every rank's lazy chunks equal the eager ones; maps made into reused buffers equal them too;
// equal neighbours share a run and neighbouring runs differ (the runs are as few as can be).
void expectSameAsEager(const Problem& pb, std::uint64_t chunkElems, const std::string& what) {
  for (std::uint32_t r = 0; r < pb.ranks; ++r) {
    const std::vector<Chunk> eager = eagerChunks(pb, r, chunkElems);
    const ChunkPlan lazy(pb, r, chunkElems);
    ASSERT_EQ(lazy.size(), eager.size()) << what << " rank " << r;
    BufferMap in, out;
    for (std::size_t j = 0; j < eager.size(); ++j) {
      lazy.maps(j, in, out);
      EXPECT_EQ(lazy.problem(j), eager[j].problem) << what << " rank " << r << " chunk " << j;
      EXPECT_EQ(in, eager[j].input) << what << " rank " << r << " chunk " << j;
      EXPECT_EQ(out, eager[j].output) << what << " rank " << r << " chunk " << j;
      EXPECT_EQ(lazy.materialise(j).problem, eager[j].problem);
      if (j > 0 && lazy.runOf(j) != lazy.runOf(j - 1)) {
        EXPECT_NE(eager[j].problem, eager[j - 1].problem) << what << " chunk " << j;
      }
    }
    for (std::size_t k = 1; k < lazy.runs(); ++k)
      EXPECT_NE(lazy.runProblem(k), lazy.runProblem(k - 1)) << what;
  }
}

// Block counts: equal, with zeros, uneven (seeded), one large among small ones.
std::vector<std::vector<std::uint64_t>> countSpread(std::uint32_t p, std::mt19937& rng) {
  std::vector<std::vector<std::uint64_t>> out;
  for (const std::uint64_t c : {0u, 1u, 7u, 12u}) out.emplace_back(p, c);
  std::uniform_int_distribution<std::uint64_t> d(0, 17);
  for (int k = 0; k < 3; ++k) {
    std::vector<std::uint64_t> v(p);
    for (auto& c : v) c = d(rng);
    if (k == 0 && p > 1) v[0] = 0;
    out.push_back(v);
  }
  std::vector<std::uint64_t> spike(p, 2);
  spike[p - 1] = 31;
  out.push_back(spike);
  return out;
}

TEST(ChunkPlan, SameAsEagerCutForEveryShape) {
  std::mt19937 rng(14);
  const std::uint64_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 13, 1000};
  for (const std::uint32_t p : {1u, 2u, 3u, 5u, 8u}) {
    for (const std::vector<std::uint64_t>& counts : countSpread(p, rng)) {
      const bool uniform = std::all_of(counts.begin(), counts.end(),
                                       [&](std::uint64_t c) { return c == counts[0]; });
      std::uint64_t sum = 0;
      for (const std::uint64_t c : counts) sum += c;
      for (const bool inPlace : {false, true}) {
        for (const std::uint32_t root : {0u, p - 1}) {
          std::vector<Problem> pbs;
          for (const Collective c : {Collective::ReduceScatter, Collective::AllGather,
                                     Collective::Scatter, Collective::Gather}) {
            Problem pb{c, p, root, inPlace, Blocks::of(counts)};
            pbs.push_back(pb);
          }
          pbs.push_back(Problem::allGatherV(counts, inPlace));
          pbs.push_back(Problem::gatherV(counts, root, inPlace));
          pbs.push_back(Problem::scatterV(counts, root, inPlace));
          if (uniform) {
            pbs.push_back(Problem::allToAll(p, counts[0], inPlace));
            pbs.push_back(Problem::reduceScatter(p, counts[0], inPlace));
          }
          pbs.push_back(Problem::allReduce(p, sum, inPlace));
          pbs.push_back(Problem::broadcast(p, sum, root));
          pbs.push_back(Problem::reduce(p, sum, root, inPlace));
          pbs.push_back(Problem::scan(p, sum, inPlace));
          pbs.push_back(Problem::exscan(p, sum, inPlace));
          pbs.push_back(Problem::barrier(p));
          // AllToAllV runs whole (symmetric counts: valid in place too).
          std::vector<std::uint64_t> pairs(std::size_t(p) * p);
          for (std::size_t k = 0; k < pairs.size(); ++k) pairs[k] = counts[k / p] + counts[k % p];
          pbs.push_back(Problem::allToAllV(p, pairs, inPlace));
          for (const Problem& pb : pbs)
            for (const std::uint64_t c : sizes) {
              const std::string what =
                  std::string(name(pb.coll)) + " p=" + std::to_string(p) +
                  " root=" + std::to_string(root) + (inPlace ? " in place" : "") +
                  " chunk=" + std::to_string(c) + " counts[0]=" + std::to_string(counts[0]);
              expectSameAsEager(pb, c, what);
            }
        }
      }
    }
  }
}

// Rank-local views (a V call's non-roots) run whole: their ranks could not agree on chunks.
TEST(ChunkPlan, RankLocalViewsRunWhole) {
  const std::vector<std::uint64_t> counts{4, 0, 9, 2};
  for (const std::uint32_t r : {1u, 2u, 3u}) {
    for (const Problem& pb :
         {Problem::gatherV(counts, 0).localView(r), Problem::scatterV(counts, 0).localView(r)}) {
      ASSERT_TRUE(pb.rankLocal());
      const std::vector<Chunk> eager = eagerChunks(pb, r, 2);
      const ChunkPlan lazy(pb, r, 2);
      ASSERT_EQ(lazy.size(), 1u);
      const Chunk c = lazy.materialise(0);
      EXPECT_EQ(c.problem, eager[0].problem);
      EXPECT_EQ(c.input, eager[0].input);
      EXPECT_EQ(c.output, eager[0].output);
    }
  }
}

// Equal blocks: one run (or two, with a shorter last chunk), however many chunks.
TEST(ChunkPlan, EqualBlocksShareOneProblem) {
  const ChunkPlan even(Problem::reduceScatter(16, 1000), 3, 10);
  EXPECT_EQ(even.size(), 100u);
  EXPECT_EQ(even.runs(), 1u);
  const ChunkPlan tail(Problem::reduceScatter(16, 1005), 3, 10);
  EXPECT_EQ(tail.size(), 101u);
  EXPECT_EQ(tail.runs(), 2u);
  EXPECT_EQ(tail.runOf(99), 0u);
  EXPECT_EQ(tail.runOf(100), 1u);
  EXPECT_EQ(tail.problem(100), Problem::reduceScatter(16, 5));
}

struct Footprint {
  std::uint64_t cut = 0;   // bytes allocated to cut the call
  std::uint64_t walk = 0;  // bytes allocated making every chunk's maps, after the first's
};

Footprint footprint(const Problem& pb, std::uint32_t rank, std::uint64_t chunkElems) {
  Footprint f;
  const std::uint64_t a0 = hccl::test::gAllocBytes;
  const ChunkPlan plan(pb, rank, chunkElems);
  f.cut = hccl::test::gAllocBytes - a0;
  BufferMap in, out;
  plan.maps(0, in, out);
  const std::uint64_t a1 = hccl::test::gAllocBytes;
  for (std::size_t j = 0; j < plan.size(); ++j) plan.maps(j, in, out);
  f.walk = hccl::test::gAllocBytes - a1;
  return f;
}

// Cutting costs O(p) once: the same bytes for 10 chunks as for 1000, about 64 times more at
// p = 4096 than at 64; walking the chunks allocates nothing. (The eager cut allocated each
// chunk's counts, offsets and maps: 1000 chunks x 4096 ranks x 40 bytes = 164 MB.)
TEST(ChunkPlan, MemoryIsPerRankOnceNotPerChunk) {
  for (const Collective c : {Collective::ReduceScatter, Collective::AllGather, Collective::Scatter,
                             Collective::Gather, Collective::AllToAll}) {
    for (const std::uint32_t rank : {0u, 63u}) {
      const auto at = [&](std::uint32_t p, std::uint64_t chunkElems) {
        const Problem pb{c, p, 0, false, Blocks::uniform(10000, p)};
        return footprint(pb, rank, chunkElems);
      };
      const Footprint small = at(64, 10), few = at(4096, 1000), many = at(4096, 10);
      const std::string what = std::string(name(c)) + " rank " + std::to_string(rank);
      EXPECT_EQ(many.cut, few.cut) << what;
      EXPECT_EQ(many.walk, 0u) << what;
      EXPECT_LE(many.cut, 64 * small.cut + 1024) << what;
      EXPECT_LE(many.cut, 6 * 8 * 4096) << what << ": a few words a rank";
    }
  }
  // V counts: one run per place where a block ends, each O(p).
  std::vector<std::uint64_t> counts(4096, 10000);
  counts[7] = 5;
  const Footprint v = footprint(Problem::allGatherV(counts), 1, 10);
  EXPECT_LE(v.cut, 12 * 8 * 4096);
  EXPECT_EQ(v.walk, 0u);
}

// Every count distinct (hccl_info --distinct's spread): a run wherever a block ends, thousands
// of them, each kept as its first chunk only. A Problem per run was 8,191 x 4096 counts and
// offsets (0.5 GB); the cut is now the call's blocks and a word a run.
TEST(ChunkPlan, DistinctCountsCostPerRankNotPerRun) {
  constexpr std::uint32_t p = 4096;
  constexpr std::uint64_t count = 1 << 16;
  std::vector<std::uint64_t> counts(p);
  for (std::uint32_t i = 0; i < p; ++i) counts[i] = 2 * count * (i + 1) / (p + 1);
  for (const Problem& pb : {Problem::allGatherV(counts), [&] {
                              Problem rs = Problem::reduceScatter(p, 0);
                              rs.blocks = Blocks::of(counts);
                              return rs;
                            }()}) {
    const std::uint64_t a0 = hccl::test::gAllocBytes;
    const ChunkPlan plan(pb, 7, 16);
    const std::uint64_t cut = hccl::test::gAllocBytes - a0;
    EXPECT_GE(plan.runs(), p) << name(pb.coll);  // 7,936 here
    EXPECT_LE(cut, 8 * 8 * p + 8 * 2 * 2 * p) << name(pb.coll) << ": the blocks and a word a run";
    // A late run's Problem, made on demand, is that of the chunk cut eagerly.
    const std::size_t j = plan.size() - 3;
    std::vector<std::uint64_t> expect(p);
    for (std::uint32_t i = 0; i < p; ++i)
      expect[i] = counts[i] > j * 16 ? std::min<std::uint64_t>(16, counts[i] - j * 16) : 0;
    EXPECT_EQ(plan.problem(j).blocks, Blocks::of(expect)) << name(pb.coll);
  }
}

}  // namespace
}  // namespace hccl::algo
