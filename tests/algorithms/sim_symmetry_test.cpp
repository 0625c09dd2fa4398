// The simulator over representative servers against the whole simulation. Quick tier (every
// run): every shape of 2..8 servers x 1..4 ranks, every level1 algorithm, every collective it
// serves, counts that p divides and that it does not, full and half duplex NICs. Where the case
// is symmetric the representative run (one server) must predict the whole run's time and
// per-level busy time (1e-9 relative: only the order of additions differs) where the count
// divides evenly, and the time within 3e-2 where it does not (blocks one element apart,
// sim_symmetry.hpp; measured up to 2.3e-2 for a ring over 12x4 at 64 KiB). Which cases are
// symmetric is computed here independently (rootless collective; ring, fullmesh, pairwise,
// pipeline; H-D_R and NHR over a power of two of servers) and must match simPlan(); the others
// must name why and simulate every server. COLL_HCCL_SIM_FULL=1 adds shapes to 256 ranks
// (minutes: a fullmesh over 256 servers shares each NIC among 255 flows).
#include "algorithms/sim_symmetry.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "algorithms/plan.hpp"

namespace hccl::algo {
namespace {

ClusterModel sharedModel(bool fullDuplex) {
  ClusterModel m;
  m.level[0] = {1e-6, 1.0 / 20e9, 2};
  m.level[1] = {5e-6, 1.0 / 10e9, 1};
  m.level[2] = {10e-6, 1.0 / 5e9, 1};
  m.nicBandwidth = 10e9;
  m.fullDuplex = fullDuplex;
  m.gamma = 1.0 / 8e9;
  return m;
}

struct Shape {
  std::uint32_t servers, perServer;
};

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  for (std::uint32_t s = 2; s <= 8; ++s)
    for (std::uint32_t l = 1; l <= 4; ++l) v.push_back({s, l});
  if (std::getenv("COLL_HCCL_SIM_FULL"))
    v.insert(v.end(), {{12, 4}, {16, 8}, {32, 8}, {64, 4}, {128, 2}, {256, 1}, {17, 8}, {85, 3}});
  return v;
}

constexpr std::array kLevel1 = {Algorithm::Ring, Algorithm::Rhd,     Algorithm::NHR,
                                Algorithm::NB,   Algorithm::AHC,     Algorithm::Pipeline,
                                Algorithm::Mesh, Algorithm::Pairwise};
constexpr std::array kColls = {Collective::AllReduce, Collective::ReduceScatter,
                               Collective::AllGather, Collective::AllToAll,
                               Collective::Barrier,   Collective::Broadcast};

bool powerOfTwo(std::uint32_t g) {
  return (g & (g - 1)) == 0;
}

// The expectation, from the algorithms' definitions rather than from sim_symmetry.cpp.
bool expectSymmetric(Collective c, Algorithm a1, std::uint32_t servers) {
  if (c == Collective::Broadcast) return false;  // a root
  switch (a1) {
    case Algorithm::Ring:
    case Algorithm::Mesh:
    case Algorithm::Pairwise:
    case Algorithm::Pipeline:
    case Algorithm::NB:  // its wrapped runs are one flow per peer (SimOptions::bundle)
      return true;
    case Algorithm::Rhd:
    case Algorithm::NHR:
      return powerOfTwo(servers);
    case Algorithm::AHC:  // over equal servers: its inter algorithm's, ring to 3 servers, NHR above
      return servers <= 3 || powerOfTwo(servers);
    default:
      return false;
  }
}

// Compares the representative run with the whole one; returns how many runs used one server.
int compare(const Layout& lay, const PlanKey& key, const Problem& pb, double tolerance,
            double* worst = nullptr) {
  const SimPlan reps = simPlan(lay, key, pb);
  const SimPlan all = simPlan(lay, key, pb, true);
  EXPECT_EQ(all.ranks.simulated.size(), lay.ranks());
  int symmetric = 0;
  for (bool duplex : {true, false}) {
    const ClusterModel m = sharedModel(duplex);
    const SimResult want = simulateRepresentatives(all.ranks, 4, m);
    const SimResult got = simulateRepresentatives(reps.ranks, 4, m);
    const std::string what =
        fmt::format("{} {} on {} ({}), count {}, {}", toString(key), name(pb.coll), lay.describe(),
                    reps.why, pb.blocks.total(), duplex ? "duplex" : "half duplex");
    EXPECT_TRUE(want.error.empty()) << what << ": " << want.error;
    EXPECT_TRUE(got.error.empty()) << what << ": " << got.error;
    EXPECT_GT(want.time, 0) << what;
    EXPECT_NEAR(got.time, want.time, want.time * tolerance) << what;
    if (worst != nullptr && want.time > 0)
      *worst = std::max(*worst, std::abs(got.time - want.time) / want.time);
    for (std::size_t l = 0; l < kNumLevels && tolerance < 1e-6; ++l)
      EXPECT_NEAR(got.busy[l], want.busy[l], want.time * tolerance) << what << " level " << l;
    if (reps.simulatedServers == 1 && reps.servers > 1) ++symmetric;
  }
  return symmetric;
}

// With a count p does not divide, servers' flows end a few elements apart, which can reorder
// the flows leaving a shared NIC: the whole simulation itself moves by 2% between counts 16384
// and 16385 on 8x3 (half duplex), and the representative's time by up to 3.2% there.
constexpr double kUneven = 5e-2;

class SimSymmetryShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(SimSymmetryShapes, RepresentativesPredictTheWholeSimulation) {
  const Shape sh = GetParam();
  const Layout lay = Layout::servers(sh.servers, sh.perServer);
  const std::uint32_t p = lay.ranks();
  int symmetric = 0, cases = 0;
  double worst = 0;  // uneven counts' largest relative difference
  for (Algorithm a1 : kLevel1)
    for (Algorithm a0 : {Algorithm::Mesh, Algorithm::Ring}) {
      if (a0 == Algorithm::Ring && sh.perServer < 3) continue;  // the same schedule as fullmesh
      for (Collective c : kColls)
        for (bool even : {true, false}) {
          const PlanKey key = planKeyFor(lay, {a0, a1, Algorithm::Ring});
          // 64 KiB in all: divisible by p, or not.
          const std::uint64_t count = even ? 16384ull / p * p + p : 16384ull + 1;
          const Problem pb =
              Problem::fromMpiCount(c, p, c == Collective::Barrier ? 0 : count, false, 0);
          try {
            (void)compose(lay, key, pb, 0);
          } catch (const std::invalid_argument&) {
            continue;  // the algorithm does not serve this collective
          }
          ++cases;
          const SimPlan plan = simPlan(lay, key, pb);
          const std::string what =
              fmt::format("{} {} on {}: {}", toString(key), name(c), lay.describe(), plan.why);
          if (!expectSymmetric(c, a1, sh.servers)) {
            // The whole simulation, and why.
            EXPECT_EQ(plan.simulatedServers, sh.servers) << what;
            EXPECT_EQ(plan.ranks.simulated.size(), p) << what;
            EXPECT_EQ(plan.why.rfind("symmetric", 0), std::string::npos) << what;
            continue;
          }
          EXPECT_EQ(plan.simulatedServers, 1u) << what;
          EXPECT_EQ(plan.ranks.simulated.size(), sh.perServer) << what;
          symmetric += compare(lay, key, pb, even ? 1e-9 : kUneven, even ? nullptr : &worst);
        }
    }
  EXPECT_GT(cases, 0);
  std::printf("%s: %d cases, worst uneven relative difference %.2e\n", lay.describe().c_str(),
              cases, worst);
  // Every shape has symmetric cases (ring, fullmesh, pipeline), run both ways.
  EXPECT_GT(symmetric, 0) << lay.describe();
}

INSTANTIATE_TEST_SUITE_P(Shapes, SimSymmetryShapes, ::testing::ValuesIn(shapes()),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           return fmt::format("{}x{}", i.param.servers, i.param.perServer);
                         });

TEST(SimSymmetry, PodsAndFlatPlans) {
  const Layout lay = Layout::pods(2, 4, 2);
  for (Algorithm a : {Algorithm::Ring, Algorithm::NHR, Algorithm::Rhd}) {
    const PlanKey key = planKeyFor(lay, {Algorithm::Mesh, a, a});
    const Problem pb = Problem::fromMpiCount(Collective::AllReduce, lay.ranks(), 4096, false, 0);
    EXPECT_EQ(compare(lay, key, pb, 1e-9), 2) << hcclName(a);
  }
}

TEST(SimSymmetry, NamesWhyEveryServerRuns) {
  const Layout lay = Layout::servers(6, 2);
  const PlanKey hd = planKeyFor(lay, {Algorithm::Mesh, Algorithm::Rhd, Algorithm::Ring});
  EXPECT_EQ(asymmetry(lay, hd, Collective::AllReduce),
            "level1: H-D_R over 6 members (not a power of two)");
  const PlanKey ring = planKeyFor(lay, {Algorithm::Mesh, Algorithm::Ring, Algorithm::Ring});
  EXPECT_EQ(asymmetry(lay, ring, Collective::Broadcast), "broadcast has a root or a rank order");
  EXPECT_EQ(asymmetry(Layout::uneven({2, 3}), ring, Collective::AllReduce),
            "servers of unequal size or interleaved ranks");
  // Fewer elements than ranks: empty blocks, whose transfers some servers skip.
  const Layout lay4 = Layout::servers(4, 4);
  const PlanKey ring4 = planKeyFor(lay4, {Algorithm::Mesh, Algorithm::Ring, Algorithm::Ring});
  const Problem few = Problem::fromMpiCount(Collective::AllReduce, 16, 8, false, 0);
  const SimPlan plan = simPlan(lay4, ring4, few);
  EXPECT_EQ(plan.simulatedServers, 4u) << plan.why;
  EXPECT_EQ(plan.why, "8 elements for 16 ranks: some blocks are empty");
  EXPECT_EQ(compare(lay4, ring4, few, 1e-9), 0);
}

// At scale: one server of 8 ranks stands for 8192, a ring's 16382 level1 steps each; the
// predicted time is the per-level formula's (alpha + n/p beta per ring step) when nothing
// shares: each rank has its own NIC and one link per level.
TEST(SimSymmetry, RingOver8192ServersIsItsFormula) {
  const std::uint32_t S = 8192, L = 8;
  const Layout lay = Layout::servers(S, L);
  const PlanKey key = planKeyFor(lay, {Algorithm::Ring, Algorithm::Ring, Algorithm::Ring});
  const Problem pb = Problem::fromMpiCount(Collective::AllGather, S * L, 16, false, 0);
  const SimPlan plan = simPlan(lay, key, pb);
  ASSERT_EQ(plan.ranks.simulated.size(), L) << plan.why;
  ClusterModel m = sharedModel(true);
  m.nicBandwidth = std::numeric_limits<double>::infinity();
  const SimResult r = simulateRepresentatives(plan.ranks, 4, m);
  ASSERT_TRUE(r.error.empty()) << r.error;
  // AllGather of 16 elements per rank: a level0 ring (L-1 steps of one rank's 64 bytes), then
  // every rank's ring over the S servers (S-1 steps of its server's L*64 bytes).
  const double l0 = (L - 1) * (m.level[0].alpha + 64 * m.level[0].beta);
  const double l1 = (S - 1) * (m.level[1].alpha + 64 * L * m.level[1].beta);
  const double got = r.time;
  EXPECT_GT(got, 0);
  EXPECT_NEAR(got, l0 + l1, (l0 + l1) * 0.05) << "phases " << r.phases.size();
}

// One flow per pair and step (SimOptions::bundle) against one flow per transfer, whole
// simulations with a shared NIC both ways: the bundles start together and cross the same
// resources, so the time moves only where a step's transfers to one peer are several (NB's
// strided runs, a wrapped run, NHR's runs off a power of two) and their number, not their
// bytes, set the shares of a NIC they share with other ranks' flows. Measured worst (4x4, 3x3,
// 8x2, 5x2): 3.8e-5 full duplex, 5.4e-2 half duplex (NB AllGather over 5 servers: both
// directions of a NIC counted per transfer gave the wrapped runs' ranks a larger share); Ring,
// H-D_R and Pipeline, whose steps send one transfer per peer, 1e-9.
TEST(SimSymmetry, OneFlowPerPeerAndStepMovesTheSameTimes) {
  std::array<double, 2> worst{};  // half duplex, full duplex
  std::array<std::string, 2> where;
  std::uint64_t fewer = 0;
  for (const Shape sh : {Shape{4, 4}, Shape{3, 3}, Shape{8, 2}, Shape{5, 2}}) {
    const Layout lay = Layout::servers(sh.servers, sh.perServer);
    const std::uint32_t p = lay.ranks();
    for (Algorithm a1 : {Algorithm::Ring, Algorithm::Rhd, Algorithm::NHR, Algorithm::NB,
                         Algorithm::AHC, Algorithm::Pipeline})
      for (Algorithm a0 : {Algorithm::Mesh, Algorithm::Ring})
        for (Collective c :
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
          for (std::uint64_t count : {16384ull / p * p, 16384ull + 1, 4ull * p}) {
            const PlanKey key = planKeyFor(lay, {a0, a1, Algorithm::Ring});
            const Problem pb = Problem::fromMpiCount(c, p, count, false, 0);
            const SimPlan all = simPlan(lay, key, pb, true);
            for (bool duplex : {true, false}) {
              const ClusterModel m = sharedModel(duplex);
              const SimResult one = simulateRepresentatives(all.ranks, 4, m);
              const SimResult each = simulateRepresentatives(all.ranks, 4, m, {.bundle = false});
              const std::string what = fmt::format("{} {} on {}, count {}, {}", toString(key),
                                                   name(c), lay.describe(), count, duplex);
              ASSERT_TRUE(one.error.empty()) << what << ": " << one.error;
              ASSERT_TRUE(each.error.empty()) << what << ": " << each.error;
              EXPECT_LE(one.flows, each.flows) << what;
              fewer += each.flows - one.flows;
              const double d = std::abs(one.time - each.time) / each.time;
              // Ring, H-D_R and Pipeline send one transfer per peer and step: the same flows.
              if (a1 == Algorithm::Ring || a1 == Algorithm::Rhd || a1 == Algorithm::Pipeline) {
                EXPECT_LE(d, 1e-9) << what;
              }
              if (d > worst[duplex]) {
                worst[duplex] = d;
                where[duplex] = what;
              }
            }
          }
  }
  std::printf(
      "bundling: %llu fewer flows, worst relative difference %.2e full duplex (%s), "
      "%.2e half duplex (%s)\n",
      static_cast<unsigned long long>(fewer), worst[1], where[1].c_str(), worst[0],
      where[0].c_str());
  EXPECT_GT(fewer, 0u);
  EXPECT_LE(worst[1], 1e-4) << where[1];
  EXPECT_LE(worst[0], 6e-2) << where[0];
}

}  // namespace
}  // namespace hccl::algo
