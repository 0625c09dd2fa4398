// The costings that replace a whole-communicator replay by the replay's own rules applied to
// counts (Mesh Reduce: meshReduceCost, O(p); H-D_R Exscan: rhdExscanCost, O(p log p); H-D_R
// Broadcast: rhdBroadcastCost, O(log p)) equal the
// replayed critical path of the built schedule to the last bit: every p <= 256 (full tier, see
// rankCounts()) and a spread to 1024 (Exscan and Broadcast to 4096), every root up to 16 ranks and
// then 0, p/3 and p-1, in and out of place, counts of fewer elements than ranks (empty blocks), 7,
// uneven (3p+1) and even (16p), under HCCL's one-link-per-peer parameters, the shared-link ones
// (links = 1) and a free reduction (gamma = 0, where ranks whose blocks differ tie in time). Mesh
// Reduce also with arbitrary uneven blocks, zeros included, which its costing reads block by block.
// (rank_cost_test.cpp checks every entry within the lockstep tolerance; this is the exact check.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/rank_cost.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

constexpr std::size_t kElem = 4;

std::vector<CostParams> paramSets() {
  CostParams freeReduce = CostParams::uniform(1e-6, 1e-9, 0);
  return {test::hcclLikeParams(), test::oneLinkParams(), freeReduce, test::steppedParams()};
}

const GeneratorSpec& spec(Algorithm a, Collective c) {
  const GeneratorSpec* g = findGenerator(a, c);
  EXPECT_NE(g, nullptr);
  return *g;
}

// The entry's costing against the replay of every rank's schedule, under every parameter set;
// returns the cases checked.
std::size_t expectExact(const GeneratorSpec& g, const Problem& pb, const char* what,
                        const std::vector<CostParams>& params = paramSets()) {
  const Schedule whole = buildSchedule(g.generate, pb);
  std::size_t k = 0;
  for (const CostParams& cp : params) {
    const Metrics exact = criticalPath(whole, kElem, cp);
    const Metrics fast = predictedPath(g, pb, kElem, cp);
    EXPECT_EQ(fast.time, exact.time)
        << what << " p=" << pb.ranks << " count=" << pb.total() << " root=" << pb.root
        << (pb.inPlace ? " in place" : "") << " params " << k << ": steps " << fast.steps()
        << " vs " << exact.steps() << ", bytes " << fast.bytes() << " vs " << exact.bytes();
    ++k;
  }
  return k;
}

// The quick tier (CI): every p <= 64 and 96, 127, 128, 200, 255, 256 and the spread beyond.
// COLL_HCCL_COST_FULL=1 (run by hand): every p <= 256; the mesh's replay is p^2 per case,
// so that tier takes about a minute of CPU (mesh_reduce most of it).
std::vector<std::uint32_t> rankCounts() {
  const bool full = std::getenv("COLL_HCCL_COST_FULL") != nullptr;
  std::vector<std::uint32_t> ps;
  for (std::uint32_t p = 1; p <= (full ? 256u : 64u); ++p) ps.push_back(p);
  if (!full)
    for (std::uint32_t p : {96u, 127u, 128u, 200u, 255u, 256u}) ps.push_back(p);
  for (std::uint32_t p : {384u, 511u, 512u, 1000u, 1024u}) ps.push_back(p);
  return ps;
}

std::vector<std::uint32_t> rootsFor(std::uint32_t p, bool big) {
  std::vector<std::uint32_t> roots;
  for (std::uint32_t root = 0; root < p; ++root)
    if (p <= 16 || root == 0 || root == p / 3 || root == p - 1) roots.push_back(root);
  if (big) roots = {p / 3};
  return roots;
}

std::vector<std::uint64_t> countsFor(std::uint32_t p, bool big) {
  const std::uint64_t q = p;
  std::vector<std::uint64_t> counts{q / 2 + 1, 3 * q + 1};
  if (!big) counts.insert(counts.end(), {1, q - 1, 7, 16 * q});
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::erase(counts, 0);
  return counts;
}

TEST(ClosedCost, MeshReduceEqualsTheReplay) {
  const GeneratorSpec& g = spec(Algorithm::Mesh, Collective::Reduce);
  ASSERT_EQ(g.cost, meshReduceCost);
  std::size_t cases = 0;
  for (std::uint32_t p : rankCounts()) {
    const bool big = p > 256;
    // The mesh's replay is p^2 a case: beyond 64 ranks fewer roots and counts.
    const bool wide = p > 64;
    for (std::uint64_t count : countsFor(p, big || wide))
      for (std::uint32_t root : rootsFor(p, big))
        for (bool inPlace : {false, true}) {
          if (inPlace && big) continue;
          cases += expectExact(g, test::problemFor(Collective::Reduce, p, count, inPlace, root),
                               "mesh_reduce");
          if (HasFailure()) return;
        }
  }
  EXPECT_GT(cases, 2000u);
}

// Counts 0..9, often 0 (empty blocks); every third trial one block of 100, far larger than the
// rest; trial 1 no elements at all, trial 2 a single non-empty block.
std::vector<std::uint64_t> arbitraryCounts(std::mt19937& rng, std::uint32_t p, int trial) {
  std::vector<std::uint64_t> counts(p);
  for (std::uint64_t& c : counts) c = rng() % 3 == 0 ? 0 : rng() % 10;
  if (trial % 3 == 0) counts[rng() % p] = 100;
  if (trial == 1) std::fill(counts.begin(), counts.end(), 0);
  if (trial == 2) {
    std::fill(counts.begin(), counts.end(), 0);
    counts[rng() % p] = 5;
  }
  return counts;
}

TEST(ClosedCost, MeshReduceWithArbitraryBlocksEqualsTheReplay) {
  const GeneratorSpec& g = spec(Algorithm::Mesh, Collective::Reduce);
  std::mt19937 rng(14);
  std::size_t cases = 0;
  for (std::uint32_t p : {2u, 3u, 5u, 8u, 13u, 31u, 64u, 100u})
    for (int trial = 0; trial < 12; ++trial) {
      const std::vector<std::uint64_t> counts = arbitraryCounts(rng, p, trial);
      for (bool inPlace : {false, true}) {
        Problem pb = test::problemFor(Collective::Reduce, p, 1, inPlace,
                                      static_cast<std::uint32_t>(rng() % p));
        pb.blocks = Blocks::of(counts);
        cases += expectExact(g, pb, "mesh_reduce (arbitrary blocks)");
        if (HasFailure()) return;
      }
    }
  EXPECT_GT(cases, 500u);
}

TEST(ClosedCost, RhdExscanEqualsTheReplay) {
  const GeneratorSpec& g = spec(Algorithm::Rhd, Collective::Exscan);
  ASSERT_EQ(g.cost, rhdExscanCost);
  std::size_t cases = 0;
  std::vector<std::uint32_t> ps = rankCounts();
  for (std::uint32_t p : {2047u, 2048u, 4095u, 4096u}) ps.push_back(p);
  for (std::uint32_t p : ps) {
    const bool big = p > 256;
    for (std::uint64_t count : countsFor(p, big))
      for (bool inPlace : {false, true}) {
        if (inPlace && big) continue;
        cases +=
            expectExact(g, test::problemFor(Collective::Exscan, p, count, inPlace), "rhd_exscan");
        if (HasFailure()) return;
      }
  }
  EXPECT_GT(cases, 2000u);
}

TEST(ClosedCost, RhdBroadcastEqualsTheReplay) {
  const GeneratorSpec& g = spec(Algorithm::Rhd, Collective::Broadcast);
  ASSERT_EQ(g.cost, rhdBroadcastCost);
  std::size_t cases = 0;
  std::vector<std::uint32_t> ps = rankCounts();
  for (std::uint32_t p : {2047u, 2048u, 4095u, 4096u}) ps.push_back(p);
  for (std::uint32_t p : ps) {
    const bool big = p > 256;
    std::vector<std::uint32_t> roots = rootsFor(p, false);
    if (big) roots = {0, p / 3, p - 1};
    for (std::uint64_t count : countsFor(p, big))
      for (std::uint32_t root : roots) {
        cases += expectExact(g, test::problemFor(Collective::Broadcast, p, count, false, root),
                             "rhd_broadcast");
        if (HasFailure()) return;
      }
  }
  EXPECT_GT(cases, 2000u);
}

// Mesh's Broadcast (meshBroadcastCost) and its one-shot Broadcast (meshOneShotBroadcastCost),
// which replaced the replay (replayCost) in the registry: the parameter sets above and the
// shared-memory link's (one link, a block round, half duplex, and broadcast slots whose posts
// count once and add their own round above 256 bytes, 4.3 us: no multiple of the others).
std::vector<CostParams> broadcastParams() {
  std::vector<CostParams> out = paramSets();
  CostParams slots = test::steppedParams();
  slots.posts.fill(true);
  slots.postStep.fill(4.3e-6);
  out.push_back(slots);
  return out;
}

// Counts: countsFor()'s, none at all, and blocks of 100 elements and more (the block round above
// 256 bytes on the Scatter's and AllGather's steps, which 16 elements a block never reach).
std::vector<std::uint64_t> broadcastCounts(std::uint32_t p, bool big) {
  std::vector<std::uint64_t> counts = countsFor(p, big);
  counts.push_back(0);
  if (!big) counts.push_back(100 * std::uint64_t{p} + 3);
  return counts;
}

// rootsFor()'s, and at an uneven count the last rank of the larger blocks and the first of the
// smaller ones (the root's own block is what the root's steps carry).
std::vector<std::uint32_t> broadcastRoots(std::uint32_t p, std::uint64_t count, bool big) {
  std::vector<std::uint32_t> roots = rootsFor(p, big);
  const auto larger = static_cast<std::uint32_t>(count % p);
  if (larger > 0) roots.insert(roots.end(), {larger - 1, larger});
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

TEST(BroadcastCost, MeshEqualsTheReplay) {
  const GeneratorSpec& g = spec(Algorithm::Mesh, Collective::Broadcast);
  ASSERT_EQ(g.cost, meshBroadcastCost);
  const std::vector<CostParams> params = broadcastParams();
  std::size_t cases = 0;
  for (std::uint32_t p : rankCounts()) {
    const bool big = p > 256;
    // The replay is p^2 a case: beyond 64 ranks fewer counts.
    for (std::uint64_t count : broadcastCounts(p, big || p > 64))
      for (std::uint32_t root : broadcastRoots(p, count, big)) {
        cases += expectExact(g, test::problemFor(Collective::Broadcast, p, count, false, root),
                             "mesh_broadcast",
                             big ? std::vector<CostParams>{params.front(), params.back()} : params);
        if (HasFailure()) return;
      }
  }
  EXPECT_GT(cases, 3000u);
}

// Blocks of any size, many empty, sometimes one far larger than the rest, every root: the
// costing reads the counts block by block (the root's, the largest other, each rank's own).
TEST(BroadcastCost, MeshWithArbitraryBlocksEqualsTheReplay) {
  const GeneratorSpec& g = spec(Algorithm::Mesh, Collective::Broadcast);
  const std::vector<CostParams> params = broadcastParams();
  std::mt19937 rng(1414);
  std::size_t cases = 0;
  for (std::uint32_t p : {2u, 3u, 4u, 5u, 8u, 13u, 31u, 64u, 100u})
    for (int trial = 0; trial < 10; ++trial) {
      const std::vector<std::uint64_t> counts = arbitraryCounts(rng, p, trial);
      std::vector<std::uint32_t> roots;
      for (std::uint32_t root = 0; root < p; ++root)
        if (p <= 16 || root % 7 == static_cast<std::uint32_t>(trial) % 7 || counts[root] == 100)
          roots.push_back(root);
      for (std::uint32_t root : roots) {
        Problem pb = test::problemFor(Collective::Broadcast, p, 1, false, root);
        pb.blocks = Blocks::of(counts);
        cases += expectExact(g, pb, "mesh_broadcast (arbitrary blocks)", params);
        if (HasFailure()) return;
      }
    }
  EXPECT_GT(cases, 1500u);
}

// The one-shot's replay is 2p transfer ends a case: every root of every p <= 64 (full tier every
// p <= 256), then 0, p/3 and p-1.
TEST(BroadcastCost, MeshOneShotEqualsTheReplay) {
  const GeneratorSpec& g = spec(Algorithm::MeshOneShot, Collective::Broadcast);
  ASSERT_EQ(g.cost, meshOneShotBroadcastCost);
  const bool full = std::getenv("COLL_HCCL_COST_FULL") != nullptr;
  const std::vector<CostParams> params = broadcastParams();
  std::size_t cases = 0;
  for (std::uint32_t p : rankCounts()) {
    const bool big = p > 256;
    for (std::uint64_t count : broadcastCounts(p, big)) {
      std::vector<std::uint32_t> roots = broadcastRoots(p, count, big);
      if (p <= (full ? 256u : 64u)) {
        roots.resize(p);
        for (std::uint32_t root = 0; root < p; ++root) roots[root] = root;
      }
      for (std::uint32_t root : roots) {
        cases += expectExact(g, test::problemFor(Collective::Broadcast, p, count, false, root),
                             "mesh_oneshot_broadcast", params);
        if (HasFailure()) return;
      }
    }
  }
  EXPECT_GT(cases, 50000u);
}

}  // namespace
}  // namespace hccl::algo
