// NHR, Nonuniform Hierarchical Ring (HCCL "NHR"): binomial slice trees over a ring, ceil(log2 p)
// steps for any p, no extra data; the heaviest exchanges (step 0) are between ring neighbours.
// The step structure follows hicann/hcomm's reduce_scatter_nhr.cc, all_gather_nhr.cc,
// scatter_nhr.cc, broadcast_nhr.cc and nonuniform_hierarchical_ring_base.cc; the shared skeleton
// and its invariants are in slice_trees.hpp (orientation +1). With K = ceil(log2 p), h = 2^k:
//
// ReduceScatter, K steps: at step k rank r sends to (r-h) mod p the partial sums of slices
//   r-h, r-3h, r-5h, ... and receives from (r+h) mod p those of r, r-2h, r-4h, ...,
//   floor((p-1+h)/2h) slices each way, which it adds to its own. Slice s is summed along a
//   binomial tree rooted at rank s; after step k rank r holds the slices r-2h*j summed over ranks
//   r-2h*j .. r-2h*j+2h-1, after the last step slice r over all ranks. Block i ends on rank i.
//   Partial sums live in Scratch[0, n) out of place (Output in place); receives land in Scratch.
//   cost ceil(log2 p)a + ((p-1)/p)n b + ((p-1)/p)n g
// AllGather, K steps, the ReduceScatter run backwards: at step i (k = K-1-i) rank r sends slices
//   r, r-2h, r-4h, ... to (r+h) mod p and receives r-h, r-3h, ... from (r-h) mod p, all in place
//   in Output; after step i it holds the slices r - j*h. No scratch.
//   cost ceil(log2 p)a + ((p-1)/p)n b
// AllReduce = ReduceScatter then AllGather over n split in p blocks, with HCCL's slice
//   renumbering (sliceMap): logical slice s lives in block place[s], chosen so that each step's
//   slices are adjacent blocks. For p a power of two every step is one transfer each way; for
//   other p a step's slices form a few runs. Out of place, step 0 receives straight into Output
//   and reduces there with the input; later receives land in Scratch (at most ~n/4; ~n/2 in
//   place).
//   cost 2ceil(log2 p)a + 2((p-1)/p)n b + ((p-1)/p)n g
// Scatter, K steps: the root is scatter position 0 and rank root-e position e; at step k every
//   position e < h (with e+h < p) sends to rank r-h the blocks of positions e+h, e+3h, ...; see
//   slice_trees.hpp for where the blocks wait (Scratch, about n/2 on the busiest rank).
//   cost ceil(log2 p)a + ((p-1)/p)n b
// Broadcast = Scatter then AllGather, both on the renumbered blocks of Output; no scratch.
//   cost 2ceil(log2 p)a + 2((p-1)/p)n b
// Gather: the Scatter run backwards (reverse.hpp): each subtree's blocks gather at position e
//   before it hands them to r+h, the root receiving last; the same scratch as the Scatter.
//   cost ceil(log2 p)a + ((p-1)/p)n b
// Barrier (dissemination in NHR's direction), K steps: at step k rank r signals (r-h) mod p and
//   waits for (r+h) mod p; after step k it has heard from r..r+2h-1, after the last from all p.
//   cost ceil(log2 p)a
//
// ReduceScatter and AllGather keep the caller's block order (HCCL's keepOrder), so their slices
// of a step are strided blocks, sent as one transfer per contiguous run.
// Rank order: no for the reductions (a slice's tree wraps around rank 0 unless s = 0); the
// copies-only collectives trivially keep it. Uneven blocks: every generator handles them.
#include <algorithm>
#include <array>
#include <optional>

#include "algorithms/generators.hpp"
#include "algorithms/reverse.hpp"
#include "algorithms/slice_trees.hpp"

namespace hccl::algo {
namespace {

// HCCL's slice renumbering. Pass k (while a ReduceScatter step still moves more than one slice)
// cuts the current order into parts of length p/2^k and moves each part's even positions to its
// first half, odd ones to its second; after pass k the slices one step moves (a residue class
// mod 2^(k+1), up to wrap-around) are adjacent. Stops after a pass that met an odd-length part.
std::vector<std::uint32_t> nhrSliceMap(std::uint32_t p) {
  std::vector<std::uint32_t> order(p), next(p);
  for (std::uint32_t i = 0; i < p; ++i) order[i] = i;
  std::uint32_t len = p;
  for (std::uint32_t k = 0; k < tree::stepCount(p) && tree::sharesAt(p, k) > 1; ++k) {
    bool oddPart = false;
    for (std::uint32_t start = 0; start < p; start += len) {
      const std::uint32_t end = std::min(start + len, p);
      for (std::uint32_t i = start; i < end; ++i) {
        const std::uint32_t off = i - start;
        next[start + (off % 2 == 0 ? off / 2 : (off + len) / 2)] = order[i];
      }
      oddPart = oddPart || (end - start) % 2 == 1;
    }
    order = next;
    if (oddPart) break;
    len /= 2;
  }
  std::vector<std::uint32_t> place(p);
  for (std::uint32_t i = 0; i < p; ++i) place[order[i]] = i;
  return place;
}

tree::SliceTree keepOrder(std::uint32_t p) {
  return tree::SliceTree(p, +1);
}

tree::SliceTree renumbered(std::uint32_t p) {
  return tree::SliceTree(p, +1, nhrSliceMap(p));
}

// The same, kept for the next call: the selector costs every representative rank, candidate and
// size of a communicator on one p, and the map costs O(p log p) to make.
const tree::SliceTree& renumberedOnce(std::uint32_t p) {
  thread_local std::optional<tree::SliceTree> last;
  if (!last || last->ranks() != p) last.emplace(renumbered(p));
  return *last;
}

}  // namespace

RankSchedule nhrReduceScatter(const Problem& pb, std::uint32_t r) {
  return tree::reduceScatterCollective(pb, r, keepOrder(pb.ranks));
}

std::uint64_t nhrReduceScatterScratch(const Problem& pb, std::uint32_t r) {
  return tree::reduceScatterCollectiveScratch(pb, r, keepOrder(pb.ranks));
}

RankSchedule nhrAllGather(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const Slice ownIn{Buf::Input, 0, bl.count(r)};
  // Out of place the own block is always sent from the input; the output copy rides along with
  // the first step, whose receives never land in that block.
  const tree::Holding src = [&](std::uint32_t q, std::uint32_t s) {
    return s == q && !pb.inPlace ? Slice{Buf::Input, 0, bl.count(q)} : bl.block(Buf::Output, s);
  };
  const tree::Holding dst = [&](std::uint32_t, std::uint32_t s) {
    return bl.block(Buf::Output, s);
  };
  tree::allGather(out, keepOrder(pb.ranks), r, src, dst);
  if (!pb.inPlace) copy(out.firstStep(), bl.block(Buf::Output, r), ownIn);
  prune(out);
  return out;
}

RankSchedule nhrAllReduce(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const Slice all{Buf::Output, 0, pb.total()};
  if (pb.ranks == 1) {
    if (!pb.inPlace) copy(out.newStep(), all, Slice{Buf::Input, 0, pb.total()});
    return out;
  }
  const tree::SliceTree t = renumbered(pb.ranks);
  const Slice output{Buf::Output, 0, 0};
  const tree::ReduceBuffers b{pb.inPlace ? output : Slice{Buf::Input, 0, 0}, output, 0};
  tree::reduceScatter(out, t, r, bl, b,
                      [&](std::uint32_t q) { return bl.block(Buf::Output, t.block(q)); });
  const tree::Holding block = [&](std::uint32_t, std::uint32_t s) {
    return bl.block(Buf::Output, t.block(s));
  };
  tree::allGather(out, t, r, block, block);
  prune(out);
  return out;
}

Metrics nhrAllReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                         const CostParams& params) {
  if (!someBlockEmpty(pb)) return lockstepCost(g, pb, elemSize, params);
  constexpr std::array phases{tree::CostPhase::ReduceScatter, tree::CostPhase::AllGather};
  return tree::phasesPath(renumberedOnce(pb.ranks), pb.blocks, phases, elemSize, params);
}

RankSchedule nhrScatter(const Problem& pb, std::uint32_t r) {
  return tree::scatterCollective(pb, r, keepOrder(pb.ranks));
}

RankSchedule nhrBroadcast(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const tree::SliceTree t = renumbered(pb.ranks);
  const tree::Holding block = [&](std::uint32_t, std::uint32_t s) {
    return pb.blocks.block(Buf::Output, t.block(s));
  };
  tree::scatter(out, t, r, pb.root, block);
  tree::allGather(out, t, r, block, block, pb.root);
  prune(out);
  return out;
}

Metrics nhrBroadcastCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                         const CostParams& params) {
  if (!someBlockEmpty(pb)) return lockstepCost(g, pb, elemSize, params);
  constexpr std::array phases{tree::CostPhase::Scatter, tree::CostPhase::AllGather};
  return tree::phasesPath(renumberedOnce(pb.ranks), pb.blocks, phases, elemSize, params, pb.root);
}

std::uint64_t nhrScatterScratch(const Problem& pb, std::uint32_t r) {
  return tree::scatterScratch(pb, r, keepOrder(pb.ranks));
}

RankSchedule nhrGather(const Problem& pb, std::uint32_t r) {
  return gatherByReversing(pb, r, nhrScatter);
}

RankSchedule nhrBarrier(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks;
  for (std::uint32_t k = 0; k < tree::stepCount(p); ++k) {
    const std::uint64_t h = (std::uint64_t{1} << k) % p;
    Step& s = out.newStep();
    sendSignal(s, static_cast<std::uint32_t>((r + p - h) % p));
    recvSignal(s, static_cast<std::uint32_t>((r + h) % p));
  }
  return out;
}

// Rank paths (rank_cost.hpp, PathFn) from per-step counts (tree::rankPhasesPath): the phases each
// generator above runs, on the same slice numbering.
namespace {
using P = tree::CostPhase;
}  // namespace

Metrics nhrReduceScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                             const CostParams& params) {
  return tree::rankPhasesPath(keepOrder(pb.ranks), pb.blocks, std::array{P::ReduceScatter}, r,
                              elemSize, params);
}

Metrics nhrAllGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                         const CostParams& params) {
  return tree::rankPhasesPath(keepOrder(pb.ranks), pb.blocks, std::array{P::AllGather}, r, elemSize,
                              params);
}

Metrics nhrAllReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                         const CostParams& params) {
  return tree::rankPhasesPath(renumberedOnce(pb.ranks), pb.blocks,
                              std::array{P::ReduceScatter, P::AllGather}, r, elemSize, params);
}

Metrics nhrBroadcastPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                         const CostParams& params) {
  return tree::rankPhasesPath(renumberedOnce(pb.ranks), pb.blocks,
                              std::array{P::Scatter, P::AllGather}, r, elemSize, params, pb.root);
}

Metrics nhrScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                       const CostParams& params) {
  return tree::rankPhasesPath(keepOrder(pb.ranks), pb.blocks, std::array{P::Scatter}, r, elemSize,
                              params, pb.root);
}

Metrics nhrGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                      const CostParams& params) {
  return tree::rankPhasesPath(keepOrder(pb.ranks), pb.blocks, std::array{P::Gather}, r, elemSize,
                              params, pb.root);
}

// Reduce (rs_gather_reduce.cpp): the ReduceScatter, then the Gather to the root.
Metrics nhrReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                      const CostParams& params) {
  return tree::rankPhasesPath(keepOrder(pb.ranks), pb.blocks,
                              std::array{P::ReduceScatter, P::Gather}, r, elemSize, params,
                              pb.root);
}

}  // namespace hccl::algo
