// The cluster simulator: with nothing shared it reproduces the critical path of metrics.hpp for
// real schedules; with a shared NIC, half duplex and reductions it gives the times worked out by
// hand below; its timeline is valid Chrome trace-event JSON.
#include "algorithms/simulator.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "algorithms/generators.hpp"
#include "algorithms/metrics.hpp"

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

TEST_P(SameAsCriticalPath, WhenNothingIsShared) {
  const auto [alg, coll] = GetParam();
  const GeneratorSpec* spec = findGenerator(alg, coll);
  ASSERT_NE(spec, nullptr);
  for (std::uint32_t p : {2u, 3u, 4u, 7u, 8u, 16u}) {
    const Problem pb = Problem::fromMpiCount(coll, p, 4096, false, 0);
    const Schedule s = buildSchedule(spec->generate, pb);
    const Metrics m = criticalPath(s, 4, CostParams::uniform(kAlpha, kBeta, kGamma));
    const SimResult r = simulate(s, 4, oneServer(p), uniformModel());
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_NEAR(r.time, m.time, m.time * 1e-9) << hcclName(alg) << " " << name(coll) << " p=" << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SameAsCriticalPath,
                         ::testing::Values(std::tuple{Algorithm::Ring, Collective::AllReduce},
                                           std::tuple{Algorithm::Ring, Collective::AllGather},
                                           std::tuple{Algorithm::Ring, Collective::ReduceScatter},
                                           std::tuple{Algorithm::Rhd, Collective::AllReduce},
                                           std::tuple{Algorithm::Rhd, Collective::ReduceScatter}));

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
