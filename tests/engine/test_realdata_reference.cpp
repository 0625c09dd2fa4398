// The real-data tests' own reference, checked on known answers: the scalar reductions round and
// wrap as IEEE and two's complement say, the interpreter runs a hand-written schedule and refuses
// broken ones, the inputs make results depend on the reduction order, and checkRealData() fails
// schedules that lose a contribution or misplace a block.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "algorithms/generators.hpp"
#include "coll_hccl/reference/check.hpp"
#include "coll_hccl/reference/inputs.hpp"
#include "coll_hccl/reference/interpreter.hpp"

namespace hccl::test {
namespace {

using namespace hccl::reference;

template <typename T>
T apply(DataType t, ReduceOp op, T a, T b) {
  std::byte x[sizeof(T)], y[sizeof(T)], r[sizeof(T)];
  std::memcpy(x, &a, sizeof(T));
  std::memcpy(y, &b, sizeof(T));
  scalarOp(t, op)(r, x, y);
  T out;
  std::memcpy(&out, r, sizeof(T));
  return out;
}

std::uint16_t fp16(float f) {
  return std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
}

TEST(Reference, Fp16AndBf16RoundTiesToEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even wins.
  EXPECT_EQ(apply<std::uint16_t>(DataType::Float16, ReduceOp::Sum, fp16(1), fp16(0x1p-11f)),
            fp16(1));
  EXPECT_EQ(
      apply<std::uint16_t>(DataType::Float16, ReduceOp::Sum, fp16(1 + 0x1p-10f), fp16(0x1p-11f)),
      fp16(1 + 0x1p-9f));
  EXPECT_EQ(bf16Round(1 + 0x1p-8), 0x3f80);
  EXPECT_EQ(bf16Round(1 + 0x1p-7 + 0x1p-8), 0x3f82);
  EXPECT_EQ(bf16Round(0x1p128 - 0x1p119), 0x7f80);  // halfway above the largest: infinity
  EXPECT_EQ(bf16Round(0x1p128 - 0x1p119 - 0x1p100), 0x7f7f);
  EXPECT_EQ(bf16Round(0x1p-133), 0x0001);  // smallest subnormal
  EXPECT_EQ(bf16Round(0x1p-134), 0x0000);
  EXPECT_EQ(bf16Round(3 * 0x1p-134), 0x0002);
  EXPECT_EQ(bf16Round(-2.0), 0xc000);
  EXPECT_EQ(bf16Value(0x3f82), 1 + 0x1p-6L);
  // fp32 through long double: 1 + 2^-24 ties to 1, 1 + 3 2^-24 to 1 + 2^-22.
  EXPECT_EQ(apply<float>(DataType::Float32, ReduceOp::Sum, 1.0f, 0x1p-24f), 1.0f);
  EXPECT_EQ(apply<float>(DataType::Float32, ReduceOp::Sum, 1 + 0x1p-23f, 0x1p-24f), 1 + 0x1p-22f);
}

TEST(Reference, IntegersWrapAndLogicalOpsNormalise) {
  EXPECT_EQ(apply<std::int8_t>(DataType::Int8, ReduceOp::Sum, 127, 1), -128);
  EXPECT_EQ(apply<std::uint16_t>(DataType::UInt16, ReduceOp::Prod, 65535, 65535), 1);
  EXPECT_EQ(apply<std::int64_t>(DataType::Int64, ReduceOp::Prod, INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(apply<std::int32_t>(DataType::Int32, ReduceOp::Max, -5, -7), -5);
  EXPECT_EQ(apply<std::uint32_t>(DataType::UInt32, ReduceOp::Min, 0xffffffffu, 3u), 3u);
  EXPECT_EQ(apply<std::int16_t>(DataType::Int16, ReduceOp::LAnd, 0x40, -2), 1);
  EXPECT_EQ(apply<std::uint8_t>(DataType::Bool, ReduceOp::LXor, 0x80, 0x02), 0);
  EXPECT_EQ(apply<std::uint8_t>(DataType::Byte, ReduceOp::BXor, 0xf0, 0x3c), 0xcc);
}

TEST(Reference, FloatMaxMinRankPositiveZeroAbove) {
  EXPECT_FALSE(std::signbit(apply<float>(DataType::Float32, ReduceOp::Max, -0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(apply<float>(DataType::Float32, ReduceOp::Max, 0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(apply<float>(DataType::Float32, ReduceOp::Min, 0.0f, -0.0f)));
  EXPECT_EQ(apply<double>(DataType::Float64, ReduceOp::Max, -1.5, 2.5), 2.5);
  EXPECT_EQ(apply<double>(DataType::Float64, ReduceOp::Min, -1.5, 2.5), -1.5);
  EXPECT_EQ(apply<std::uint16_t>(DataType::BFloat16, ReduceOp::Max, 0xc000, 0x3f80), 0x3f80);
}

TEST(Reference, ComplexProductIsTheTextbookFormula) {
  using C = std::array<float, 2>;
  EXPECT_EQ(apply<C>(DataType::ComplexFloat, ReduceOp::Prod, C{1, 2}, C{3, 4}), (C{-5, 10}));
  using Z = std::array<double, 2>;
  EXPECT_EQ(apply<Z>(DataType::ComplexDouble, ReduceOp::Sum, Z{1, 2}, Z{0.5, -4}), (Z{1.5, -2}));
}

TEST(Reference, ToleranceOfTheStatedSize) {
  EXPECT_NEAR(static_cast<double>(gammaBound(63, 0x1p-24L)), 63 * 0x1p-24, 1e-9);
  EXPECT_EQ(gammaBound(0, 0x1p-11L), 0);
}

// ---- interpreter ------------------------------------------------------------------------------

algo::Schedule twoRankSum(std::uint64_t n) {
  algo::Schedule s{algo::Problem::allReduce(2, n), {}};
  for (std::uint32_t r = 0; r < 2; ++r) {
    algo::RankSchedule rs;
    algo::Step& st = rs.newStep();
    algo::send(st, 1 - r, algo::in(0, n));
    algo::recv(st, 1 - r, algo::scratch(0, n));
    // Rank 0's input on the left on both ranks.
    if (r == 0)
      algo::reduce(st, algo::out(0, n), algo::in(0, n), algo::scratch(0, n));
    else
      algo::reduce(st, algo::out(0, n), algo::scratch(0, n), algo::in(0, n));
    s.ranks.push_back(rs);
  }
  return s;
}

std::vector<std::byte> ints(std::initializer_list<std::int32_t> v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

TEST(Interpreter, RunsAHandWrittenSchedule) {
  const std::vector<RankMemory> mem = {{ints({1, 2, 3}), ints({0, 0, 0})},
                                       {ints({10, 20, 30}), ints({0, 0, 0})}};
  const InterpretResult res =
      interpret(twoRankSum(3), 4, scalarOp(DataType::Int32, ReduceOp::Sum), mem);
  ASSERT_TRUE(res.error.empty()) << res.error;
  EXPECT_EQ(res.outputs[0], ints({11, 22, 33}));
  EXPECT_EQ(res.outputs[1], ints({11, 22, 33}));
}

TEST(Interpreter, RefusesSlicesOutsideBuffersAndUnmatchedTransfers) {
  const std::vector<RankMemory> mem = {{ints({1, 2}), ints({0, 0})}, {ints({3, 4}), ints({0, 0})}};
  algo::Schedule s = twoRankSum(2);
  s.ranks[1].steps[0].ops[0].dst = algo::out(1, 2);
  EXPECT_NE(interpret(s, 4, scalarOp(DataType::Int32, ReduceOp::Sum), mem).error.find("outside"),
            std::string::npos);
  s = twoRankSum(2);
  s.ranks[1].steps[0].xfers.erase(s.ranks[1].steps[0].xfers.begin());  // rank 1 never sends
  EXPECT_FALSE(interpret(s, 4, scalarOp(DataType::Int32, ReduceOp::Sum), mem).error.empty());
}

// ---- inputs -----------------------------------------------------------------------------------

// Float sums of these inputs depend on the order, so bitwise agreement with the same-order
// interpreter says something the tolerance check cannot.
TEST(Inputs, FloatSumsDependOnTheOrder) {
  constexpr std::uint32_t p = 8;
  constexpr std::uint64_t n = 500;
  for (DataType t : {DataType::Float16, DataType::BFloat16, DataType::Float32, DataType::Float64,
                     DataType::LongDouble}) {
    const std::size_t es = sizeOf(t);
    std::vector<Bytes> in;
    for (std::uint32_t r = 0; r < p; ++r) in.push_back(contribution(t, ReduceOp::Sum, 5, p, r, n));
    const ElementOp sum = scalarOp(t, ReduceOp::Sum);
    std::size_t differ = 0, zero = 0, negative = 0;
    for (std::uint64_t j = 0; j < n; ++j) {
      std::vector<std::byte> fwd(es), bwd(es);
      std::memcpy(fwd.data(), in[0].data() + j * es, es);
      std::memcpy(bwd.data(), in[p - 1].data() + j * es, es);
      for (std::uint32_t r = 1; r < p; ++r) {
        sum(fwd.data(), fwd.data(), in[r].data() + j * es);
        sum(bwd.data(), bwd.data(), in[p - 1 - r].data() + j * es);
      }
      differ += std::memcmp(fwd.data(), bwd.data(), significantBytes(t)) != 0;
      zero += realValue(t, fwd.data()) == 0;
      negative += realValue(t, fwd.data()) < 0;
    }
    EXPECT_GT(differ, n / 10) << name(t);
    EXPECT_LT(zero, n / 10) << name(t);
    EXPECT_GT(negative, n / 4) << name(t);
  }
}

// Logical reductions over p ranks come out both ways, bitwise ones keep some bits and lose
// others; products of 64 factors stay normal in fp16 and bf16.
TEST(Inputs, ReductionsAreNeitherConstantNorOutOfRange) {
  for (std::uint32_t p : {3u, 8u, 64u}) {
    for (ReduceOp op : {ReduceOp::LAnd, ReduceOp::LOr, ReduceOp::BAnd, ReduceOp::BOr}) {
      std::vector<Bytes> in;
      for (std::uint32_t r = 0; r < p; ++r)
        in.push_back(contribution(DataType::Int32, op, 9, p, r, 400));
      const ElementOp f = scalarOp(DataType::Int32, op);
      const bool logical = op == ReduceOp::LAnd || op == ReduceOp::LOr;
      std::size_t hits = 0;  // logical: true results; bitwise: neither 0 nor all ones
      for (std::uint64_t j = 0; j < 400; ++j) {
        std::byte acc[4];
        std::memcpy(acc, in[0].data() + j * 4, 4);
        for (std::uint32_t r = 1; r < p; ++r) f(acc, acc, in[r].data() + j * 4);
        std::int32_t v;
        std::memcpy(&v, acc, 4);
        if (logical ? v != 0 : v != 0 && v != -1) ++hits;
      }
      if (logical) {
        EXPECT_GT(hits, 20u) << name(op) << " p=" << p;
        EXPECT_LT(hits, 380u) << name(op) << " p=" << p;
      } else {
        EXPECT_GT(hits, 200u) << name(op) << " p=" << p;
      }
    }
  }
  for (DataType t : {DataType::Float16, DataType::BFloat16}) {
    std::vector<Bytes> in;
    for (std::uint32_t r = 0; r < 64; ++r)
      in.push_back(contribution(t, ReduceOp::Prod, 2, 64, r, 300));
    for (std::uint64_t j = 0; j < 300; ++j) {
      long double prod = 1;
      for (const Bytes& b : in) prod *= realValue(t, b.data() + j * 2);
      EXPECT_TRUE(std::fabs(prod) > 0x1p-14L && std::fabs(prod) < 60000) << name(t) << " " << prod;
    }
  }
}

// ---- the check itself fails broken schedules --------------------------------------------------

algo::Schedule ringAllReduce(std::uint32_t p, std::uint64_t n) {
  return algo::buildSchedule(
      algo::findGenerator(algo::Algorithm::Ring, Collective::AllReduce)->generate,
      algo::Problem::allReduce(p, n));
}

TEST(Check, PassesARealScheduleAndFailsBrokenOnes) {
  EXPECT_EQ(checkRealData(ringAllReduce(4, 40), DataType::Float32, ReduceOp::Sum, 1), "");

  // A reduction turned into a copy loses a contribution: engine and interpreter agree, the
  // rank-order reference does not.
  algo::Schedule lost = ringAllReduce(4, 40);
  const auto firstReduce = [](algo::RankSchedule& rs) -> algo::LocalOp& {
    for (algo::Step& st : rs.steps)
      for (algo::LocalOp& op : st.ops)
        if (op.kind == algo::OpKind::Reduce) return op;
    throw std::logic_error("no reduction");
  };
  algo::LocalOp& op = firstReduce(lost.ranks[2]);
  op.kind = algo::OpKind::Copy;
  op.a = op.b;
  for (DataType t : {DataType::Int32, DataType::Float32, DataType::Float16}) {
    const std::string err = checkRealData(lost, t, ReduceOp::Sum, 1);
    EXPECT_NE(err.find("rank-order"), std::string::npos) << name(t) << ": " << err;
  }

  // AllGather with two blocks swapped on one rank.
  const algo::Problem ag = algo::Problem::allGather(3, 4);
  algo::Schedule swapped = algo::buildSchedule(
      algo::findGenerator(algo::Algorithm::Mesh, Collective::AllGather)->generate, ag);
  algo::Step& last = swapped.ranks[1].steps.back();
  last.ops.push_back({algo::OpKind::Copy, algo::scratch(0, 4), algo::out(0, 4), {}});
  last.ops.push_back({algo::OpKind::Copy, algo::out(0, 4), algo::out(8, 4), {}});
  last.ops.push_back({algo::OpKind::Copy, algo::out(8, 4), algo::scratch(0, 4), {}});
  const std::string err = checkRealData(swapped, DataType::Int16, ReduceOp::Sum, 1);
  EXPECT_NE(err.find("expected copy"), std::string::npos) << err;
}

}  // namespace
}  // namespace hccl::test
