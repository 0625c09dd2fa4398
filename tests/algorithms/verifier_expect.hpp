// What the verifier's negative tests share: reported-issue checks, and the streamed check
// (verifyGenerated) of a schedule held in memory, which must report what verify() reports.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/verifier.hpp"

namespace hccl::algo::test {

using Kind = VerifyIssue::Kind;

inline bool has(const std::vector<VerifyIssue>& issues, Kind k) {
  return std::any_of(issues.begin(), issues.end(),
                     [k](const VerifyIssue& i) { return i.kind == k; });
}

// Checks that `k` is reported and that its message names the rank and the step.
inline void expectIssue(const Schedule& s, Kind k, std::uint32_t rank, const std::string& fragment,
                        VerifyOptions opt = {}) {
  const auto issues = verify(s, opt);
  ASSERT_TRUE(has(issues, k)) << "expected [" << name(k) << "], got:\n" << describe(issues);
  const auto it =
      std::find_if(issues.begin(), issues.end(), [k](const VerifyIssue& i) { return i.kind == k; });
  EXPECT_EQ(it->rank, rank) << it->message;
  EXPECT_NE(it->message.find(fragment), std::string::npos) << it->message;
}

// Every rank's schedule with empty steps dropped (they change nothing the verifier sees).
inline Schedule pruned(Generator g, const Problem& pb) {
  Schedule s = buildSchedule(g, pb);
  for (RankSchedule& r : s.ranks) {
    prune(r);
    r.steps.shrink_to_fit();
  }
  return s;
}

// The clean schedule both negative test files break at 1024 ranks, built once a process: RHD
// AllReduce of one element per rank, log2(1024) = 10 halving and 10 doubling steps.
inline constexpr std::uint32_t kScaleRanks = 1024;
inline constexpr std::uint32_t kScaleBad = 517;  // the rank each test breaks
inline const Schedule& cleanAtScale() {
  static const Schedule s = pruned(rhdAllReduce, Problem::allReduce(kScaleRanks, kScaleRanks));
  return s;
}

// The schedule held in `s`, through the streamed check the sweep runs at thousands of ranks
// (verifyGenerated: windows of steps, dead scratch folded, rank sets dropped at nearly every
// step): it must report exactly what verify() reports.
inline std::vector<VerifyIssue> streamed(const Schedule& s, VerifyOptions opt = {}) {
  opt.setGarbageBytes = 0;
  return verifyGenerated(
      s.problem, [&s](const Problem&, std::uint32_t r) { return s.ranks.at(r); }, opt);
}

inline std::vector<VerifyIssue> verifyBoth(const Schedule& s, const VerifyOptions& opt = {}) {
  const auto held = verify(s, opt);
  EXPECT_EQ(describe(held), describe(streamed(s, opt)));
  return held;
}

inline void expectBoth(const Schedule& s, Kind k, std::uint32_t rank, const std::string& fragment,
                       VerifyOptions opt = {}) {
  expectIssue(s, k, rank, fragment, opt);
  verifyBoth(s, opt);
}

}  // namespace hccl::algo::test
