// Every collective is decided on every shape, forced or automatic, and the decision composes into
// a schedule the verifier accepts; rank-local calls are decided without their counts.
#include <gtest/gtest.h>

#include "algorithms/hierarchical.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/selector.hpp"
#include "algorithms/verifier.hpp"
#include "algorithms/write_contract.hpp"

namespace hccl::algo {
namespace {

Settings settingsWith(std::map<std::string, std::string, std::less<>> env) {
  auto r = resolveSettings({{}, {}, mapLookup(std::move(env))});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.value();
}

CallInfo callOf(Collective c, std::uint64_t count) {
  CallInfo call;
  call.coll = c;
  call.count = count;
  call.elemSize = 4;
  call.type = DataType::Int32;
  if (reduces(c)) call.op = ReduceOp::Sum;
  return call;
}

void expectComposes(const Layout& lay, const Decision& d, const Problem& pb,
                    const std::string& what) {
  Schedule s{pb, {}};
  const RankGenerator gen = [&](const Problem& q, std::uint32_t r) {
    return compose(lay, d, q, r);
  };
  for (std::uint32_t r = 0; r < pb.ranks; ++r) s.ranks.push_back(withPrivateInput(pb, r, gen));
  const auto issues = verify(s);
  EXPECT_TRUE(issues.empty()) << what << " " << d.summary() << "\n" << describe(issues);
}

TEST(EveryCollective, DecidedAndComposedOnEveryShape) {
  for (const Layout& lay : {Layout::servers(1, 5), Layout::servers(4, 1), Layout::servers(3, 2),
                            Layout::pods(2, 2, 2), Layout::uneven({3, 5}, false)}) {
    for (const char* algo : {"", "level0:NA;level1:ring", "level0:NA;level1:NHR",
                             "level0:NA;level1:pipeline", "others=level0:NA;level1:H-D_R"}) {
      Selector sel(lay.shape(), settingsWith({{"HCCL_ALGO", algo}}), defaultCostModel());
      for (int i = 0; i < kNumCollectives; ++i) {
        const auto c = static_cast<Collective>(i);
        const Decision& d = sel.decide(callOf(c, 6));
        const std::string what = lay.describe() + " HCCL_ALGO=" + algo + " " + std::string(name(c));
        ASSERT_TRUE(d.ok()) << what << ": " << d.error;
        expectComposes(lay, d, Problem::fromMpiCount(c, lay.ranks(), 6, false, lay.ranks() - 1),
                       what);
      }
    }
  }
}

TEST(EveryCollective, PerOpKeysForceEachCollective) {
  const Layout lay = Layout::servers(4, 1);
  Selector sel(lay.shape(),
               settingsWith({{"HCCL_ALGO",
                              "broadcast=level1:H-D_R/reduce=level1:ring/scatter=level1:NB/"
                              "gather=level1:ring/alltoall=level1:pairwise/barrier=level1:NHR/"
                              "scan=level1:H-D_R/others=level1:NB"}}),
               defaultCostModel());
  const std::vector<std::pair<Collective, Algorithm>> want = {
      {Collective::Broadcast, Algorithm::Rhd},     {Collective::Reduce, Algorithm::Ring},
      {Collective::Scatter, Algorithm::NB},        {Collective::Gather, Algorithm::Ring},
      {Collective::AllToAll, Algorithm::Pairwise}, {Collective::AllToAllV, Algorithm::Pairwise},
      {Collective::Barrier, Algorithm::NHR},       {Collective::Scan, Algorithm::Rhd},
      {Collective::AllGather, Algorithm::NB}};
  for (const auto& [c, a] : want) {
    const Decision& d = sel.decide(callOf(c, 100));
    ASSERT_TRUE(d.ok()) << name(c) << ": " << d.error;
    EXPECT_EQ(d.levels.back().algorithm, a) << name(c) << ": " << d.summary();
    EXPECT_EQ(d.levels.back().reason, Reason::Forced) << name(c) << ": " << d.summary();
  }
}

TEST(EveryCollective, ForcedButIncapableFallsBackInHcclsOrder) {
  const Layout lay = Layout::servers(4, 1);
  // pipeline for alltoall -> pairwise; ring for scan -> NHR (none) -> H-D_R; ring for barrier ->
  // NHR; NB for exscan -> NHR (none), H-D_R.
  Selector sel(lay.shape(),
               settingsWith({{"HCCL_ALGO",
                              "alltoall=level1:pipeline/scan=level1:ring/barrier=level1:ring/"
                              "exscan=level1:NB"}}),
               defaultCostModel());
  const std::vector<std::pair<Collective, Algorithm>> want = {
      {Collective::AllToAll, Algorithm::Pairwise},
      {Collective::AllToAllV, Algorithm::Pairwise},
      {Collective::Scan, Algorithm::Rhd},
      {Collective::Barrier, Algorithm::NHR},
      {Collective::Exscan, Algorithm::Rhd}};
  for (const auto& [c, a] : want) {
    const Decision& d = sel.decide(callOf(c, 100));
    ASSERT_TRUE(d.ok()) << name(c) << ": " << d.error;
    EXPECT_EQ(d.levels.back().algorithm, a) << name(c) << ": " << d.summary();
    EXPECT_EQ(d.levels.back().reason, Reason::Fallback) << name(c) << ": " << d.summary();
  }
}

TEST(EveryCollective, RankLocalCallsIgnoreCountsAndTakeDirectAlgorithms) {
  for (const Layout& lay : {Layout::servers(1, 6), Layout::servers(6, 1), Layout::servers(3, 2)}) {
    Selector sel(lay.shape(), settingsWith({}), defaultCostModel());
    for (Collective c : {Collective::Gather, Collective::Scatter, Collective::AllToAllV}) {
      CallInfo small = callOf(c, 1), large = callOf(c, 1 << 24);
      small.rankLocal = large.rankLocal = true;
      const Decision a = sel.decide(small), b = sel.decide(large);
      ASSERT_TRUE(a.ok()) << lay.describe() << " " << name(c) << ": " << a.error;
      EXPECT_EQ(a.plan, b.plan) << lay.describe() << " " << name(c);
      for (const LevelChoice& lc : a.levels) {
        const GeneratorSpec* spec = findGenerator(lc.algorithm, c);
        if (lc.level == lay.shape().levels.back().level) {
          EXPECT_TRUE(spec && spec->rankLocal) << name(c) << ": " << a.summary();
        }
      }
    }
  }
}

// What the engine runs for MPI_Gatherv and MPI_Scatterv: every rank decides without counts and
// builds its schedule from what it knows (the root every count, a non-root its own). Over several
// servers that is the flat plan: split by server, a non-root would need its server's counts,
// which it does not have, while the root could compose; the two disagreed and the root hung.
TEST(EveryCollective, RankLocalGatherAndScatterComposeFromWhatEachRankKnows) {
  for (const Layout& lay : {Layout::servers(1, 4), Layout::servers(2, 2), Layout::servers(3, 2),
                            Layout::servers(2, 3)}) {
    Selector sel(lay.shape(), settingsWith({}), defaultCostModel());
    const std::uint32_t p = lay.ranks();
    std::vector<std::uint64_t> counts(p);
    for (std::uint32_t r = 0; r < p; ++r) counts[r] = (r * 5 + 3) % 4;  // zeros among others
    for (Collective c : {Collective::Gather, Collective::Scatter}) {
      CallInfo call = callOf(c, 0);
      call.rankLocal = call.uneven = true;
      const Decision d = sel.decide(call);
      ASSERT_TRUE(d.ok()) << lay.describe() << " " << name(c) << ": " << d.error;
      if (lay.shape().levels.size() > 1) {
        EXPECT_EQ(planOf(d.plan).name(), "flat") << lay.describe() << ": " << d.summary();
      }
      for (std::uint32_t root = 0; root < p; ++root) {
        const Problem whole = c == Collective::Gather ? Problem::gatherV(counts, root)
                                                      : Problem::scatterV(counts, root);
        Schedule s{whole, {}};
        for (std::uint32_t r = 0; r < p; ++r) {
          const Problem mine = whole.localView(r);
          ASSERT_NO_THROW(s.ranks.push_back(compose(lay, d, mine, r)))
              << lay.describe() << " " << name(c) << " root " << root << " rank " << r << ": "
              << d.summary();
        }
        const auto issues = verify(s);
        EXPECT_TRUE(issues.empty())
            << lay.describe() << " " << name(c) << " root " << root << ": " << d.summary() << "\n"
            << describe(issues);
      }
    }
  }
}

// AllToAllV over several servers: the per-level plan refuses it (a rank knows only its own row
// and column of counts, so it cannot route others' bytes through a level) and the flat plan
// serves it, saying why in the decision.
TEST(EveryCollective, RankLocalAllToAllVRunsFlatAndSaysWhy) {
  for (const Layout& lay : {Layout::servers(2, 2), Layout::servers(3, 2), Layout::pods(2, 2, 2)}) {
    Selector sel(lay.shape(), settingsWith({}), defaultCostModel());
    CallInfo call = callOf(Collective::AllToAllV, 0);
    call.rankLocal = call.uneven = true;
    const Decision d = sel.decide(call);
    ASSERT_TRUE(d.ok()) << lay.describe() << ": " << d.error;
    EXPECT_EQ(planOf(d.plan).name(), "flat") << lay.describe() << ": " << d.summary();
    EXPECT_NE(d.summary().find("flat over all ranks: alltoallv counts are rank-local"),
              std::string::npos)
        << d.summary();
  }
}

// Rank-local calls are decided at count 0, where every prediction is of nothing: the decision
// says so and prints no time (a "0.0 us predicted" would be a number no such call takes), on one
// level and several, whatever the count passed.
TEST(EveryCollective, RankLocalDecisionsPrintNoTime) {
  for (const Layout& lay : {Layout::servers(1, 4), Layout::servers(2, 2), Layout::servers(4, 1),
                            Layout::pods(2, 2, 2)}) {
    Selector sel(lay.shape(), settingsWith({}), defaultCostModel());
    for (Collective c : {Collective::Gather, Collective::Scatter, Collective::AllToAllV}) {
      for (std::uint64_t count : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 20}) {
        CallInfo call = callOf(c, count);
        call.rankLocal = call.uneven = true;
        const Decision d = sel.decide(call);
        ASSERT_TRUE(d.ok()) << lay.describe() << " " << name(c) << ": " << d.error;
        const std::string text = d.summary();
        EXPECT_NE(text.find("rank-local counts, decided without sizes: no time predicted"),
                  std::string::npos)
            << lay.describe() << " " << name(c) << ": " << text;
        EXPECT_EQ(text.find(" us"), std::string::npos) << lay.describe() << ": " << text;
        EXPECT_EQ(text.find(" ms"), std::string::npos) << lay.describe() << ": " << text;
      }
    }
    // AllToAllV without the flag (as hccl_info asks) is rank-local too.
    const std::string text = sel.decide(callOf(Collective::AllToAllV, 64)).summary();
    EXPECT_NE(text.find("no time predicted"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace hccl::algo
