// Whole schedules on threads over the in-process fabric: a hand-built ring allreduce, a
// rank-ordered reduction with a non-commutative user op, and failures that must end promptly.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coll_hccl/engine/local_cluster.hpp"

namespace hccl::engine {
namespace {

using namespace std::chrono_literals;
using algo::Buf;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Ring allreduce written out by hand (the generators live in algorithms/): reduce-scatter then
// allgather around the ring, one block per step, partial sums received into scratch.
algo::Schedule ringAllReduce(std::uint32_t p, std::uint64_t n, bool inPlace) {
  algo::Schedule s;
  s.problem = algo::Problem::allReduce(p, n, inPlace);
  const algo::Blocks& blk = s.problem.blocks;
  for (std::uint32_t r = 0; r < p; ++r) {
    algo::RankSchedule rs;
    if (!inPlace) algo::copy(rs.newStep(), algo::out(0, n), algo::in(0, n));
    const std::uint32_t right = (r + 1) % p, left = (r + p - 1) % p;
    for (std::uint32_t st = 0; p > 1 && st < p - 1; ++st) {
      const std::uint32_t sendBlock = (r + p - st) % p, recvBlock = (r + 2 * p - st - 1) % p;
      algo::Step& x = rs.newStep();
      algo::send(x, right, blk.block(Buf::Output, sendBlock));
      algo::recv(x, left, algo::scratch(0, blk.count(recvBlock)));
      algo::reduce(x, blk.block(Buf::Output, recvBlock), algo::scratch(0, blk.count(recvBlock)),
                   blk.block(Buf::Output, recvBlock));
    }
    for (std::uint32_t st = 0; p > 1 && st < p - 1; ++st) {
      const std::uint32_t sendBlock = (r + 1 + p - st) % p, recvBlock = (r + p - st) % p;
      algo::Step& x = rs.newStep();
      algo::send(x, right, blk.block(Buf::Output, sendBlock));
      algo::recv(x, left, blk.block(Buf::Output, recvBlock));
    }
    s.ranks.push_back(std::move(rs));
  }
  return s;
}

template <typename T>
std::vector<std::byte> bytesOf(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> valuesOf(const std::vector<std::byte>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

struct RingCase {
  std::uint32_t p;
  std::uint64_t n;
  bool inPlace;
};

class RingAllReduce : public ::testing::TestWithParam<RingCase> {};

TEST_P(RingAllReduce, Int32SumEqualsTheReference) {
  const auto [p, n, inPlace] = GetParam();
  const algo::Schedule s = ringAllReduce(p, n, inPlace);
  std::mt19937 rng(p * 1000 + static_cast<unsigned>(n));
  std::vector<std::vector<std::int32_t>> inputs(p, std::vector<std::int32_t>(n));
  std::vector<std::int32_t> want(n, 0);
  for (auto& v : inputs)
    for (std::uint64_t i = 0; i < n; ++i) {
      v[i] = static_cast<std::int32_t>(rng());  // sums wrap: integer results are exact anyway
      want[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(want[i]) +
                                          static_cast<std::uint32_t>(v[i]));
    }
  std::vector<RankBuffers> bufs(p);
  for (std::uint32_t r = 0; r < p; ++r) {
    if (inPlace) {
      bufs[r].output = bytesOf(inputs[r]);
    } else {
      bufs[r].input = bytesOf(inputs[r]);
      bufs[r].output.assign(n * 4, std::byte{0x11});
    }
  }
  const LocalRunResult res = runLocal(s, DataType::Int32, ReduceOp::Sum, std::move(bufs));
  ASSERT_TRUE(res.ok) << res.error;
  ASSERT_EQ(res.outputs.size(), p);
  for (std::uint32_t r = 0; r < p; ++r)
    EXPECT_EQ(valuesOf<std::int32_t>(res.outputs[r]), want) << r;
  // Each rank sends 2(p-1) blocks; the fabric moved exactly what the ranks sent.
  std::uint64_t sent = 0;
  for (const ExecStats& st : res.stats) sent += st.bytesSent;
  EXPECT_EQ(res.bytesMoved, sent);
  if (p > 1) {
    EXPECT_EQ(res.stats[0].steps, 2u * (p - 1) + (inPlace ? 0u : 1u));
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, RingAllReduce,
                         ::testing::Values(RingCase{1, 5, false}, RingCase{2, 0, false},
                                           RingCase{2, 1, true}, RingCase{3, 2, false},
                                           RingCase{4, 13, false}, RingCase{4, 13, true},
                                           RingCase{5, 1000, false}, RingCase{7, 6, true},
                                           RingCase{8, 4099, false}, RingCase{17, 100003, true},
                                           RingCase{64, 1000, false}));

// ---- non-commutative user op, reduced in rank order -------------------------------------------

using Mat = std::array<std::uint32_t, 4>;  // 2x2, multiplied modulo 2^32
Mat mul(const Mat& x, const Mat& y) {
  return {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3], x[2] * y[0] + x[3] * y[2],
          x[2] * y[1] + x[3] * y[3]};
}
void matmulOp(const void* in, void* inout, std::size_t count, void*) {
  const auto* x = static_cast<const Mat*>(in);
  auto* y = static_cast<Mat*>(inout);
  for (std::size_t i = 0; i < count; ++i) y[i] = mul(x[i], y[i]);
}

// Everyone sends to rank 0, which folds left to right (in0 (+) in1 (+) ...) and sends the result
// back. Exercises dst == a (out = out (+) tmp) with a user op.
algo::Schedule linearAllReduce(std::uint32_t p, std::uint64_t n) {
  algo::Schedule s;
  s.problem = algo::Problem::allReduce(p, n);
  for (std::uint32_t r = 0; r < p; ++r) {
    algo::RankSchedule rs;
    rs.steps.resize(2);  // references into steps stay valid from here on
    algo::Step& gather = rs.steps[0];
    algo::Step& scatter = rs.steps[1];
    if (r == 0) {
      for (std::uint32_t q = 1; q < p; ++q) algo::recv(gather, q, algo::scratch((q - 1) * n, n));
      algo::copy(gather, algo::out(0, n), algo::in(0, n));
      for (std::uint32_t q = 1; q < p; ++q)
        algo::reduce(gather, algo::out(0, n), algo::out(0, n), algo::scratch((q - 1) * n, n));
      for (std::uint32_t q = 1; q < p; ++q) algo::send(scatter, q, algo::out(0, n));
    } else {
      algo::send(gather, 0, algo::in(0, n));
      algo::recv(scatter, 0, algo::out(0, n));
    }
    s.ranks.push_back(std::move(rs));
  }
  return s;
}

TEST(LocalCluster, NonCommutativeUserOpInRankOrder) {
  constexpr std::uint32_t p = 5;
  constexpr std::uint64_t n = 3000;  // more than the user-op temporary holds
  std::mt19937 rng(11);
  std::vector<std::vector<Mat>> inputs(p, std::vector<Mat>(n));
  for (auto& v : inputs)
    for (Mat& m : v)
      for (auto& e : m) e = static_cast<std::uint32_t>(rng() % 5);
  std::vector<Mat> want = inputs[0];
  for (std::uint32_t r = 1; r < p; ++r)
    for (std::uint64_t i = 0; i < n; ++i) want[i] = mul(want[i], inputs[r][i]);
  std::vector<RankBuffers> bufs(p);
  for (std::uint32_t r = 0; r < p; ++r) {
    bufs[r].input = bytesOf(inputs[r]);
    bufs[r].output.resize(n * sizeof(Mat));
  }
  const Reduction red = Reduction::user(&matmulOp, nullptr, sizeof(Mat), false);
  const LocalRunResult res = runLocal(linearAllReduce(p, n), red, std::move(bufs));
  ASSERT_TRUE(res.ok) << res.error;
  for (std::uint32_t r = 0; r < p; ++r) EXPECT_EQ(valuesOf<Mat>(res.outputs[r]), want) << r;
}

// ---- failures ----------------------------------------------------------------------------------

std::vector<RankBuffers> ringBuffers(std::uint32_t p, std::uint64_t n) {
  std::vector<RankBuffers> bufs(p);
  for (RankBuffers& b : bufs) {
    b.input.assign(n * 4, std::byte{1});
    b.output.assign(n * 4, std::byte{0});
  }
  return bufs;
}

TEST(LocalCluster, DeadRankFailsPromptlyNamingIt) {
  LocalRunOptions opt;
  opt.timeout = 20s;
  opt.deadRanks = {2};
  const auto t0 = std::chrono::steady_clock::now();
  const LocalRunResult res = runLocal(ringAllReduce(4, 100, false), DataType::Int32, ReduceOp::Sum,
                                      ringBuffers(4, 100), opt);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s)
      << "noticed without waiting for the timeout";
  ASSERT_FALSE(res.ok);
  EXPECT_TRUE(contains(res.error, "rank 2 is dead")) << res.error;
  EXPECT_TRUE(res.rankErrors[2].empty()) << "a dead rank does not run";
  for (int r : {0, 1, 3}) EXPECT_FALSE(res.rankErrors[static_cast<std::size_t>(r)].empty()) << r;
}

TEST(LocalCluster, DeadlockEndsInTheTimeout) {
  // Every rank receives from its left before sending to its right: needs eager buffering.
  algo::Schedule s;
  s.problem = algo::Problem::allReduce(3, 3);
  for (std::uint32_t r = 0; r < 3; ++r) {
    algo::RankSchedule rs;
    algo::recv(rs.newStep(), (r + 2) % 3, algo::out(0, 1));
    algo::send(rs.newStep(), (r + 1) % 3, algo::in(0, 1));
    s.ranks.push_back(std::move(rs));
  }
  LocalRunOptions opt;
  opt.timeout = 200ms;
  const auto t0 = std::chrono::steady_clock::now();
  const LocalRunResult res = runLocal(s, DataType::Int32, ReduceOp::Sum, ringBuffers(3, 3), opt);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  ASSERT_FALSE(res.ok);
  EXPECT_TRUE(contains(res.error, "no progress for 200 ms")) << res.error;
  EXPECT_TRUE(contains(res.error, "step 0 transfer 0 (recv out[0+1]")) << res.error;
}

TEST(LocalCluster, RejectsBuffersOfTheWrongSize) {
  std::vector<RankBuffers> bufs = ringBuffers(3, 10);
  bufs[1].output.resize(36);
  const LocalRunResult res =
      runLocal(ringAllReduce(3, 10, false), DataType::Int32, ReduceOp::Sum, std::move(bufs));
  ASSERT_FALSE(res.ok);
  EXPECT_TRUE(contains(res.error, "rank 1: out buffer has 36 bytes")) << res.error;
  EXPECT_TRUE(contains(res.error, "needs 40")) << res.error;
}

TEST(LocalCluster, RejectsAnUndefinedReduction) {
  const LocalRunResult res =
      runLocal(ringAllReduce(2, 4, false), DataType::Float32, ReduceOp::BXor, ringBuffers(2, 4));
  ASSERT_FALSE(res.ok);
  EXPECT_TRUE(contains(res.error, "bxor is not defined on fp32")) << res.error;
}

TEST(LocalCluster, ScratchStartsPoisoned) {
  // A schedule that copies scratch it never wrote: the output shows the poison, not zeros.
  algo::Schedule s;
  s.problem = algo::Problem::allReduce(1, 2);
  algo::RankSchedule rs;
  algo::copy(rs.newStep(), algo::out(0, 2), algo::scratch(0, 2));
  s.ranks.push_back(rs);
  const LocalRunResult res = runLocal(s, DataType::Int32, ReduceOp::Sum, ringBuffers(1, 2));
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.outputs[0], std::vector<std::byte>(8, std::byte{0xA5}));
}

}  // namespace
}  // namespace hccl::engine
