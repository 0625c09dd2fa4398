// The test harness itself: it must never hang and must say what each rank did.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "fork_group.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;

TEST(ForkGroup, AllGatherPlacesEachRanksBytesAtItsOffset) {
  const auto r = runGroup(3, 10s, [](Child& child) {
    const auto me = static_cast<std::byte>(10 + child.rank());
    const std::vector<std::byte> mine(4, me);
    std::vector<std::byte> all(12);
    child.allGather()(mine, all);
    for (std::size_t i = 0; i < all.size(); ++i) {
      CHILD_CHECK(all[i] == static_cast<std::byte>(10 + i / 4), "misplaced byte");
    }
  });
  EXPECT_TRUE(r.ok()) << r.summary();
}

TEST(ForkGroup, ReportsFailuresAndKillsHungRanksAtTheDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = runGroup(3, 1500ms, [](Child& child) {
    if (child.rank() == 0) CHILD_CHECK(1 + 1 == 3, "arithmetic");
    if (child.rank() == 1) std::this_thread::sleep_for(60s);
    if (child.rank() == 2) child.barrier();  // rank 0 leaves: the all-gather must not hang
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.timedOut);
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(r.ranks[0].failure.find("arithmetic"), std::string::npos) << r.summary();
  EXPECT_EQ(r.ranks[0].exitCode, 1);
  EXPECT_EQ(r.ranks[1].signal, SIGKILL) << r.summary();
  EXPECT_NE(r.ranks[2].failure.find("left the group"), std::string::npos) << r.summary();
}

}  // namespace
}  // namespace hccl::test
