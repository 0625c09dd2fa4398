// AllToAll and Scatter: the Problem layouts, the verifier's expectations for them (it must accept
// a hand-built correct schedule and reject wrong ones), and the Pairwise schedule's shape.
#include <gtest/gtest.h>

#include "algorithms/verifier.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

bool has(const std::vector<VerifyIssue>& issues, VerifyIssue::Kind k) {
  for (const VerifyIssue& i : issues)
    if (i.kind == k) return true;
  return false;
}

TEST(AllToAllProblem, BufferLayouts) {
  const Problem out = Problem::allToAll(4, 5);
  EXPECT_EQ(out.total(), 20u);
  EXPECT_EQ(out.bufferCount(Buf::Input, 2), 20u);
  EXPECT_EQ(out.bufferCount(Buf::Output, 2), 20u);
  const Problem in = Problem::allToAll(4, 5, true);
  EXPECT_EQ(in.bufferCount(Buf::Input, 2), 0u);
  EXPECT_EQ(in.bufferCount(Buf::Output, 2), 20u);
}

TEST(ScatterProblem, BufferLayouts) {
  const Problem out = Problem::scatter(3, 4, 1);
  EXPECT_EQ(out.bufferCount(Buf::Input, 1), 12u);
  EXPECT_EQ(out.bufferCount(Buf::Input, 0), 0u);
  EXPECT_EQ(out.bufferCount(Buf::Output, 1), 4u);
  EXPECT_EQ(out.bufferCount(Buf::Output, 2), 4u);
  const Problem in = Problem::scatter(3, 4, 1, true);
  EXPECT_EQ(in.bufferCount(Buf::Input, 1), 0u);
  EXPECT_EQ(in.bufferCount(Buf::Output, 1), 12u);
  EXPECT_EQ(in.bufferCount(Buf::Output, 0), 4u);
}

// A one-step full exchange written out by hand: what any correct AllToAll must deliver.
Schedule directAllToAll(std::uint32_t p, std::uint64_t c) {
  Schedule s{Problem::allToAll(p, c), {}};
  s.ranks.resize(p);
  for (std::uint32_t r = 0; r < p; ++r) {
    Step& st = s.ranks[r].newStep();
    for (std::uint32_t j = 0; j < p; ++j) {
      if (j == r) continue;
      send(st, j, in(j * c, c));
      recv(st, j, out(j * c, c));
    }
    copy(st, out(r * c, c), in(r * c, c));
  }
  return s;
}

TEST(AllToAllVerifier, AcceptsTheDirectExchange) {
  for (std::uint32_t p : {1u, 2u, 5u}) {
    const auto issues = verify(directAllToAll(p, 3));
    EXPECT_TRUE(issues.empty()) << describe(issues);
  }
}

TEST(AllToAllVerifier, RejectsAKeptInput) {
  Schedule s{Problem::allToAll(3, 2), {}};
  s.ranks.resize(3);
  for (std::uint32_t r = 0; r < 3; ++r) copy(s.ranks[r].newStep(), out(0, 6), in(0, 6));
  const auto issues = verify(s);
  EXPECT_TRUE(has(issues, VerifyIssue::Kind::WrongPosition) ||
              has(issues, VerifyIssue::Kind::MissingContribution))
      << describe(issues);
}

// Every block from the right rank, but the sender's block for someone else.
TEST(AllToAllVerifier, RejectsTheWrongBlockOfTheRightRank) {
  Schedule s = directAllToAll(3, 2);
  for (Transfer& t : s.ranks[0].steps[0].xfers)
    if (t.dir == Dir::Send && t.peer == 1) t.slice = in(2 * 2, 2);  // rank 2's block
  const auto issues = verify(s);
  EXPECT_TRUE(has(issues, VerifyIssue::Kind::WrongPosition)) << describe(issues);
}

TEST(ScatterVerifier, InPlaceRootMustKeepItsBuffer) {
  // Root 0 of 2 sends block 1 correctly, then scribbles block 0 over it.
  Schedule s{Problem::scatter(2, 3, 0, true), {}};
  s.ranks.resize(2);
  send(s.ranks[0].newStep(), 1, out(3, 3));
  copy(s.ranks[0].newStep(), out(3, 3), out(0, 3));
  recv(s.ranks[1].newStep(), 0, out(0, 3));
  EXPECT_TRUE(has(verify(s), VerifyIssue::Kind::OutsideResult));
  s.ranks[0].steps.pop_back();
  const auto issues = verify(s);
  EXPECT_TRUE(issues.empty()) << describe(issues);
}

TEST(ScatterVerifier, RejectsAnotherRanksBlock) {
  Schedule s{Problem::scatter(3, 2, 0), {}};
  s.ranks.resize(3);
  Step& root = s.ranks[0].newStep();
  send(root, 1, in(4, 2));  // rank 2's block to rank 1
  send(root, 2, in(4, 2));
  copy(root, out(0, 2), in(0, 2));
  recv(s.ranks[1].newStep(), 0, out(0, 2));
  recv(s.ranks[2].newStep(), 0, out(0, 2));
  const auto issues = verify(s);
  ASSERT_EQ(issues.size(), 1u) << describe(issues);
  EXPECT_EQ(issues[0].kind, VerifyIssue::Kind::WrongPosition);
  EXPECT_EQ(issues[0].rank, 1u);
}

TEST(Pairwise, OnePeerEachWayPerStep) {
  for (std::uint32_t p = 1; p <= 12; ++p) {
    for (bool inPlace : {false, true}) {
      const Problem pb = Problem::allToAll(p, 4, inPlace);
      for (std::uint32_t r = 0; r < p; ++r) {
        const RankSchedule s = pairwiseAllToAll(pb, r);
        std::uint32_t k = 0;
        for (const Step& st : s.steps) {
          if (st.xfers.empty()) continue;  // the own-block copy
          ++k;
          ASSERT_EQ(st.xfers.size(), 2u);
          for (const Transfer& t : st.xfers)
            EXPECT_EQ(t.peer, t.dir == Dir::Send ? (r + k) % p : (r + p - k) % p);
        }
        EXPECT_EQ(k, p - 1);
        EXPECT_EQ(scratchCount(s), inPlace ? (p / 2) * 4u : 0u);
      }
    }
  }
}

TEST(Pairwise, RejectsUnequalBlocks) {
  Problem pb = Problem::allToAll(3, 4);
  const std::vector<std::uint64_t> counts{4, 5, 4};
  pb.blocks = Blocks::of(counts);
  try {
    pairwiseAllToAll(pb, 0);
    ADD_FAILURE() << "no error for unequal blocks";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("block 1 holds 5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hccl::algo
