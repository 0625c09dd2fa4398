// AHC: every schedule verified symbolically on servers of unequal size (and equal ones, as
// AHC_BROKE), and its per-rank volumes and critical path equal what the slicing implies.
#include "algorithms/ahc.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <numeric>
#include <set>

#include "algorithms/hierarchical.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/verifier.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

using Sizes = std::vector<std::uint32_t>;

constexpr std::array<Algorithm, 3> kIntra = {Algorithm::Ring, Algorithm::Mesh, Algorithm::Rhd};
constexpr std::array<Algorithm, 4> kInter = {Algorithm::Ring, Algorithm::NHR, Algorithm::NB,
                                             Algorithm::Rhd};

Schedule ahcAll(const Layout& lay, Algorithm intra, Algorithm inter, const Problem& pb) {
  Schedule s{pb, {}};
  for (std::uint32_t r = 0; r < pb.ranks; ++r)
    s.ranks.push_back(ahcSchedule(lay, intra, inter, pb, r));
  return s;
}

void expectClean(const Layout& lay, Algorithm intra, Algorithm inter, const Problem& pb) {
  const auto issues = verify(ahcAll(lay, intra, inter, pb));
  EXPECT_TRUE(issues.empty()) << lay.describe() << " " << toString(pb) << " intra "
                              << hcclName(intra) << " inter " << hcclName(inter) << "\n"
                              << describe(issues);
}

const std::vector<Sizes> kLayouts = {{1, 2}, {2, 3}, {3, 5},      {1, 4, 2},
                                     {2, 2}, {5, 3}, {2, 1, 3, 1}};

// Every layout, plain and interleaved, every collective, the issue's counts, in and out of place;
// the intra x inter pairs rotate so that each layout meets several.
TEST(Ahc, VerifiesOnUnequalServers) {
  std::size_t k = 0;
  for (const Sizes& sizes : kLayouts)
    for (bool interleaved : {false, true}) {
      const Layout lay = Layout::uneven(sizes, interleaved);
      const std::uint64_t p = lay.ranks();
      for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
        for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, p - 1, p, p + 1,
                                std::uint64_t{1000}, std::uint64_t{100003}})
          for (bool inPlace : {false, true}) {
            ++k;
            expectClean(lay, kIntra[k % kIntra.size()], kInter[(k / 3) % kInter.size()],
                        test::problemFor(c, lay.ranks(), n, inPlace));
            if (HasFailure()) return;
          }
    }
}

TEST(Ahc, EveryAlgorithmPair) {
  for (Algorithm intra : kIntra)
    for (Algorithm inter : kInter)
      for (const Layout& lay : {Layout::uneven({3, 5}), Layout::uneven({1, 4, 2}, true)})
        for (Collective c :
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
          for (bool inPlace : {false, true}) {
            expectClean(lay, intra, inter, test::problemFor(c, lay.ranks(), 37, inPlace));
            if (HasFailure()) return;
          }
}

// ReduceScatter with recvcounts and AllGatherV: blocks of any size, zeros included.
TEST(Ahc, UnevenBlocks) {
  const std::vector<std::vector<std::uint64_t>> cases = {
      {4, 0, 7, 1, 3, 9, 2, 5}, {0, 0, 0, 0, 0, 0, 0, 11}, {1000, 1, 0, 333, 2, 0, 77, 5}};
  for (const auto& counts : cases)
    for (bool interleaved : {false, true}) {
      const Layout lay = Layout::uneven({3, 5}, interleaved);
      for (Collective c : {Collective::ReduceScatter, Collective::AllGather})
        for (bool inPlace : {false, true})
          for (Algorithm inter : {Algorithm::Ring, Algorithm::NB}) {
            Problem pb = test::problemFor(c, 8, 0, inPlace);
            pb.blocks = Blocks::of(counts);
            expectClean(lay, Algorithm::Mesh, inter, pb);
            if (HasFailure()) return;
          }
    }
  // In place with the ReduceScatter result left in its block, as a hierarchical AllReduce asks.
  Problem pb = Problem::reduceScatter(7, 0, true);
  pb.blocks = Blocks::of(std::vector<std::uint64_t>{5, 1, 0, 8, 3, 3, 9});
  pb.resultInBlock = true;
  expectClean(Layout::uneven({1, 4, 2}, true), Algorithm::Ring, Algorithm::Ring, pb);
}

// The composer runs AHC when level1 names it, with HCCL's inter rule unless told otherwise.
TEST(Ahc, ComposerDispatches) {
  const Layout lay = Layout::uneven({3, 5});
  const Problem pb = Problem::allReduce(8, 1000);
  for (Algorithm named : {Algorithm::AHC, Algorithm::AHC_Broke})
    for (std::uint32_t r = 0; r < 8; ++r) {
      const LevelAlgorithms algs{Algorithm::Mesh, named, Algorithm::Ring};
      EXPECT_EQ(composeHierarchical(lay, algs, pb, r),
                ahcSchedule(lay, Algorithm::Mesh, Algorithm::Ring, pb, r));
      EXPECT_EQ(composeHierarchical(lay, algs, pb, r, Algorithm::NB),
                ahcSchedule(lay, Algorithm::Mesh, Algorithm::NB, pb, r));
    }
  EXPECT_FALSE(composedRankOrdered(lay, {Algorithm::Mesh, Algorithm::AHC, Algorithm::Ring},
                                   Collective::AllReduce));
  EXPECT_EQ(ahcDefaultInter(3), Algorithm::Ring);
  EXPECT_EQ(ahcDefaultInter(4), Algorithm::NHR);
}

TEST(Ahc, RejectsWhatItCannotRun) {
  EXPECT_THROW(ahcSchedule(Layout::pods(2, 2, 2), Algorithm::Ring, Algorithm::Ring,
                           Problem::allReduce(8, 10), 0),
               std::invalid_argument);
  EXPECT_THROW(ahcSchedule(Layout::uneven({3, 5}), Algorithm::Ring, Algorithm::Ring,
                           Problem::broadcast(8, 10, 0), 0),
               std::invalid_argument);
  // Pairwise has no ReduceScatter to run inside a server.
  EXPECT_THROW(ahcSchedule(Layout::uneven({3, 5}), Algorithm::Pairwise, Algorithm::Ring,
                           Problem::allReduce(8, 10), 0),
               std::invalid_argument);
  EXPECT_NE(ahcWhyNot({3, 5}, Collective::Broadcast).find("AHC has no broadcast"),
            std::string::npos);
  EXPECT_TRUE(ahcWhyNot({3, 5}, Collective::AllGather).empty());
}

// Per rank and level, the elements a rank sends, its steps and the elements it reduces, counted
// from its schedule.
struct RankVolume {
  std::array<std::uint64_t, kNumLevels> sent{}, steps{};
  std::uint64_t reduced = 0;
};

RankVolume volumeOf(const RankSchedule& rs) {
  RankVolume v;
  for (const Step& st : rs.steps) {
    std::array<bool, kNumLevels> active{};
    for (const Transfer& t : st.xfers) {
      active[t.level] = true;
      if (t.dir == Dir::Send) v.sent[t.level] += t.slice.count;
    }
    for (int l = 0; l < kNumLevels; ++l)
      v.steps[static_cast<std::size_t>(l)] += active[static_cast<std::size_t>(l)];
    for (const LocalOp& op : st.ops)
      if (op.kind == OpKind::Reduce) v.reduced += op.dst.count;
  }
  return v;
}

// The segments a member owns: one more than the distinct range boundaries of any server that fall
// strictly inside its range. In units of 1/L, member j of a server of m owns [jL/m, (j+1)L/m).
std::uint64_t segmentsOf(const Sizes& sizes, std::uint32_t m, std::uint32_t j) {
  std::uint64_t L = 1;
  for (std::uint32_t mh : sizes) L = std::lcm(L, std::uint64_t{mh});
  std::set<std::uint64_t> inside;
  for (std::uint32_t mh : sizes)
    for (std::uint64_t k = 0; k <= mh; ++k)
      if (k * L / mh > j * L / m && k * L / mh < (j + 1) * L / m) inside.insert(k * L / mh);
  return inside.size() + 1;
}

// AllReduce, ring inside and between servers, n a multiple of L * G so that every segment splits
// evenly among its G owners. Member of a server of m ranks:
//   level0 sent    2 (m-1)/m n          (RS + AG of ranges of n/m)
//   level0 steps   2 (m-1)
//   level1 sent    2 (G-1)/G n/m        (its segments add up to its range n/m)
//   level1 steps   2 (G-1) per owned segment
//   reduced        (m-1)/m n + (G-1)/G n/m
TEST(Ahc, AllReduceVolumesPerRank) {
  for (const Sizes& sizes : std::vector<Sizes>{{3, 5}, {1, 4, 2}, {2, 3}, {2, 2}, {4, 2, 3}}) {
    const Layout lay = Layout::uneven(sizes, true);
    const auto G = static_cast<std::uint64_t>(sizes.size());
    std::uint64_t L = 1;
    for (std::uint32_t m : sizes) L = std::lcm(L, std::uint64_t{m});
    const std::uint64_t n = L * G * 7;
    const Problem pb = Problem::allReduce(lay.ranks(), n);
    for (std::uint32_t g = 0; g < sizes.size(); ++g)
      for (std::uint32_t j = 0; j < sizes[g]; ++j) {
        const std::uint32_t r = lay.groups(0)[g][j];
        const std::uint64_t m = sizes[g];
        const RankVolume v = volumeOf(ahcSchedule(lay, Algorithm::Ring, Algorithm::Ring, pb, r));
        const std::string at = lay.describe() + " rank " + std::to_string(r);
        EXPECT_EQ(v.sent[0], 2 * (m - 1) * n / m) << at;
        EXPECT_EQ(v.steps[0], 2 * (m - 1)) << at;
        EXPECT_EQ(v.sent[1], 2 * (G - 1) * n / (G * m)) << at;
        EXPECT_EQ(v.steps[1], 2 * (G - 1) * segmentsOf(sizes, sizes[g], j)) << at;
        EXPECT_EQ(v.reduced, (m - 1) * n / m + (G - 1) * n / (G * m)) << at;
      }
  }
}

// AllGather and ReduceScatter, b elements per rank (a multiple of L), N = p b in all, S = m b for
// a server of m ranks; elements a member receives, per level:
//   AllGather      level0  (m-1) b              its server's other blocks (phase 1)
//                          + (m-1)(N-S)/m       the other members' ranges of the other servers
//                  level1  (N-S)/m              the other servers' parts of its range (any AG)
//   ReduceScatter  level0  (m-1) N/m            the RS of Z over the server (ranges of N/m);
//                                               ranges equal blocks, so nothing to redistribute
//                  level1  (G-1) S/m            mesh between servers: each other owner's
//                                               contribution to its part of SB_g (S/m in all)
TEST(Ahc, AllGatherAndReduceScatterVolumes) {
  for (const Sizes& sizes : std::vector<Sizes>{{3, 5}, {1, 4, 2}, {2, 2}}) {
    const Layout lay = Layout::uneven(sizes);
    std::uint64_t L = 1;
    for (std::uint32_t m : sizes) L = std::lcm(L, std::uint64_t{m});
    const std::uint64_t b = L * 5, N = b * lay.ranks();
    for (Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
      const Problem pb = test::problemFor(c, lay.ranks(), b, false);
      const Algorithm inter = c == Collective::AllGather ? Algorithm::Ring : Algorithm::Mesh;
      const Schedule s = ahcAll(lay, Algorithm::Mesh, inter, pb);
      std::vector<std::array<std::uint64_t, kNumLevels>> received(lay.ranks());
      for (std::uint32_t r = 0; r < lay.ranks(); ++r)
        for (const Step& st : s.ranks[r].steps)
          for (const Transfer& t : st.xfers)
            if (t.dir == Dir::Recv) received[r][t.level] += t.slice.count;
      const std::uint64_t G = sizes.size();
      for (std::uint32_t g = 0; g < sizes.size(); ++g)
        for (std::uint32_t j = 0; j < sizes[g]; ++j) {
          const std::uint32_t r = lay.groups(0)[g][j];
          const std::uint64_t m = sizes[g], S = m * b;
          const std::string at =
              lay.describe() + " " + std::string(name(c)) + " rank " + std::to_string(r);
          if (c == Collective::AllGather) {
            EXPECT_EQ(received[r][0], (m - 1) * b + (m - 1) * (N - S) / m) << at;
            EXPECT_EQ(received[r][1], (N - S) / m) << at;
          } else {
            EXPECT_EQ(received[r][0], (m - 1) * N / m) << at;
            EXPECT_EQ(received[r][1], (G - 1) * S / m) << at;
          }
        }
    }
  }
}

// The critical path. Only the level1 bandwidth costs (alpha = 0, level0 free, no reductions):
// with rounds, the longest chain of inter AllReduces covers 1/m_min of the vector, so the time is
// HCCL's inter term 2 (G-1)/G (n/m) b with m = the smallest server. Only level0 bandwidth costs:
// the largest server's RS and AG, 2 (M-1)/M n b, M = the largest server.
TEST(Ahc, CriticalPathFollowsTheFormula) {
  for (const Sizes& sizes : std::vector<Sizes>{{3, 5}, {2, 3}, {4, 4}, {1, 4, 2}, {3, 4, 6}}) {
    const Layout lay = Layout::uneven(sizes);
    const double G = double(sizes.size());
    std::uint64_t L = 1;
    for (std::uint32_t m : sizes) L = std::lcm(L, std::uint64_t{m});
    const std::uint64_t count = L * sizes.size() * 3;
    const double n = double(count) * 4;
    const double small = *std::min_element(sizes.begin(), sizes.end());
    const double large = *std::max_element(sizes.begin(), sizes.end());
    const Schedule s =
        ahcAll(lay, Algorithm::Ring, Algorithm::Ring, Problem::allReduce(lay.ranks(), count));
    CostParams inter{};
    inter.beta[1] = 1e-9;
    EXPECT_NEAR(criticalPath(s, 4, inter).time, 2 * (G - 1) / G * n / small * 1e-9, 1e-15)
        << lay.describe();
    CostParams intra{};
    intra.beta[0] = 1e-9;
    EXPECT_NEAR(criticalPath(s, 4, intra).time, 2 * (large - 1) / large * n * 1e-9, 1e-15)
        << lay.describe();
  }
}

// Equal servers (AHC_BROKE): one round, and with NB inside and between servers the metrics are
// exactly the reference row: 2(ceil(log m) + ceil(log G)) steps, 2((m-1)/m + (G-1)/(G m)) n bytes,
// ((m-1)/m + (G-1)/(G m)) n reduced.
TEST(Ahc, EqualServersMeetTheReferenceRow) {
  for (const auto& [G, m] :
       std::vector<std::pair<std::uint32_t, std::uint32_t>>{{2, 4}, {3, 2}, {4, 3}}) {
    const Layout lay = Layout::servers(G, m);
    const std::uint64_t count = std::uint64_t{G} * m * 8;
    const double n = double(count);
    const Schedule s = ahcAll(lay, Algorithm::NB, Algorithm::NB, Problem::allReduce(G * m, count));
    CostParams cp = CostParams::uniform();
    cp.alpha[1] = 1e-4;
    const Metrics mt = criticalPath(s, 1, cp);
    const auto clog = [](std::uint32_t x) { return std::uint64_t(std::bit_width(x - 1)); };
    EXPECT_EQ(mt.level[0].steps, 2 * clog(m)) << G << "x" << m;
    EXPECT_EQ(mt.level[1].steps, 2 * clog(G)) << G << "x" << m;
    EXPECT_DOUBLE_EQ(double(mt.level[0].bytes), 2.0 * (m - 1) / m * n);
    EXPECT_DOUBLE_EQ(double(mt.level[1].bytes), 2.0 * (G - 1) / (G * m) * n);
    EXPECT_DOUBLE_EQ(double(mt.reducedBytes), ((m - 1.0) / m + (G - 1.0) / (G * m)) * n);
  }
}

}  // namespace
}  // namespace hccl::algo
