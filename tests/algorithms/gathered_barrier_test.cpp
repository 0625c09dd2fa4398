// algo::gatheredBarrier: a Barrier by the verifier for every group size and root, and the exit
// order it exists for (the root leaves first, every other rank one crossing after it), timed by
// a unit-latency model written here (each step posts its sends when it starts, a message arrives
// one unit after it was sent, a step ends when its last receive arrived).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/selector.hpp"
#include "algorithms/verifier.hpp"

namespace hccl::algo {
namespace {

Problem rootedAt(std::uint32_t p, std::uint32_t root) {
  Problem pb = Problem::barrier(p);
  pb.root = root;
  return pb;
}

// Every rank's exit time when rank r enters at enter[r]; the k-th send from a to b meets the
// k-th receive at b from a.
std::vector<double> exits(const Schedule& s, const std::vector<double>& enter) {
  const std::size_t p = s.ranks.size();
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<double>> sent;  // (from, to)
  std::vector<std::size_t> step(p, 0);
  std::vector<double> at(enter);
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> taken;
  std::vector<bool> posted(p, false);
  for (bool moved = true; moved;) {
    moved = false;
    for (std::uint32_t r = 0; r < p; ++r) {
      if (step[r] == s.ranks[r].steps.size()) continue;
      const Step& st = s.ranks[r].steps[step[r]];
      if (!posted[r]) {
        for (const Transfer& t : st.xfers)
          if (t.dir == Dir::Send) sent[{r, t.peer}].push_back(at[r] + 1);
        posted[r] = true;
        moved = true;
      }
      double end = at[r];
      std::map<std::uint32_t, std::size_t> need;
      bool ready = true;
      for (const Transfer& t : st.xfers) {
        if (t.dir != Dir::Recv) continue;
        const std::size_t k = taken[{t.peer, r}] + need[t.peer]++;
        const auto& q = sent[{t.peer, r}];
        if (k >= q.size()) {
          ready = false;
          break;
        }
        end = std::max(end, q[k]);
      }
      if (!ready) continue;
      for (const auto& [from, n] : need) taken[{from, r}] += n;
      at[r] = end;
      ++step[r];
      posted[r] = false;
      moved = true;
    }
  }
  for (std::uint32_t r = 0; r < p; ++r)
    EXPECT_EQ(step[r], s.ranks[r].steps.size()) << "rank " << r << " never finished";
  return at;
}

TEST(GatheredBarrier, IsABarrierForEveryRoot) {
  for (std::uint32_t p = 1; p <= 17; ++p)
    for (std::uint32_t root = 0; root < p; ++root) {
      const Schedule s = buildSchedule(gatheredBarrier, rootedAt(p, root));
      const auto issues = verify(s);
      EXPECT_TRUE(issues.empty()) << "p " << p << " root " << root << ": " << describe(issues);
    }
}

TEST(GatheredBarrier, TheRootLeavesFirstAndTheOthersOneCrossingLater) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> delay(0, 4);
  for (std::uint32_t p = 2; p <= 6; ++p)
    for (std::uint32_t root = 0; root < p; ++root)
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<double> enter(p);
        for (double& e : enter) e = delay(rng);
        const std::vector<double> out =
            exits(buildSchedule(gatheredBarrier, rootedAt(p, root)), enter);
        double lastOther = 0;
        for (std::uint32_t r = 0; r < p; ++r)
          if (r != root) lastOther = std::max(lastOther, enter[r] + 1);
        const double rootExit = std::max(enter[root], lastOther);
        EXPECT_EQ(out[root], rootExit) << "p " << p << " root " << root;
        for (std::uint32_t r = 0; r < p; ++r) {
          if (r == root) continue;
          EXPECT_EQ(out[r], rootExit + 1) << "p " << p << " rank " << r;
        }
      }
}

// The model against mesh's Barrier at two ranks: there the rank that comes last leaves at once
// and the other a crossing later (what the gathered one is for after a Bcast).
TEST(GatheredBarrier, MeshLetsTheLastComerLeaveFirst) {
  const std::vector<double> out = exits(buildSchedule(meshBarrier, Problem::barrier(2)), {0, 3});
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(out[0], 4);
  const std::vector<double> gathered =
      exits(buildSchedule(gatheredBarrier, rootedAt(2, 0)), {0, 3});
  EXPECT_EQ(gathered[0], 4);
  EXPECT_EQ(gathered[1], 5);
}

// A root that releases before it heard every rank, to ranks that do not hear each other, is not
// a Barrier, and the verifier says so. (The non-roots' signals to each other, which the slots
// need, would by themselves make an early release a Barrier still: a non-root hears every rank
// directly then; so they are taken out too.)
TEST(GatheredBarrier, ARootReleasingEarlyIsCaught) {
  Schedule s = buildSchedule(gatheredBarrier, rootedAt(3, 1));
  ASSERT_EQ(s.ranks[1].steps.size(), 2u);
  // Move the release into the step that waits: the root's signals leave before it heard anyone.
  const std::vector<Transfer> release = s.ranks[1].steps[1].xfers;
  std::vector<Transfer>& first = s.ranks[1].steps[0].xfers;
  first.insert(first.begin(), release.begin(), release.end());
  s.ranks[1].steps.pop_back();
  // Ranks 0 and 2 no longer signal each other.
  for (std::uint32_t r : {0u, 2u}) {
    auto& x = s.ranks[r].steps[0].xfers;
    const auto before = x.size();
    std::erase_if(x, [&](const Transfer& t) { return t.peer == 2 - r; });
    ASSERT_EQ(before - x.size(), 2u) << "rank " << r;
  }
  const auto issues = verify(s);
  ASSERT_FALSE(issues.empty());
  EXPECT_NE(describe(issues).find("leaves the barrier having heard only of"), std::string::npos)
      << describe(issues);
}

// ---- its sequence rule (registry.cpp), as the selector applies it ----------------------------

Settings settingsWith(std::map<std::string, std::string, std::less<>> env) {
  auto r = resolveSettings({{}, {}, mapLookup(std::move(env))});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.value();
}

CallInfo barrierAfter(std::optional<std::uint32_t> root, std::uint64_t bcastBytes = 0) {
  CallInfo c;
  c.coll = Collective::Barrier;
  c.afterBroadcastFrom = root;
  c.afterBroadcastBytes = bcastBytes;
  return c;
}

const CostModel kShm = defaultCostModel().withLevel0OnSharedMemory();

// Right after a Broadcast, at 2-8 ranks of one server on the shared-memory link: gathered at the
// Broadcast's root, said so by the decision; the composed schedule is the generator's at that
// root.
TEST(GatheredBarrierRule, ChosenRightAfterABroadcastAtTwoToEightRanksOnTheSharedMemoryLink) {
  for (std::uint32_t p : {2u, 3u, 4u, 8u}) {
    const Layout lay = Layout::servers(1, p);
    for (const char* mode : {"model", "hccl_rules"}) {
      Selector sel(lay.shape(), settingsWith({{"COLL_HCCL_SELECTION", mode}}), kShm);
      for (std::uint32_t root : {0u, 1u, p - 1}) {
        const Decision& d = sel.decide(barrierAfter(root));
        ASSERT_TRUE(d.ok()) << d.error;
        ASSERT_EQ(d.levels.size(), 1u) << d.summary();
        EXPECT_EQ(d.levels[0].algorithm, Algorithm::Gathered) << mode << ": " << d.summary();
        EXPECT_EQ(d.levels[0].reason, Reason::Sequence) << d.summary();
        EXPECT_NE(
            d.summary().find(fmt::format(
                "level0 gathered (sequence rule: after a broadcast from rank {} of 0 B (above "
                "2 ranks at most 16 KiB), gathered at the broadcast's root, which leaves "
                "first",
                root)),
            std::string::npos)
            << d.summary();
        const Problem pb = rootedAt(p, root);
        for (std::uint32_t r = 0; r < p; ++r)
          EXPECT_EQ(compose(lay, d, pb, r), withPrivateInput(pb, r, gatheredBarrier))
              << "p " << p << " rank " << r << " root " << root;
      }
    }
  }
}

// Anywhere one condition fails, the Barrier is chosen as before, never gathered: after anything
// but a Broadcast, on UCX's tagged messages, at nine ranks, between servers, and where
// HCCL_ALGO forces the Barrier's algorithm (configuration first).
TEST(GatheredBarrierRule, NotChosenWhereAConditionFails) {
  const auto expectNot = [](const CommShape& shape, const Settings& settings, const CostModel& m,
                            const CallInfo& call, const char* what) -> std::string {
    Selector sel(shape, settings, m);
    const Decision& d = sel.decide(call);
    EXPECT_TRUE(d.ok()) << what << ": " << d.error;
    for (const LevelChoice& lc : d.levels) {
      EXPECT_NE(lc.algorithm, Algorithm::Gathered) << what << ": " << d.summary();
      EXPECT_NE(lc.reason, Reason::Sequence) << what << ": " << d.summary();
    }
    return d.summary();
  };
  const Settings none = settingsWith({});
  expectNot(CommShape::servers(1, 2), none, kShm, barrierAfter(std::nullopt), "no broadcast");
  expectNot(CommShape::servers(1, 2), none, defaultCostModel(), barrierAfter(0), "tagged link");
  expectNot(CommShape::servers(1, 9), none, kShm, barrierAfter(0), "nine ranks");
  expectNot(CommShape::servers(2, 2), none, kShm, barrierAfter(0), "two servers of two");
  expectNot(CommShape::servers(1, 4), none, kShm, barrierAfter(0, 16385),
            "four ranks after a Bcast above 16 KiB");
  expectNot(CommShape::servers(2, 1), none, kShm, barrierAfter(0), "two servers");
  const std::string forced =
      expectNot(CommShape::servers(1, 2), settingsWith({{"HCCL_ALGO", "barrier=level0:NHR"}}), kShm,
                barrierAfter(1), "forced");
  EXPECT_NE(forced.find("level0 NHR (forced"), std::string::npos) << forced;
}

// The Bcast's size bounds it above two ranks only: at 16 KiB and below at 3-8 ranks, at any size
// at two.
TEST(GatheredBarrierRule, TheBroadcastsSizeBoundsItAboveTwoRanks) {
  for (const auto& [p, bytes] : std::vector<std::pair<std::uint32_t, std::uint64_t>>{
           {2, 1u << 20}, {2, 16385}, {3, 16384}, {4, 1}, {4, 16384}, {8, 16384}}) {
    Selector sel(CommShape::servers(1, p), settingsWith({}), kShm);
    const Decision& d = sel.decide(barrierAfter(0, bytes));
    ASSERT_TRUE(d.ok()) << d.error;
    EXPECT_EQ(d.levels[0].algorithm, Algorithm::Gathered)
        << "p " << p << " after " << bytes << " B: " << d.summary();
  }
  for (std::uint32_t p : {3u, 4u, 8u}) {
    Selector sel(CommShape::servers(1, p), settingsWith({}), kShm);
    const Decision& d = sel.decide(barrierAfter(0, 16385));
    ASSERT_TRUE(d.ok()) << d.error;
    EXPECT_EQ(d.levels[0].algorithm, Algorithm::Mesh) << "p " << p << ": " << d.summary();
  }
}

// The model alone never takes it: forced at two ranks it serves (any root) and prices two
// crossings in a row where fullmesh's Barrier prices one.
TEST(GatheredBarrierRule, TheModelPricesItAboveFullmesh) {
  Selector sel(CommShape::servers(1, 2), settingsWith({}), kShm);
  const Decision& mesh = sel.decide(barrierAfter(std::nullopt));
  ASSERT_TRUE(mesh.ok()) << mesh.error;
  EXPECT_EQ(mesh.levels[0].algorithm, Algorithm::Mesh) << mesh.summary();
  const Decision& gathered = sel.decide(barrierAfter(0));
  ASSERT_TRUE(gathered.ok()) << gathered.error;
  EXPECT_GT(gathered.predicted, mesh.predicted) << gathered.summary() << " / " << mesh.summary();
}

}  // namespace
}  // namespace hccl::algo
