// The parts of hccl_calibrate that decide what ends up in a tuning file: the line fit, and the
// forked group that carries the UCX measurement (which must end, whatever its members do).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coll_hccl/tools/calibrate_fit.hpp"
#include "coll_hccl/tools/calibrate_group.hpp"

namespace hccl::calib {
namespace {

using namespace std::chrono_literals;

const std::vector<double> kSizes = {0,     64,     256,     1024,    4096,    16384,
                                    65536, 262144, 1 << 20, 4 << 20, 16 << 20};

std::vector<double> line(double alpha, double beta) {
  std::vector<double> t;
  for (double x : kSizes) t.push_back(alpha + beta * x);
  return t;
}

TEST(CalibrateFit, RecoversAnExactLine) {
  const LineFit f = fitLine(kSizes, line(2e-6, 2e-10));
  EXPECT_NEAR(f.alpha, 2e-6, 1e-15);
  EXPECT_NEAR(f.beta, 2e-10, 1e-19);
  EXPECT_LT(f.worst, 1e-9);
  EXPECT_FALSE(f.alphaClamped);
  ASSERT_EQ(f.residuals.size(), kSizes.size());
}

// Points the scheduler inflated (a step that waited for a descheduled peer) barely move the line;
// plain least squares on time would follow the 16 MiB outlier.
TEST(CalibrateFit, InterruptedSamplesHardlyMoveTheLine) {
  std::vector<double> t = line(2e-6, 2e-10);
  t[1] *= 5000;  // 64 B took 10 ms
  t[5] *= 300;   // 16 KiB too
  t[10] *= 10;   // 16 MiB took 34 ms
  const LineFit f = fitLine(kSizes, t);
  EXPECT_NEAR(f.alpha, 2e-6, 0.1 * 2e-6);
  EXPECT_NEAR(f.beta, 2e-10, 0.1 * 2e-10);
  EXPECT_NEAR(f.residuals[1], -1.0, 1e-3);  // shown as what it is
  EXPECT_GT(f.worst, 0.99);
}

TEST(CalibrateFit, NoisyPointsGiveResidualsOfTheirSize) {
  std::vector<double> t = line(1e-6, 1e-10);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] *= i % 2 ? 1.1 : 0.9;
  const LineFit f = fitLine(kSizes, t);
  EXPECT_NEAR(f.rms, 0.1, 0.02);
  EXPECT_NEAR(f.alpha, 1e-6, 0.2e-6);
  EXPECT_NEAR(f.beta, 1e-10, 0.2e-10);
}

// A free fit below zero holds alpha at 0 and fits the slope alone.
TEST(CalibrateFit, NegativeAlphaIsHeldAtZero) {
  const std::vector<double> x = {1000, 2000, 3000};
  const std::vector<double> t = {1e-6, 3e-6, 5e-6};  // 2 ns/B - 1 us
  const LineFit f = fitLine(x, t);
  EXPECT_TRUE(f.alphaClamped);
  EXPECT_EQ(f.alpha, 0);
  // A slope through the origin lies between the points' own slopes (1 to 1.67 ns/B).
  EXPECT_GT(f.beta, 1e-9);
  EXPECT_LT(f.beta, 5e-9 / 3);
}

TEST(CalibrateFit, TimesThatDoNotGrowStillGiveAPositiveBeta) {
  const LineFit f = fitLine(std::vector<double>{0, 1 << 20}, std::vector<double>{1e-5, 1e-5});
  EXPECT_GT(f.beta, 0);
  EXPECT_GT(f.alpha, 0);
}

TEST(CalibrateFit, RejectsWhatCannotBeFitted) {
  EXPECT_THROW(fitLine(std::vector<double>{0, 1}, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(fitLine(std::vector<double>{64, 64}, std::vector<double>{1, 2}),
               std::invalid_argument);
  EXPECT_THROW(fitLine(std::vector<double>{0, 64}, std::vector<double>{1e-6, 0}),
               std::invalid_argument);
}

// ---- the forked group -------------------------------------------------------------------------

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// single_copy's range from measured times: the longest run where the block was at least as
// fast, ending at the next measured size or at `end`; none when it never won.
TEST(CalibrateFit, LongestWinningRunGivesTheRange) {
  const std::vector<std::uint64_t> sizes = {16, 64, 256, 1024, 4096};
  const auto run = [&](std::vector<double> a, std::vector<double> b) {
    const SizeRange r = longestWinningRun(sizes, a, b, 99999);
    return std::pair{r.from, r.below};
  };
  using R = std::pair<std::uint64_t, std::uint64_t>;
  EXPECT_EQ(run({1, 1, 1, 1, 1}, {2, 2, 2, 2, 2}), R(16, 99999));
  EXPECT_EQ(run({3, 3, 3, 3, 3}, {2, 2, 2, 2, 2}), R(0, 0));
  EXPECT_EQ(run({3, 1, 1, 3, 3}, {2, 2, 2, 2, 2}), R(64, 1024));    // ends before 1024
  EXPECT_EQ(run({1, 3, 1, 1, 1}, {2, 2, 2, 2, 2}), R(256, 99999));  // the longer of two runs
  EXPECT_EQ(run({1, 3, 1, 3, 3}, {2, 2, 2, 2, 2}), R(16, 64));      // the earlier of equal ones
  EXPECT_EQ(run({2, 2, 5, 5, 5}, {2, 2, 2, 2, 2}), R(16, 256));     // a tie counts as a win
  EXPECT_THROW(longestWinningRun(sizes, std::vector<double>{1}, std::vector<double>{1}, 1),
               std::invalid_argument);
}

TEST(CalibrateGroup, AllGatherAndMaxOfAcrossThreeProcesses) {
  const ForkedRun run = runForked(3, 20s, [](MeshMember& m) {
    // Uneven payload sizes per round, so stale bytes from an earlier round would show.
    std::string out;
    for (int round = 1; round <= 3; ++round) {
      std::vector<std::byte> mine(static_cast<std::size_t>(round * 1000),
                                  std::byte(static_cast<unsigned char>(10 * m.rank() + round)));
      std::vector<std::byte> all(mine.size() * 3);
      m.allGather(mine, all);
      for (int r = 0; r < 3; ++r)
        for (std::size_t i = 0; i < mine.size(); ++i)
          if (all[static_cast<std::size_t>(r) * mine.size() + i] !=
              std::byte(static_cast<unsigned char>(10 * r + round)))
            throw std::runtime_error("all-gather delivered the wrong bytes");
    }
    const std::uint64_t max = m.maxOf(static_cast<std::uint64_t>(7 + 5 * m.rank()));
    m.barrier();
    return std::to_string(getpid()) + " " + std::to_string(max);
  });
  ASSERT_TRUE(run.ok) << run.error;
  EXPECT_TRUE(run.output.ends_with(" 17")) << run.output;
  EXPECT_NE(run.output.substr(0, run.output.find(' ')), std::to_string(getpid()));
}

TEST(CalibrateGroup, AMemberThatThrowsFailsTheRunWithItsMessage) {
  const auto start = std::chrono::steady_clock::now();
  const ForkedRun run = runForked(3, 20s, [](MeshMember& m) -> std::string {
    if (m.rank() == 2) throw std::runtime_error("no UCX here");
    m.barrier();  // the others wait for rank 2, which is gone
    return "unreachable";
  });
  EXPECT_FALSE(run.ok);
  EXPECT_TRUE(contains(run.error, "rank 2: no UCX here") || contains(run.error, "left the group"))
      << run.error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(CalibrateGroup, AMemberThatCrashesIsNamed) {
  const ForkedRun run = runForked(2, 20s, [](MeshMember& m) -> std::string {
    if (m.rank() == 1) ::raise(SIGKILL);
    std::this_thread::sleep_for(200ms);
    return "rank 0 finished";
  });
  EXPECT_FALSE(run.ok);
  EXPECT_TRUE(contains(run.error, "rank 1 killed by signal 9")) << run.error;
}

TEST(CalibrateGroup, AHangingMemberEndsAtTheDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const ForkedRun run = runForked(2, 1s, [](MeshMember& m) -> std::string {
    if (m.rank() == 1) std::this_thread::sleep_for(60s);
    return "rank 0 finished";
  });
  EXPECT_FALSE(run.ok);
  EXPECT_TRUE(contains(run.error, "did not finish within 1 s")) << run.error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(CalibrateGroup, ThreadSyncAgreesOnTheLargest) {
  ThreadSync sync(3);
  std::vector<std::uint64_t> seen(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      for (std::uint64_t round = 0; round < 50; ++round) {
        const std::uint64_t got = sync.maxOf(round * 10 + static_cast<std::uint64_t>(r));
        if (got != round * 10 + 2) seen[static_cast<std::size_t>(r)] = got + 1000000;
      }
      sync.barrier();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen, std::vector<std::uint64_t>(3, 0));
}

}  // namespace
}  // namespace hccl::calib
