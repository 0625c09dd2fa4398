// verify_scale: verifies one generator's schedule at a given rank count and prints the time and
// the peak memory, for measuring the verifier at thousands of ranks and for the full tier of the
// sweep (tests/algorithms/README.md). Streamed (verifyGenerated) unless `held` is given, which
// builds every rank's schedule first and calls verify() as the quick tier does; `uneven` gives
// rank r r % 3 elements (the sweep's uneven blocks; the count is ignored).
//
//   verify_scale ring_allreduce 1024 1025 [inplace] [held] [uneven]
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "algorithms/generators.hpp"
#include "algorithms/verifier.hpp"
#include "tests/algorithms/problems.hpp"

namespace {

long peakKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hccl::algo;
  if (argc < 4) {
    fmt::print(stderr,
               "usage: verify_scale <algorithm_collective> <ranks> <count> [inplace] [held]\n");
    return 2;
  }
  const std::string want = argv[1];
  const auto p = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const std::uint64_t n = std::strtoull(argv[3], nullptr, 10);
  bool inPlace = false, held = false, uneven = false;
  for (int i = 4; i < argc; ++i) {
    inPlace = inPlace || std::string(argv[i]) == "inplace";
    held = held || std::string(argv[i]) == "held";
    uneven = uneven || std::string(argv[i]) == "uneven";
  }
  if (p == 0) {
    fmt::print(stderr, "verify_scale: ranks must be at least 1, got {}\n", argv[2]);
    return 2;
  }
  for (const GeneratorSpec& g : generatorSpecs()) {
    if (test::specName(g) != want) continue;
    if (inPlace && !test::hasInPlaceVariant(g.coll)) {
      fmt::print(stderr, "{} has no in-place form\n", want);
      return 2;
    }
    Problem pb = test::problemFor(g.coll, p, n, inPlace, (p * 7 + 3) % p);
    if (uneven) {
      const bool blockwise =
          g.coll == hccl::Collective::ReduceScatter || g.coll == hccl::Collective::AllGather ||
          g.coll == hccl::Collective::Scatter || g.coll == hccl::Collective::Gather;
      if (!g.unevenBlocks || !blockwise) {
        fmt::print(stderr, "{} takes no uneven blocks\n", want);
        return 2;
      }
      std::vector<std::uint64_t> counts(p);
      for (std::uint32_t r = 0; r < p; ++r) counts[r] = r % 3;
      pb.blocks = Blocks::of(counts);
    }
    const VerifyOptions opt{.requireRankOrder = g.rankOrdered};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<VerifyIssue> issues;
    if (held) {
      // Empty steps pruned, as the sweep's ThousandsOfRanks does (they change nothing verified).
      Schedule s{pb, {}};
      for (std::uint32_t r = 0; r < p; ++r) {
        s.ranks.push_back(withPrivateInput(pb, r, g.generate));
        prune(s.ranks.back());
        s.ranks.back().steps.shrink_to_fit();
      }
      issues = verify(s, opt);
    } else {
      issues = verifyGenerated(pb, g.generate, opt);
    }
    fmt::print("{} p={} n={}{}{} {}: {:.2f} s, peak {} MiB, {} issues\n", want, p, n,
               inPlace ? " inplace" : "", uneven ? " uneven" : "", held ? "held" : "streamed",
               since(t0), peakKiB() / 1024, issues.size());
    if (!issues.empty()) fmt::print("{}", describe(issues));
    return issues.empty() ? 0 : 1;
  }
  fmt::print(stderr, "no generator named {}\n", want);
  return 2;
}
