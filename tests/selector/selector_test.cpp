// The selector: forced choices and their fallbacks, HCCL's documented rules, and a model whose
// crossovers move the right way when the link parameters change.
#include "algorithms/selector.hpp"

#include <gtest/gtest.h>

#include <bit>

#include "algorithms/hierarchical.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/metrics.hpp"

namespace hccl::algo {
namespace {

Settings settingsWith(std::map<std::string, std::string, std::less<>> env) {
  auto r = resolveSettings({{}, {}, mapLookup(std::move(env))});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.value();
}

CallInfo allreduce(std::uint64_t bytes, bool commutative = true) {
  CallInfo c;
  c.coll = Collective::AllReduce;
  c.count = bytes / 4;
  c.elemSize = 4;
  c.type = DataType::Float32;
  if (commutative) c.op = ReduceOp::Sum;
  c.commutative = commutative;
  return c;
}

CallInfo withColl(CallInfo c, Collective coll) {
  c.coll = coll;
  return c;
}

// A model with only level 1 mattering: alpha and bandwidth given.
CostModel linkModel(double alphaUs, double gbps) {
  CostModel m = defaultCostModel();
  m.level[1] = {alphaUs * 1e-6, 1.0 / (gbps * 1e9), 1};
  return m;
}

TEST(Selector, ForcedAlgorithmIsUsedAndAttributed) {
  Selector sel(CommShape::servers(6, 1), settingsWith({{"HCCL_ALGO", "level0:NA;level1:ring"}}),
               defaultCostModel());
  const Decision& d = sel.decide(allreduce(4));
  ASSERT_TRUE(d.ok()) << d.error;
  ASSERT_EQ(d.levels.size(), 1u);
  EXPECT_EQ(d.levels[0].algorithm, Algorithm::Ring);
  EXPECT_EQ(d.levels[0].reason, Reason::Forced);
  EXPECT_NE(d.summary().find("forced: by env HCCL_ALGO"), std::string::npos) << d.summary();
}

TEST(Selector, ForcedButIncapableFallsBackAlongHcclsChain) {
  // ring cannot reduce in rank order: a non-commutative op falls back to H-D_R (ring -> NHR,
  // H-D_R; NHR does not reduce in rank order either).
  Selector sel(CommShape::servers(6, 1), settingsWith({{"HCCL_ALGO", "level0:NA;level1:ring"}}),
               defaultCostModel());
  const Decision& d = sel.decide(allreduce(1 << 20, false));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(d.levels[0].algorithm, Algorithm::Rhd);
  EXPECT_EQ(d.levels[0].reason, Reason::Fallback);
  EXPECT_NE(d.levels[0].detail.find("does not reduce in rank order"), std::string::npos)
      << d.levels[0].detail;
}

TEST(Selector, NothingCapableDeclinesWithAReason) {
  // Non-commutative ReduceScatter between servers: ring and H-D_R both reduce out of rank order,
  // and fullmesh is not a level1 algorithm.
  Selector sel(CommShape::servers(4, 1), settingsWith({}), defaultCostModel());
  const Decision& d = sel.decide(withColl(allreduce(4096, false), Collective::ReduceScatter));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error.find("no algorithm can serve"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("non-commutative"), std::string::npos) << d.error;
}

// One server of two ranks, level0 on the shared-memory link: MPI_Reduce of fp32 sums. Measured
// with OSU (issue 13, np=2: 4 alternating rounds, medians): the ring's one round beats
// Mesh's ReduceScatter + Gather at 16 KiB (1.9 against 4.3 us) and at every size from 64 KiB to
// 64 MiB (64 KiB: 14.6 against 33.4; 1 MiB: 239 against 345; 16 MiB: 8230 against 10066), and
// loses at 32 KiB only (8.5 against 3.5 us), where Mesh's halves travel inline in the slots and
// the ring's whole vector pays the link's block round. Full-duplex costing took Mesh from 1 MiB
// (both ranks' half reductions at once); the link is half duplex (its two copies share one
// memory system), which prices Mesh's ReduceScatter at the whole vector.
TEST(Selector, TwoRankReduceOnTheSharedMemoryLinkTakesTheRingButWhereMeshIsInline) {
  const CostModel m = defaultCostModel().withLevel0OnSharedMemory();
  Selector sel(CommShape::servers(1, 2), settingsWith({}), m);
  const auto reduce = [&](std::uint64_t bytes) {
    CallInfo c = withColl(allreduce(bytes), Collective::Reduce);
    return sel.decide(c);
  };
  for (std::uint64_t bytes : {std::uint64_t{64} << 10, std::uint64_t{512} << 10,
                              std::uint64_t{1} << 20, std::uint64_t{64} << 20}) {
    const Decision& d = reduce(bytes);
    ASSERT_TRUE(d.ok()) << d.error;
    EXPECT_EQ(d.levels[0].algorithm, Algorithm::Ring) << bytes << ": " << d.summary();
    // The ring's one round as the model's numbers price it, computed here: a step moving a
    // block (above the slots' inline size) pays alpha + step + n beta, then n gamma reduced.
    const LinkParams& l = *m.sharedMemory;
    const auto n = static_cast<double>(bytes);
    ASSERT_GT(bytes, l.stepFrom);
    EXPECT_NEAR(d.predicted,
                l.alpha + l.step + n * l.beta + n * m.gamma(DataType::Float32, ReduceOp::Sum),
                1e-12)
        << d.summary();
  }
  const Decision& inlineHalves = reduce(std::uint64_t{32} << 10);
  ASSERT_TRUE(inlineHalves.ok()) << inlineHalves.error;
  EXPECT_EQ(inlineHalves.levels[0].algorithm, Algorithm::Mesh) << inlineHalves.summary();
  const Decision& small = reduce(std::uint64_t{16} << 10);
  ASSERT_TRUE(small.ok()) << small.error;
  EXPECT_EQ(small.levels[0].algorithm, Algorithm::Ring) << small.summary();
}

// AllReduce at two ranks on the shared-memory link: above the slots' inline size fullmesh_push
// (Mesh whose reducing rank streams its block into the peer from the cache), which the memory
// term prices one pushed block's memory read below the ring's RS+AG (OSU at 16 MiB: 0.78
// of the ring's time); with the term off the ring again, at the same two rounds plus that read.
TEST(Selector, TwoRankAllReduceOnTheSharedMemoryLinkPushesAboveTheSlots) {
  const CostModel m = defaultCostModel().withLevel0OnSharedMemory();
  CostModel off = m;
  off.level[0].memory = 0;
  Selector sel(CommShape::servers(1, 2), settingsWith({}), m);
  Selector selOff(CommShape::servers(1, 2), settingsWith({}), off);
  const LinkParams& l = *m.sharedMemory;
  ASSERT_GT(l.memory, 0);
  for (std::uint64_t bytes :
       {std::uint64_t{1} << 20, std::uint64_t{16} << 20, std::uint64_t{64} << 20}) {
    const Decision& d = sel.decide(allreduce(bytes));
    ASSERT_TRUE(d.ok()) << d.error;
    EXPECT_EQ(d.levels[0].algorithm, Algorithm::MeshPush) << bytes << ": " << d.summary();
    // Two rounds moving a block each way (half duplex: n per round), n/2 reduced, and the
    // pushed half read from the cache instead of memory.
    const auto n = static_cast<double>(bytes);
    const double rounds =
        2 * (l.alpha + l.step + n * l.beta) + n / 2 * m.gamma(DataType::Float32, ReduceOp::Sum);
    EXPECT_NEAR(d.predicted, rounds - n / 2 * std::min(l.memory, l.beta), 1e-12) << d.summary();
    const Decision& o = selOff.decide(allreduce(bytes));
    ASSERT_TRUE(o.ok()) << o.error;
    EXPECT_EQ(o.levels[0].algorithm, Algorithm::Ring) << bytes << ": " << o.summary();
    EXPECT_NEAR(o.predicted, rounds, 1e-12) << o.summary();
  }
  // At 16 KiB the halves travel inline in the slots: nothing is pushed, the push is not chosen.
  const Decision& small = sel.decide(allreduce(std::uint64_t{16} << 10));
  ASSERT_TRUE(small.ok()) << small.error;
  EXPECT_NE(small.levels[0].algorithm, Algorithm::MeshPush) << small.summary();
}

TEST(Selector, StrictDeterminismAsksForRankOrder) {
  Selector sel(CommShape::flat(4), settingsWith({{"HCCL_DETERMINISTIC", "strict"}}),
               defaultCostModel());
  for (std::uint64_t bytes : {64u, 1u << 24}) {
    const Decision& d = sel.decide(allreduce(bytes));
    ASSERT_TRUE(d.ok()) << d.error;
    const GeneratorSpec* spec = findGenerator(d.levels[0].algorithm, Collective::AllReduce);
    EXPECT_TRUE(spec->rankOrdered) << d.summary();
  }
}

TEST(Selector, HcclRulesForTwoToSixteenServers) {
  for (std::uint32_t servers = 2; servers <= 16; ++servers) {
    Selector sel(CommShape::servers(servers, 1),
                 settingsWith({{"COLL_HCCL_SELECTION", "hccl_rules"}}), defaultCostModel());
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
      const Decision& d = sel.decide(withColl(allreduce(1 << 16), c));
      ASSERT_TRUE(d.ok()) << d.error;
      const Algorithm want = std::has_single_bit(servers) ? Algorithm::Rhd : Algorithm::Ring;
      EXPECT_EQ(d.levels[0].algorithm, want) << servers << " servers, " << name(c);
      EXPECT_EQ(d.levels[0].reason, Reason::HcclRules);
    }
  }
}

TEST(Selector, HcclRulesForPods) {
  for (std::uint32_t pods : {2u, 3u, 4u, 6u, 8u, 9u, 12u}) {
    Selector sel(CommShape::pods(pods, 2, 1), settingsWith({{"COLL_HCCL_SELECTION", "hccl_rules"}}),
                 defaultCostModel());
    const Decision& d = sel.decide(allreduce(1 << 16));
    ASSERT_TRUE(d.ok()) << d.error;
    ASSERT_EQ(d.levels.size(), 2u);
    const Algorithm want =
        pods < 8 && !std::has_single_bit(pods) ? Algorithm::Ring : Algorithm::Rhd;
    EXPECT_EQ(d.levels[1].algorithm, want) << pods << " pods";
  }
}

// The model's choice between H-D_R (fewer steps) and ring (less data), ties going to ring as in
// decide(). NHR (ring's volume in fewer steps than both) is left out: it would win everywhere.
Algorithm ringOrHd(const Selector& sel, std::uint64_t bytes) {
  double ring = 0, hd = 0;
  for (const Candidate& c : sel.candidates(allreduce(bytes), 0)) {
    if (c.algorithm == Algorithm::Ring) ring = c.predicted;
    if (c.algorithm == Algorithm::Rhd) hd = c.predicted;
  }
  return ring <= hd ? Algorithm::Ring : Algorithm::Rhd;
}

// The byte size at which the model stops picking H-D_R for ring on 6 servers, searched over
// powers of two.
std::uint64_t crossover(const CostModel& m) {
  Selector sel(CommShape::servers(6, 1), settingsWith({}), m);
  for (std::uint64_t b = 64; b <= (1ull << 32); b *= 2)
    if (ringOrHd(sel, b) == Algorithm::Ring) return b;
  return 0;
}

TEST(Selector, ModelPicksFewStepsForSmallAndLittleDataForLarge) {
  Selector sel(CommShape::servers(6, 1), settingsWith({}), linkModel(25, 1.25));
  EXPECT_EQ(ringOrHd(sel, 64), Algorithm::Rhd);
  EXPECT_EQ(ringOrHd(sel, 64 << 20), Algorithm::Ring);
  const Decision& small = sel.decide(allreduce(64));
  const Decision& large = sel.decide(allreduce(64 << 20));
  EXPECT_EQ(small.levels[0].reason, Reason::Model);
  EXPECT_LT(small.predicted, large.predicted);
}

TEST(Selector, CrossoverMovesWithAlphaAndBeta) {
  const std::uint64_t base = crossover(linkModel(25, 1.25));
  ASSERT_GT(base, 0u);
  // Costlier startups make fewer steps worth more data: the crossover moves up.
  EXPECT_GT(crossover(linkModel(250, 1.25)), base);
  // A faster link makes data cheaper, so the step-saving algorithm wins further: it moves up too.
  EXPECT_GT(crossover(linkModel(25, 12.5)), base);
  // Cheaper startups: it moves down.
  EXPECT_LT(crossover(linkModel(2.5, 1.25)), base);
}

TEST(Selector, PredictionEqualsTheReferenceFormula) {
  // Ring allreduce on 5 servers, no reduction cost: 2(p-1)a + 2(p-1)/p n b.
  CostModel m = linkModel(10, 1.0);
  m.setGamma(std::nullopt, std::nullopt, 1e-30);
  Selector sel(CommShape::servers(5, 1), settingsWith({{"HCCL_ALGO", "level0:NA;level1:ring"}}), m);
  const double n = 5.0 * (1 << 20);
  const Decision& d = sel.decide(allreduce(5 << 20));
  EXPECT_NEAR(d.predicted, 8 * 10e-6 + 2.0 * 4 / 5 * n * 1e-9, 1e-9);
}

TEST(Selector, TuningRuleWinsOverTheModel) {
  CostModel m = defaultCostModel();
  m.rules.push_back({Collective::AllReduce, 1, 0, 1024, Algorithm::Ring});
  Selector sel(CommShape::servers(8, 1), settingsWith({}), m);
  EXPECT_EQ(sel.decide(allreduce(512)).levels[0].algorithm, Algorithm::Ring);
  EXPECT_EQ(sel.decide(allreduce(512)).levels[0].reason, Reason::Rule);
  EXPECT_NE(sel.decide(allreduce(4096)).levels[0].reason, Reason::Rule);
}

TEST(Selector, TwoLevelsDecideEachLevel) {
  Selector sel(CommShape::servers(4, 8), settingsWith({{"HCCL_ALGO", "level0:NA;level1:ring"}}),
               defaultCostModel());
  const Decision& d = sel.decide(allreduce(1 << 20));
  ASSERT_TRUE(d.ok()) << d.error;
  ASSERT_EQ(d.levels.size(), 2u);
  EXPECT_EQ(d.levels[0].level, 0);
  EXPECT_EQ(d.levels[0].algorithm, Algorithm::Mesh);  // shared memory, every pair connected
  EXPECT_EQ(d.levels[1].level, 1);
  EXPECT_EQ(d.levels[1].algorithm, Algorithm::Ring);
}

TEST(Selector, Level0CanBeForcedOnSharedMemory) {
  Selector sel(CommShape::flat(5), settingsWith({{"HCCL_ALGO", "level0:H-D_R"}}),
               defaultCostModel());
  const Decision& d = sel.decide(allreduce(4096));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(d.levels[0].algorithm, Algorithm::Rhd);
  EXPECT_EQ(d.levels[0].reason, Reason::Forced);
}

TEST(Selector, SingleRankNeedsNoAlgorithm) {
  Selector sel(CommShape::flat(1), settingsWith({}), defaultCostModel());
  const Decision& d = sel.decide(allreduce(4096));
  EXPECT_TRUE(d.ok());
  EXPECT_TRUE(d.levels.empty());
}

}  // namespace
}  // namespace hccl::algo

namespace hccl::algo {
namespace {

TEST(SelectorPipeline, ForcedPipelineCoversBothLevels) {
  Selector sel(CommShape::servers(4, 8), settingsWith({{"HCCL_ALGO", "level0:NA;level1:pipeline"}}),
               defaultCostModel());
  const Decision& d = sel.decide(allreduce(1 << 20));
  ASSERT_TRUE(d.ok()) << d.error;
  ASSERT_EQ(d.levels.size(), 2u);
  EXPECT_EQ(d.levels[0].algorithm, Algorithm::Pipeline);
  EXPECT_EQ(d.levels[1].algorithm, Algorithm::Pipeline);
  EXPECT_EQ(d.levels[1].reason, Reason::Forced);
  EXPECT_GT(d.predicted, 0);
}

TEST(SelectorPipeline, ForcedPipelineFallsBackWithItsReason) {
  Selector sel(CommShape::servers(4, 8), settingsWith({{"HCCL_ALGO", "level0:NA;level1:pipeline"}}),
               defaultCostModel());
  const Decision& d = sel.decide(allreduce(1 << 20, false));  // non-commutative
  ASSERT_TRUE(d.ok()) << d.error;
  ASSERT_EQ(d.levels.size(), 2u);
  EXPECT_EQ(d.levels[1].reason, Reason::Fallback);
  EXPECT_NE(d.levels[1].detail.find("pipeline does not reduce in rank order"), std::string::npos)
      << d.levels[1].detail;
  EXPECT_EQ(d.levels[1].algorithm, Algorithm::Rhd);  // pipeline -> NHR, H-D_R, ring
}

TEST(SelectorPipeline, NotOnASingleServerOrAcrossPods) {
  for (const CommShape& shape : {CommShape::flat(8), CommShape::pods(2, 2, 4)}) {
    Selector sel(shape, settingsWith({}), defaultCostModel());
    for (const LevelChoice& c :
         sel.decide(withColl(allreduce(64 << 20), Collective::AllGather)).levels)
      EXPECT_NE(c.algorithm, Algorithm::Pipeline) << shape.describe();
  }
}

TEST(SelectorPipeline, HcclRulesThresholds) {
  Selector sel(CommShape::servers(4, 4), settingsWith({{"COLL_HCCL_SELECTION", "hccl_rules"}}),
               defaultCostModel());
  auto algoOf = [&](const CallInfo& c) { return sel.decide(c).levels.back().algorithm; };
  const CallInfo ag = withColl(allreduce(0), Collective::AllGather);
  CallInfo small = ag, large = ag;
  small.count = (32 << 10) / 4 - 1;
  large.count = (32 << 10) / 4;
  EXPECT_NE(algoOf(small), Algorithm::Pipeline);
  EXPECT_EQ(algoOf(large), Algorithm::Pipeline);
  // AllReduce: each rank's share must reach 1 MiB (16 ranks: 16 MiB in total).
  EXPECT_NE(algoOf(allreduce((16 << 20) - 64)), Algorithm::Pipeline);
  EXPECT_EQ(algoOf(allreduce(16 << 20)), Algorithm::Pipeline);
  // One rank per server: never.
  Selector flat(CommShape::servers(4, 1), settingsWith({{"COLL_HCCL_SELECTION", "hccl_rules"}}),
                defaultCostModel());
  EXPECT_NE(flat.decide(large).levels.back().algorithm, Algorithm::Pipeline);
}

// A level0 algorithm forced next to a pipeline cannot take effect: the pipeline runs its own
// intra-server transfers. The decision says it was ignored and why, not that level0 was the
// model's choice (issue 15: level0:pipeline was reported as a model choice).
TEST(SelectorPipeline, ForcedLevel0ThatCannotTakeEffectIsReportedIgnored) {
  const CallInfo big = withColl(allreduce(64 << 20), Collective::AllGather);
  for (const char* algo : {"level0:pipeline", "level0:ring", "level0:ring;level1:pipeline"}) {
    Selector sel(CommShape::servers(4, 8), settingsWith({{"HCCL_ALGO", algo}}), defaultCostModel());
    const Decision& d = sel.decide(big);
    ASSERT_TRUE(d.ok()) << d.error;
    ASSERT_EQ(d.levels.size(), 2u);
    ASSERT_EQ(d.levels[1].algorithm, Algorithm::Pipeline) << algo << ": " << d.summary();
    EXPECT_EQ(d.levels[0].reason, Reason::Fallback) << algo << ": " << d.summary();
    EXPECT_NE(d.summary().find("forced by env HCCL_ALGO at level0 is ignored"), std::string::npos)
        << d.summary();
  }
  Selector l0(CommShape::servers(4, 8), settingsWith({{"HCCL_ALGO", "level0:pipeline"}}),
              defaultCostModel());
  EXPECT_NE(l0.decide(big).levels[0].detail.find("forced as level1:pipeline"), std::string::npos)
      << l0.decide(big).summary();
  // Both levels naming the pipeline: nothing is ignored.
  Selector both(CommShape::servers(4, 8),
                settingsWith({{"HCCL_ALGO", "level0:pipeline;level1:pipeline"}}),
                defaultCostModel());
  EXPECT_EQ(both.decide(big).levels[0].reason, Reason::Forced) << both.decide(big).summary();
}

TEST(SelectorPipeline, ModelPrefersPipelineForLargeGathersAcrossServers) {
  Selector sel(CommShape::servers(4, 8), settingsWith({}), defaultCostModel());
  const Decision& big = sel.decide(withColl(allreduce(64 << 20), Collective::AllGather));
  EXPECT_EQ(big.levels.back().algorithm, Algorithm::Pipeline) << big.summary();
  const Decision& tiny = sel.decide(withColl(allreduce(64), Collective::AllGather));
  EXPECT_NE(tiny.levels.back().algorithm, Algorithm::Pipeline) << tiny.summary();
}

}  // namespace
}  // namespace hccl::algo

namespace hccl::algo {
namespace {

// AHC on servers of unequal size: the selector sees the layout as one flat group plus its server
// sizes, and weighs AHC as a whole plan.
CommShape unequal(const std::vector<std::uint32_t>& sizes) {
  return Layout::uneven(sizes).shape();
}

// What the engine would run for `d` on `lay`, costed independently of the selector.
double predictedByComposition(const Layout& lay, const Decision& d, const CallInfo& call,
                              const CostModel& model) {
  const std::uint32_t p = lay.ranks();
  const Problem pb = call.coll == Collective::AllReduce ? Problem::allReduce(p, call.count)
                     : call.coll == Collective::ReduceScatter
                         ? Problem::reduceScatter(p, call.count)
                         : Problem::allGather(p, call.count);
  Schedule s{pb, {}};
  for (std::uint32_t r = 0; r < p; ++r) s.ranks.push_back(compose(lay, d, pb, r));
  CostParams cp = model.params(call.type, call.op);
  if (!reduces(call.coll)) cp.gamma = 0;
  return criticalPath(s, call.elemSize, cp).time;
}

TEST(SelectorAhc, ShapeCarriesTheServerSizes) {
  const CommShape s = unequal({3, 5});
  ASSERT_EQ(s.levels.size(), 1u);
  EXPECT_EQ(s.levels[0].level, 1);
  EXPECT_EQ(s.serverSizes, (std::vector<std::uint32_t>{3, 5}));
  EXPECT_TRUE(Layout::servers(2, 4).shape().serverSizes.empty());
  EXPECT_TRUE(Layout::uneven({3, 5}, true).shape().serverSizes.size() == 2);
}

TEST(SelectorAhc, ForcedAhcRunsOnUnequalServers) {
  for (const auto& sizes :
       std::vector<std::vector<std::uint32_t>>{{3, 5}, {1, 4, 2}, {1, 2, 3, 2}}) {
    Selector sel(unequal(sizes), settingsWith({{"HCCL_ALGO", "level0:NA;level1:AHC"}}),
                 defaultCostModel());
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
      const CallInfo call = withColl(allreduce(1 << 20), c);
      const Decision& d = sel.decide(call);
      ASSERT_TRUE(d.ok()) << d.error;
      ASSERT_EQ(d.levels.size(), 2u) << d.summary();
      EXPECT_EQ(d.levels[0].level, 0);
      EXPECT_EQ(d.levels[0].reason, Reason::Model);  // only level1 is forced
      EXPECT_EQ(d.levels[1].level, 1);
      EXPECT_EQ(d.levels[1].algorithm, Algorithm::AHC);
      EXPECT_EQ(d.levels[1].reason, Reason::Forced);
      EXPECT_NE(planOf(d.plan).name(), "flat");
      ASSERT_TRUE(d.plan.inter.has_value());
      EXPECT_NE(d.summary().find("logical same-index cards"), std::string::npos) << d.summary();
      EXPECT_NEAR(d.predicted,
                  predictedByComposition(Layout::uneven(sizes), d, call, defaultCostModel()),
                  d.predicted * 1e-9)
          << d.summary();
    }
  }
}

TEST(SelectorAhc, AhcBrokeOnEqualServers) {
  Selector sel(CommShape::servers(2, 2),
               settingsWith({{"HCCL_ALGO", "level0:NA;level1:AHC_BROKE"}}), defaultCostModel());
  const Decision& d = sel.decide(allreduce(1 << 20));
  ASSERT_TRUE(d.ok()) << d.error;
  ASSERT_EQ(d.levels.size(), 2u);
  EXPECT_EQ(d.levels[1].algorithm, Algorithm::AHC_Broke);
  EXPECT_EQ(d.levels[1].reason, Reason::Forced);
  EXPECT_EQ(d.plan.inter, Algorithm::Ring);  // two servers, and ring ties every other algorithm
}

TEST(SelectorAhc, HcclRulesKeepTheInterRuleAndMesh) {
  for (const auto& [sizes, inter] : std::vector<std::pair<std::vector<std::uint32_t>, Algorithm>>{
           {{3, 5}, Algorithm::Ring},
           {{1, 4, 2}, Algorithm::Ring},
           {{1, 2, 3, 2}, Algorithm::NHR}}) {
    Selector sel(unequal(sizes),
                 settingsWith({{"HCCL_ALGO", "level0:NA;level1:AHC"},
                               {"COLL_HCCL_SELECTION", "hccl_rules"}}),
                 defaultCostModel());
    const Decision& d = sel.decide(allreduce(1 << 20));
    ASSERT_TRUE(d.ok()) << d.error;
    EXPECT_EQ(d.levels[0].algorithm, Algorithm::Mesh);
    EXPECT_EQ(d.levels[0].reason, Reason::HcclRules);
    EXPECT_EQ(d.plan.inter, inter) << sizes.size() << " servers";
    // Not forced: HCCL documents no automatic AHC, so hccl_rules stays flat.
    Selector automatic(unequal(sizes), settingsWith({{"COLL_HCCL_SELECTION", "hccl_rules"}}),
                       defaultCostModel());
    const Decision& a = automatic.decide(allreduce(64 << 20));
    ASSERT_EQ(a.levels.size(), 1u);
    EXPECT_FALSE(a.plan.inter.has_value());
  }
}

TEST(SelectorAhc, ForcedLevel0RunsInsideTheServers) {
  auto level0 = [](const char* algo) {
    Selector sel(unequal({3, 5}), settingsWith({{"HCCL_ALGO", algo}}), defaultCostModel());
    const Decision& d = sel.decide(allreduce(1 << 20));
    EXPECT_TRUE(d.ok()) << d.error;
    return d.ok() ? d.levels[0] : LevelChoice{};
  };
  const LevelChoice ring = level0("level0:ring;level1:AHC");
  EXPECT_EQ(ring.algorithm, Algorithm::Ring);
  EXPECT_EQ(ring.reason, Reason::Forced);
  // One that cannot run AHC's phases inside a server is refused with the reason.
  const LevelChoice refused = level0("level0:pairwise;level1:AHC");
  EXPECT_NE(refused.algorithm, Algorithm::Pairwise);
  EXPECT_EQ(refused.reason, Reason::Fallback);
  EXPECT_NE(refused.detail.find("pairwise forced by env HCCL_ALGO at level0 cannot run AHC's"),
            std::string::npos)
      << refused.detail;
}

// A slow link between servers and a large message: AHC moves 1/m of the vector across servers
// where running flat moves all of it, so the model prefers AHC.
TEST(SelectorAhc, ModelPicksAhcOverFlatForLargeMessages) {
  const CostModel slow = linkModel(25, 1.25);
  Selector sel(unequal({3, 5}), settingsWith({}), slow);
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
    const CallInfo call = withColl(allreduce(64 << 20), c);
    const Decision& d = sel.decide(call);
    ASSERT_TRUE(d.ok()) << d.error;
    ASSERT_EQ(d.levels.size(), 2u) << name(c) << ": " << d.summary();
    EXPECT_EQ(d.levels[1].algorithm, Algorithm::AHC);
    EXPECT_EQ(d.levels[1].reason, Reason::Model);
    EXPECT_NE(d.levels[1].detail.find("flat plan"), std::string::npos) << d.levels[1].detail;
    // The flat plan it beat, costed by a selector that cannot pick AHC (non-commutative ops only
    // matter for reductions, so use a shape without server sizes instead).
    CommShape flatShape = unequal({3, 5});
    flatShape.serverSizes.clear();
    Selector flatOnly(flatShape, settingsWith({}), slow);
    const Decision& f = flatOnly.decide(call);
    ASSERT_EQ(f.levels.size(), 1u);
    EXPECT_LT(d.predicted, f.predicted) << name(c);
    EXPECT_NEAR(d.predicted, predictedByComposition(Layout::uneven({3, 5}), d, call, slow),
                d.predicted * 1e-9);
  }
}

TEST(SelectorAhc, NonCommutativeNeverRunsAhc) {
  Selector sel(unequal({3, 5}), settingsWith({}), linkModel(25, 1.25));
  const Decision& d = sel.decide(allreduce(64 << 20, false));
  ASSERT_TRUE(d.ok()) << d.error;
  ASSERT_EQ(d.levels.size(), 1u) << d.summary();
  EXPECT_NE(d.levels[0].algorithm, Algorithm::AHC);
  EXPECT_FALSE(d.plan.inter.has_value());

  Selector forced(unequal({3, 5}), settingsWith({{"HCCL_ALGO", "level0:NA;level1:AHC"}}),
                  defaultCostModel());
  const Decision& f = forced.decide(allreduce(1 << 20, false));
  ASSERT_TRUE(f.ok()) << f.error;
  ASSERT_EQ(f.levels.size(), 1u) << f.summary();
  EXPECT_EQ(f.levels[0].reason, Reason::Fallback);
  EXPECT_EQ(f.levels[0].algorithm, Algorithm::Rhd);  // AHC -> NHR, H-D_R, ring
  EXPECT_NE(f.levels[0].detail.find("AHC does not reduce in rank order (non-commutative op)"),
            std::string::npos)
      << f.levels[0].detail;
  EXPECT_FALSE(f.plan.inter.has_value());

  Selector strict(
      unequal({3, 5}),
      settingsWith({{"HCCL_ALGO", "level0:NA;level1:AHC"}, {"HCCL_DETERMINISTIC", "strict"}}),
      defaultCostModel());
  const Decision& s = strict.decide(allreduce(1 << 20));
  ASSERT_TRUE(s.ok()) << s.error;
  EXPECT_EQ(s.levels.back().reason, Reason::Fallback);
  EXPECT_NE(s.levels.back().detail.find("HCCL_DETERMINISTIC=strict"), std::string::npos);
}

TEST(SelectorAhc, NotAcrossSupernodesNorForOtherCollectives) {
  Selector pods(CommShape::pods(2, 2, 2), settingsWith({{"HCCL_ALGO", "level0:NA;level1:AHC"}}),
                defaultCostModel());
  const Decision& d = pods.decide(allreduce(1 << 20));
  ASSERT_TRUE(d.ok()) << d.error;
  for (const LevelChoice& c : d.levels) {
    EXPECT_NE(c.algorithm, Algorithm::AHC);
    if (c.level > 0) {
      EXPECT_EQ(c.reason, Reason::Fallback);
      EXPECT_NE(c.detail.find("AHC needs several servers within one supernode"), std::string::npos)
          << c.detail;
    }
  }
  Selector bcast(unequal({3, 5}), settingsWith({{"HCCL_ALGO", "level0:NA;level1:AHC"}}),
                 defaultCostModel());
  const Decision& b = bcast.decide(withColl(allreduce(1 << 20), Collective::Broadcast));
  ASSERT_TRUE(b.ok()) << b.error;
  EXPECT_NE(b.levels.back().detail.find("AHC has no broadcast"), std::string::npos)
      << b.levels.back().detail;
}

}  // namespace
}  // namespace hccl::algo
