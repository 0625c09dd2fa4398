// Real data through hierarchical compositions and the Pipeline, checked like the flat generators
// (realdata_check.hpp): the same-order interpreter bit for bit, and the rank-order meaning.
//
// Layouts: 2x2, 3x2, 2x4, rr:2x3 and rr:4x2 (ranks interleaved over servers), 3+5 and rr:5+3
// (asymmetric: run flat), 2x2x2 (pods), 4x4; one 8x8 (64 ranks). Level algorithms: every
// level0 in {ring, fullmesh, H-D_R} with every outer level in {ring, H-D_R, NHR, NB}; the Pipeline
// at level1 with fullmesh inside servers. AllReduce, ReduceScatter and AllGather, in and out of
// place, counts 0, 1, p+1 and 1000, uneven ReduceScatter/AllGather blocks (some empty), sum on
// fp32 and int32 taking turns, plus every defined (type, op) pair spread over the compositions.
// The Pipeline in segments (pipeline.hpp: 2, 3, 8 and 32 segments whose stages overlap) on 2x2, 3x2
// and 2x4, each collective in and out of place, counts with full, partly empty and empty
// segments, fp32 sum and uint16 prod.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <array>

#include "algorithms/hierarchical.hpp"
#include "algorithms/pipeline.hpp"
#include "coll_hccl/reference/check.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::test {
namespace {

using namespace hccl::reference;

using algo::Algorithm;
using algo::Layout;
using algo::LevelAlgorithms;
using algo::Problem;
using algo::test::problemFor;

struct NamedLayout {
  const char* name;
  Layout layout;
};

std::vector<NamedLayout> layouts() {
  return {{"2x2", Layout::servers(2, 2)},
          {"3x2", Layout::servers(3, 2)},
          {"2x4", Layout::servers(2, 4)},
          {"rr:2x3", Layout::uneven({3, 3}, true)},
          {"rr:4x2", Layout::uneven({2, 2, 2, 2}, true)},
          {"3+5", Layout::uneven({3, 5})},
          {"rr:5+3", Layout::uneven({5, 3}, true)},
          {"2x2x2", Layout::pods(2, 2, 2)},
          {"4x4", Layout::servers(4, 4)}};
}

constexpr std::array<Algorithm, 3> kLevel0 = {Algorithm::Ring, Algorithm::Mesh, Algorithm::Rhd};
constexpr std::array<Algorithm, 4> kOuter = {Algorithm::Ring, Algorithm::Rhd, Algorithm::NHR,
                                             Algorithm::NB};
constexpr std::size_t kCombos = kLevel0.size() * kOuter.size();

// Combination k: level0 from kLevel0, level1 from kOuter, level2 another outer one.
LevelAlgorithms combo(std::size_t k) {
  return {kLevel0[k % kLevel0.size()], kOuter[k / kLevel0.size()],
          kOuter[(k / kLevel0.size() + 1) % kOuter.size()]};
}

std::string describe(const NamedLayout& l, const LevelAlgorithms& a) {
  return fmt::format("layout {} levels {}/{}/{}", l.name, algo::hcclName(a[0]),
                     algo::hcclName(a[1]), algo::hcclName(a[2]));
}

algo::Schedule compose(const Layout& lay, const LevelAlgorithms& algs, const Problem& pb) {
  algo::Schedule s{pb, {}};
  for (std::uint32_t r = 0; r < pb.ranks; ++r)
    s.ranks.push_back(algo::composeHierarchical(lay, algs, pb, r));
  return s;
}

constexpr std::array<Collective, 3> kComposed = {Collective::AllReduce, Collective::ReduceScatter,
                                                 Collective::AllGather};

void expectData(const NamedLayout& l, const LevelAlgorithms& algs, const Problem& pb, DataType t,
                ReduceOp op, std::uint64_t seed) {
  const std::string err = checkRealData(compose(l.layout, algs, pb), t, op, seed);
  EXPECT_TRUE(err.empty()) << describe(l, algs) << ": " << err;
}

// Every layout x every level combination x AllReduce/ReduceScatter/AllGather x in/out of place x
// a spread of counts, sum on fp32 or int32.
TEST(RealDataComposed, EveryLayoutAndCombination) {
  for (const NamedLayout& l : layouts()) {
    const std::uint64_t p = l.layout.ranks();
    for (std::size_t k = 0; k < kCombos; ++k) {
      for (Collective c : kComposed) {
        for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, p + 1, std::uint64_t{1000}}) {
          if (n == 0 && k % 4 != 0) continue;  // empty calls: a quarter of the combinations
          for (bool inPlace : {false, true}) {
            const Problem pb = problemFor(c, l.layout.ranks(), n, inPlace);
            const std::uint64_t seed = k * 1000 + n * 2 + inPlace;
            // fp32 and int32 take turns, so each meets every combination and placement.
            expectData(l, combo(k), pb, (k + inPlace) % 2 ? DataType::Int32 : DataType::Float32,
                       ReduceOp::Sum, seed);
          }
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// Every defined pair, each on a different layout, combination and placement.
TEST(RealDataComposed, EveryTypeAndOp) {
  const std::vector<NamedLayout> all = layouts();
  const auto pairs = definedPairs();
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [type, op] = pairs[k];
    const NamedLayout& l = all[k % all.size()];
    const Collective c = k % 3 == 2 ? Collective::ReduceScatter : Collective::AllReduce;
    const Problem pb = problemFor(c, l.layout.ranks(), k % 2 ? 61 : 200, k % 4 < 2);
    expectData(l, combo(k % kCombos), pb, type, op, k);
    if (::testing::Test::HasFailure()) return;
  }
}

// Reduce over levels (hier_reduce.cpp): every layout, every root, in and out of place, counts
// that leave uneven and empty slices. Inner levels need a ReduceScatter and a Gather, the
// outermost a Reduce (ring or H-D_R); asymmetric layouts run the outermost algorithm flat.
TEST(RealDataComposed, Reduce) {
  const std::array<LevelAlgorithms, 4> sets = {{{Algorithm::Ring, Algorithm::Ring, Algorithm::Rhd},
                                                {Algorithm::Mesh, Algorithm::Rhd, Algorithm::Ring},
                                                {Algorithm::NHR, Algorithm::Ring, Algorithm::Rhd},
                                                {Algorithm::NB, Algorithm::Rhd, Algorithm::Ring}}};
  std::size_t k = 0;
  for (const NamedLayout& l : layouts()) {
    const std::uint32_t p = l.layout.ranks();
    for (std::uint32_t root = 0; root < p; ++root, ++k)
      for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{p + 1}, std::uint64_t{1000}})
        for (bool inPlace : {false, true}) {
          const Problem pb = Problem::reduce(p, root == 0 && n == 1 ? 0 : n, root, inPlace);
          LevelAlgorithms algs = sets[k % sets.size()];
          // On three levels level1 is inner too: H-D_R has no Gather there.
          if (l.layout.shape().levels.size() == 3 && algs[1] == Algorithm::Rhd)
            algs[1] = Algorithm::Mesh;
          expectData(l, algs, pb, (k + inPlace) % 2 ? DataType::Int32 : DataType::Float32,
                     ReduceOp::Sum, k * 10 + n + inPlace);
        }
    if (::testing::Test::HasFailure()) return;
  }
  // Every defined (type, op) pair, rank-ordered level algorithms on consecutive servers.
  const LevelAlgorithms ordered{Algorithm::Mesh, Algorithm::Rhd, Algorithm::Rhd};
  const NamedLayout lay{"3x2", Layout::servers(3, 2)};
  const auto pairs = definedPairs();
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto [type, op] = pairs[i];
    expectData(lay, ordered,
               Problem::reduce(6, i % 2 ? 61 : 200, static_cast<std::uint32_t>(i % 6), i % 4 < 2),
               type, op, i);
  }
}

// AllToAll over two levels (hier_alltoall.cpp; three levels and unequal servers flat): every
// layout, in and out of place, fullmesh and pairwise at either level.
TEST(RealDataComposed, AllToAll) {
  const std::array<LevelAlgorithms, 2> sets = {
      {{Algorithm::Mesh, Algorithm::Pairwise, Algorithm::Pairwise},
       {Algorithm::Pairwise, Algorithm::Mesh, Algorithm::Mesh}}};
  std::size_t k = 0;
  for (const NamedLayout& l : layouts())
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{7}})
      for (bool inPlace : {false, true}) {
        ++k;
        expectData(l, sets[k % sets.size()], Problem::allToAll(l.layout.ranks(), n, inPlace),
                   k % 2 ? DataType::Int32 : DataType::Float16, ReduceOp::Sum, k);
        if (::testing::Test::HasFailure()) return;
      }
}

// Barrier, Scan, Exscan and Broadcast over levels (hier_barrier.cpp, hier_scan.cpp,
// hier_broadcast.cpp): every layout, algorithms that serve the phases at every level, in and out
// of place, counts 0, 1, p+1 and 1000, Broadcast from every root; Scan and Exscan over
// interleaved servers run flat. Then every defined (type, op) pair on Scan and Exscan.
TEST(RealDataComposed, BarrierScanExscanBroadcast) {
  const std::array<LevelAlgorithms, 2> scan = {
      {{Algorithm::Rhd, Algorithm::Mesh, Algorithm::Rhd},
       {Algorithm::Mesh, Algorithm::Rhd, Algorithm::Mesh}}};
  const std::array<LevelAlgorithms, 3> bcast = {{{Algorithm::Ring, Algorithm::NHR, Algorithm::NB},
                                                 {Algorithm::Mesh, Algorithm::Rhd, Algorithm::Ring},
                                                 {Algorithm::NB, Algorithm::Ring, Algorithm::NHR}}};
  const LevelAlgorithms barrier{Algorithm::NB, Algorithm::NHR, Algorithm::Mesh};
  std::size_t k = 0;
  for (const NamedLayout& l : layouts()) {
    const std::uint32_t p = l.layout.ranks();
    expectData(l, barrier, Problem::barrier(p), DataType::Int32, ReduceOp::Sum, 1);
    for (std::uint64_t n :
         {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{p + 1}, std::uint64_t{1000}}) {
      for (Collective c : {Collective::Scan, Collective::Exscan})
        for (bool inPlace : {false, true}) {
          ++k;
          expectData(l, scan[k % scan.size()], problemFor(c, p, n, inPlace),
                     k % 2 ? DataType::Int32 : DataType::Float32, ReduceOp::Sum, k);
        }
      for (std::uint32_t root = 0; root < p; ++root, ++k)
        expectData(l, bcast[k % bcast.size()], Problem::broadcast(p, n, root), DataType::Int32,
                   ReduceOp::Sum, k);
    }
    if (::testing::Test::HasFailure()) return;
  }
  const NamedLayout lay{"2x2x2", Layout::pods(2, 2, 2)};
  const auto pairs = definedPairs();
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto [type, op] = pairs[i];
    const Collective c = i % 2 ? Collective::Exscan : Collective::Scan;
    expectData(lay, scan[i % scan.size()], problemFor(c, 8, i % 3 ? 61 : 200, i % 4 < 2), type, op,
               i);
  }
}

TEST(RealDataComposed, UnevenBlocks) {
  const std::vector<std::uint64_t> six{4, 0, 7, 1, 3, 9};
  const std::vector<std::uint64_t> eight{0, 5, 2, 11, 0, 1, 6, 3};
  for (const NamedLayout& l : layouts()) {
    const std::vector<std::uint64_t>* counts = l.layout.ranks() == 6   ? &six
                                               : l.layout.ranks() == 8 ? &eight
                                                                       : nullptr;
    if (!counts) continue;
    for (std::size_t k = 0; k < kCombos; ++k)
      for (Collective c : {Collective::ReduceScatter, Collective::AllGather})
        for (bool inPlace : {false, true}) {
          Problem pb = problemFor(c, l.layout.ranks(), 0, inPlace);
          pb.blocks = algo::Blocks::of(*counts);
          expectData(l, combo(k), pb, k % 2 ? DataType::Float16 : DataType::Float32, ReduceOp::Sum,
                     k);
        }
    if (::testing::Test::HasFailure()) return;
  }
}

// 64 ranks: 8 servers of 8, and 4 pods of 2 servers of 8, AllReduce out of place.
TEST(RealDataComposed, SixtyFourRanks) {
  const NamedLayout big[] = {{"8x8", Layout::servers(8, 8)}, {"4x2x8", Layout::pods(4, 2, 8)}};
  const LevelAlgorithms algs[] = {{Algorithm::Mesh, Algorithm::Rhd, Algorithm::Ring},
                                  {Algorithm::Ring, Algorithm::NHR, Algorithm::NB}};
  for (std::size_t i = 0; i < 2; ++i) {
    const Problem pb = Problem::allReduce(64, 1000);
    expectData(big[i], algs[i], pb, DataType::Float32, ReduceOp::Sum, i);
    expectData(big[i], algs[i], pb, DataType::Int32, ReduceOp::Sum, i);
  }
}

// ---- Pipeline ----------------------------------------------------------------------------------

const LevelAlgorithms kPipeline{Algorithm::Mesh, Algorithm::Pipeline, Algorithm::Ring};

TEST(RealDataPipeline, TwoLevelLayouts) {
  const NamedLayout pipes[] = {{"2x2", Layout::servers(2, 2)},
                               {"3x2", Layout::servers(3, 2)},
                               {"2x4", Layout::servers(2, 4)},
                               {"4x3", Layout::servers(4, 3)},
                               {"5x1", Layout::servers(5, 1)},
                               {"rr:2x3", Layout::uneven({3, 3}, true)},
                               {"rr:4x2", Layout::uneven({2, 2, 2, 2}, true)}};
  std::size_t k = 0;
  for (const NamedLayout& l : pipes) {
    const std::uint64_t p = l.layout.ranks();
    for (Collective c : kComposed)
      for (std::uint64_t n : {std::uint64_t{1}, p + 1, std::uint64_t{1000}})
        for (bool inPlace : {false, true}) {
          const Problem pb = problemFor(c, l.layout.ranks(), n, inPlace);
          expectData(l, kPipeline, pb, DataType::Float32, ReduceOp::Sum, ++k);
          expectData(l, kPipeline, pb, DataType::Int32, ReduceOp::Sum, ++k);
        }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(RealDataPipeline, EveryTypeAndOp) {
  const NamedLayout l{"3x2", Layout::servers(3, 2)};
  const auto pairs = definedPairs();
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [type, op] = pairs[k];
    const Collective c = k % 2 ? Collective::ReduceScatter : Collective::AllReduce;
    expectData(l, kPipeline, problemFor(c, 6, 50, k % 4 < 2), type, op, k);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(RealDataPipeline, UnevenBlocks) {
  const NamedLayout l{"3x2", Layout::servers(3, 2)};
  for (Collective c : {Collective::ReduceScatter, Collective::AllGather})
    for (bool inPlace : {false, true}) {
      Problem pb = problemFor(c, 6, 0, inPlace);
      pb.blocks = algo::Blocks::of(std::vector<std::uint64_t>{4, 0, 7, 1, 3, 9});
      expectData(l, kPipeline, pb, DataType::Float32, ReduceOp::Sum, 3);
      expectData(l, kPipeline, pb, DataType::UInt16, ReduceOp::Prod, 4);
    }
}

TEST(RealDataPipeline, Segments) {
  const NamedLayout pipes[] = {{"2x2", Layout::servers(2, 2)},
                               {"3x2", Layout::servers(3, 2)},
                               {"2x4", Layout::servers(2, 4)}};
  std::uint64_t k = 0;
  for (const NamedLayout& l : pipes) {
    const std::uint32_t p = l.layout.ranks();
    for (std::uint32_t m : {2u, 3u, 8u, 32u})
      for (Collective c : kComposed)
        for (std::uint64_t n :
             {std::uint64_t{p} * 8 + 5, std::uint64_t{p} + 1, std::uint64_t{1000}})
          for (bool inPlace : {false, true}) {
            const Problem pb = problemFor(c, p, n, inPlace);
            algo::Schedule s{pb, {}};
            for (std::uint32_t r = 0; r < p; ++r)
              s.ranks.push_back(algo::pipelineSchedule(l.layout, pb, r, m));
            const bool prod = ++k % 3 == 0;
            const std::string err = checkRealData(s, prod ? DataType::UInt16 : DataType::Float32,
                                                  prod ? ReduceOp::Prod : ReduceOp::Sum, k);
            EXPECT_TRUE(err.empty()) << l.name << " " << m << " segments: " << err;
            if (::testing::Test::HasFailure()) return;
          }
  }
}

}  // namespace
}  // namespace hccl::test
