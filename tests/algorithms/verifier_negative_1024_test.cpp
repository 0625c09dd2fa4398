// The defects verifier_negative checks on a few ranks only (pushes, rendezvous, posting order,
// the collectives beyond the reducing three), each at 1024 ranks as well: through verify() and
// the streamed verifyGenerated the sweep runs at thousands of ranks, which must agree. A defect
// that only a small schedule shows would leave the streamed check's records, runs and windows
// untested for it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "algorithms/generators.hpp"
#include "algorithms/verifier.hpp"
#include "tests/algorithms/verifier_expect.hpp"

namespace hccl::algo::test {
namespace {

constexpr std::uint32_t kP = kScaleRanks;
constexpr std::uint32_t kBad = kScaleBad;
const Schedule& clean() {
  return cleanAtScale();
}

bool touches(const Step& st, const Slice& sl) {
  for (const Transfer& y : st.xfers)
    if (y.slice.overlaps(sl)) return true;
  for (const LocalOp& op : st.ops)
    if (op.dst.overlaps(sl) || op.a.overlaps(sl) ||
        (op.kind == OpKind::Reduce && op.b.overlaps(sl)))
      return true;
  return false;
}

// Rank r's receive at step k, and its sender's send (the same step: RHD's ranks move in lockstep);
// none if the step receives nothing.
std::pair<Transfer*, Transfer*> message(Schedule& s, std::uint32_t r, std::size_t k) {
  for (Transfer& rc : s.ranks[r].steps.at(k).xfers) {
    if (rc.dir != Dir::Recv) continue;
    for (Transfer& sd : s.ranks[rc.peer].steps.at(k).xfers)
      if (sd.dir == Dir::Send && sd.peer == r) return {&rc, &sd};
  }
  return {nullptr, nullptr};
}

// The first step of rank r that receives a slice the step before leaves alone: the receive may
// be a push there.
std::size_t firstOpenReceive(Schedule& s, std::uint32_t r) {
  for (std::size_t k = 1; k < s.ranks[r].steps.size(); ++k) {
    const Transfer* rc = message(s, r, k).first;
    if (rc != nullptr && !touches(s.ranks[r].steps[k - 1], rc->slice)) return k;
  }
  throw std::logic_error("no receive that may be a push");
}

// Pushes (Transfer::push) on both ends of a message are clean; on the receive only, the two ends
// disagree about who copies.
TEST(VerifierAt1024, PushOnOneEndOnly) {
  Schedule s = clean();
  auto [rc, sd] = message(s, kBad, firstOpenReceive(s, kBad));
  rc->push = sd->push = true;
  EXPECT_TRUE(verifyBoth(s).empty()) << describe(verify(s));
  sd->push = false;
  expectBoth(s, Kind::UnmatchedTransfer, kBad, "only one end is a push");
}

// A pushed receive is open to its sender from the step before: the first of rank 517's steps
// whose receive the step before leaves alone gets a push (clean), then that step before reads it.
// Checked before the replay (the streamed check does it while generating every rank once).
TEST(VerifierAt1024, PushedReceiveTouchedTheStepBefore) {
  Schedule s = clean();
  const std::size_t k = firstOpenReceive(s, kBad);
  auto [rc, sd] = message(s, kBad, k);
  rc->push = sd->push = true;
  EXPECT_TRUE(verifyBoth(s).empty()) << describe(verify(s));
  const std::uint64_t fresh = scratchCount(s.ranks[kBad]);
  const Slice into = scratch(fresh, 1), from{rc->slice.buf, rc->slice.offset, 1};
  s.ranks[kBad].steps[k - 1].ops.push_back({OpKind::Copy, into, from, {}});
  expectBoth(s, Kind::TransferHazard, kBad,
             fmt::format("rank 517 step {}: {} is open to its sender from step {}", k,
                         toString(*rc), k - 1));
}

// Ranks 517 and 518 each send to the other first, then receive: eager buffering would hide it,
// under rendezvous it is a deadlock, and every other rank waits on the two.
TEST(VerifierAt1024, RendezvousDeadlockThatBufferingWouldHide) {
  Schedule s = clean();
  for (std::uint32_t r : {kBad, kBad + 1}) {
    const std::uint32_t other = r == kBad ? kBad + 1 : kBad;
    std::vector<Step> steps(2);
    send(steps[0], other, in(0, 1));
    recv(steps[1], other, scratch(0, 1));
    steps.insert(steps.end(), s.ranks[r].steps.begin(), s.ranks[r].steps.end());
    s.ranks[r].steps = std::move(steps);
  }
  const auto issues = verifyBoth(s, {.maxIssues = 100000});
  ASSERT_TRUE(has(issues, Kind::Deadlock)) << describe(issues);
  EXPECT_NE(describe(issues).find("rank 517 step 0: send in[0+1] -> 518 never completes: rank "
                                  "518 is blocked in step 0 (deadlock)"),
            std::string::npos)
      << describe(issues);
}

// Two messages from rank 517 to 518 in one step, one and two elements, received in the other
// order: MPI pairs them in posting order, so the sizes clash on message #0.
TEST(VerifierAt1024, MessagesMatchInPostingOrder) {
  Schedule s = clean();
  const std::uint64_t fresh = scratchCount(s.ranks[kBad + 1]);
  Step a, b;
  send(a, kBad + 1, in(0, 1));
  send(a, kBad + 1, in(1, 2));
  recv(b, kBad, scratch(fresh, 2));
  recv(b, kBad, scratch(fresh + 2, 1));
  s.ranks[kBad].steps.insert(s.ranks[kBad].steps.begin(), a);
  s.ranks[kBad + 1].steps.insert(s.ranks[kBad + 1].steps.begin(), b);
  const auto issues = verifyBoth(s, {.maxIssues = 100000});
  ASSERT_TRUE(has(issues, Kind::SizeMismatch)) << describe(issues);
  EXPECT_NE(describe(issues).find("to rank 518 (message #0 between them)"), std::string::npos)
      << describe(issues);
}

// Scan's order is checked even when not asked for: rank 517 folds a received prefix on the
// right of its own part.
TEST(VerifierAt1024, ScanOutOfRankOrder) {
  Schedule s = pruned(rhdScan, Problem::scan(kP, 7));
  EXPECT_TRUE(verifyBoth(s).empty()) << describe(verify(s));
  bool swapped = false;
  for (Step& st : s.ranks[kBad].steps)
    for (LocalOp& op : st.ops)
      if (!swapped && op.kind == OpKind::Reduce && !(op.a == op.b)) {
        std::swap(op.a, op.b);
        swapped = true;
      }
  ASSERT_TRUE(swapped);
  const auto issues = verifyBoth(s);
  ASSERT_TRUE(has(issues, Kind::RankOrder)) << describe(issues);
  EXPECT_EQ(issues.front().rank, kBad) << describe(issues);
  EXPECT_NE(issues.front().message.find("rank 517 step"), std::string::npos) << describe(issues);
}

// Exscan's rank 0 must not write its output.
TEST(VerifierAt1024, ExscanRankZeroWrites) {
  Schedule s = pruned(rhdExscan, Problem::exscan(kP, 5));
  EXPECT_TRUE(verifyBoth(s).empty()) << describe(verify(s));
  copy(s.ranks[0].lastStep(), out(0, 5), in(0, 5));
  expectBoth(s, Kind::OutsideResult, 0, "outside its result (none)");
}

// An in-place Gather root (rank 517, two elements a rank) rewriting its own block, through
// scratch, breaks the write contract.
TEST(VerifierAt1024, InPlaceGatherRootOwnBlock) {
  Schedule s = pruned(nbGather, Problem::gather(kP, 2, kBad, true));
  EXPECT_TRUE(verifyBoth(s).empty()) << describe(verify(s));
  const std::uint64_t fresh = scratchCount(s.ranks[kBad]);
  copy(s.ranks[kBad].lastStep(), scratch(fresh, 2), out(2 * kBad, 2));
  copy(s.ranks[kBad].lastStep(), out(2 * kBad, 2), scratch(fresh, 2));
  expectBoth(s, Kind::OutsideResult, kBad, "outside its result out[0+1034], out[1036+1012]");
}

// AllToAllV, uneven pairs (some empty): rank 517's block from rank 3 (rank 3's row puts it at
// 516) lands one element right in its column. Streamed only (the held schedule is 1024 x 1023
// steps): the final check's per-row offsets (Verifier::sendOffset) over a matrix whose pairs
// differ.
TEST(VerifierAt1024, AllToAllVWrongOffset) {
  std::vector<std::uint64_t> m(std::size_t{kP} * kP);
  for (std::uint32_t i = 0; i < kP; ++i)
    for (std::uint32_t j = 0; j < kP; ++j) m[std::size_t{i} * kP + j] = (i + 2 * j) % 3;
  const Problem pb = Problem::allToAllV(kP, m);
  ASSERT_EQ(m[3 * kP + kBad], 2u);  // two elements from rank 3
  EXPECT_TRUE(verifyGenerated(pb, pairwiseAllToAllV).empty());
  const RankGenerator broken = [](const Problem& q, std::uint32_t r) {
    RankSchedule s = pairwiseAllToAllV(q, r);
    if (r == kBad)
      for (Step& st : s.steps)
        for (Transfer& t : st.xfers)
          if (t.dir == Dir::Recv && t.peer == 3) t.slice.offset += 1;
    return s;
  };
  // Rank 517's column: [2 from rank 0][1 from rank 2][2 from rank 3]..., rank 3's block at 4.
  EXPECT_EQ(describe(verifyGenerated(pb, broken)),
            "[not written] rank 517 final out[3+1]: never written\n"
            "[wrong position] rank 517 final out[4+1]: holds input elements starting at 516, "
            "expected 517\n"
            "[wrong position] rank 517 final out[5+1]: holds input elements starting at 517, "
            "expected 518\n");
}

}  // namespace
}  // namespace hccl::algo::test
