#include <gtest/gtest.h>

#include "algorithms/generators.hpp"
#include "algorithms/verifier.hpp"

namespace hccl::algo {
namespace {

TEST(Blocks, EvenSplitDiffersByAtMostOne) {
  const Blocks b = Blocks::even(10, 4);
  EXPECT_EQ(b.parts(), 4u);
  EXPECT_EQ(b.count(0), 3u);
  EXPECT_EQ(b.count(1), 3u);
  EXPECT_EQ(b.count(2), 2u);
  EXPECT_EQ(b.count(3), 2u);
  EXPECT_EQ(b.offset(3), 8u);
  EXPECT_EQ(b.total(), 10u);
  EXPECT_FALSE(b.isUniform());
  EXPECT_TRUE(Blocks::uniform(5, 3).isUniform());
  EXPECT_EQ(Blocks::uniform(5, 3).total(), 15u);
  const std::vector<std::uint64_t> counts{2, 0, 7};
  const Blocks v = Blocks::of(counts);
  EXPECT_EQ(v.span(Buf::Input, 1, 3), (Slice{Buf::Input, 2, 7}));
}

TEST(Problem, BufferSizesFollowMpiLayouts) {
  const Problem rs = Problem::reduceScatter(4, 3);
  EXPECT_EQ(rs.bufferCount(Buf::Input, 1), 12u);
  EXPECT_EQ(rs.bufferCount(Buf::Output, 1), 3u);
  const Problem rsIn = Problem::reduceScatter(4, 3, true);
  EXPECT_EQ(rsIn.bufferCount(Buf::Input, 1), 0u);
  EXPECT_EQ(rsIn.bufferCount(Buf::Output, 1), 12u);
  const Problem red = Problem::reduce(4, 9, 2);
  EXPECT_EQ(red.bufferCount(Buf::Output, 2), 9u);
  EXPECT_EQ(red.bufferCount(Buf::Output, 1), 0u);  // non-roots have no receive buffer
  EXPECT_EQ(Problem::allGather(3, 5).bufferCount(Buf::Input, 0), 5u);
}

TEST(Schedule, BuildersDropEmptyWork) {
  Step s;
  send(s, 1, out(0, 0));
  recv(s, 1, out(0, 0));
  copy(s, out(0, 4), out(0, 4));
  reduce(s, out(0, 0), out(0, 0), out(0, 0));
  EXPECT_TRUE(s.xfers.empty());
  EXPECT_TRUE(s.ops.empty());
  RankSchedule rs;
  rs.newStep();
  send(rs.newStep(), 0, out(0, 1));
  prune(rs);
  EXPECT_EQ(rs.steps.size(), 1u);
}

TEST(Schedule, PrintsReadably) {
  const RankSchedule r = ringAllGather(Problem::allGather(3, 2), 0);
  EXPECT_EQ(toString(r),
            "  step 0: send in[0+2] -> 1; recv out[4+2] <- 2; copy out[0+2] = in[0+2];\n"
            "  step 1: send out[4+2] -> 1; recv out[2+2] <- 2;\n");
  EXPECT_EQ(toString(Problem::broadcast(4, 10, 3)), "broadcast p=4 n=10 root=3");
}

TEST(Schedule, ScratchCountIsTheHighestScratchElement) {
  RankSchedule r;
  Step& s = r.newStep();
  recv(s, 1, scratch(10, 5));
  reduce(s, out(0, 5), in(0, 5), scratch(10, 5));
  EXPECT_EQ(scratchCount(r), 15u);
  EXPECT_EQ(scratchCount(RankSchedule{}), 0u);
}

// Composition: two groups of 3 ranks each run a ring allreduce on their own half of a parent
// buffer, interleaved rank numbering, level 1. The embedded schedules keep their meaning.
TEST(Composition, EmbedRenamesPeersBuffersAndLevel) {
  const std::uint32_t groupSize = 3;
  const Problem part = Problem::allReduce(groupSize, 6);
  Schedule parent{Problem::allReduce(6, 12), {}};
  parent.ranks.resize(6);
  for (std::uint32_t g = 0; g < 2; ++g) {
    Embedding e;
    e.members = {g, g + 2, g + 4};  // group g = ranks g, g+2, g+4
    e.level = 1;
    for (std::uint32_t i = 0; i < groupSize; ++i) {
      e.to = {BufferRegion{Buf::Input, 0}, BufferRegion{Buf::Output, 0},
              BufferRegion{Buf::Scratch, 0}};
      embed(parent.ranks[e.members[i]], ringAllReduce(part, i), e);
    }
  }
  for (const Step& st : parent.ranks[2].steps)
    for (const Transfer& t : st.xfers) {
      EXPECT_EQ(t.level, 1);
      EXPECT_TRUE(t.peer == 0 || t.peer == 4) << toString(t);
    }
  // Each group reduced only its own members: the verifier must see missing contributions.
  const auto issues = verify(parent);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues.front().kind, VerifyIssue::Kind::MissingContribution);
}

TEST(Composition, EmbedShiftsBufferRegions) {
  // A 2-rank allgather placed in the second half of a 2-rank parent's scratch and output.
  RankSchedule part = ringAllGather(Problem::allGather(2, 3), 1);
  Embedding e;
  e.members = {5, 7};
  e.to = {BufferRegion{Buf::Scratch, 100}, BufferRegion{Buf::Output, 6},
          BufferRegion{Buf::Scratch, 0}};
  RankSchedule into;
  embed(into, part, e);
  ASSERT_EQ(into.steps.size(), 1u);
  EXPECT_EQ(toString(into),
            "  step 0: send tmp[100+3] -> 5; recv out[6+3] <- 5; "
            "copy out[9+3] = tmp[100+3];\n");
}

TEST(Composition, OverlayRunsTwoSchedulesConcurrently) {
  RankSchedule a, b;
  send(a.newStep(), 1, out(0, 1));
  send(b.newStep(), 2, out(1, 1));
  send(b.newStep(), 2, out(2, 1));
  Embedding id;
  id.members = {0, 1, 2};
  overlay(a, b, id, 0);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].xfers.size(), 2u);
  EXPECT_EQ(a.steps[1].xfers.size(), 1u);
}

}  // namespace
}  // namespace hccl::algo
