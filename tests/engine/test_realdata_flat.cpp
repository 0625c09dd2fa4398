// Real data through the executor for every registered generator (algo::generatorSpecs()), checked
// bit for bit against a sequential interpreter that reduces in the schedule's order, and against
// the collective's rank-order meaning (bitwise where exact, within a stated tolerance for float
// sums and products; see realdata_check.hpp).
//
// Coverage, per generator:
//   - sum on fp32 and int32 for every p in kRanks (1 ... 64): counts 0, 1, p-1, p, p+1, 1000, in
//     and out of place (in-place ReduceScatter also with the result left in its block), the two
//     types taking turns at the placements, up to 17 ranks; one count per type at 32 and 64;
//     rooted collectives with a root moving with p;
//   - a prime count (100003 elements in all, 7919 per block), out of place at p = 5, in place at
//     p = 13;
//   - every defined (type, op) pair for reducing generators, every type for copying ones, with
//     p, count and placement rotating (p up to 17), so pairs land on different p for different
//     generators; at 32 and 64 ranks six pairs chosen to expose order and rounding problems;
//   - every root at p = 5 and 8 for Broadcast, Reduce, Scatter and Gather;
//   - uneven blocks (some empty) for the generators that claim them.
#include <gtest/gtest.h>

#include <array>
#include <random>

#include "algorithms/generators.hpp"
#include "coll_hccl/reference/check.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::test {
namespace {

using namespace hccl::reference;

using algo::Blocks;
using algo::GeneratorSpec;
using algo::Problem;
using algo::test::problemFor;

constexpr std::array<std::uint32_t, 12> kRanks = {1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 32, 64};

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
  // Out of place with `outType`, in place with `inType`, and for in-place ReduceScatter the
  // result-in-block variant with `outType` again.
  void expectPlacements(Problem pb, DataType outType, DataType inType, std::uint64_t seed) {
    pb.inPlace = false;
    if (algo::test::hasInPlaceVariant(pb.coll)) expectData(pb, outType, ReduceOp::Sum, seed);
    pb.inPlace = true;
    expectData(pb, inType, ReduceOp::Sum, seed + 1);
    if (pb.coll == Collective::ReduceScatter) {
      pb.resultInBlock = true;
      expectData(pb, outType, ReduceOp::Sum, seed + 2);
    }
  }
};

// Counts are MPI's: per block for ReduceScatter, AllGather, Scatter and AllToAll, whose totals
// grow with p. The whole test must stay within a minute or two on two cores and 64 ranks are 64
// threads, so 32 and 64 ranks get a few runs each: one count per type, small blocks.
bool perBlock(Collective c) {
  return c == Collective::ReduceScatter || c == Collective::AllGather || c == Collective::Scatter ||
         c == Collective::Gather || c == Collective::AllToAll || c == Collective::AllToAllV;
}
constexpr std::uint32_t kLarge = 32;

TEST_P(RealData, SumOnEveryRankCount) {
  const GeneratorSpec& spec = GetParam();
  for (std::uint32_t p : kRanks) {
    const std::uint32_t root = (p * 7 + 3) % p;
    if (p >= kLarge) {
      Problem pb = problemFor(spec.coll, p, perBlock(spec.coll) ? 7 : p + 1, false, root);
      expectData(pb, DataType::Float32, ReduceOp::Sum, p);
      pb = problemFor(spec.coll, p, perBlock(spec.coll) ? 1 : 1000, true, root);
      expectData(pb, DataType::Int32, ReduceOp::Sum, p + 1);
      continue;
    }
    const std::uint64_t n = p;
    const std::array<std::uint64_t, 6> counts = {0, 1, n - 1, n, n + 1, 1000};
    for (std::size_t i = 0; i < counts.size(); ++i) {
      // fp32 and int32 swap placements from one count to the next.
      const DataType a = i % 2 ? DataType::Int32 : DataType::Float32;
      const DataType b = i % 2 ? DataType::Float32 : DataType::Int32;
      expectPlacements(problemFor(spec.coll, p, counts[i], false, root), a, b, p * 100 + i);
      if (HasFailure()) return;  // one clear failure beats a thousand echoes
    }
  }
}

TEST_P(RealData, PrimeCount) {
  const GeneratorSpec& spec = GetParam();
  for (std::uint32_t p : {5u, 13u}) {
    const Problem pb = problemFor(spec.coll, p, perBlock(spec.coll) ? 7919 : 100003,
                                  p == 13 && algo::test::hasInPlaceVariant(spec.coll), p / 2);
    expectData(pb, DataType::Float32, ReduceOp::Sum, p);
  }
}

// Every pair (every type for copies) on p up to 17, rotating p, count and placement.
TEST_P(RealData, EveryTypeAndOp) {
  const GeneratorSpec& spec = GetParam();
  const std::size_t shift = indexOf(spec) * 5;
  std::vector<std::pair<DataType, ReduceOp>> cases = definedPairs();
  if (!reduces(spec.coll)) {  // copies: every type once (the op only shapes the inputs)
    cases.clear();
    for (int t = 0; t < kNumDataTypes; ++t)
      cases.emplace_back(static_cast<DataType>(t), ReduceOp::Sum);
  }
  constexpr std::size_t kSmall = kRanks.size() - 2;  // p <= 17
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto [type, op] = cases[k];
    const std::uint32_t p = kRanks[(k + shift) % kSmall];
    const std::array<std::uint64_t, 4> counts = {p + 1, 1000, 2 * std::uint64_t{p} - 1, 37};
    const std::uint64_t n = counts[(k / kSmall + shift) % counts.size()];
    Problem pb = problemFor(spec.coll, p, n, false, static_cast<std::uint32_t>(k) % p);
    pb.inPlace = algo::test::hasInPlaceVariant(spec.coll) ? k % 2 == 1 : true;
    expectData(pb, type, op, k);
    if (HasFailure()) return;
  }
}

// 32 and 64 ranks with the types most likely to show an order or rounding problem.
TEST_P(RealData, LargeRankCounts) {
  const GeneratorSpec& spec = GetParam();
  const std::array<std::pair<DataType, ReduceOp>, 6> cases = {
      {{DataType::Float16, ReduceOp::Sum},
       {DataType::BFloat16, ReduceOp::Prod},
       {DataType::Float64, ReduceOp::Sum},
       {DataType::Int8, ReduceOp::Prod},
       {DataType::UInt64, ReduceOp::Max},
       {DataType::ComplexFloat, ReduceOp::Prod}}};
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const std::uint32_t p = k % 2 ? 64 : 32;
    const auto [type, op] = cases[k];
    Problem pb = problemFor(spec.coll, p, perBlock(spec.coll) ? 3 : 300, false, p - 1);
    pb.inPlace = algo::test::hasInPlaceVariant(spec.coll) ? k % 3 == 1 : true;
    expectData(pb, type, op, k);
    if (HasFailure()) return;
  }
}

TEST_P(RealData, EveryRoot) {
  const GeneratorSpec& spec = GetParam();
  if (!rooted(spec.coll)) GTEST_SKIP() << "not rooted";
  for (std::uint32_t p : {5u, 8u})
    for (std::uint32_t root = 0; root < p; ++root) {
      const Problem pb = problemFor(spec.coll, p, 2 * p + 3, false, root);
      expectPlacements(pb, DataType::Int64, DataType::Float64, root);
      if (HasFailure()) return;
    }
}

TEST_P(RealData, UnevenBlocks) {
  const GeneratorSpec& spec = GetParam();
  if (spec.coll != Collective::ReduceScatter && spec.coll != Collective::AllGather &&
      spec.coll != Collective::Scatter && spec.coll != Collective::Gather)
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
      expectData(pb, type, op, static_cast<std::uint64_t>(k));
      pb.inPlace = true;
      expectData(pb, type, op, static_cast<std::uint64_t>(k) + 1);
      if (pb.coll == Collective::ReduceScatter) {
        pb.resultInBlock = true;
        expectData(pb, type, op, static_cast<std::uint64_t>(k) + 2);
      }
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
