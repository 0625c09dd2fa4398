// The vocabulary of the collectives beyond AllReduce/ReduceScatter/AllGather: names, MPI counts,
// buffer layouts, the write contract, and the rank-local problems of the V forms.
#include <gtest/gtest.h>

#include <stdexcept>

#include "algorithms/generators.hpp"

namespace hccl::algo {
namespace {

using C = Collective;

TEST(Collective, EveryNameParsesBack) {
  for (int i = 0; i < kNumCollectives; ++i) {
    const auto c = static_cast<Collective>(i);
    EXPECT_EQ(parseCollective(name(c)), c) << name(c);
  }
  EXPECT_EQ(name(C::Gather), "gather");
  EXPECT_EQ(name(C::AllToAllV), "alltoallv");
  EXPECT_EQ(name(C::Barrier), "barrier");
  EXPECT_EQ(name(C::Scan), "scan");
  EXPECT_EQ(name(C::Exscan), "exscan");
  EXPECT_EQ(parseCollective("gatherv"), std::nullopt);  // GatherV is Gather with uneven blocks
  EXPECT_TRUE(reduces(C::Scan));
  EXPECT_TRUE(reduces(C::Exscan));
  EXPECT_FALSE(reduces(C::Gather));
  EXPECT_TRUE(rooted(C::Gather));
  EXPECT_FALSE(rooted(C::Barrier));
}

TEST(Problem, GatherLayouts) {
  const Problem g = Problem::gather(4, 3, 2);
  EXPECT_EQ(g.bufferCount(Buf::Input, 0), 3u);
  EXPECT_EQ(g.bufferCount(Buf::Output, 0), 0u);  // non-roots have no receive buffer
  EXPECT_EQ(g.bufferCount(Buf::Input, 2), 3u);
  EXPECT_EQ(g.bufferCount(Buf::Output, 2), 12u);
  EXPECT_TRUE(g.writableOutput(0).empty());
  EXPECT_EQ(g.writableOutput(2), (std::vector<Slice>{out(0, 12)}));
  const Problem gi = Problem::gather(4, 3, 2, true);
  EXPECT_EQ(gi.bufferCount(Buf::Input, 2), 0u);
  // In place the root's own block is its input: everything else is writable.
  EXPECT_EQ(gi.writableOutput(2), (std::vector<Slice>{out(0, 6), out(9, 3)}));
  EXPECT_EQ(Problem::gather(4, 3, 0, true).writableOutput(0), (std::vector<Slice>{out(3, 9)}));
  EXPECT_EQ(Problem::fromMpiCount(C::Gather, 4, 3, false, 2), g);
}

TEST(Problem, ScanExscanBarrierLayouts) {
  const Problem s = Problem::scan(3, 10);
  EXPECT_EQ(s.bufferCount(Buf::Input, 1), 10u);
  EXPECT_EQ(s.bufferCount(Buf::Output, 1), 10u);
  EXPECT_EQ(s.writableOutput(0), (std::vector<Slice>{out(0, 10)}));
  const Problem e = Problem::exscan(3, 10, true);
  EXPECT_EQ(e.bufferCount(Buf::Input, 1), 0u);
  EXPECT_TRUE(e.writableOutput(0).empty());  // MPI leaves rank 0's result undefined
  EXPECT_EQ(e.writableOutput(2), (std::vector<Slice>{out(0, 10)}));
  const Problem b = Problem::barrier(5);
  EXPECT_EQ(b.total(), 0u);
  EXPECT_EQ(b.bufferCount(Buf::Input, 3) + b.bufferCount(Buf::Output, 3), 0u);
  EXPECT_EQ(Problem::fromMpiCount(C::Barrier, 5, 0, false), b);
  EXPECT_EQ(toString(b), "barrier p=5 n=0");
}

TEST(Problem, GatherVNonRootKnowsOnlyItsOwnCount) {
  const std::vector<std::uint64_t> counts{4, 0, 7, 2};
  const Problem whole = Problem::gatherV(counts, 1);
  EXPECT_FALSE(whole.rankLocal());
  EXPECT_EQ(whole.localView(1), whole);  // the root knows every count
  const Problem v = whole.localView(2);
  EXPECT_EQ(v, Problem::gatherVNonRoot(4, 1, 2, 7));
  EXPECT_TRUE(v.rankLocal());
  EXPECT_EQ(v.blocks.count(2), 7u);
  EXPECT_EQ(v.bufferCount(Buf::Input, 2), 7u);
  EXPECT_EQ(v.bufferCount(Buf::Output, 2), 0u);
  EXPECT_THROW((void)v.blocks.count(0), std::logic_error);
  EXPECT_THROW((void)v.blocks.offset(2), std::logic_error);  // needs counts 0 and 1
  EXPECT_THROW((void)v.total(), std::logic_error);
  EXPECT_EQ(Problem::gatherVNonRoot(4, 1, 0, 4).blocks.offset(1), 4u);  // known: block 0 only
  EXPECT_THROW((void)Problem::gatherVNonRoot(4, 1, 1, 4), std::invalid_argument);  // the root
  EXPECT_EQ(toString(v), "gatherv p=4 root=1 (rank 2's view: 7 elements)");
  EXPECT_EQ(Problem::scatterV(counts, 3).localView(0), Problem::scatterVNonRoot(4, 3, 0, 4));
}

TEST(Problem, AllToAllVRankKnowsItsRowAndColumn) {
  // count(i, j) = i + 2j + (i == j)
  const std::uint32_t p = 3;
  std::vector<std::uint64_t> m(p * p);
  for (std::uint32_t i = 0; i < p; ++i)
    for (std::uint32_t j = 0; j < p; ++j) m[i * p + j] = i + 2 * j + (i == j ? 1 : 0);
  const Problem whole = Problem::allToAllV(p, m);
  EXPECT_EQ(whole.bufferCount(Buf::Input, 1), 1u + 4 + 5);   // row 1: 1, 4, 5
  EXPECT_EQ(whole.bufferCount(Buf::Output, 1), 2u + 4 + 4);  // column 1: 2, 4, 4
  const std::vector<std::uint64_t> row{1, 4, 5}, col{2, 4, 4};
  const Problem mine = Problem::allToAllVAt(p, 1, row, col);
  EXPECT_EQ(whole.localView(1), mine);
  EXPECT_TRUE(mine.rankLocal());
  EXPECT_EQ(mine.pairs.sendBlocks(1).offset(2), 5u);
  EXPECT_EQ(mine.pairs.recvBlocks(1).offset(2), 6u);
  EXPECT_THROW((void)mine.pairs.count(0, 2), std::logic_error);
  EXPECT_THROW((void)mine.pairs.sendBlocks(0), std::logic_error);
  const std::vector<std::uint64_t> badSelf{1, 3, 5};
  EXPECT_THROW((void)Problem::allToAllVAt(p, 1, badSelf, col), std::invalid_argument);
  EXPECT_THROW((void)Problem::allToAllV(p, m, true), std::invalid_argument);  // not symmetric
  EXPECT_EQ(toString(whole), "alltoallv p=3 n=30");
  EXPECT_EQ(toString(mine), "alltoallv p=3 (rank 1's view: sends 10, receives 10)");
  // In place, a rank's row is its column.
  const Problem in = Problem::allToAllVAt(p, 1, {}, col, true);
  EXPECT_EQ(in.pairs.sendBlocks(1), in.pairs.recvBlocks(1));
}

// A rank's view and an equal-pairs problem hold O(p) counts, not p * p: at 65536 ranks a matrix
// would be 34 GB (the selector builds both for every AllToAllV decision).
TEST(Problem, AllToAllVWithoutAMatrix) {
  const std::uint32_t p = 65536;
  const Problem eq = Problem::allToAllVEqual(p, 3);
  EXPECT_EQ(eq.pairs.count(p - 1, 7), 3u);
  EXPECT_EQ(eq.bufferCount(Buf::Output, 5), 3u * p);
  EXPECT_TRUE(eq.pairs.symmetric());
  EXPECT_NO_THROW((void)Problem::allToAllVEqual(p, 3, true));
  std::vector<std::uint64_t> row(p), col(p);
  for (std::uint32_t i = 0; i < p; ++i) {
    row[i] = i % 5;
    col[i] = i % 7;
  }
  row[9] = col[9];
  const Problem mine = Problem::allToAllVAt(p, 9, row, col);
  EXPECT_EQ(mine.pairs.count(9, 12), 2u);
  EXPECT_EQ(mine.pairs.count(12, 9), 5u);
  EXPECT_THROW((void)mine.pairs.count(12, 13), std::logic_error);
  EXPECT_EQ(eq.localView(9).pairs.count(9, 4), 3u);
  EXPECT_EQ(eq.localView(9).pairs.count(4, 9), 3u);
  // An equal matrix given whole is the same problem as the equal-pairs one.
  EXPECT_EQ(Problem::allToAllV(3, std::vector<std::uint64_t>(9, 2)), Problem::allToAllVEqual(3, 2));
  EXPECT_NE(Problem::allToAllV(3, std::vector<std::uint64_t>(9, 2)), Problem::allToAllVEqual(3, 1));
}

TEST(Problem, ConstructorsRejectBadArguments) {
  const std::vector<std::uint64_t> counts{1, 2};
  EXPECT_THROW((void)Problem::gatherV(counts, 2), std::invalid_argument);
  EXPECT_THROW((void)Problem::scatterV({}, 0), std::invalid_argument);
  EXPECT_THROW((void)Problem::allToAllV(2, counts), std::invalid_argument);
  EXPECT_THROW((void)Blocks::only(3, 3, 1), std::invalid_argument);
}

}  // namespace
}  // namespace hccl::algo
