// Real data through the executor for every registered generator (algo::generatorSpecs()), checked
// bit for bit against a sequential interpreter that reduces in the schedule's order, and against
// the collective's rank-order meaning (bitwise where exact, within a stated tolerance for float
// sums and products; see realdata_check.hpp).
//
// Coverage, per generator:
//   - sum on fp32 and int32 for every p in kRanks (1 ... 64), counts 0, 1, p-1, p, p+1, 1000 (the
//     large p take the two that matter most), in and out of place, rooted collectives with a root
//     that moves with p, in-place ReduceScatter also with the result left in its block;
//   - a prime count (100003 elements in all, 7919 per block) at p = 5 and 13;
//   - every defined (type, op) pair for reducing generators, every type for copying ones, p and
//     count rotating through kRanks and a spread of counts so that the pairs land on different p
//     for different generators;
//   - every root at p = 5 and 8 for Broadcast, Reduce and Scatter;
//   - uneven blocks (some empty) for the generators that claim them.
#include <gtest/gtest.h>

#include <array>
#include <random>

#include "algorithms/generators.hpp"
#include "tests/algorithms/problems.hpp"
#include "tests/engine/realdata_check.hpp"

namespace hccl::test {
namespace {

using algo::Blocks;
using algo::GeneratorSpec;
using algo::Problem;
using algo::test::problemFor;

constexpr std::array<std::uint32_t, 12> kRanks = {1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 32, 64};

// Every (type, op) pair MPI defines, in a fixed order.
std::vector<std::pair<DataType, ReduceOp>> definedPairs() {
  std::vector<std::pair<DataType, ReduceOp>> v;
  for (int t = 0; t < kNumDataTypes; ++t)
    for (int o = 0; o < kNumReduceOps; ++o)
      if (defined(static_cast<ReduceOp>(o), static_cast<DataType>(t)))
        v.emplace_back(static_cast<DataType>(t), static_cast<ReduceOp>(o));
  return v;
}

std::size_t indexOf(const GeneratorSpec& spec) {
  const auto all = algo::generatorSpecs();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].algorithm == spec.algorithm && all[i].coll == spec.coll) return i;
  return 0;
}

class RealData : public ::testing::TestWithParam<GeneratorSpec> {
 protected:
  void expectData(const Problem& pb, DataType t, ReduceOp op, std::uint64_t seed = 1) {
    const algo::Schedule s = algo::buildSchedule(GetParam().generate, pb);
    const std::string err = checkRealData(s, t, op, seed);
    EXPECT_TRUE(err.empty()) << err;
  }
  // Out of place, in place, and for in-place ReduceScatter the result-in-block variant.
  void expectBothPlacements(Problem pb, DataType t, ReduceOp op, std::uint64_t seed) {
    pb.inPlace = false;
    if (algo::test::hasInPlaceVariant(pb.coll)) expectData(pb, t, op, seed);
    pb.inPlace = true;
    expectData(pb, t, op, seed + 1);
    if (pb.coll == Collective::ReduceScatter) {
      pb.resultInBlock = true;
      expectData(pb, t, op, seed + 2);
    }
  }
};

// Counts are MPI's: per block for ReduceScatter, AllGather, Scatter and AllToAll, whose totals
// grow with p, so at 32 and 64 ranks those take small blocks (the whole test must stay within a
// minute or two on two cores, and 64 ranks are 64 threads).
bool perBlock(Collective c) {
  return c == Collective::ReduceScatter || c == Collective::AllGather || c == Collective::Scatter ||
         c == Collective::AllToAll;
}

std::vector<std::uint64_t> sweepCounts(Collective c, std::uint32_t p) {
  const std::uint64_t n = p;
  if (p >= 32)
    return perBlock(c) ? std::vector<std::uint64_t>{1, 7} : std::vector<std::uint64_t>{n + 1, 1000};
  return {0, 1, n - 1, n, n + 1, 1000};
}

TEST_P(RealData, SumOnEveryRankCount) {
  const GeneratorSpec& spec = GetParam();
  for (std::uint32_t p : kRanks) {
    for (std::uint64_t n : sweepCounts(spec.coll, p)) {
      const Problem pb = problemFor(spec.coll, p, n, false, (p * 7 + 3) % p);
      expectBothPlacements(pb, DataType::Float32, ReduceOp::Sum, p * 100 + n);
      expectBothPlacements(pb, DataType::Int32, ReduceOp::Sum, p * 100 + n);
      if (HasFailure()) return;  // one clear failure beats a thousand echoes
    }
  }
}

TEST_P(RealData, PrimeCount) {
  const GeneratorSpec& spec = GetParam();
  for (std::uint32_t p : {5u, 13u}) {
    const Problem pb = problemFor(spec.coll, p, perBlock(spec.coll) ? 7919 : 100003, false, p / 2);
    expectBothPlacements(pb, DataType::Float32, ReduceOp::Sum, p);
  }
}

TEST_P(RealData, EveryTypeAndOp) {
  const GeneratorSpec& spec = GetParam();
  const std::size_t shift = indexOf(spec) * 5;
  std::vector<std::pair<DataType, ReduceOp>> cases = definedPairs();
  if (!reduces(spec.coll)) {  // copies: every type once (the op only shapes the inputs)
    cases.clear();
    for (int t = 0; t < kNumDataTypes; ++t)
      cases.emplace_back(static_cast<DataType>(t), ReduceOp::Sum);
  }
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto [type, op] = cases[k];
    const std::uint32_t p = kRanks[(k + shift) % kRanks.size()];
    const std::array<std::uint64_t, 4> counts = {p + 1, 1000, 2 * std::uint64_t{p} - 1, 37};
    std::uint64_t n = counts[(k / kRanks.size() + shift) % counts.size()];
    if (perBlock(spec.coll) && p >= 32) n = n % 5 + 1;
    Problem pb = problemFor(spec.coll, p, n, false, static_cast<std::uint32_t>(k) % p);
    pb.inPlace = algo::test::hasInPlaceVariant(spec.coll) ? k % 2 == 1 : true;
    expectData(pb, type, op, k);
    if (HasFailure()) return;
  }
}

TEST_P(RealData, EveryRoot) {
  const GeneratorSpec& spec = GetParam();
  if (spec.coll != Collective::Broadcast && spec.coll != Collective::Reduce &&
      spec.coll != Collective::Scatter)
    GTEST_SKIP() << "not rooted";
  for (std::uint32_t p : {5u, 8u})
    for (std::uint32_t root = 0; root < p; ++root) {
      const Problem pb = problemFor(spec.coll, p, 2 * p + 3, false, root);
      expectBothPlacements(pb, DataType::Int64, ReduceOp::Sum, root);
      if (HasFailure()) return;
    }
}

TEST_P(RealData, UnevenBlocks) {
  const GeneratorSpec& spec = GetParam();
  if (spec.coll != Collective::ReduceScatter && spec.coll != Collective::AllGather &&
      spec.coll != Collective::Scatter)
    GTEST_SKIP() << "blocks are the problem's own";
  if (!spec.unevenBlocks) GTEST_SKIP() << "does not claim uneven blocks";
  std::mt19937 rng(7);
  const std::array<std::pair<DataType, ReduceOp>, 4> types = {
      {{DataType::Float32, ReduceOp::Sum},
       {DataType::Float16, ReduceOp::Sum},
       {DataType::Int64, ReduceOp::Prod},
       {DataType::BFloat16, ReduceOp::Max}}};
  int k = 0;
  for (std::uint32_t p : {2u, 3u, 5u, 8u, 13u, 17u}) {
    for (int trial = 0; trial < 2; ++trial, ++k) {
      std::vector<std::uint64_t> counts(p);
      for (auto& c : counts) c = rng() % 4 == 0 ? 0 : rng() % 60;
      Problem pb = problemFor(spec.coll, p, 0, false, static_cast<std::uint32_t>(k) % p);
      pb.blocks = Blocks::of(counts);
      const auto [type, op] = types[static_cast<std::size_t>(k) % types.size()];
      expectBothPlacements(pb, type, op, static_cast<std::uint64_t>(k));
      if (HasFailure()) return;
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<GeneratorSpec>& p) {
  return algo::test::specName(p.param);
}
INSTANTIATE_TEST_SUITE_P(Generators, RealData, ::testing::ValuesIn(algo::generatorSpecs()),
                         paramName);

}  // namespace
}  // namespace hccl::test
