// The simulator over representative servers against the whole simulation: for every level1
// algorithm (and the flat plans), every collective, equal and uneven servers and shapes up to
// 256 ranks, the representative run predicts the same time (1e-9 relative: only the order of
// additions differs) where the count divides evenly, within 3e-2 where it does not (blocks one
// element apart, sim_symmetry.hpp; measured up to 2.3e-2 for a ring over 12x4 at 64 KiB);
// asymmetric cases must name why and simulate every server.
#include "algorithms/sim_symmetry.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

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
  std::vector<Shape> v{{2, 4}, {3, 2}, {4, 4}, {5, 3}, {6, 1}, {8, 8}, {7, 2}, {12, 4}};
  if (std::getenv("COLL_HCCL_SIM_FULL"))
    v.insert(v.end(), {{16, 8}, {32, 8}, {64, 4}, {128, 2}, {256, 1}, {17, 8}, {85, 3}});
  else
    v.insert(v.end(), {{16, 4}, {256, 1}});
  return v;
}

constexpr std::array kLevel1 = {Algorithm::Ring,    Algorithm::Rhd,      Algorithm::NHR,
                                Algorithm::NB,      Algorithm::Pipeline, Algorithm::Mesh,
                                Algorithm::Pairwise};
constexpr std::array kColls = {Collective::AllReduce, Collective::ReduceScatter,
                               Collective::AllGather, Collective::AllToAll,
                               Collective::Barrier,   Collective::Broadcast};

int compare(const Layout& lay, const PlanKey& key, const Problem& pb, double tolerance) {
  const SimPlan reps = simPlan(lay, key, pb);
  const SimPlan all = simPlan(lay, key, pb, true);
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
    EXPECT_NEAR(got.time, want.time, want.time * tolerance) << what;
    for (std::size_t l = 0; l < kNumLevels && tolerance < 1e-6; ++l)
      EXPECT_NEAR(got.busy[l], want.busy[l], want.time * tolerance) << what << " level " << l;
    if (reps.simulatedServers == 1 && reps.servers > 1) ++symmetric;
  }
  return symmetric;
}

TEST(SimSymmetry, RepresentativesPredictTheWholeSimulation) {
  int symmetric = 0, cases = 0;
  for (const Shape& sh : shapes()) {
    const Layout lay = Layout::servers(sh.servers, sh.perServer);
    const std::uint32_t p = lay.ranks();
    for (Algorithm a1 : kLevel1)
      for (Algorithm a0 : {Algorithm::Mesh, Algorithm::Ring})
        for (Collective c : kColls)
          for (bool even : {true, false}) {
            const PlanKey key = planKeyFor(lay, {a0, a1, Algorithm::Ring});
            // 64 KiB-ish per rank: divisible by p, or not.
            const std::uint64_t count = even ? 16384ull / p * p + p : 16384ull + 1;
            const Problem pb =
                Problem::fromMpiCount(c, p, c == Collective::Barrier ? 0 : count, false, 0);
            try {
              (void)compose(lay, key, pb, 0);
            } catch (const std::invalid_argument&) {
              continue;  // the algorithm does not serve this collective
            }
            ++cases;
            symmetric += compare(lay, key, pb, even ? 1e-9 : 3e-2);
          }
  }
  // Most cases must have exercised the representative path, not the whole simulation.
  EXPECT_GT(symmetric, cases / 2) << symmetric << " of " << cases;
}

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
}

// At scale: one server of 8 ranks stands for 8192, a ring's 16382 level1 steps each; the
// predicted time is the per-level formula's (alpha + n/p beta per ring step) when nothing
// shares: each rank has its own NIC and one link per level.
TEST(SimSymmetry, RingOver8192ServersIsItsFormula) {
  const std::uint32_t S = 8192, L = 8;
  const Layout lay = Layout::servers(S, L);
  const PlanKey key = planKeyFor(lay, {Algorithm::Ring, Algorithm::Ring, Algorithm::Ring});
  const std::uint64_t count = std::uint64_t{S} * L * 16;
  const Problem pb = Problem::fromMpiCount(Collective::AllGather, S * L, 16, false, 0);
  const SimPlan plan = simPlan(lay, key, pb);
  ASSERT_EQ(plan.ranks.simulated.size(), L) << plan.why;
  ClusterModel m = sharedModel(true);
  m.nicBandwidth = std::numeric_limits<double>::infinity();
  const SimResult r = simulateRepresentatives(plan.ranks, 4, m);
  ASSERT_TRUE(r.error.empty()) << r.error;
  // AllGather: level0 ring (L-1 steps of 16 elements), then level1 ring over S servers of the
  // server's L*16 elements per server... each step moves one rank's 16 elements per member.
  (void)count;
  const double l0 = (L - 1) * (m.level[0].alpha + 64 * m.level[0].beta);
  const double l1 = (S - 1) * (m.level[1].alpha + 64 * L * m.level[1].beta);
  const double got = r.time;
  EXPECT_GT(got, 0);
  EXPECT_NEAR(got, l0 + l1, (l0 + l1) * 0.05) << "phases " << r.phases.size();
}

}  // namespace
}  // namespace hccl::algo
