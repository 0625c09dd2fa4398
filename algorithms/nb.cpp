// NB, Nonuniform Bruck (HCCL "NB"): ceil(log2 p) steps for any p with doubling distances and no
// extra data. The step structure follows hicann/hcomm's reduce_scatter_nb.cc, all_gather_nb.cc,
// scatter_nb.cc, broadcast_nb.cc and all_reduce_nb.cc. With K = ceil(log2 p), h = 2^k:
//
// ReduceScatter, K steps: NHR's mirror image (slice_trees.hpp, orientation -1). At step k rank r
//   sends to (r+h) mod p the partial sums of slices r+h, r+3h, r+5h, ... and receives from
//   (r-h) mod p those of r, r+2h, r+4h, ..., floor((p-1+h)/2h) slices each way, no renumbering,
//   so a step's slices are strided blocks sent as one transfer per contiguous run. Slice s is
//   summed along a binomial tree rooted at rank s over ranks s, s-1, s-2, ...; after the last
//   step rank r holds block r over all ranks. Partial sums live in Scratch[0, n) out of place
//   (Output in place); receives land in Scratch.
//   cost ceil(log2 p)a + ((p-1)/p)n b + ((p-1)/p)n g
// AllGather (Bruck), K steps: at step k rank r sends the blocks it holds, r, r-1, ..., r-m+1, to
//   (r+h) mod p and receives r-h, ..., r-h-m+1 from (r-h) mod p, m = h except at the last step of
//   a non-power-of-two p, where m = p - 2^floor(log2 p): the distance and the volume double each
//   step. After step k rank r holds the 2h (at the end all p) blocks r-2h+1..r, in place in
//   Output, so at most two transfers each way (the run wraps around block 0). No scratch.
//   cost ceil(log2 p)a + ((p-1)/p)n b
// AllReduce = ReduceScatter then AllGather on n split in p blocks, 2K steps. Out of place, step 0
//   receives straight into Output and reduces there with the input; later receives land in
//   Scratch.
//   cost 2ceil(log2 p)a + 2((p-1)/p)n b + ((p-1)/p)n g
// Scatter, K steps: NHR's scatter mirrored: scatter position e is rank root+e; at step k every
//   position e < h (with e+h < p) sends to rank r+h the blocks of positions e+h, e+3h, ... < p
//   (the receiver's subtree, see slice_trees.hpp; at most floor((p-1+h)/2h) blocks).
//   cost ceil(log2 p)a + ((p-1)/p)n b
// Broadcast = Scatter then AllGather, both on the blocks of Output; no scratch.
//   cost 2ceil(log2 p)a + 2((p-1)/p)n b
// Gather: the Scatter run backwards (reverse.hpp); the same steps, volumes and scratch.
//   cost ceil(log2 p)a + ((p-1)/p)n b
// Barrier (Bruck's dissemination, the AllGather's pattern without data), K steps: at step k rank
//   r signals (r+h) mod p and waits for (r-h) mod p. After step k it has heard, directly or
//   through others, from the 2h ranks r-2h+1..r, after the last step from all p.
//   cost ceil(log2 p)a
//
// Rank order: no for the reductions (slice s's tree runs s, s-1, ... and wraps around rank 0
// unless s = p-1); the copies-only collectives trivially keep it. Uneven blocks: every generator
// handles them.
#include <algorithm>
#include <array>

#include "algorithms/generators.hpp"
#include "algorithms/reverse.hpp"
#include "algorithms/slice_trees.hpp"

namespace hccl::algo {
namespace {

tree::SliceTree bruckTree(std::uint32_t p) {
  return tree::SliceTree(p, -1);
}

std::uint32_t minus(std::uint32_t r, std::uint64_t d, std::uint32_t p) {
  return static_cast<std::uint32_t>((r + p - d % p) % p);
}

// The Bruck AllGather on Output. `src(q, s)` is where rank q reads block s when it sends it.
// holdsAll: as tree::allGather's (a Broadcast's root receives nothing).
void bruckAllGather(RankSchedule& out, std::uint32_t p, std::uint32_t r, const Blocks& bl,
                    const tree::Holding& src, std::uint32_t holdsAll = tree::kNoRank) {
  for (std::uint32_t k = 0; k < tree::stepCount(p); ++k) {
    const std::uint64_t h = std::uint64_t{1} << k;
    const std::uint64_t m = std::min<std::uint64_t>(h, p - h);
    const std::uint32_t to = static_cast<std::uint32_t>((r + h) % p), from = minus(r, h, p);
    std::vector<tree::Piece> tx, rx;
    for (std::uint64_t i = 0; i < m; ++i) {
      const std::uint32_t sent = minus(r, i, p), got = minus(r, h + i, p);
      tx.push_back({src(r, sent), bl.block(Buf::Output, sent)});
      rx.push_back({src(from, got), bl.block(Buf::Output, got)});
    }
    Step& st = out.newStep();
    if (to != holdsAll) tree::sendRuns(st, to, std::move(tx));
    if (r != holdsAll) tree::recvRuns(st, from, std::move(rx));
  }
}

}  // namespace

RankSchedule nbReduceScatter(const Problem& pb, std::uint32_t r) {
  return tree::reduceScatterCollective(pb, r, bruckTree(pb.ranks));
}

RankSchedule nbAllGather(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const Slice ownIn{Buf::Input, 0, bl.count(r)};
  // Out of place the own block is always sent from the input; the output copy rides along with
  // the first step, whose receives never land in that block.
  bruckAllGather(out, pb.ranks, r, bl, [&](std::uint32_t q, std::uint32_t s) {
    return s == q && !pb.inPlace ? Slice{Buf::Input, 0, bl.count(q)} : bl.block(Buf::Output, s);
  });
  if (!pb.inPlace) copy(out.firstStep(), bl.block(Buf::Output, r), ownIn);
  prune(out);
  return out;
}

RankSchedule nbAllReduce(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  if (pb.ranks == 1) {
    if (!pb.inPlace)
      copy(out.newStep(), Slice{Buf::Output, 0, pb.total()}, Slice{Buf::Input, 0, pb.total()});
    return out;
  }
  const Slice output{Buf::Output, 0, 0};
  const tree::ReduceBuffers b{pb.inPlace ? output : Slice{Buf::Input, 0, 0}, output, 0};
  tree::reduceScatter(out, bruckTree(pb.ranks), r, bl, b,
                      [&](std::uint32_t q) { return bl.block(Buf::Output, q); });
  bruckAllGather(out, pb.ranks, r, bl,
                 [&](std::uint32_t, std::uint32_t s) { return bl.block(Buf::Output, s); });
  prune(out);
  return out;
}

std::uint64_t nbAllReduceScratch(const Problem& pb, std::uint32_t r) {
  if (pb.ranks == 1) return 0;
  // nbAllReduce's buffers; the Bruck AllGather works in Output alone.
  const Slice output{Buf::Output, 0, 0};
  const tree::ReduceBuffers b{pb.inPlace ? output : Slice{Buf::Input, 0, 0}, output, 0};
  return tree::reduceScatterScratch(bruckTree(pb.ranks), r, pb.blocks, b, [&](std::uint32_t q) {
    return pb.blocks.block(Buf::Output, q);
  });
}

std::uint64_t nbReduceScatterScratch(const Problem& pb, std::uint32_t r) {
  return tree::reduceScatterCollectiveScratch(pb, r, bruckTree(pb.ranks));
}

Metrics nbAllReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                        const CostParams& params) {
  if (!someBlockEmpty(pb)) return lockstepCost(g, pb, elemSize, params);
  constexpr std::array phases{tree::CostPhase::ReduceScatter, tree::CostPhase::BruckAllGather};
  return tree::phasesPath(bruckTree(pb.ranks), pb.blocks, phases, elemSize, params);
}

RankSchedule nbScatter(const Problem& pb, std::uint32_t r) {
  return tree::scatterCollective(pb, r, bruckTree(pb.ranks));
}

RankSchedule nbBroadcast(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const tree::Holding block = [&](std::uint32_t, std::uint32_t s) {
    return bl.block(Buf::Output, s);
  };
  tree::scatter(out, bruckTree(pb.ranks), r, pb.root, block);
  bruckAllGather(out, pb.ranks, r, bl, block, pb.root);
  prune(out);
  return out;
}

Metrics nbBroadcastCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                        const CostParams& params) {
  if (!someBlockEmpty(pb)) return lockstepCost(g, pb, elemSize, params);
  constexpr std::array phases{tree::CostPhase::Scatter, tree::CostPhase::BruckAllGather};
  return tree::phasesPath(bruckTree(pb.ranks), pb.blocks, phases, elemSize, params, pb.root);
}

std::uint64_t nbScatterScratch(const Problem& pb, std::uint32_t r) {
  return tree::scatterScratch(pb, r, bruckTree(pb.ranks));
}

RankSchedule nbGather(const Problem& pb, std::uint32_t r) {
  return gatherByReversing(pb, r, nbScatter);
}

RankSchedule nbBarrier(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks;
  for (std::uint32_t k = 0; k < tree::stepCount(p); ++k) {
    const std::uint64_t h = std::uint64_t{1} << k;
    Step& s = out.newStep();
    sendSignal(s, static_cast<std::uint32_t>((r + h) % p));
    recvSignal(s, minus(r, h, p));
  }
  return out;
}

// Rank paths (rank_cost.hpp, PathFn) from per-step counts (tree::rankPhasesPath): the phases each
// generator above runs, on the same slice numbering.
namespace {
using P = tree::CostPhase;
}  // namespace

Metrics nbReduceScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                            const CostParams& params) {
  return tree::rankPhasesPath(bruckTree(pb.ranks), pb.blocks, std::array{P::ReduceScatter}, r,
                              elemSize, params);
}

Metrics nbAllGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                        const CostParams& params) {
  return tree::rankPhasesPath(bruckTree(pb.ranks), pb.blocks, std::array{P::BruckAllGather}, r,
                              elemSize, params);
}

Metrics nbAllReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                        const CostParams& params) {
  return tree::rankPhasesPath(bruckTree(pb.ranks), pb.blocks,
                              std::array{P::ReduceScatter, P::BruckAllGather}, r, elemSize, params);
}

Metrics nbBroadcastPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                        const CostParams& params) {
  return tree::rankPhasesPath(bruckTree(pb.ranks), pb.blocks,
                              std::array{P::Scatter, P::BruckAllGather}, r, elemSize, params,
                              pb.root);
}

Metrics nbScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                      const CostParams& params) {
  return tree::rankPhasesPath(bruckTree(pb.ranks), pb.blocks, std::array{P::Scatter}, r, elemSize,
                              params, pb.root);
}

Metrics nbGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                     const CostParams& params) {
  return tree::rankPhasesPath(bruckTree(pb.ranks), pb.blocks, std::array{P::Gather}, r, elemSize,
                              params, pb.root);
}

// Reduce (rs_gather_reduce.cpp): the ReduceScatter, then the Gather to the root.
Metrics nbReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                     const CostParams& params) {
  return tree::rankPhasesPath(bruckTree(pb.ranks), pb.blocks,
                              std::array{P::ReduceScatter, P::Gather}, r, elemSize, params,
                              pb.root);
}

}  // namespace hccl::algo
