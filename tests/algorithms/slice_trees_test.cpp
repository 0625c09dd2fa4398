// NHR and NB follow HCCL's step structure: peers, slices per step, the slices themselves, and
// the merged transfers of NHR's renumbered AllReduce. Expectations are recomputed here from the
// reference's formulas, not taken from the generators' helpers.
#include <gtest/gtest.h>

#include <set>

#include "algorithms/slice_trees.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::algo {
namespace {

constexpr std::uint64_t kC = 7;  // elements per block

std::uint32_t mod(std::int64_t x, std::uint32_t p) {
  const auto m = static_cast<std::int64_t>(p);
  return static_cast<std::uint32_t>(((x % m) + m) % m);
}

std::uint32_t ceilLog(std::uint32_t p) {
  std::uint32_t k = 0;
  while ((1u << k) < p) ++k;
  return k;
}

// Elements of buffer `b` a step sends (or receives), as a set of offsets.
std::set<std::uint64_t> covered(const Step& st, Dir dir, Buf b) {
  std::set<std::uint64_t> s;
  for (const Transfer& t : st.xfers)
    if (t.dir == dir && t.slice.buf == b)
      for (std::uint64_t i = t.slice.offset; i < t.slice.end(); ++i) s.insert(i);
  return s;
}

std::set<std::uint64_t> blocksOf(const std::vector<std::uint32_t>& blocks) {
  std::set<std::uint64_t> s;
  for (std::uint32_t b : blocks)
    for (std::uint64_t i = 0; i < kC; ++i) s.insert(b * kC + i);
  return s;
}

std::set<std::uint32_t> peers(const Step& st, Dir dir) {
  std::set<std::uint32_t> s;
  for (const Transfer& t : st.xfers)
    if (t.dir == dir) s.insert(t.peer);
  return s;
}

// In place every ReduceScatter transfer reads or writes Output/Scratch at block granularity;
// the sends of step k read exactly the partial sums HCCL's GetStepInfo lists.
TEST(SliceTrees, ReduceScatterPeersAndSlices) {
  for (int orient : {+1, -1}) {
    const Generator gen = orient > 0 ? nhrReduceScatter : nbReduceScatter;
    for (std::uint32_t p = 2; p <= 33; ++p) {
      const Problem pb = Problem::reduceScatter(p, kC, true);
      for (std::uint32_t r = 0; r < p; ++r) {
        const RankSchedule s = gen(pb, r);
        ASSERT_EQ(s.steps.size(), ceilLog(p)) << "p=" << p;
        for (std::uint32_t k = 0; k < ceilLog(p); ++k) {
          SCOPED_TRACE(::testing::Message()
                       << "orient " << orient << " p=" << p << " r=" << r << " step " << k);
          const std::int64_t h = std::int64_t{1} << k, sign = orient;
          const Step& st = s.steps[k];
          EXPECT_EQ(peers(st, Dir::Send), std::set<std::uint32_t>{mod(r - sign * h, p)});
          EXPECT_EQ(peers(st, Dir::Recv), std::set<std::uint32_t>{mod(r + sign * h, p)});
          // NHR: slices r-h, r-3h, ...; NB: r+h, r+3h, ...; floor((p-1+h)/2h) of them.
          const std::uint64_t hu = std::uint64_t{1} << k, shares = (p - 1 + hu) / (2 * hu);
          std::vector<std::uint32_t> sent;
          for (std::uint64_t j = 0; j < shares; ++j)
            sent.push_back(mod(r - sign * (h + static_cast<std::int64_t>(j) * 2 * h), p));
          EXPECT_EQ(covered(st, Dir::Send, Buf::Output), blocksOf(sent));
          EXPECT_EQ(covered(st, Dir::Recv, Buf::Scratch).size(), shares * kC);
        }
      }
    }
  }
}

// The AllGather of NHR runs the ReduceScatter backwards (distance 2^(K-1) first, towards r+h);
// NB's Bruck AllGather doubles the distance and the volume, the last step of a non-power-of-two
// p moving p - 2^floor(log2 p) blocks.
TEST(SliceTrees, AllGatherPeersAndVolumes) {
  for (std::uint32_t p = 2; p <= 33; ++p) {
    const std::uint32_t steps = ceilLog(p);
    const Problem pb = Problem::allGather(p, kC, true);
    for (std::uint32_t r = 0; r < p; ++r) {
      const RankSchedule nhr = nhrAllGather(pb, r), nb = nbAllGather(pb, r);
      ASSERT_EQ(nhr.steps.size(), steps);
      ASSERT_EQ(nb.steps.size(), steps);
      for (std::uint32_t i = 0; i < steps; ++i) {
        SCOPED_TRACE(::testing::Message() << "p=" << p << " r=" << r << " step " << i);
        const std::int64_t hNhr = std::int64_t{1} << (steps - 1 - i);
        EXPECT_EQ(peers(nhr.steps[i], Dir::Send), std::set<std::uint32_t>{mod(r + hNhr, p)});
        EXPECT_EQ(peers(nhr.steps[i], Dir::Recv), std::set<std::uint32_t>{mod(r - hNhr, p)});
        const std::uint64_t nhrShares = (p - 1 + std::uint64_t(hNhr)) / (2 * std::uint64_t(hNhr));
        EXPECT_EQ(covered(nhr.steps[i], Dir::Recv, Buf::Output).size(), nhrShares * kC);

        const std::int64_t hNb = std::int64_t{1} << i;
        EXPECT_EQ(peers(nb.steps[i], Dir::Send), std::set<std::uint32_t>{mod(r + hNb, p)});
        EXPECT_EQ(peers(nb.steps[i], Dir::Recv), std::set<std::uint32_t>{mod(r - hNb, p)});
        const bool lastOfOdd = i + 1 == steps && (p & (p - 1)) != 0;
        const std::uint64_t nbShares = lastOfOdd ? p - (1u << i) : std::uint64_t(hNb);
        std::vector<std::uint32_t> got;
        for (std::uint64_t j = 0; j < nbShares; ++j)
          got.push_back(mod(r - hNb - static_cast<std::int64_t>(j), p));
        EXPECT_EQ(covered(nb.steps[i], Dir::Recv, Buf::Output), blocksOf(got));
        // A contiguous run of blocks, wrapping at most once.
        EXPECT_LE(nb.steps[i].xfers.size(), 4u);
      }
    }
  }
}

// HCCL renumbers slices so that a step's slices merge: for a power of two every AllReduce and
// Broadcast step is a single transfer each way.
TEST(SliceTrees, NhrRenumberingMergesPowersOfTwo) {
  for (std::uint32_t p : {2u, 4u, 8u, 16u, 32u, 64u}) {
    for (bool inPlace : {false, true}) {
      const Problem ar = Problem::allReduce(p, 64 * kC, inPlace);
      for (std::uint32_t r = 0; r < p; ++r) {
        const RankSchedule s = nhrAllReduce(ar, r);
        ASSERT_EQ(s.steps.size(), 2 * ceilLog(p));
        for (const Step& st : s.steps) {
          EXPECT_EQ(peers(st, Dir::Send).size(), 1u);
          EXPECT_EQ(st.xfers.size(), 2u) << "p=" << p << " r=" << r << "\n" << toString(s);
        }
      }
    }
  }
}

// Without renumbering (ReduceScatter keeps the caller's order) a step's slices are strided and
// travel as separate transfers to the same peer.
TEST(SliceTrees, KeptOrderSendsOneTransferPerRun) {
  const RankSchedule s = nhrReduceScatter(Problem::reduceScatter(8, kC, true), 0);
  EXPECT_EQ(s.steps[0].xfers.size(), 8u);  // 4 slices each way: 7, 5, 3, 1 and 0, 6, 4, 2
  EXPECT_EQ(s.steps[1].xfers.size(), 4u);
  EXPECT_EQ(s.steps[2].xfers.size(), 2u);
}

// Scatter: position e = |root - r| along the orientation receives once, at step floor(log2 e),
// exactly the blocks of its subtree e, e + 2^(k+1), ...; the root sends at every step.
TEST(SliceTrees, ScatterReceivesTheSubtreeOnce) {
  for (int orient : {+1, -1}) {
    const Generator gen = orient > 0 ? nhrScatter : nbScatter;
    for (std::uint32_t p = 2; p <= 33; ++p) {
      for (std::uint32_t root : {0u, p / 2, p - 1}) {
        const Problem pb = Problem::scatter(p, kC, root);
        for (std::uint32_t r = 0; r < p; ++r) {
          SCOPED_TRACE(::testing::Message()
                       << "orient " << orient << " p=" << p << " root=" << root << " r=" << r);
          const RankSchedule s = gen(pb, r);
          const std::uint32_t e = mod(orient * (std::int64_t{root} - r), p);
          std::uint64_t received = 0, recvSteps = 0;
          for (const Step& st : s.steps) {
            if (!peers(st, Dir::Recv).empty()) ++recvSteps;
            for (const Transfer& t : st.xfers)
              if (t.dir == Dir::Recv) received += t.slice.count;
          }
          if (e == 0) {
            EXPECT_EQ(recvSteps, 0u);
            EXPECT_EQ(s.steps.size(), ceilLog(p));
            continue;
          }
          std::uint32_t k = 0;
          while ((2u << k) <= e) ++k;
          EXPECT_EQ(recvSteps, 1u);
          EXPECT_EQ(received, kC * ((p - 1 - e) / (2u << k) + 1));
        }
      }
    }
  }
}

TEST(SliceTrees, GatherAndBroadcastNeedNoScratch) {
  for (std::uint32_t p = 1; p <= 20; ++p) {
    for (std::uint32_t r = 0; r < p; ++r) {
      for (Generator g : {nhrAllGather, nbAllGather})
        for (bool inPlace : {false, true})
          EXPECT_EQ(scratchCount(g(Problem::allGather(p, kC, inPlace), r)), 0u);
      for (Generator g : {nhrBroadcast, nbBroadcast})
        EXPECT_EQ(scratchCount(g(Problem::broadcast(p, 100, p / 3), r)), 0u);
    }
  }
}

TEST(SliceTrees, RejectsBadSlicePlacements) {
  EXPECT_THROW(tree::SliceTree(4, +1, {0, 1, 1, 3}), std::invalid_argument);
  EXPECT_THROW(tree::SliceTree(4, +1, {0, 1, 2}), std::invalid_argument);
  EXPECT_THROW(tree::SliceTree(3, 0), std::invalid_argument);
  EXPECT_NO_THROW(tree::SliceTree(4, -1, {3, 1, 2, 0}));
}

}  // namespace
}  // namespace hccl::algo
