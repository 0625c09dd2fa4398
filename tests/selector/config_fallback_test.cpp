// HCCL's documented fallback order for every forced algorithm and every op type.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "algorithms/config_fallback.hpp"

namespace hccl::algo {
namespace {

using Chain = std::vector<Algorithm>;

Chain chain(Algorithm a, OpType op) {
  const auto s = fallbackChain(a, op);
  return Chain(s.begin(), s.end());
}

TEST(FallbackChain, DocumentedOrders) {
  using enum Algorithm;
  for (int i = 0; i < kNumOpTypes; ++i) {
    const auto op = static_cast<OpType>(i);
    EXPECT_EQ(chain(Ring, op), (Chain{NHR, Rhd})) << name(op);
    EXPECT_EQ(chain(Rhd, op), (Chain{NHR, Ring})) << name(op);
    EXPECT_EQ(chain(NHR, op), (Chain{Rhd, Ring})) << name(op);
    for (Algorithm other : {NHR_V1, NB, AHC, AHC_Broke, Pairwise, Mesh})
      EXPECT_EQ(chain(other, op), (Chain{NHR, Rhd, Ring})) << name(op);
  }
}

TEST(FallbackChain, PipelineForAllToAllFallsBackToPairwise) {
  using enum Algorithm;
  for (OpType op : {OpType::AllToAll, OpType::AllToAllV, OpType::AllToAllVC})
    EXPECT_EQ(chain(Pipeline, op), (Chain{Pairwise})) << name(op);
  for (OpType op : {OpType::AllReduce, OpType::AllGather, OpType::ReduceScatter, OpType::Broadcast,
                    OpType::Reduce, OpType::Scatter, OpType::AllGatherV})
    EXPECT_EQ(chain(Pipeline, op), (Chain{NHR, Rhd, Ring})) << name(op);
}

TEST(FallbackChain, NeverContainsTheForcedAlgorithmAndCollectivesAgree) {
  for (int a = 0; a < kNumAlgorithms; ++a) {
    const auto forced = static_cast<Algorithm>(a);
    for (int op = 0; op < kNumOpTypes; ++op) {
      const Chain c = chain(forced, static_cast<OpType>(op));
      EXPECT_FALSE(c.empty());
      EXPECT_EQ(std::count(c.begin(), c.end(), forced), 0) << hcclName(forced);
    }
    for (int i = 0; i < kNumCollectives; ++i) {
      const auto coll = static_cast<Collective>(i);
      const auto viaCollective = fallbackChain(forced, coll);
      EXPECT_EQ(Chain(viaCollective.begin(), viaCollective.end()), chain(forced, opType(coll)));
    }
  }
}

}  // namespace
}  // namespace hccl::algo
