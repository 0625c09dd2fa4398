// Problem builders shared by the algorithm tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/hierarchical.hpp"
#include "algorithms/verifier.hpp"
#include "algorithms/write_contract.hpp"

namespace hccl::algo::test {

// The costing tests' common parameter sets (rank_cost, rank_path, closed_cost, pipeline_cost):
// HCCL-like links, and one link a rank that its peers share (links = 1), where lockstep ranks
// wait on each other.
inline CostParams hcclLikeParams() {
  return CostParams::uniform(2e-6, 1e-9, 3e-10);
}
inline CostParams oneLinkParams() {
  CostParams p = CostParams::uniform(20e-6, 4e-10, 1e-10);
  p.links.fill(1);
  return p;
}
// One link a rank with a block round (the shared-memory link's step_us) on every step whose
// largest peer-direction carries more than 256 bytes (64 elements of 4 bytes): the tests' counts
// put steps on both sides of that threshold, so a closed form must add the round exactly where
// the replay does. The round (7 us) is not a multiple of alpha or beta, so a round counted on the
// wrong step changes the time. Half duplex, as the shared-memory link is (a rank's sends and
// receives share its link): a step that sends and receives costs their sum. With the memory
// term (a streamed push above 256 bytes credited 0.37 ns a byte, below beta and no multiple of
// it), so the costings see fullmesh_push's credit on the steps the replay does.
inline CostParams steppedParams() {
  CostParams p = oneLinkParams();
  p.step.fill(7e-6);
  p.stepFrom.fill(256);
  p.halfDuplex.fill(true);
  p.memory.fill(0.37e-9);
  return p;
}

// The MPI-level count: elements per rank for ReduceScatter/AllGather/Scatter/Gather, per pair
// for AllToAll(V), the whole vector otherwise.
inline Problem problemFor(Collective c, std::uint32_t p, std::uint64_t count, bool inPlace,
                          std::uint32_t root = 0) {
  return Problem::fromMpiCount(c, p, count, inPlace, root);
}

// In place is meaningless for Broadcast (one buffer) and Barrier (none).
inline bool hasInPlaceVariant(Collective c) {
  return c != Collective::Broadcast && c != Collective::Barrier;
}

// Test names use the internal name (rhd_allreduce), which is also the file's and the functions'.
inline std::string specName(const GeneratorSpec& s) {
  return std::string(internalName(s.algorithm)) + "_" + std::string(name(s.coll));
}

// Every rank's composed schedule on `lay`, as the engine runs it: honouring the write contract
// (in-place ReduceScatter included).
inline Schedule composeAll(const Layout& lay, const LevelAlgorithms& algs, const Problem& pb) {
  Schedule s{pb, {}};
  const RankGenerator compose = [&](const Problem& q, std::uint32_t r) {
    return composeHierarchical(lay, algs, q, r);
  };
  for (std::uint32_t r = 0; r < pb.ranks; ++r) s.ranks.push_back(withPrivateInput(pb, r, compose));
  return s;
}

// The composition verifies clean; a failure names the layout, the problem and the algorithms.
inline void expectCleanComposition(const Layout& lay, const LevelAlgorithms& algs,
                                   const Problem& pb, const VerifyOptions& opt = {}) {
  const auto issues = verify(composeAll(lay, algs, pb), opt);
  EXPECT_TRUE(issues.empty()) << lay.describe() << " " << toString(pb) << " " << hcclName(algs[0])
                              << "/" << hcclName(algs[1]) << "/" << hcclName(algs[2]) << "\n"
                              << describe(issues);
}

}  // namespace hccl::algo::test
