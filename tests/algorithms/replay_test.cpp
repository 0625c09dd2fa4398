// The replay pairs the k-th send from a to b with the k-th receive on b from a (MPI's order),
// whichever end is posted first and however the ends that wait are stored: a run of consecutive
// transfers to one peer whose offsets step evenly is kept as one record, and so is a sweep, one
// transfer to each of peers stepping evenly at evenly stepping indices (a one-step mesh,
// replay.cpp); a match must hand the observers the right transfer of the run, with its own
// index, peer and offset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "algorithms/replay.hpp"

namespace hccl::algo {
namespace {

// One matched message as the observer saw it.
using Pair = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint64_t, std::uint64_t,
                        std::uint32_t, std::uint32_t, std::uint32_t, std::uint64_t, std::uint64_t,
                        bool, std::uint8_t>;

class Recorder final : public ReplayObserver {
 public:
  void transferred(const XferRef& s, const Transfer& ts, const XferRef& r,
                   const Transfer& tr) override {
    pairs.emplace_back(s.rank, s.step, s.index, ts.slice.offset, ts.slice.count, r.rank, r.step,
                       r.index, tr.slice.offset, tr.slice.count, ts.push && tr.push,
                       static_cast<std::uint8_t>(ts.level * 4 + tr.level));
  }
  std::vector<Pair> pairs;
};

std::vector<Pair> sorted(std::vector<Pair> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The pairs MPI's order makes, computed from the schedules alone: in each step, per ordered pair
// (a, b), a's k-th send to b with b's k-th receive from a (every test here matches within a step).
std::vector<Pair> pairedInOrder(const std::vector<RankSchedule>& ranks) {
  std::vector<Pair> want;
  const auto p = static_cast<std::uint32_t>(ranks.size());
  for (std::uint32_t step = 0; step < ranks[0].steps.size(); ++step)
    for (std::uint32_t a = 0; a < p; ++a)
      for (std::uint32_t b = 0; b < p; ++b) {
        if (a == b) continue;
        std::vector<std::uint32_t> tx, rx;
        const auto& sa = ranks[a].steps[step].xfers;
        const auto& sb = ranks[b].steps[step].xfers;
        for (std::uint32_t i = 0; i < sa.size(); ++i)
          if (sa[i].dir == Dir::Send && sa[i].peer == b) tx.push_back(i);
        for (std::uint32_t i = 0; i < sb.size(); ++i)
          if (sb[i].dir == Dir::Recv && sb[i].peer == a) rx.push_back(i);
        EXPECT_EQ(tx.size(), rx.size());
        for (std::size_t k = 0; k < std::min(tx.size(), rx.size()); ++k) {
          const Transfer &ts = sa[tx[k]], &tr = sb[rx[k]];
          want.emplace_back(a, step, tx[k], ts.slice.offset, ts.slice.count, b, step, rx[k],
                            tr.slice.offset, tr.slice.count, ts.push && tr.push,
                            static_cast<std::uint8_t>(ts.level * 4 + tr.level));
        }
      }
  return want;
}

// The peers a rank sweeps, in order: from `from`, stepping by `by`, skipping the rank itself.
std::vector<std::uint32_t> sweepOrder(std::uint32_t p, std::uint32_t self, std::uint32_t from,
                                      std::int32_t by) {
  std::vector<std::uint32_t> order;
  for (std::int64_t q = from; q >= 0 && q < p; q += by)
    if (q != self) order.push_back(static_cast<std::uint32_t>(q));
  return order;
}

// Rank 0 sends `n` blocks to rank 1 at offsets first, first + stride, ... (a run), rank 1
// receives them into Output 0, 1, 2, ...; with `swap`, the roles of the ranks are exchanged.
// Rank 1 is posted first by the replay's order or not, so both ends wait as a run in one of
// the two forms. The expected pairs are the k-th send with the k-th receive.
TEST(Replay, RunOfTransfersPairsInOrder) {
  for (const bool swap : {false, true})
    for (const std::int64_t stride : {2, -2, 0, 5}) {
      const std::uint32_t a = swap ? 1 : 0, b = 1 - a, n = 50;
      std::vector<RankSchedule> ranks(2);
      Step& sa = ranks[a].newStep();
      Step& sb = ranks[b].newStep();
      std::vector<Pair> want;
      for (std::uint32_t k = 0; k < n; ++k) {
        const std::uint64_t off = static_cast<std::uint64_t>(200 + stride * k);
        send(sa, b, in(off, 1));
        recv(sb, a, out(k, 1));
        want.emplace_back(a, 0, k, off, 1, b, 0, k, k, 1, false, 0);
      }
      Recorder rec;
      const auto problems = replay(ranks, rec);
      EXPECT_TRUE(problems.empty());
      EXPECT_EQ(sorted(rec.pairs), sorted(want)) << "swap " << swap << " stride " << stride;
    }
}

// The one message whose two ends disagree on its size, in step 0.
struct Mismatch {
  std::uint32_t from, to;
  std::uint32_t number;  // between the pair, from 0
  std::uint64_t sent, received;
};

// Replays `ranks`, which must report exactly `m` (naming the message's number between the pair)
// and match `pairs` messages.
void expectSizeMismatch(const std::vector<RankSchedule>& ranks, const Mismatch& m,
                        std::size_t pairs) {
  Recorder rec;
  const auto problems = replay(ranks, rec);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ReplayProblem::Kind::SizeMismatch);
  EXPECT_NE(problems[0].message.find(fmt::format(
                "rank {} step 0 sends {} elements to rank {} (message #{} between them), but "
                "rank {} step 0 receives {} elements",
                m.from, m.sent, m.to, m.number, m.to, m.received)),
            std::string::npos)
      << problems[0].message;
  EXPECT_EQ(rec.pairs.size(), pairs);
}

// A size mismatch in the middle of a run names the message's number between the pair, as it
// does for single transfers: the run is split there and the number counted from the schedule.
TEST(Replay, SizeMismatchInsideARun) {
  for (const bool swap : {false, true})
    for (const bool atSender : {false, true}) {
      const std::uint32_t a = swap ? 1 : 0, b = 1 - a, n = 40, bad = 23;
      std::vector<RankSchedule> ranks(2);
      Step& sa = ranks[a].newStep();
      Step& sb = ranks[b].newStep();
      for (std::uint32_t k = 0; k < n; ++k) {
        const std::uint64_t len = k == bad ? 2 : 1;
        send(sa, b, in(3 * k, atSender ? len : 1));
        recv(sb, a, out(2 * k, atSender ? 1 : len));
      }
      expectSizeMismatch(ranks, {a, b, bad, atSender ? 2u : 1u, atSender ? 1u : 2u}, n);
    }
}

// Random schedules of 2..5 ranks and two steps: each ordered pair exchanges a few messages a
// step, laid out in pieces of consecutive transfers with evenly stepping offsets (runs), the
// pieces of different peers and directions interleaved at random, sizes, levels and push flags
// varying between pieces. Every message must pair with its partner, independently computed:
// the k-th message from a to b in a step.
TEST(Replay, RandomRunsPairInPostingOrder) {
  std::mt19937 rng(20261207);
  const auto draw = [&](std::uint32_t m) { return static_cast<std::uint32_t>(rng() % m); };
  for (int trial = 0; trial < 300; ++trial) {
    const std::uint32_t p = 2 + draw(4);
    std::vector<RankSchedule> ranks(p);
    std::vector<Pair> want;
    for (std::uint32_t step = 0; step < 2; ++step) {
      // Pieces of each rank's step: (peer, dir, first offset, stride, count, level, push, n).
      struct Piece {
        std::uint32_t peer;
        Dir dir;
        std::uint64_t first, stride, count;
        std::uint8_t level;
        bool push;
        std::uint32_t n;
      };
      std::vector<std::vector<Piece>> pieces(p);
      for (std::uint32_t a = 0; a < p; ++a)
        for (std::uint32_t b = 0; b < p; ++b) {
          if (a == b) continue;
          for (std::uint32_t m = draw(4); m > 0; --m) {
            const std::uint64_t count = draw(3), stride = std::uint64_t{draw(7)} - 3;
            const auto level = static_cast<std::uint8_t>(draw(2));
            const bool push = draw(5) == 0;
            const std::uint32_t n = 1 + draw(6);
            pieces[a].push_back({b, Dir::Send, 100 + draw(50), stride, count, level, push, n});
            // The receiving side may split the same messages differently, in offsets only.
            pieces[b].push_back(
                {a, Dir::Recv, 300 + draw(50), stride + draw(2), count, level, push, n});
          }
        }
      // Interleave each rank's pieces at random, keeping each (peer, dir)'s pieces in order.
      for (std::uint32_t r = 0; r < p; ++r) {
        std::map<std::pair<std::uint32_t, Dir>, std::vector<std::uint32_t>> byPeer;
        for (std::uint32_t i = 0; i < pieces[r].size(); ++i)
          byPeer[{pieces[r][i].peer, pieces[r][i].dir}].push_back(i);
        std::vector<std::vector<std::uint32_t>*> groups;
        for (auto& [key, list] : byPeer) groups.push_back(&list);
        std::vector<std::uint32_t> pick;
        for (std::uint32_t g = 0; g < groups.size(); ++g)
          pick.insert(pick.end(), groups[g]->size(), g);
        std::shuffle(pick.begin(), pick.end(), rng);
        std::vector<std::size_t> next(groups.size(), 0);
        Step& st = ranks[r].newStep();
        for (const std::uint32_t g : pick) {
          const Piece& pc = pieces[r][(*groups[g])[next[g]++]];
          for (std::uint32_t j = 0; j < pc.n; ++j) {
            const Slice sl{pc.dir == Dir::Send ? Buf::Input : Buf::Output, pc.first + j * pc.stride,
                           pc.count};
            st.xfers.push_back({pc.dir, pc.peer, sl, pc.level, pc.push});
          }
        }
      }
      // The expected pairs: per ordered pair, the k-th send with the k-th receive.
      for (std::uint32_t a = 0; a < p; ++a)
        for (std::uint32_t b = 0; b < p; ++b) {
          if (a == b) continue;
          std::vector<std::pair<std::uint32_t, Transfer>> tx, rx;
          const auto& sa = ranks[a].steps[step].xfers;
          const auto& sb = ranks[b].steps[step].xfers;
          for (std::uint32_t i = 0; i < sa.size(); ++i)
            if (sa[i].dir == Dir::Send && sa[i].peer == b) tx.emplace_back(i, sa[i]);
          for (std::uint32_t i = 0; i < sb.size(); ++i)
            if (sb[i].dir == Dir::Recv && sb[i].peer == a) rx.emplace_back(i, sb[i]);
          ASSERT_EQ(tx.size(), rx.size());
          for (std::size_t k = 0; k < tx.size(); ++k) {
            const Transfer &ts = tx[k].second, &tr = rx[k].second;
            want.emplace_back(a, step, tx[k].first, ts.slice.offset, ts.slice.count, b, step,
                              rx[k].first, tr.slice.offset, tr.slice.count, ts.push && tr.push,
                              static_cast<std::uint8_t>(ts.level * 4 + tr.level));
          }
        }
    }
    Recorder rec;
    const auto problems = replay(ranks, rec);
    ASSERT_TRUE(problems.empty()) << "trial " << trial << ": " << problems[0].message;
    ASSERT_EQ(sorted(rec.pairs), sorted(want)) << "trial " << trial;
  }
}

// One rank (the first or the last, so its ends wait or its peers' do) sweeps its peers as a
// one-step mesh does: send to q, receive from q, for q stepping up, down or by two (then the
// odd ones, then the even ones), twice over, so two sweeps of each direction cover each peer
// and the older one must match first. Variants break the sweeps in the middle: one peer's
// messages moved to the end, an offset jump, a size change (agreed by the receiver), a level
// change, a transfer to another peer between two of the sweep's. Each peer receives and sends
// its two messages in its own order.
TEST(Replay, SweepsAcrossPeersPairInOrder) {
  const std::uint32_t p = 13;
  for (const std::uint32_t a : {0u, p - 1})
    for (const std::int32_t by : {1, -1, 2})
      for (int broken = 0; broken < 6; ++broken) {
        std::vector<std::uint32_t> order;
        if (by == 2) {
          order = sweepOrder(p, a, 1, 2);
          const auto evens = sweepOrder(p, a, 0, 2);
          order.insert(order.end(), evens.begin(), evens.end());
        } else {
          order = sweepOrder(p, a, by > 0 ? 0 : p - 1, by);
        }
        const std::uint32_t mid = order[order.size() / 2];
        if (broken == 1) {  // the middle peer's messages after everyone else's
          std::erase(order, mid);
          order.push_back(mid);
        }
        std::vector<RankSchedule> ranks(p);
        for (auto& rk : ranks) rk.newStep();
        Step& sa = ranks[a].steps[0];
        for (std::uint32_t round = 0; round < 2; ++round)
          for (std::uint32_t j = 0; j < order.size(); ++j) {
            const std::uint32_t q = order[j];
            const bool atMid = q == mid && round == 1;
            const std::uint64_t len = broken == 3 && atMid ? 2 : 1;
            const std::uint64_t off = 1000 * round + 3 * j + (broken == 2 && atMid ? 500 : 0);
            sa.xfers.push_back({Dir::Send, q, in(off, len),
                                static_cast<std::uint8_t>(broken == 4 && atMid ? 1 : 0), false});
            if (broken == 5 && q == mid) send(sa, order[0], in(999, 1));
            recv(sa, q, out(2000 * round + 5 * j, 1));
          }
        for (std::uint32_t q = 0; q < p; ++q) {
          if (q == a) continue;
          Step& sq = ranks[q].steps[0];
          const std::uint32_t extra = broken == 5 && q == order[0] ? 2 : 0;
          for (std::uint32_t k = 0; k < 2 + extra; ++k) {
            const std::uint64_t len = broken == 3 && q == mid && k == 1 ? 2 : 1;
            recv(sq, a, out(7 * k, len));
          }
          // The sends back, newest offset first: the order between the pair is what counts.
          send(sq, a, in(40, 1));
          send(sq, a, in(20, 1));
        }
        Recorder rec;
        const auto problems = replay(ranks, rec);
        EXPECT_TRUE(problems.empty()) << problems[0].message;
        EXPECT_EQ(sorted(rec.pairs), sorted(pairedInOrder(ranks)))
            << "a " << a << " by " << by << " broken " << broken;
      }
}

// A size mismatch on one peer of a sweep names that pair's message number (#1: the second
// sweep), whichever side waits and whichever end has the wrong size.
TEST(Replay, SizeMismatchInsideASweep) {
  const std::uint32_t p = 10, bad = 6;
  for (const std::uint32_t a : {0u, p - 1})
    for (const std::int32_t by : {1, -1})
      for (const bool atSender : {false, true}) {
        std::vector<RankSchedule> ranks(p);
        for (auto& rk : ranks) rk.newStep();
        const auto order = sweepOrder(p, a, by > 0 ? 0 : p - 1, by);
        for (std::uint32_t round = 0; round < 2; ++round)
          for (std::uint32_t j = 0; j < order.size(); ++j) {
            const std::uint64_t len = order[j] == bad && round == 1 && atSender ? 2 : 1;
            send(ranks[a].steps[0], order[j], in(10 * round + j, len));
            recv(ranks[a].steps[0], order[j], out(10 * round + j, 1));
          }
        for (std::uint32_t q = 0; q < p; ++q) {
          if (q == a) continue;
          for (std::uint32_t k = 0; k < 2; ++k) {
            const std::uint64_t len = q == bad && k == 1 && !atSender ? 2 : 1;
            recv(ranks[q].steps[0], a, out(k, len));
            send(ranks[q].steps[0], a, in(k, 1));
          }
        }
        expectSizeMismatch(ranks, {a, bad, 1, atSender ? 2u : 1u, atSender ? 1u : 2u}, 4 * (p - 1));
      }
}

// Random schedules of 2..16 ranks and two steps: each ordered pair exchanges 0..3 messages a
// step (sizes mostly equal, some not), and each rank lays out its ends in random patterns:
// runs to one peer, sweeps over peers stepping by +-1, +-2 or 3 (one direction, or sends and
// receives interleaved as a mesh posts them, the receives from the same peers or the mirrored
// ones), offsets stepping evenly with an occasional jump, levels and push flags changing between
// patterns now and then; a peer with nothing left breaks a sweep. The pairs the replay reports
// must be the k-th send with the k-th receive of each pair.
TEST(Replay, RandomSweepsPairInPostingOrder) {
  std::mt19937 rng(20261208);
  const auto draw = [&](std::uint32_t m) { return static_cast<std::uint32_t>(rng() % m); };
  std::size_t longSweeps = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::uint32_t p = 2 + draw(15);
    std::vector<RankSchedule> ranks(p);
    for (std::uint32_t step = 0; step < 2; ++step) {
      // queue[r][{q, dir}]: the sizes of r's ends with q in that direction, in order.
      std::vector<std::map<std::pair<std::uint32_t, Dir>, std::deque<std::uint64_t>>> queue(p);
      for (std::uint32_t a = 0; a < p; ++a)
        for (std::uint32_t b = 0; b < p; ++b)
          for (std::uint32_t m = a == b ? 0 : draw(4); m > 0; --m) {
            const std::uint64_t len = draw(8) == 0 ? draw(3) : 1;
            queue[a][{b, Dir::Send}].push_back(len);
            queue[b][{a, Dir::Recv}].push_back(len);
          }
      for (std::uint32_t r = 0; r < p; ++r) {
        Step& st = ranks[r].newStep();
        auto& qs = queue[r];
        std::uint8_t level = 0;
        bool push = false;
        std::uint64_t offset = 100;
        std::int64_t stride = 1;
        // Emits r's next end with q in direction d, if any; false when there is none.
        const auto emit = [&](std::uint32_t q, Dir d) {
          const auto found = qs.find({q, d});
          if (found == qs.end() || found->second.empty()) return false;
          if (draw(12) == 0) offset += 50;  // a jump breaks a run
          st.xfers.push_back(
              {d, q,
               Slice{d == Dir::Send ? Buf::Input : Buf::Output, offset, found->second.front()},
               level, push});
          found->second.pop_front();
          offset += static_cast<std::uint64_t>(stride);
          return true;
        };
        for (bool left = true; left;) {
          if (draw(4) == 0) level = static_cast<std::uint8_t>(draw(2));
          if (draw(6) == 0) push = !push;
          stride = std::int64_t{draw(7)} - 3;
          offset = 100 + draw(100);
          const std::uint32_t kind = draw(4);
          if (kind == 0) {  // a run to one peer
            const std::uint32_t q = draw(p);
            const Dir d = draw(2) == 0 ? Dir::Send : Dir::Recv;
            for (std::uint32_t n = 1 + draw(5); n > 0 && emit(q, d); --n) {
            }
          } else {  // a sweep: one direction (kind 1), a mesh (2), a mesh mirrored (3)
            static constexpr std::int32_t kBy[] = {1, -1, 2, -2, 3};
            const std::int32_t by = kBy[draw(5)];
            const Dir d = draw(2) == 0 ? Dir::Send : Dir::Recv;
            const Dir other = d == Dir::Send ? Dir::Recv : Dir::Send;
            std::uint32_t n = 0;
            for (std::uint32_t q : sweepOrder(p, r, draw(p), by)) {
              bool any = emit(q, d);
              if (kind == 2) any = emit(q, other) || any;
              const std::int64_t mirror = 2 * std::int64_t{r} - q;
              if (kind == 3 && mirror >= 0 && mirror < p)
                any = emit(static_cast<std::uint32_t>(mirror), other) || any;
              n = any ? n + 1 : 0;
              longSweeps += n == 4;
            }
          }
          left = false;
          for (const auto& [key, sizes] : qs) left = left || !sizes.empty();
        }
      }
    }
    Recorder rec;
    const auto problems = replay(ranks, rec);
    ASSERT_TRUE(problems.empty()) << "trial " << trial << ": " << problems[0].message;
    ASSERT_EQ(sorted(rec.pairs), sorted(pairedInOrder(ranks))) << "trial " << trial;
  }
  // Enough of the layouts are sweeps of four peers or more for the sweep records to be made.
  EXPECT_GT(longSweeps, 1000u);
}

}  // namespace
}  // namespace hccl::algo
