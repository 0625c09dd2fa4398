// The replay pairs the k-th send from a to b with the k-th receive on b from a (MPI's order),
// whichever end is posted first and however the ends that wait are stored: a run of consecutive
// transfers to one peer whose offsets step evenly is kept as one record (replay.cpp), and a
// match must hand the observers the right transfer of the run, with its own index and offset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
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
      Recorder rec;
      const auto problems = replay(ranks, rec);
      ASSERT_EQ(problems.size(), 1u);
      EXPECT_EQ(problems[0].kind, ReplayProblem::Kind::SizeMismatch);
      EXPECT_NE(problems[0].message.find(fmt::format(
                    "rank {} step 0 sends {} elements to rank {} (message #23 between them), "
                    "but rank {} step 0 receives {} elements",
                    a, atSender ? 2 : 1, b, b, atSender ? 1 : 2)),
                std::string::npos)
          << problems[0].message;
      EXPECT_EQ(rec.pairs.size(), n);
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

}  // namespace
}  // namespace hccl::algo
