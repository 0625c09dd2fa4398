// verify_scale: builds one generator's schedule and verifies it, printing the time and the peak
// memory of each phase, for measuring the verifier at thousands of ranks (not a test: run it
// under /usr/bin/time -v or valgrind --tool=massif).
//
//   verify_scale ring_allreduce 1024 1025 [inplace]
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
    fmt::print(stderr, "usage: verify_scale <algorithm_collective> <ranks> <count> [inplace]\n");
    return 2;
  }
  const std::string want = argv[1];
  const auto p = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const std::uint64_t n = std::strtoull(argv[3], nullptr, 10);
  const bool inPlace = argc > 4 && std::string(argv[4]) == "inplace";
  for (const GeneratorSpec& g : generatorSpecs()) {
    if (test::specName(g) != want) continue;
    const Problem pb = test::problemFor(g.coll, p, n, inPlace, (p * 7 + 3) % p);
    auto t0 = std::chrono::steady_clock::now();
    // Empty steps pruned, as the sweep's ThousandsOfRanks does (they change nothing verified).
    Schedule s{pb, {}};
    for (std::uint32_t r = 0; r < p; ++r) {
      s.ranks.push_back(withPrivateInput(pb, r, g.generate));
      prune(s.ranks.back());
      s.ranks.back().steps.shrink_to_fit();
    }
    const double build = since(t0);
    const long afterBuild = peakKiB();
    t0 = std::chrono::steady_clock::now();
    const auto issues = verify(s, {.requireRankOrder = g.rankOrdered});
    fmt::print(
        "{} p={} n={}{}: build {:.2f} s peak {} MiB; verify {:.2f} s peak {} MiB; {} issues\n",
        want, p, n, inPlace ? " inplace" : "", build, afterBuild / 1024, since(t0),
        peakKiB() / 1024, issues.size());
    if (!issues.empty()) fmt::print("{}", describe(issues));
    return issues.empty() ? 0 : 1;
  }
  fmt::print(stderr, "no generator named {}\n", want);
  return 2;
}
