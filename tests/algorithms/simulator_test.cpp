// The cluster simulator: with nothing shared it reproduces the critical path of metrics.hpp for
// real schedules; with a shared NIC, half duplex and reductions it gives the times worked out by
// hand below; its timeline is valid Chrome trace-event JSON.
#include "algorithms/simulator.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "algorithms/generators.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/pipeline.hpp"

namespace hccl::algo {
namespace {

constexpr double kAlpha = 2e-6, kBeta = 1e-9, kGamma = 5e-10;

ClusterModel uniformModel() {
  ClusterModel m;
  for (auto& l : m.level) l = {kAlpha, kBeta, std::numeric_limits<double>::infinity()};
  m.gamma = kGamma;
  return m;
}

std::vector<std::uint32_t> oneServer(std::uint32_t p) {
  return std::vector<std::uint32_t>(p, 0);
}

class SameAsCriticalPath : public ::testing::TestWithParam<std::tuple<Algorithm, Collective>> {};

// Also with the cost model's step cost (CostParams::step above stepFrom, the shared-memory
// link's block round): 3 us on every message over 2000 bytes, which at 4096 elements of 4 bytes
// some steps pass and some do not. NB's strided runs are several transfers to one peer per step:
// the formula counts them as one peer-direction load, the simulator as one flow (bundled).
TEST_P(SameAsCriticalPath, WhenNothingIsShared) {
  const auto [alg, coll] = GetParam();
  const GeneratorSpec* spec = findGenerator(alg, coll);
  ASSERT_NE(spec, nullptr);
  for (bool stepCost : {false, true})
    for (std::uint32_t p : {2u, 3u, 4u, 7u, 8u, 16u}) {
      const Problem pb = Problem::fromMpiCount(coll, p, 4096, false, 0);
      const Schedule s = buildSchedule(spec->generate, pb);
      CostParams params = CostParams::uniform(kAlpha, kBeta, kGamma);
      ClusterModel model = uniformModel();
      if (stepCost)
        for (std::size_t l = 0; l < kNumLevels; ++l) {
          params.step[l] = model.level[l].step = 3e-6;
          params.stepFrom[l] = model.level[l].stepFrom = 2000;
        }
      const Metrics m = criticalPath(s, 4, params);
      const SimResult r = simulate(s, 4, oneServer(p), model);
      ASSERT_TRUE(r.error.empty()) << r.error;
      EXPECT_NEAR(r.time, m.time, m.time * 1e-9)
          << hcclName(alg) << " " << name(coll) << " p=" << p << (stepCost ? " step cost" : "");
    }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SameAsCriticalPath,
                         ::testing::Values(std::tuple{Algorithm::Ring, Collective::AllReduce},
                                           std::tuple{Algorithm::Ring, Collective::AllGather},
                                           std::tuple{Algorithm::Ring, Collective::ReduceScatter},
                                           std::tuple{Algorithm::Rhd, Collective::AllReduce},
                                           std::tuple{Algorithm::Rhd, Collective::ReduceScatter},
                                           std::tuple{Algorithm::NHR, Collective::AllReduce},
                                           std::tuple{Algorithm::NB, Collective::AllReduce},
                                           std::tuple{Algorithm::NB, Collective::AllGather},
                                           std::tuple{Algorithm::NB, Collective::ReduceScatter},
                                           std::tuple{Algorithm::Mesh, Collective::AllReduce}));

// A ring on equal links, by hand: AllGather of b elements per rank over p ranks is p-1 steps of
// one block each, (p-1)(alpha + 4b beta); AllReduce of n = p b elements is p-1 ReduceScatter
// steps, each reducing a block, then p-1 AllGather steps: 2(p-1)(alpha + 4b beta) + (p-1) 4b
// gamma. With a NIC per server shared by the ring's one cross-server flow each way, the same.
TEST(Simulator, RingOnEqualLinksTakesItsHandWorkedTime) {
  const std::uint64_t b = 1000;
  for (std::uint32_t p : {2u, 5u, 8u}) {
    std::vector<std::uint32_t> servers(p);
    for (std::uint32_t r = 0; r < p; ++r) servers[r] = r;  // every hop crosses servers
    ClusterModel m = uniformModel();
    m.nicBandwidth = 1 / kBeta;
    const double hop = kAlpha + 4.0 * b * kBeta;
    const SimResult ag = simulate(
        buildSchedule(ringAllGather, Problem::fromMpiCount(Collective::AllGather, p, b, false, 0)),
        4, servers, m);
    ASSERT_TRUE(ag.error.empty()) << ag.error;
    EXPECT_NEAR(ag.time, (p - 1) * hop, 1e-12) << p;
    const SimResult ar =
        simulate(buildSchedule(ringAllReduce,
                               Problem::fromMpiCount(Collective::AllReduce, p, p * b, false, 0)),
                 4, servers, m);
    ASSERT_TRUE(ar.error.empty()) << ar.error;
    EXPECT_NEAR(ar.time, 2 * (p - 1) * hop + (p - 1) * 4.0 * b * kGamma, 1e-12) << p;
  }
}

// A two-level pipeline whose level1 is 50 times slower than its level0, by hand: rank 0 (server
// 0) sends k chunks of c elements to rank 1 (server 1), which forwards chunk j-1 to rank 2 (its
// server) in the step that receives chunk j. Each of rank 1's first k steps lasts as long as its
// level1 receive (the level0 send beside it is shorter), and its last step forwards the last
// chunk: k (alpha1 + 4c beta1) + alpha0 + 4c beta0. The slow level sets the pace, the fast one
// hides behind it but for one chunk.
TEST(Simulator, PipelineWithASlowLevelTakesItsHandWorkedTime) {
  const std::uint32_t k = 6;
  const std::uint64_t c = 1000;
  Schedule s{Problem::allReduce(3, k * c), std::vector<RankSchedule>(3)};
  for (std::uint32_t j = 0; j <= k; ++j) {
    Step& mid = s.ranks[1].newStep();
    if (j < k) {
      s.ranks[0].newStep().xfers.push_back({Dir::Send, 1, {Buf::Input, j * c, c}, 1});
      mid.xfers.push_back({Dir::Recv, 0, {Buf::Output, j * c, c}, 1});
    }
    if (j >= 1) {
      mid.xfers.push_back({Dir::Send, 2, {Buf::Output, (j - 1) * c, c}, 0});
      s.ranks[2].newStep().xfers.push_back({Dir::Recv, 1, {Buf::Output, (j - 1) * c, c}, 0});
    }
  }
  ClusterModel m;
  m.level[0] = {1e-6, 1e-10, 1};
  m.level[1] = {5e-6, 5e-9, 1};
  m.nicBandwidth = 1 / 5e-9;
  const SimResult r = simulate(s, 4, {0, 1, 1}, m);
  ASSERT_TRUE(r.error.empty()) << r.error;
  const double want = k * (5e-6 + 4.0 * c * 5e-9) + 1e-6 + 4.0 * c * 1e-10;
  EXPECT_NEAR(r.time, want, want * 1e-12);
  EXPECT_NEAR(r.busy[1], k * 4.0 * c * 5e-9, 1e-12);
}

// The Pipeline algorithm itself, level1 50 times slower than level0, nothing shared: the
// simulation is its replayed critical path (metrics.hpp), which pipeline_cost.cpp's closed form
// also meets.
TEST(Simulator, PipelineAlgorithmWithASlowLevelIsItsCriticalPath) {
  for (const auto& [servers, per] : {std::pair{2u, 2u}, {3u, 4u}, {4u, 3u}})
    for (Collective coll :
         {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
      const Layout lay = Layout::servers(servers, per);
      const std::uint32_t p = lay.ranks();
      const Problem pb = Problem::fromMpiCount(coll, p, 96 * p, false, 0);
      Schedule s{pb, {}};
      for (std::uint32_t r = 0; r < p; ++r) s.ranks.push_back(pipelineSchedule(lay, pb, r));
      CostParams params = CostParams::uniform(kAlpha, kBeta, kGamma);
      params.alpha[1] = 5 * kAlpha;
      params.beta[1] = 50 * kBeta;
      ClusterModel m = uniformModel();
      m.level[1] = {5 * kAlpha, 50 * kBeta, std::numeric_limits<double>::infinity()};
      std::vector<std::uint32_t> serverOf(p);
      for (std::uint32_t r = 0; r < p; ++r) serverOf[r] = r / per;
      const SimResult got = simulate(s, 4, serverOf, m);
      ASSERT_TRUE(got.error.empty()) << got.error;
      const Metrics want = criticalPath(s, 4, params);
      EXPECT_NEAR(got.time, want.time, want.time * 1e-9) << lay.describe() << " " << name(coll);
      EXPECT_GT(got.busy[1], 5 * got.busy[0]) << lay.describe() << " " << name(coll);
    }
}

// The step cost by hand: one message of 4000 bytes pays it (over stepFrom = 2000), one of 1000
// does not; a step of both pays it once (the flows run side by side), as CostParams::linkTime
// charges a step whose largest message passes stepFrom.
TEST(Simulator, MessagesOverStepFromPayTheStepCost) {
  ClusterModel m = uniformModel();
  m.level[0].step = 7e-6;
  m.level[0].stepFrom = 2000;
  for (std::uint64_t count : {250u, 1000u}) {
    Schedule s{Problem::allReduce(3, count), std::vector<RankSchedule>(3)};
    Step& root = s.ranks[0].newStep();
    root.xfers.push_back({Dir::Send, 1, {Buf::Input, 0, count}, 0});
    root.xfers.push_back({Dir::Send, 2, {Buf::Input, 0, 250}, 0});
    s.ranks[1].newStep().xfers.push_back({Dir::Recv, 0, {Buf::Output, 0, count}, 0});
    s.ranks[2].newStep().xfers.push_back({Dir::Recv, 0, {Buf::Output, 0, 250}, 0});
    const double bytes = 4.0 * static_cast<double>(count);
    const double want = kAlpha + bytes * kBeta + (bytes > 2000 ? 7e-6 : 0);
    EXPECT_NEAR(simulate(s, 4, oneServer(3), m).time, want, 1e-12) << count;
  }
}

// Server 0 holds ranks 0..k-1, server 1 ranks k..2k-1; every rank of server 0 sends `count`
// elements of 4 bytes to its counterpart on server 1 in one step (level 1).
Schedule crossServer(std::uint32_t k, std::uint64_t count, bool bothWays) {
  Schedule s{Problem::allReduce(2 * k, count), std::vector<RankSchedule>(2 * k)};
  for (std::uint32_t r = 0; r < k; ++r) {
    Step& a = s.ranks[r].newStep();
    Step& b = s.ranks[r + k].newStep();
    a.xfers.push_back({Dir::Send, r + k, {Buf::Input, 0, count}, 1});
    b.xfers.push_back({Dir::Recv, r, {Buf::Output, 0, count}, 1});
    if (bothWays) {
      b.xfers.push_back({Dir::Send, r, {Buf::Input, 0, count}, 1});
      a.xfers.push_back({Dir::Recv, r + k, {Buf::Output, 0, count}, 1});
    }
  }
  return s;
}

std::vector<std::uint32_t> twoServers(std::uint32_t k) {
  std::vector<std::uint32_t> v(2 * k, 0);
  for (std::uint32_t r = k; r < 2 * k; ++r) v[r] = 1;
  return v;
}

TEST(Simulator, RanksOfAServerShareItsNic) {
  const std::uint64_t count = 1 << 20;
  const double bytes = 4.0 * count;
  ClusterModel m = uniformModel();
  for (std::uint32_t k : {1u, 2u, 4u, 8u}) {
    m.nicBandwidth = 1 / kBeta;
    EXPECT_NEAR(simulate(crossServer(k, count, false), 4, twoServers(k), m).time,
                kAlpha + k * bytes * kBeta, 1e-12)
        << k;
    m.nicBandwidth = std::numeric_limits<double>::infinity();
    EXPECT_NEAR(simulate(crossServer(k, count, false), 4, twoServers(k), m).time,
                kAlpha + bytes * kBeta, 1e-12)
        << k;
  }
}

TEST(Simulator, HalfDuplexAddsTheTwoDirections) {
  const std::uint64_t count = 1 << 18;
  const double bytes = 4.0 * count;
  ClusterModel m = uniformModel();
  m.nicBandwidth = 1 / kBeta;
  EXPECT_NEAR(simulate(crossServer(2, count, true), 4, twoServers(2), m).time,
              kAlpha + 2 * bytes * kBeta, 1e-12);
  m.fullDuplex = false;
  EXPECT_NEAR(simulate(crossServer(2, count, true), 4, twoServers(2), m).time,
              kAlpha + 4 * bytes * kBeta, 1e-12);
}

TEST(Simulator, APortOfOneLinkSerialisesARanksFlows) {
  // Rank 0 sends to ranks 1, 2 and 3 in one step over level0 with links = 1.
  const std::uint64_t count = 1000;
  Schedule s{Problem::allReduce(4, count), std::vector<RankSchedule>(4)};
  Step& root = s.ranks[0].newStep();
  for (std::uint32_t peer = 1; peer < 4; ++peer) {
    root.xfers.push_back({Dir::Send, peer, {Buf::Input, 0, count}, 0});
    s.ranks[peer].newStep().xfers.push_back({Dir::Recv, 0, {Buf::Output, 0, count}, 0});
  }
  ClusterModel m = uniformModel();
  m.level[0].links = 1;
  EXPECT_NEAR(simulate(s, 4, oneServer(4), m).time, kAlpha + 3 * 4.0 * count * kBeta, 1e-12);
}

TEST(Simulator, ReductionsCostGammaAfterTheirStep) {
  const std::uint64_t count = 1000;
  Schedule s = crossServer(1, count, false);
  s.ranks[1].steps[0].ops.push_back(
      {OpKind::Reduce, {Buf::Output, 0, count}, {Buf::Output, 0, count}, {Buf::Input, 0, count}});
  const SimResult r = simulate(s, 4, twoServers(1), uniformModel());
  EXPECT_NEAR(r.time, kAlpha + 4.0 * count * (kBeta + kGamma), 1e-12);
  EXPECT_NEAR(r.busy[1], 4.0 * count * kBeta, 1e-12);
}

TEST(Simulator, NamesATransferWithoutAPartner) {
  Schedule s{Problem::allReduce(2, 8), std::vector<RankSchedule>(2)};
  s.ranks[0].newStep().xfers.push_back({Dir::Send, 1, {Buf::Input, 0, 8}, 0});
  const SimResult r = simulate(s, 4, oneServer(2), uniformModel());
  EXPECT_NE(r.error.find("rank 0 never completes step 0"), std::string::npos) << r.error;
}

TEST(Simulator, NamesMismatchedSizes) {
  Schedule s{Problem::allReduce(2, 8), std::vector<RankSchedule>(2)};
  s.ranks[0].newStep().xfers.push_back({Dir::Send, 1, {Buf::Input, 0, 8}, 0});
  s.ranks[1].newStep().xfers.push_back({Dir::Recv, 0, {Buf::Output, 0, 4}, 0});
  const SimResult r = simulate(s, 4, oneServer(2), uniformModel());
  EXPECT_NE(r.error.find("sends 8 elements to rank 1, which receives 4"), std::string::npos)
      << r.error;
}

TEST(Simulator, TimelineIsChromeTraceJson) {
  const GeneratorSpec* spec = findGenerator(Algorithm::Ring, Collective::AllReduce);
  ASSERT_NE(spec, nullptr);
  const Schedule s = buildSchedule(spec->generate, Problem::allReduce(4, 1024));
  const std::vector<std::uint32_t> servers{0, 0, 1, 1};
  const SimResult r = simulate(s, 4, servers, uniformModel(), {.recordTimeline = true});
  ASSERT_TRUE(r.error.empty()) << r.error;
  const nlohmann::json doc = nlohmann::json::parse(chromeTrace(r, servers, "ring"));
  std::size_t steps = 0, begins = 0, ends = 0;
  double last = 0;
  for (const auto& e : doc.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "X") {
      ++steps;
      last = std::max(last, e.at("ts").get<double>() + e.at("dur").get<double>());
    }
    begins += ph == "b";
    ends += ph == "e";
  }
  std::size_t expectedSteps = 0, transfers = 0;
  for (const RankSchedule& rs : s.ranks) {
    expectedSteps += rs.steps.size();
    for (const Step& st : rs.steps) transfers += st.xfers.size();
  }
  EXPECT_EQ(steps, expectedSteps);
  EXPECT_EQ(begins, transfers / 2);  // one flow per send/receive pair
  EXPECT_EQ(ends, begins);
  EXPECT_NEAR(last, r.time * 1e6, 1e-6);
  EXPECT_DOUBLE_EQ(doc.at("otherData").at("predicted_us").get<double>(), r.time * 1e6);
}

}  // namespace
}  // namespace hccl::algo
