// The metrics the replay derives from each schedule equal the reference's alpha-beta-gamma rows
// (../shared/reference/hccl-algorithms.md, section 1) whenever n divides evenly.
//
// Where the reference disagrees with itself: Ring Broadcast and Reduce have a second row
// (Scatter+AllGather, ReduceScatter+Gather); our Ring schedules are the chains of the primary rows
// and are checked against those. RHD ReduceScatter/AllGather for non-powers of two only has bounds
// in the reference; the schedule (survivors of part1 pairs are the lowest core ranks) is checked
// to lie within them.
#include <gtest/gtest.h>

#include <bit>

#include "algorithms/metrics.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

constexpr std::size_t kElem = 4;
// Divisible by every p and p' used below, so every formula is an integer number of bytes.
constexpr std::uint64_t kCount = 720720;  // lcm(1..16)
constexpr double kN = double(kCount * kElem);

struct Expected {
  std::uint64_t steps;
  double bytes, gamma;  // as multiples of n
};

Metrics measure(Algorithm a, Collective c, std::uint32_t p) {
  const GeneratorSpec* spec = findGenerator(a, c);
  EXPECT_NE(spec, nullptr);
  const std::uint64_t count =
      c == Collective::ReduceScatter || c == Collective::AllGather ? kCount / p : kCount;
  return criticalPath(buildSchedule(spec->generate, test::problemFor(c, p, count, false, 0)),
                      kElem);
}

void expectMetrics(Algorithm a, Collective c, std::uint32_t p, Expected e) {
  const Metrics m = measure(a, c, p);
  SCOPED_TRACE(::testing::Message() << hcclName(a) << " " << name(c) << " p=" << p);
  EXPECT_EQ(m.steps(), e.steps);
  EXPECT_DOUBLE_EQ(double(m.bytes()), e.bytes * kN);
  EXPECT_DOUBLE_EQ(double(m.reducedBytes), e.gamma * kN);
}

double frac(std::uint32_t p) {
  return double(p - 1) / p;
}
std::uint64_t lg(std::uint32_t p) {
  return std::uint64_t(std::bit_width(p) - 1);
}

TEST(Metrics, Ring) {
  for (std::uint32_t p = 2; p <= 16; ++p) {
    expectMetrics(Algorithm::Ring, Collective::AllReduce, p, {2 * (p - 1), 2 * frac(p), frac(p)});
    expectMetrics(Algorithm::Ring, Collective::ReduceScatter, p, {p - 1, frac(p), frac(p)});
    expectMetrics(Algorithm::Ring, Collective::AllGather, p, {p - 1, frac(p), 0});
    expectMetrics(Algorithm::Ring, Collective::Broadcast, p, {p - 1, double(p - 1), 0});
    expectMetrics(Algorithm::Ring, Collective::Reduce, p, {p - 1, double(p - 1), double(p - 1)});
  }
}

TEST(Metrics, RhdPowerOfTwo) {
  for (std::uint32_t p : {2u, 4u, 8u, 16u}) {
    expectMetrics(Algorithm::Rhd, Collective::AllReduce, p, {2 * lg(p), 2 * frac(p), frac(p)});
    expectMetrics(Algorithm::Rhd, Collective::ReduceScatter, p, {lg(p), frac(p), frac(p)});
    expectMetrics(Algorithm::Rhd, Collective::AllGather, p, {lg(p), frac(p), 0});
    expectMetrics(Algorithm::Rhd, Collective::Broadcast, p, {lg(p), double(lg(p)), 0});
    expectMetrics(Algorithm::Rhd, Collective::Reduce, p, {2 * lg(p), 2 * frac(p), frac(p)});
  }
}

TEST(Metrics, RhdOtherRankCounts) {
  for (std::uint32_t p = 3; p <= 15; ++p) {
    if (std::has_single_bit(p)) continue;
    const std::uint32_t pp = std::bit_floor(p);
    const std::uint64_t k = lg(p);
    expectMetrics(Algorithm::Rhd, Collective::AllReduce, p,
                  {2 * k + 2, 2 * frac(pp) + 2, frac(pp) + 1});
    expectMetrics(Algorithm::Rhd, Collective::Reduce, p,
                  {2 * k + 1, 2 * frac(pp) + 1, frac(pp) + 1});
    expectMetrics(Algorithm::Rhd, Collective::Broadcast, p,
                  {k + 1, double(k + 1), 0});  // ceil(log p) rounds of the whole buffer

    // ReduceScatter: fold (n), non-uniform halving within the reference's bounds, scatter (n/p).
    const double lower = double(k + (std::uint64_t{1} << k) - 1) / p;
    const double upper = double((std::uint64_t{2} << k) - 2) / p;
    for (Collective c : {Collective::ReduceScatter, Collective::AllGather}) {
      SCOPED_TRACE(::testing::Message() << name(c) << " p=" << p);
      const Metrics m = measure(Algorithm::Rhd, c, p);
      EXPECT_EQ(m.steps(), k + 2);
      const double halving = double(m.bytes()) / kN - 1.0 - 1.0 / p;
      EXPECT_GE(halving, lower - 1e-12);
      EXPECT_LE(halving, upper + 1e-12);
      if (c == Collective::ReduceScatter) {
        const double reduced = double(m.reducedBytes) / kN - 1.0;
        EXPECT_GE(reduced, lower - 1e-12);
        EXPECT_LE(reduced, upper + 1e-12);
      } else {
        EXPECT_EQ(m.reducedBytes, 0u);
      }
    }
  }
}

TEST(Metrics, Mesh) {
  for (std::uint32_t p = 2; p <= 16; ++p) {
    expectMetrics(Algorithm::Mesh, Collective::AllReduce, p, {2, 2.0 / p, frac(p)});
    expectMetrics(Algorithm::Mesh, Collective::ReduceScatter, p, {1, 1.0 / p, frac(p)});
    expectMetrics(Algorithm::Mesh, Collective::AllGather, p, {1, 1.0 / p, 0});
    // ReduceScatter + Gather, the reference's Mesh row 2a + (2/p)n b + ((p-1)/p)n g.
    expectMetrics(Algorithm::Mesh, Collective::Reduce, p, {2, 2.0 / p, frac(p)});
    // One-shot: the whole vector to every peer, p-1 vectors folded into the own one.
    expectMetrics(Algorithm::MeshOneShot, Collective::AllReduce, p, {1, 1.0, double(p - 1)});
    // One-shot Broadcast: the root's whole vector to every peer in one step, nothing reduced.
    expectMetrics(Algorithm::MeshOneShot, Collective::Broadcast, p, {1, 1.0, 0});
  }
}

// One-shot Broadcast is one post at more than two ranks (Transfer::post on both ends, every
// root), priced on a link with posts as one write plus the round (metrics.hpp), and at two ranks
// the ring's one message, priced alike.
TEST(Metrics, OneShotBroadcastIsOnePost) {
  CostParams cp = CostParams::uniform(1e-6, 1e-9, 0);
  cp.links[0] = 1;
  cp.halfDuplex[0] = true;
  cp.stepFrom[0] = 100;
  cp.step[0] = 50e-6;
  cp.posts[0] = true;
  cp.postStep[0] = 4e-6;
  const GeneratorSpec* one = findGenerator(Algorithm::MeshOneShot, Collective::Broadcast);
  const GeneratorSpec* ring = findGenerator(Algorithm::Ring, Collective::Broadcast);
  ASSERT_TRUE(one && ring);
  for (std::uint32_t p = 2; p <= 6; ++p)
    for (std::uint32_t root = 0; root < p; ++root) {
      SCOPED_TRACE(::testing::Message() << "p=" << p << " root=" << root);
      const Problem pb = test::problemFor(Collective::Broadcast, p, 1000, false, root);
      const Schedule s = buildSchedule(one->generate, pb);
      for (std::uint32_t r = 0; r < p; ++r)
        for (const Step& st : s.ranks[r].steps)
          for (const Transfer& t : st.xfers) EXPECT_EQ(t.post, p > 2);
      const Metrics m = criticalPath(s, 4, cp);
      if (p > 2) {
        EXPECT_NEAR(m.time, 1e-6 + 4000e-9 + 4e-6, 1e-15);
        EXPECT_EQ(m.bytes(), 4000u);
      } else {
        EXPECT_NEAR(m.time, criticalPath(buildSchedule(ring->generate, pb), 4, cp).time, 1e-15);
      }
    }
}

TEST(Metrics, OneRankCostsNothing) {
  for (const GeneratorSpec& s : generatorSpecs()) {
    const Metrics m = measure(s.algorithm, s.coll, 1);
    EXPECT_EQ(m.steps(), 0u) << test::specName(s);
    EXPECT_EQ(m.bytes(), 0u) << test::specName(s);
  }
}

// The predicted time is the alpha-beta-gamma sum of the path it reports.
TEST(Metrics, TimeIsTheModelOfThePath) {
  const CostParams cp = CostParams::uniform(5e-6, 2e-10, 3e-11);
  for (const GeneratorSpec& s : generatorSpecs()) {
    const auto pb = test::problemFor(s.coll, 6, 6000, false, 1);
    const Metrics m = criticalPath(buildSchedule(s.generate, pb), kElem, cp);
    EXPECT_NEAR(
        m.time,
        5e-6 * double(m.steps()) + 2e-10 * double(m.bytes()) + 3e-11 * double(m.reducedBytes),
        1e-15)
        << test::specName(s);
  }
}

// Levels overlap: a step with transfers on two levels costs the slower one, and the path records
// that level's step and bytes.
TEST(Metrics, ConcurrentLevelsCostTheSlowerLink) {
  Schedule s{Problem::allGather(2, 10), {}};
  s.ranks.resize(2);
  for (std::uint32_t r = 0; r < 2; ++r) {
    Step& st = s.ranks[r].newStep();
    st.xfers.push_back({Dir::Send, 1 - r, out(10 * r, 10), 0});
    st.xfers.push_back({Dir::Recv, 1 - r, out(10 * (1 - r), 10), 0});
    st.xfers.push_back({Dir::Send, r, out(10 * r, 2), 1});  // a small self-message on level 1
    st.xfers.push_back({Dir::Recv, r, scratch(0, 2), 1});
  }
  CostParams cp = CostParams::uniform(1e-6, 1e-9, 0);
  cp.alpha[1] = 1e-3;  // level 1 is slow to start
  const Metrics m = criticalPath(s, 1, cp);
  EXPECT_EQ(m.level[1].steps, 1u);
  EXPECT_EQ(m.level[1].bytes, 2u);
  EXPECT_EQ(m.level[0].steps, 0u);
  EXPECT_NEAR(m.time, 1e-3 + 2e-9, 1e-15);
}

// ---- NHR, NB, Pairwise ------------------------------------------------------------------------

// ceil(log2 p), counted rather than derived from bit tricks.
std::uint64_t ceilLog(std::uint32_t p) {
  std::uint64_t k = 0;
  while ((std::uint64_t{1} << k) < p) ++k;
  return k;
}

// Like expectMetrics, for any root, with the MPI count of every collective (per rank for
// Scatter, per pair for AllToAll) chosen so that each rank's whole vector is kCount elements.
void expectMetricsAt(Algorithm a, Collective c, std::uint32_t p, std::uint32_t root, Expected e) {
  const GeneratorSpec* spec = findGenerator(a, c);
  ASSERT_NE(spec, nullptr) << hcclName(a) << " " << name(c);
  const bool perRank = c == Collective::ReduceScatter || c == Collective::AllGather ||
                       c == Collective::Scatter || c == Collective::Gather ||
                       c == Collective::AllToAll || c == Collective::AllToAllV;
  const Problem pb = test::problemFor(c, p, perRank ? kCount / p : kCount, false, root);
  const Metrics m = criticalPath(buildSchedule(spec->generate, pb), kElem);
  SCOPED_TRACE(::testing::Message()
               << hcclName(a) << " " << name(c) << " p=" << p << " root=" << root);
  EXPECT_EQ(m.steps(), e.steps);
  EXPECT_DOUBLE_EQ(double(m.bytes()), e.bytes * kN);
  EXPECT_DOUBLE_EQ(double(m.reducedBytes), e.gamma * kN);
}

// The reference gives NHR and NB the same rows.
void expectLogRows(Algorithm a) {
  for (std::uint32_t p = 2; p <= 16; ++p) {
    const std::uint64_t k = ceilLog(p);
    expectMetricsAt(a, Collective::ReduceScatter, p, 0, {k, frac(p), frac(p)});
    expectMetricsAt(a, Collective::AllGather, p, 0, {k, frac(p), 0});
    expectMetricsAt(a, Collective::AllReduce, p, 0, {2 * k, 2 * frac(p), frac(p)});
    for (std::uint32_t root = 0; root < p; ++root) {
      expectMetricsAt(a, Collective::Scatter, p, root, {k, frac(p), 0});
      expectMetricsAt(a, Collective::Gather, p, root, {k, frac(p), 0});  // Scatter's row
      expectMetricsAt(a, Collective::Broadcast, p, root, {2 * k, 2 * frac(p), 0});
    }
    // Dissemination barrier: ceil(log2 p) steps of nothing.
    expectMetricsAt(a, Collective::Barrier, p, 0, {k, 0, 0});
  }
}

TEST(Metrics, NHR) {
  expectLogRows(Algorithm::NHR);
}

TEST(Metrics, NB) {
  expectLogRows(Algorithm::NB);
}

TEST(Metrics, Pairwise) {
  for (std::uint32_t p = 2; p <= 16; ++p) {
    expectMetricsAt(Algorithm::Pairwise, Collective::AllToAll, p, 0, {p - 1, frac(p), 0});
    expectMetricsAt(Algorithm::Pairwise, Collective::AllToAllV, p, 0, {p - 1, frac(p), 0});
  }
}

// Ring Scatter and Gather: (p-1)a + ((p-1)/p)n b, the reference's Ring row, for every root.
TEST(Metrics, RingRooted) {
  for (std::uint32_t p = 2; p <= 16; ++p)
    for (std::uint32_t root : {0u, p / 2, p - 1}) {
      expectMetricsAt(Algorithm::Ring, Collective::Scatter, p, root, {p - 1, frac(p), 0});
      expectMetricsAt(Algorithm::Ring, Collective::Gather, p, root, {p - 1, frac(p), 0});
    }
}

// Fullmesh: Scatter = Gather = AllToAll = a + (1/p)n b (the reference's Mesh row, every link at
// once); Barrier one step of nothing; Scan one step of whole vectors, the last rank folding p-1.
TEST(Metrics, MeshRootedAndAllToAll) {
  for (std::uint32_t p = 2; p <= 16; ++p) {
    expectMetricsAt(Algorithm::Mesh, Collective::Scatter, p, p - 1, {1, 1.0 / p, 0});
    expectMetricsAt(Algorithm::Mesh, Collective::Gather, p, 0, {1, 1.0 / p, 0});
    expectMetricsAt(Algorithm::Mesh, Collective::AllToAll, p, 0, {1, 1.0 / p, 0});
    expectMetricsAt(Algorithm::Mesh, Collective::AllToAllV, p, 0, {1, 1.0 / p, 0});
    expectMetricsAt(Algorithm::Mesh, Collective::Barrier, p, 0, {1, 0, 0});
    expectMetricsAt(Algorithm::Mesh, Collective::Scan, p, 0, {1, 1.0, double(p - 1)});
  }
}

// Recursive-doubling Scan: ceil(log2 p)(a + n b + n g) (no reference row: HCCL has no scan).
TEST(Metrics, RhdScan) {
  for (std::uint32_t p = 2; p <= 16; ++p) {
    const auto k = static_cast<double>(ceilLog(p));
    expectMetricsAt(Algorithm::Rhd, Collective::Scan, p, 0, {ceilLog(p), k, k});
  }
}

// In place moves the same bytes in the same steps.
TEST(Metrics, InPlaceCostsTheSame) {
  for (Algorithm a : {Algorithm::NHR, Algorithm::NB, Algorithm::Pairwise}) {
    for (const GeneratorSpec& s : generatorSpecs()) {
      if (s.algorithm != a || s.coll == Collective::Broadcast) continue;
      for (std::uint32_t p : {3u, 8u, 13u}) {
        const auto out = criticalPath(
            buildSchedule(s.generate, test::problemFor(s.coll, p, 1200, false, 1)), kElem);
        const auto in = criticalPath(
            buildSchedule(s.generate, test::problemFor(s.coll, p, 1200, true, 1)), kElem);
        EXPECT_EQ(in.steps(), out.steps()) << test::specName(s) << " p=" << p;
        EXPECT_EQ(in.bytes(), out.bytes()) << test::specName(s) << " p=" << p;
        EXPECT_EQ(in.reducedBytes, out.reducedBytes) << test::specName(s) << " p=" << p;
      }
    }
  }
}

}  // namespace
}  // namespace hccl::algo
