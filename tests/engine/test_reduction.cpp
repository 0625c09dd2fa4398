// Reduction: predefined kernels through apply(), and MPI-shaped user callbacks, whose operand order
// must survive every aliasing form of dst = a (+) b.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "coll_hccl/engine/reduction.hpp"

namespace hccl::engine {
namespace {

// 2x2 integer matrices, row-major, multiplied modulo 2^64: associative, not commutative.
using Mat = std::array<std::uint64_t, 4>;

Mat mul(const Mat& x, const Mat& y) {
  return {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3], x[2] * y[0] + x[3] * y[2],
          x[2] * y[1] + x[3] * y[3]};
}

struct CallLog {
  int calls = 0;
  std::size_t maxCount = 0;
};

// MPI_User_function order: inout = in (+) inout.
void matmulOp(const void* in, void* inout, std::size_t count, void* ctx) {
  auto* log = static_cast<CallLog*>(ctx);
  ++log->calls;
  log->maxCount = std::max(log->maxCount, count);
  const auto* x = static_cast<const Mat*>(in);
  auto* y = static_cast<Mat*>(inout);
  for (std::size_t i = 0; i < count; ++i) y[i] = mul(x[i], y[i]);
}

void takeLeftOp(const void* in, void* inout, std::size_t count, void*) {
  std::memcpy(inout, in, count * sizeof(std::uint32_t));
}

std::vector<Mat> randomMats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Mat> v(n);
  for (Mat& m : v)
    for (auto& e : m) e = rng() % 7;  // small entries keep a printed failure readable
  return v;
}

// More elements than the temporary holds, so the dst == a form works through several blocks.
constexpr std::size_t kCount = Reduction::kTempBytes / sizeof(Mat) * 2 + 37;

class UserReduction : public ::testing::Test {
 protected:
  CallLog log;
  Reduction red = Reduction::user(&matmulOp, &log, sizeof(Mat), false);
  std::vector<Mat> a = randomMats(kCount, 1);
  std::vector<Mat> b = randomMats(kCount, 2);
  std::vector<Mat> want = [&] {
    std::vector<Mat> w(kCount);
    for (std::size_t i = 0; i < kCount; ++i) w[i] = mul(a[i], b[i]);
    return w;
  }();
};

TEST_F(UserReduction, DstIsRightOperand) {
  std::vector<Mat> dst = b;
  red.apply(dst.data(), a.data(), dst.data(), kCount);
  EXPECT_EQ(dst, want);
  EXPECT_EQ(log.calls, 1) << "dst == b needs no temporary and no copy";
}

TEST_F(UserReduction, DstIsLeftOperand) {
  std::vector<Mat> dst = a;
  red.apply(dst.data(), dst.data(), b.data(), kCount);
  EXPECT_EQ(dst, want);
  EXPECT_LE(log.maxCount * sizeof(Mat), Reduction::kTempBytes);
}

TEST_F(UserReduction, DstDisjoint) {
  std::vector<Mat> dst(kCount);
  const std::vector<Mat> a0 = a, b0 = b;
  red.apply(dst.data(), a.data(), b.data(), kCount);
  EXPECT_EQ(dst, want);
  EXPECT_EQ(a, a0);
  EXPECT_EQ(b, b0);
}

TEST_F(UserReduction, AllThreeAlias) {
  std::vector<Mat> dst = a;
  red.apply(dst.data(), dst.data(), dst.data(), kCount);
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(dst[i], mul(a[i], a[i])) << i;
}

TEST_F(UserReduction, DisjointDstWithEqualOperands) {
  std::vector<Mat> dst(kCount);
  red.apply(dst.data(), a.data(), a.data(), kCount);
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(dst[i], mul(a[i], a[i])) << i;
}

TEST(Reduction, TakeLeftKeepsTheLeftOperandInEveryForm) {
  Reduction red = Reduction::user(&takeLeftOp, nullptr, sizeof(std::uint32_t), false);
  const std::vector<std::uint32_t> a = {1, 2, 3, 4, 5}, b = {10, 20, 30, 40, 50};
  std::vector<std::uint32_t> d = b;
  red.apply(d.data(), a.data(), d.data(), a.size());
  EXPECT_EQ(d, a) << "dst == b";
  d = a;
  red.apply(d.data(), d.data(), b.data(), a.size());
  EXPECT_EQ(d, a) << "dst == a";
  d.assign(5, 0);
  red.apply(d.data(), a.data(), b.data(), a.size());
  EXPECT_EQ(d, a) << "disjoint";
}

TEST(Reduction, PredefinedAppliesTheKernel) {
  Reduction red = Reduction::predefined(DataType::Int32, ReduceOp::Sum);
  EXPECT_EQ(red.elemSize(), 4u);
  EXPECT_FALSE(red.isUser());
  const std::vector<std::int32_t> a = {1, -2, 3}, b = {10, 20, -30};
  std::vector<std::int32_t> d(3);
  red.apply(d.data(), a.data(), b.data(), 3);
  EXPECT_EQ(d, (std::vector<std::int32_t>{11, 18, -27}));
  EXPECT_EQ(red.describe(), "sum on int32");
}

TEST(Reduction, RejectsUndefinedPairsAndBadUserOps) {
  try {
    Reduction::predefined(DataType::Float32, ReduceOp::BXor);
    FAIL() << "bxor on fp32 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bxor is not defined on fp32"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Reduction::user(nullptr, nullptr, 4, true), std::invalid_argument);
  EXPECT_THROW(Reduction::user(&takeLeftOp, nullptr, 0, true), std::invalid_argument);
}

TEST(Reduction, ZeroCountDoesNotCallTheUserOp) {
  CallLog log;
  Reduction red = Reduction::user(&matmulOp, &log, sizeof(Mat), false);
  red.apply(nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(log.calls, 0);
}

}  // namespace
}  // namespace hccl::engine
