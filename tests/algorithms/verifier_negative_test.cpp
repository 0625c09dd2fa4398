// The verifier catches deliberately broken schedules of every kind it promises to report.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "algorithms/generators.hpp"
#include "algorithms/provenance.hpp"
#include "algorithms/verifier.hpp"
#include "tests/algorithms/verifier_expect.hpp"

using namespace hccl::algo::test;  // NOLINT: the shared checks, in every block below

namespace hccl::algo {
namespace {

// A correct two-rank allreduce of 4 elements, written out by hand so each test can break one thing.
Schedule twoRankAllReduce() {
  Schedule s{Problem::allReduce(2, 4), {}};
  s.ranks.resize(2);
  for (std::uint32_t r = 0; r < 2; ++r) {
    Step& st = s.ranks[r].newStep();
    send(st, 1 - r, in(0, 4));
    recv(st, 1 - r, scratch(0, 4));
    if (r == 0)
      reduce(st, out(0, 4), in(0, 4), scratch(0, 4));
    else
      reduce(st, out(0, 4), scratch(0, 4), in(0, 4));
  }
  return s;
}

TEST(VerifierNegative, BaselineIsClean) {
  const auto issues = verify(twoRankAllReduce(), {.requireRankOrder = true});
  EXPECT_TRUE(issues.empty()) << describe(issues);
}

TEST(VerifierNegative, MissingContribution) {
  Schedule s = twoRankAllReduce();
  s.ranks[1].steps[0].ops[0] = {OpKind::Copy, out(0, 4), in(0, 4), {}};  // forgets rank 0's part
  expectIssue(s, Kind::MissingContribution, 1, "missing 0");
}

TEST(VerifierNegative, DuplicateContribution) {
  Schedule s = twoRankAllReduce();
  reduce(s.ranks[0].steps[0], out(0, 4), out(0, 4), in(0, 4));  // adds its own input again
  expectIssue(s, Kind::DuplicateContribution, 0, "twice");
}

TEST(VerifierNegative, WrongPositionInAReduction) {
  Schedule s = twoRankAllReduce();
  // Rank 1 sends elements 1..4 of a longer input... emulate by shifting the operand.
  s.ranks[0].steps[0].ops[0] = {OpKind::Reduce, out(0, 2), in(2, 2), scratch(0, 2)};
  expectIssue(s, Kind::WrongPosition, 0, "combines input elements");
}

TEST(VerifierNegative, WrongPositionInTheResult) {
  Schedule s{Problem::allGather(2, 3), {}};
  s.ranks.resize(2);
  for (std::uint32_t r = 0; r < 2; ++r) {
    Step& st = s.ranks[r].newStep();
    send(st, 1 - r, in(0, 3));
    recv(st, 1 - r, out(3 * (1 - r), 3));
    copy(st, out(3 * r, 3), in(0, 3));
  }
  // Rank 1 receives rank 0's block into the wrong place: its own slot.
  s.ranks[1].steps[0].xfers[1].slice = out(3, 3);
  s.ranks[1].steps[0].ops.clear();
  copy(s.ranks[1].steps[0], out(0, 3), in(0, 3));
  const auto issues = verify(s);
  EXPECT_TRUE(has(issues, Kind::MissingContribution) || has(issues, Kind::WrongPosition))
      << describe(issues);
}

TEST(VerifierNegative, NotWritten) {
  Schedule s = twoRankAllReduce();
  s.ranks[0].steps[0].ops.clear();
  expectIssue(s, Kind::NotWritten, 0, "never written");
}

TEST(VerifierNegative, RankOrder) {
  Schedule s = twoRankAllReduce();
  s.ranks[1].steps[0].ops[0] = {OpKind::Reduce, out(0, 4), in(0, 4), scratch(0, 4)};
  expectIssue(s, Kind::RankOrder, 1, "puts ranks 1 left of ranks 0", {.requireRankOrder = true});
  // Without the requirement, the same schedule is a correct commutative allreduce.
  EXPECT_TRUE(verify(s).empty());
}

TEST(VerifierNegative, RingIsNotRankOrdered) {
  const Schedule s = buildSchedule(ringAllReduce, Problem::allReduce(4, 8));
  expectIssue(s, Kind::RankOrder, 0, "left of", {.requireRankOrder = true});
}

TEST(VerifierNegative, SizeMismatch) {
  Schedule s = twoRankAllReduce();
  s.ranks[1].steps[0].xfers[1].slice.count = 3;
  expectIssue(s, Kind::SizeMismatch, 0, "sends 4 elements to rank 1");
}

TEST(VerifierNegative, MessagesMatchInPostingOrder) {
  // Two sends to the same peer in one order, the receives in the other: sizes clash.
  Schedule s{Problem::allGather(2, 3), {}};
  s.ranks.resize(2);
  Step& a = s.ranks[0].newStep();
  send(a, 1, in(0, 1));
  send(a, 1, in(1, 2));
  Step& b = s.ranks[1].newStep();
  recv(b, 0, scratch(0, 2));
  recv(b, 0, scratch(2, 1));
  expectIssue(s, Kind::SizeMismatch, 0, "message #0");
}

TEST(VerifierNegative, SendWithoutReceive) {
  Schedule s = twoRankAllReduce();
  s.ranks[1].steps[0].xfers.pop_back();  // rank 1 never receives
  s.ranks[1].steps[0].ops.clear();
  expectIssue(s, Kind::UnmatchedTransfer, 0, "without posting a matching receive");
}

TEST(VerifierNegative, PushOnOneEndOnly) {
  Schedule s = buildSchedule(meshPushAllReduce, Problem::allReduce(2, 8));
  EXPECT_TRUE(verify(s).empty());
  Transfer& x = s.ranks[1].steps.back().xfers[0];
  ASSERT_TRUE(x.push && x.dir == Dir::Send);
  x.push = false;  // rank 1 sends plainly what rank 0 waits to have pushed
  expectIssue(s, Kind::UnmatchedTransfer, 0, "only one end is a push");
}

TEST(VerifierNegative, PushedReceiveTouchedTheStepBefore) {
  // In place, a peer's Output block is its input, sent in the first step: it cannot be open to
  // writing from that step on.
  Schedule s = buildSchedule(meshAllReduce, Problem::allReduce(2, 8, true));
  for (RankSchedule& rs : s.ranks)
    for (Transfer& x : rs.steps.back().xfers) x.push = true;
  expectIssue(s, Kind::TransferHazard, 0, "is open to its sender from step 0");
}

TEST(VerifierNegative, Deadlock) {
  // Both ranks first wait for the other, then send: a classic cycle.
  Schedule s{Problem::allReduce(2, 4), {}};
  s.ranks.resize(2);
  for (std::uint32_t r = 0; r < 2; ++r) {
    recv(s.ranks[r].newStep(), 1 - r, scratch(0, 4));
    send(s.ranks[r].newStep(), 1 - r, in(0, 4));
  }
  expectIssue(s, Kind::Deadlock, 0, "(deadlock)");
}

TEST(VerifierNegative, RendezvousDeadlockThatBufferingWouldHide) {
  // Both send first and receive in a later step: fine with eager buffering, a deadlock under
  // rendezvous, so the verifier refuses it.
  Schedule s{Problem::allReduce(2, 4), {}};
  s.ranks.resize(2);
  for (std::uint32_t r = 0; r < 2; ++r) {
    send(s.ranks[r].newStep(), 1 - r, in(0, 4));
    recv(s.ranks[r].newStep(), 1 - r, scratch(0, 4));
  }
  expectIssue(s, Kind::Deadlock, 0, "blocked in step 0");
}

TEST(VerifierNegative, UninitializedScratchRead) {
  Schedule s = twoRankAllReduce();
  // Reads scratch[4..8), which nothing ever wrote.
  s.ranks[0].steps[0].ops[0] = {OpKind::Reduce, out(0, 4), in(0, 4), scratch(4, 4)};
  expectIssue(s, Kind::UninitializedRead, 0, "tmp[4+4] before anything was written");
}

TEST(VerifierNegative, ReceiveOverwritesADataInFlight) {
  Schedule s = twoRankAllReduce();
  // Rank 0 now sends from scratch and receives into the same scratch in the same step.
  Step& st = s.ranks[0].steps[0];
  st.xfers[0].slice = scratch(0, 4);
  copy(s.ranks[0].steps.insert(s.ranks[0].steps.begin(), Step{})[0], scratch(0, 4), in(0, 4));
  expectIssue(s, Kind::TransferHazard, 0, "while");
}

// A step of many transfers (mesh AllToAll posts 2(p-1) at once): a receive landing across
// another receive's slice, or on the slice a send of the same step reads, is found wherever the
// two sit in the step.
TEST(VerifierNegative, HazardAmongManyTransfers) {
  const auto ends = [](Schedule& s, std::uint32_t r, Dir d) {
    std::vector<Transfer*> v;
    for (Transfer& t : s.ranks[r].steps.at(0).xfers)
      if (t.dir == d) v.push_back(&t);
    return v;
  };
  Schedule s = buildSchedule(meshAllToAll, Problem::allToAll(8, 3));
  ASSERT_TRUE(verify(s).empty());
  const auto rv = ends(s, 5, Dir::Recv);
  ASSERT_EQ(rv.size(), 7u);
  rv[5]->slice.offset = rv[1]->slice.offset + 1;
  expectIssue(s, Kind::TransferHazard, 5, "while");

  Schedule t = buildSchedule(meshAllToAll, Problem::allToAll(8, 3, true));
  ASSERT_TRUE(verify(t).empty());
  const auto sd = ends(t, 2, Dir::Send);
  const auto rc = ends(t, 2, Dir::Recv);
  ASSERT_FALSE(sd.empty() || rc.empty());
  rc.back()->slice = sd.front()->slice;
  expectIssue(t, Kind::TransferHazard, 2, "while");
}

TEST(VerifierNegative, WriteIntoUserInput) {
  Schedule s = twoRankAllReduce();
  s.ranks[1].steps[0].xfers[1].slice = in(0, 4);
  expectIssue(s, Kind::InputWrite, 1, "writes the user's input");
}

TEST(VerifierNegative, OutOfBounds) {
  Schedule s = twoRankAllReduce();
  s.ranks[0].steps[0].ops[0].dst = out(2, 4);
  expectIssue(s, Kind::OutOfBounds, 0, "but out holds 4 elements");
}

TEST(VerifierNegative, OverlappingCopy) {
  Schedule s = twoRankAllReduce();
  copy(s.ranks[0].steps[0], out(1, 3), out(0, 3));
  expectIssue(s, Kind::OverlappingOp, 0, "overlapping its source");
}

// The write contract: in-place ReduceScatter's generators accumulate in other ranks' blocks of
// Output, which MPI leaves to the caller; only the private-input form may run.
TEST(VerifierNegative, WriteOutsideTheResult) {
  const Problem pb = Problem::reduceScatter(3, 2, true);
  Schedule raw{pb, {}};
  for (std::uint32_t r = 0; r < pb.ranks; ++r) raw.ranks.push_back(ringReduceScatter(pb, r));
  expectIssue(raw, Kind::OutsideResult, 0, "outside its result out[0+2]");
  EXPECT_TRUE(verify(buildSchedule(ringReduceScatter, pb)).empty());
}

TEST(VerifierNegative, WriteIntoABroadcastRoot) {
  Schedule s{Problem::broadcast(2, 4, 0), {}};
  s.ranks.resize(2);
  send(s.ranks[0].newStep(), 1, out(0, 4));
  recv(s.ranks[1].newStep(), 0, out(0, 4));
  EXPECT_TRUE(verify(s).empty());
  recv(s.ranks[0].newStep(), 1, out(0, 4));  // the root takes its own data back
  send(s.ranks[1].newStep(), 0, out(0, 4));
  expectIssue(s, Kind::OutsideResult, 0, "outside its result (none)");
}

TEST(VerifierNegative, WrongRankCount) {
  Schedule s = twoRankAllReduce();
  s.ranks.pop_back();
  EXPECT_FALSE(verify(s).empty());
}

}  // namespace
}  // namespace hccl::algo

namespace hccl::algo {
namespace {

// ---- the collectives beyond the reducing three ----------------------------------------------

// A barrier in which rank 2 of 3 only signals rank 0 and leaves: rank 2 has heard from nobody.
TEST(VerifierCollectives, BarrierRankLeavingEarly) {
  Schedule s = buildSchedule(nbBarrier, Problem::barrier(3));
  EXPECT_TRUE(verify(s).empty()) << describe(verify(s));
  // Rank 0 now listens only to rank 2 and rank 2 only talks: neither hears of rank 1.
  Schedule broken{Problem::barrier(3), {}};
  broken.ranks.resize(3);
  sendSignal(broken.ranks[1].newStep(), 0);
  Step& s0 = broken.ranks[0].newStep();
  recvSignal(s0, 1);
  sendSignal(broken.ranks[2].newStep(), 0);
  recvSignal(broken.ranks[0].newStep(), 2);
  const auto issues = verify(broken);
  ASSERT_TRUE(has(issues, Kind::MissingContribution)) << describe(issues);
  EXPECT_NE(describe(issues).find("rank 1 leaves the barrier having heard only of ranks"),
            std::string::npos)
      << describe(issues);
}

// Scan with the received prefix on the right: wrong for non-commutative ops, and the verifier
// checks Scan's order even when not asked to.
TEST(VerifierCollectives, ScanOutOfRankOrder) {
  Schedule s{Problem::scan(2, 4), {}};
  s.ranks.resize(2);
  copy(s.ranks[0].newStep(), out(0, 4), in(0, 4));
  send(s.ranks[0].steps[0], 1, in(0, 4));
  Step& st = s.ranks[1].newStep();
  recv(st, 0, scratch(0, 4));
  reduce(st, out(0, 4), in(0, 4), scratch(0, 4));  // own on the left
  expectIssue(s, Kind::RankOrder, 1, "puts ranks 1 left of ranks 0");
  std::swap(s.ranks[1].steps[0].ops[0].a, s.ranks[1].steps[0].ops[0].b);
  EXPECT_TRUE(verify(s).empty()) << describe(verify(s));
}

// Exscan's rank 0 must not write its output; a Scan result there is outside its result.
TEST(VerifierCollectives, ExscanRankZeroWrites) {
  Schedule s = buildSchedule(rhdExscan, Problem::exscan(3, 5));
  EXPECT_TRUE(verify(s).empty()) << describe(verify(s));
  copy(s.ranks[0].lastStep(), out(0, 5), in(0, 5));
  expectIssue(s, Kind::OutsideResult, 0, "outside its result (none)");
}

// An in-place Gather root rewriting its own block breaks the write contract.
TEST(VerifierCollectives, InPlaceGatherRootOwnBlock) {
  Schedule s = buildSchedule(meshGather, Problem::gather(3, 2, 1, true));
  EXPECT_TRUE(verify(s).empty()) << describe(verify(s));
  copy(s.ranks[1].lastStep(), scratch(0, 2), out(2, 2));
  copy(s.ranks[1].lastStep(), out(2, 2), scratch(0, 2));
  expectIssue(s, Kind::OutsideResult, 1, "outside its result out[0+2], out[4+2]");
}

// An AllToAllV block landing at the wrong offset of the receiver's column.
TEST(VerifierCollectives, AllToAllVWrongOffset) {
  const std::vector<std::uint64_t> m{1, 2, 3, 4};  // count(0,1) = 2, count(1,0) = 3
  Schedule s = buildSchedule(pairwiseAllToAllV, Problem::allToAllV(2, m));
  EXPECT_TRUE(verify(s).empty()) << describe(verify(s));
  for (Step& st : s.ranks[1].steps)
    for (Transfer& t : st.xfers)
      if (t.dir == Dir::Recv) t.slice.offset += 1;  // column 1 is [2 from 0][4 own]
  EXPECT_FALSE(verify(s).empty());
}

}  // namespace
}  // namespace hccl::algo

namespace hccl::algo {
namespace {

// ---- every defect kind at 1024 ranks ---------------------------------------------------------

constexpr std::uint32_t kP = kScaleRanks;
constexpr std::uint32_t kBad = kScaleBad;
const Schedule& clean() {
  return cleanAtScale();
}

Step& lastOf(Schedule& s, std::uint32_t r) {
  return s.ranks[r].steps.back();
}

Transfer& firstOf(Schedule& s, std::uint32_t r, Dir d) {
  for (Step& st : s.ranks[r].steps)
    for (Transfer& t : st.xfers)
      if (t.dir == d) return t;
  throw std::logic_error("no such transfer");
}

TEST(VerifierAt1024, BaselineIsClean) {
  const auto issues = verifyBoth(clean());
  EXPECT_TRUE(issues.empty()) << describe(issues);
}

TEST(VerifierAt1024, MissingContribution) {
  Schedule s = clean();
  for (Step& st : s.ranks[kBad].steps)
    for (LocalOp& op : st.ops)
      if (op.kind == OpKind::Reduce) op = {OpKind::Copy, op.dst, op.b, {}};  // drops operand a
  // Rank 517's partial sums lack its partners' parts; the first rank reported is one they
  // reach (rank 0's result misses 516-517).
  const auto issues = verifyBoth(s);
  ASSERT_TRUE(has(issues, Kind::MissingContribution)) << describe(issues);
  EXPECT_NE(describe(issues).find("missing 516-517"), std::string::npos) << describe(issues);
}

TEST(VerifierAt1024, DuplicateContribution) {
  Schedule s = clean();
  lastOf(s, kBad).ops.push_back({OpKind::Reduce, out(0, kP), out(0, kP), in(0, kP)});
  expectBoth(s, Kind::DuplicateContribution, kBad, "twice");
}

TEST(VerifierAt1024, WrongPosition) {
  Schedule s = clean();
  lastOf(s, kBad).ops.push_back({OpKind::Copy, out(3, 1), out(700, 1), {}});
  expectBoth(s, Kind::WrongPosition, kBad, "out[3+1]: holds input elements starting at 700");
}

TEST(VerifierAt1024, NotWritten) {
  Schedule s = clean();
  s.problem = Problem::allReduce(kP, kP + 1);  // one element more than the schedule moves
  expectBoth(s, Kind::NotWritten, 0, "out[1024+1]: never written");
}

TEST(VerifierAt1024, RankOrder) {
  const Schedule s = pruned(ringAllReduce, Problem::allReduce(kP, 7));
  EXPECT_TRUE(verifyBoth(s).empty());
  expectBoth(s, Kind::RankOrder, 0, "left of", {.requireRankOrder = true});
}

TEST(VerifierAt1024, SizeMismatch) {
  Schedule s = clean();
  Slice& shorter = firstOf(s, kBad, Dir::Recv).slice;
  shorter = Slice{shorter.buf, shorter.offset, shorter.count - 1};
  const auto issues = verifyBoth(s);
  ASSERT_TRUE(has(issues, Kind::SizeMismatch)) << describe(issues);
  EXPECT_NE(describe(issues).find("to rank 517 (message #0 between them), but rank 517"),
            std::string::npos)
      << describe(issues);
}

TEST(VerifierAt1024, UnmatchedTransfer) {
  Schedule s = clean();
  auto& xs = lastOf(s, kBad).xfers;
  const auto it =
      std::find_if(xs.begin(), xs.end(), [](const Transfer& t) { return t.dir == Dir::Recv; });
  ASSERT_NE(it, xs.end());
  const std::uint32_t peer = it->peer;
  xs.erase(it);
  lastOf(s, kBad).ops.clear();
  expectBoth(s, Kind::UnmatchedTransfer, peer, "without posting a matching receive");
}

TEST(VerifierAt1024, Deadlock) {
  Schedule s = clean();
  for (std::uint32_t r : {kBad, kBad + 1}) {
    Step st;
    recv(st, r == kBad ? kBad + 1 : kBad, scratch(0, 1));
    std::vector<Step> steps{st};
    steps.insert(steps.end(), s.ranks[r].steps.begin(), s.ranks[r].steps.end());
    s.ranks[r].steps = std::move(steps);
  }
  // Every rank ends up waiting on the two: the first reported is rank 0; the cycle is there.
  const auto issues = verifyBoth(s, {.maxIssues = 100000});
  ASSERT_TRUE(has(issues, Kind::Deadlock)) << describe(issues);
  EXPECT_NE(describe(issues).find("rank 517 step 0: recv tmp[0+1] <- 518 never completes: rank "
                                  "518 is blocked in step 0 (deadlock)"),
            std::string::npos);
}

TEST(VerifierAt1024, UninitializedRead) {
  Schedule s = clean();
  const std::uint64_t fresh = scratchCount(s.ranks[kBad]);
  lastOf(s, kBad).ops.push_back({OpKind::Copy, scratch(fresh, 1), scratch(fresh + 1, 1), {}});
  expectBoth(s, Kind::UninitializedRead, kBad, "before anything was written");
}

TEST(VerifierAt1024, TransferHazard) {
  Schedule s = clean();
  Transfer* snd = nullptr;
  Transfer* rcv = nullptr;
  for (Step& st : s.ranks[kBad].steps) {
    snd = rcv = nullptr;
    for (Transfer& t : st.xfers) (t.dir == Dir::Send ? snd : rcv) = &t;
    if (snd && rcv) break;
  }
  ASSERT_TRUE(snd && rcv);
  snd->slice = {rcv->slice.buf, rcv->slice.offset, snd->slice.count};
  expectBoth(s, Kind::TransferHazard, kBad, "while");
}

TEST(VerifierAt1024, InputWrite) {
  Schedule s = clean();
  lastOf(s, kBad).ops.push_back({OpKind::Copy, in(0, 1), out(0, 1), {}});
  expectBoth(s, Kind::InputWrite, kBad, "writes the user's input");
}

TEST(VerifierAt1024, OutOfBounds) {
  Schedule s = clean();
  lastOf(s, kBad).ops.push_back({OpKind::Copy, out(kP, 1), out(0, 1), {}});
  expectBoth(s, Kind::OutOfBounds, kBad, "but out holds 1024 elements");
}

TEST(VerifierAt1024, OverlappingOp) {
  Schedule s = clean();
  lastOf(s, kBad).ops.push_back({OpKind::Copy, out(1, 2), out(0, 2), {}});
  expectBoth(s, Kind::OverlappingOp, kBad, "overlapping its source");
}

TEST(VerifierAt1024, OutsideResult) {
  Schedule s = pruned(rhdBroadcast, Problem::broadcast(kP, 7, kBad));
  EXPECT_TRUE(verifyBoth(s).empty());
  lastOf(s, kBad).ops.push_back({OpKind::Copy, out(0, 1), out(0, 1), {}});  // the root rewrites
  expectBoth(s, Kind::OutsideResult, kBad, "outside its result (none)");
}

TEST(VerifierAt1024, BarrierRankLeavingEarly) {
  Schedule s = pruned(nbBarrier, Problem::barrier(kP));
  EXPECT_TRUE(verifyBoth(s).empty());
  // Rank 517 never hears its first peer's first signal (both ends removed).
  Transfer& rc = firstOf(s, kBad, Dir::Recv);
  const std::uint32_t from = rc.peer;
  for (Step& st : s.ranks[kBad].steps)
    if (std::erase_if(st.xfers, [&](const Transfer& t) { return &t == &rc; })) break;
  bool dropped = false;
  for (Step& st : s.ranks[from].steps) {
    if (dropped) break;
    dropped = std::erase_if(st.xfers, [&](const Transfer& t) {
                return t.dir == Dir::Send && t.peer == kBad;
              }) > 0;
  }
  ASSERT_TRUE(dropped);
  // Rank 516's signal to 517 is what every rank hears of 516 through 517: the first rank
  // reported is one of those.
  const auto issues = verifyBoth(s);
  ASSERT_TRUE(has(issues, Kind::MissingContribution)) << describe(issues);
  EXPECT_NE(describe(issues).find("leaves the barrier having heard only of ranks 0-515,517"),
            std::string::npos)
      << describe(issues);
}

// NB's ReduceScatter of one element per rank leaves in each rank's scratch partial sums of
// every size (a ruler pattern); the streamed check folds those no later step touches into their
// neighbours' runs. Rank 517 receives slice 519 from rank 516 at step 0 and sends it on at step 1:
// {516, 517}, dead after step 1 in the clean schedule, where its left neighbour (slice 517, its
// result) holds {514..517} by then. A last op that reads slice 519 again must see {516, 517}
// (the fold follows the schedule as given), and its two defects are reported.
TEST(VerifierAt1024, FoldingKeepsWhatALaterStepReads) {
  const Problem pb = Problem::fromMpiCount(Collective::ReduceScatter, kP, 1, false, 0);
  const RankGenerator broken = [&](const Problem& q, std::uint32_t r) {
    RankSchedule s = nbReduceScatter(q, r);
    if (r == kBad) {
      const std::uint64_t fresh = scratchCount(s);
      s.steps.back().ops.push_back({OpKind::Reduce, scratch(fresh, 1), scratch(519, 1), out(0, 1)});
    }
    return s;
  };
  EXPECT_TRUE(verifyGenerated(pb, nbReduceScatter, {.setGarbageBytes = 0}).empty());
  const auto issues = verifyGenerated(pb, broken, {.setGarbageBytes = 0});
  ASSERT_EQ(issues.size(), 2u) << describe(issues);
  EXPECT_EQ(issues[0].kind, Kind::WrongPosition) << describe(issues);
  EXPECT_NE(issues[0].message.find("combines input elements 519 and 517"), std::string::npos)
      << issues[0].message;
  EXPECT_EQ(issues[1].kind, Kind::DuplicateContribution) << describe(issues);
  EXPECT_NE(issues[1].message.find("counts rank(s) 516-517 twice"), std::string::npos)
      << issues[1].message;
  Schedule held{pb, {}};
  for (std::uint32_t r = 0; r < kP; ++r) held.ranks.push_back(broken(pb, r));
  EXPECT_EQ(describe(issues), describe(verify(held)));
}

// NHR's AllGather keeps the caller's block order: before its step i (h = 2^(K-1-i)) a rank r
// holds the blocks r - 2h*j, the ones between never written yet (ramps with gaps,
// provenance.hpp); it receives r - h - 2h*j from rank r - h and sends r - 2h*j to r + h. One
// element per rank, in and out of place. At the second-to-last step (h = 2) rank 517 receives
// block 515 one block right, at 516: the gap its last step fills. Block 515 stays a gap among
// written blocks, and the last step sends it on to rank 518: read before it was written.
TEST(VerifierAt1024, GappedBlocksOfNhrAllGather) {
  for (const bool inPlace : {false, true}) {
    Schedule s =
        pruned(nhrAllGather, Problem::fromMpiCount(Collective::AllGather, kP, 1, inPlace, 0));
    auto& steps = s.ranks[kBad].steps;
    const std::size_t last = steps.size() - 1;
    bool moved = false;
    for (Transfer& t : steps[last - 1].xfers)
      if (t.dir == Dir::Recv && t.slice == out(kBad - 2, 1) && t.peer == kBad - 2) {
        t.slice = out(kBad - 1, 1);
        moved = true;
      }
    ASSERT_TRUE(moved);
    const auto issues = verifyBoth(s);
    ASSERT_EQ(issues.size(), 1u) << describe(issues);
    EXPECT_EQ(issues[0].kind, Kind::UninitializedRead);
    EXPECT_NE(issues[0].message.find(fmt::format("rank 517 step {}: send out[515+1] -> 518 reads "
                                                 "out[515+1] before anything was written there",
                                                 last)),
              std::string::npos)
        << issues[0].message;
  }
}

// The last step's receive of block 516 on rank 517 dropped, and rank 516's send of it: a gap
// that is never filled, among 1023 written blocks; the final check must find it and nothing else.
TEST(VerifierAt1024, NhrAllGatherGapNeverFilled) {
  for (const bool inPlace : {false, true}) {
    Schedule s =
        pruned(nhrAllGather, Problem::fromMpiCount(Collective::AllGather, kP, 1, inPlace, 0));
    auto& rx = s.ranks[kBad].steps.back().xfers;
    auto& tx = s.ranks[kBad - 1].steps.back().xfers;
    const Slice own = inPlace ? out(kBad - 1, 1) : in(0, 1);
    const auto recvIt = std::find_if(rx.begin(), rx.end(), [](const Transfer& t) {
      return t.dir == Dir::Recv && t.slice == out(kBad - 1, 1);
    });
    const auto sendIt = std::find_if(tx.begin(), tx.end(), [&](const Transfer& t) {
      return t.dir == Dir::Send && t.peer == kBad && t.slice == own;
    });
    ASSERT_TRUE(recvIt != rx.end() && sendIt != tx.end());
    rx.erase(recvIt);
    tx.erase(sendIt);
    const auto issues = verifyBoth(s);
    ASSERT_EQ(issues.size(), 1u) << describe(issues);
    EXPECT_EQ(issues[0].kind, Kind::NotWritten);
    EXPECT_NE(issues[0].message.find("rank 517 final out[516+1]: never written"), std::string::npos)
        << issues[0].message;
  }
}

// NHR AllGather's last step moves 512 blocks from each rank to the next as 512 transfers; the
// replay keeps the ends that wait as runs (consecutive transfers whose offsets step evenly,
// replay.cpp), and a match must pick the run's right transfer. Rank 517 receives two of them
// (blocks 200 and 202, #100 and #101 from 516) the wrong way round, in and out of place:
// the run on either side is broken there, and the two blocks must be reported at the places
// they landed, nothing else.
TEST(VerifierAt1024, NhrAllGatherLastStepRunsSwapped) {
  for (const bool inPlace : {false, true}) {
    Schedule s =
        pruned(nhrAllGather, Problem::fromMpiCount(Collective::AllGather, kP, 1, inPlace, 0));
    std::vector<Transfer*> rx;
    for (Transfer& t : s.ranks[kBad].steps.back().xfers)
      if (t.dir == Dir::Recv && t.peer == kBad - 1) rx.push_back(&t);
    ASSERT_EQ(rx.size(), kP / 2);
    ASSERT_EQ(rx[100]->slice, out(200, 1));
    ASSERT_EQ(rx[101]->slice, out(202, 1));
    std::swap(rx[100]->slice, rx[101]->slice);
    const auto issues = verifyBoth(s);
    EXPECT_EQ(describe(issues),
              "[missing contribution] rank 517 final out[200+1]: contributions of ranks 202; "
              "missing 200, unexpected 202\n"
              "[missing contribution] rank 517 final out[202+1]: contributions of ranks 200; "
              "missing 202, unexpected 200\n");
  }
}

}  // namespace
}  // namespace hccl::algo

// ---- one wrong block among 4096 ranks, through the streamed check ------------------------------

namespace hccl::algo {
namespace {

// RHD AllGather of one element per rank at 4096 ranks, where rank 3001's block 1234 ends up
// holding block 1235 (a last copy overwrites it): 4096 x 4096 blocks, one of them wrong. The
// gathered blocks are held as ramps (provenance.hpp), so the check stays small.
TEST(VerifierAt4096, OneWrongBlockOfOneRank) {
  constexpr std::uint32_t p = 4096, bad = 3001, block = 1234;
  const Problem pb = Problem::fromMpiCount(Collective::AllGather, p, 1, false, 0);
  const RankGenerator broken = [&](const Problem& q, std::uint32_t r) {
    RankSchedule s = rhdAllGather(q, r);
    if (r == bad)
      s.stepAfterTransfers().ops.push_back({OpKind::Copy, out(block, 1), out(block + 1, 1), {}});
    return s;
  };
  // Exactly the one issue: the rest of the 4096 x 4096 blocks verify clean.
  const auto issues = verifyGenerated(pb, broken);
  ASSERT_EQ(issues.size(), 1u) << describe(issues);
  EXPECT_EQ(issues[0].kind, Kind::MissingContribution);
  EXPECT_EQ(issues[0].rank, bad);
  EXPECT_NE(issues[0].message.find("rank 3001 final out[1234+1]: contributions of ranks 1235; "
                                   "missing 1234, unexpected 1235"),
            std::string::npos)
      << issues[0].message;
}

}  // namespace
}  // namespace hccl::algo

// ---- wrong partial sums among thousands of ranks ---------------------------------------------

namespace hccl::algo {
namespace {

// A ring's partial sums are runs of ranks: their ids are computed, not stored, and the ones left
// in place step evenly from block to block (ramps, provenance.hpp). One element per rank at 512
// ranks, in place so that each rank's output ends up holding 511 different partial sums.
constexpr std::uint32_t kRsP = 512, kRsBad = 317, kRsStep = 200;

// Rank kRsBad's reduction at step kRsStep (block 317 - 2 - 200 = 115, which ends at rank 115)
// changed by `change`.
std::vector<VerifyIssue> ringReduceScatterWith(const std::function<void(Step&)>& change) {
  const Problem pb = Problem::fromMpiCount(Collective::ReduceScatter, kRsP, 1, true, 0);
  const RankGenerator broken = [&](const Problem& q, std::uint32_t r) {
    RankSchedule s = ringReduceScatter(q, r);
    if (r == kRsBad) change(s.steps.at(kRsStep));
    return s;
  };
  return verifyGenerated(pb, broken);
}

TEST(VerifierAt512, PartialSumMissingARank) {
  const auto issues = ringReduceScatterWith([](Step& st) {
    LocalOp& op = st.ops.at(0);
    op = {OpKind::Copy, op.dst, op.a, {}};  // the received partial sum, without its own input
  });
  ASSERT_EQ(issues.size(), 1u) << describe(issues);
  EXPECT_EQ(issues[0].kind, Kind::MissingContribution);
  EXPECT_EQ(issues[0].rank, 115u);
  EXPECT_NE(issues[0].message.find("missing 317, unexpected none"), std::string::npos)
      << issues[0].message;
}

TEST(VerifierAt512, PartialSumCountingARankTwice) {
  const auto issues = ringReduceScatterWith([](Step& st) {
    const LocalOp op = st.ops.at(0);
    st.ops.push_back({OpKind::Reduce, op.dst, op.dst, op.b});  // its own input once more
  });
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].kind, Kind::DuplicateContribution) << describe(issues);
  EXPECT_EQ(issues[0].rank, kRsBad);
  // Step 201 of what is verified: in place, a first step copies the input aside
  // (withPrivateInput).
  EXPECT_NE(issues[0].message.find("rank 317 step 201: reduce"), std::string::npos)
      << issues[0].message;
  EXPECT_NE(issues[0].message.find("counts rank(s) 317 twice"), std::string::npos)
      << issues[0].message;
}

// RHD's partial sums are strided sets of ranks, stored as bits and dropped when no buffer holds
// them, their ids reused (RankSets::collect). At 4096 ranks, one element each, rank 3001 loses
// its own partial sum at the sixth halving step (distance 64): the 32 ranks it had gathered
// (3001 with any of the bits 128..2048 changed: 57 + 128k) are missing from what it keeps.
// Dropping sets at nearly every step must find exactly what keeping them all finds.
TEST(VerifierAt4096, PartialSumOfRhdReduceScatter) {
  constexpr std::uint32_t p = 4096, bad = 3001, step = 5;
  const Problem pb = Problem::fromMpiCount(Collective::ReduceScatter, p, 1, false, 0);
  const RankGenerator broken = [&](const Problem& q, std::uint32_t r) {
    RankSchedule s = rhdReduceScatter(q, r);
    if (r != bad) return s;
    Step& st = s.steps.at(step);
    const auto landed = std::find_if(st.xfers.begin(), st.xfers.end(),
                                     [](const Transfer& t) { return t.dir == Dir::Recv; });
    EXPECT_NE(landed, st.xfers.end());
    for (LocalOp& op : st.ops)  // the partner's partial sum alone, without its own
      if (op.kind == OpKind::Reduce) op = {OpKind::Copy, op.dst, landed->slice, {}};
    return s;
  };
  const auto collected = verifyGenerated(pb, broken, {.setGarbageBytes = 0});
  const auto kept = verifyGenerated(pb, broken, {.setGarbageBytes = SIZE_MAX});
  EXPECT_EQ(describe(collected), describe(kept));
  ASSERT_FALSE(collected.empty());
  std::string lost;
  for (std::uint32_t k = 0; k < 32; ++k) lost += (k ? "," : "") + std::to_string(57 + 128 * k);
  for (const VerifyIssue& i : collected) {
    EXPECT_EQ(i.kind, Kind::MissingContribution) << i.message;
    EXPECT_NE(i.message.find("missing " + lost + ", unexpected none"), std::string::npos)
        << i.message;
  }
}

}  // namespace
}  // namespace hccl::algo

// ---- ramps that step differently stay apart --------------------------------------------------

namespace hccl::algo {
namespace {

// Eight one-element runs: the last four written first, their set ids stepping by 2, then the
// first four, stepping by 1 and ending where the others start (13, then 14). Stored as ramps,
// they must read back exactly as written: a ramp that swallowed the other would give blocks
// 5..7 the sets 15..17.
TEST(ProvenanceRamps, RampsWithDifferentStepsReadBackExactly) {
  prov::IntervalMap m(8);
  const std::vector<std::uint32_t> sets{10, 11, 12, 13, 14, 16, 18, 20};
  for (std::uint64_t i : {4u, 5u, 6u, 7u, 0u, 1u, 2u, 3u}) m.fill(i, 1, prov::Value{sets[i], 0, 0});
  const auto pieces = m.read(0, 8);
  ASSERT_EQ(pieces.size(), 8u);
  for (std::uint64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(pieces[i].v.set, sets[i]) << "block " << i;
    EXPECT_EQ(pieces[i].v.delta, 0) << "block " << i;
  }
}

}  // namespace
}  // namespace hccl::algo
