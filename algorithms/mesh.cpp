// Mesh (HCCL "fullmesh"): every pair of ranks is directly connected and all links run at once.
//
// AllGather, 1 step: rank r sends its block to every peer and receives every peer's block into
// its place; afterwards every rank holds all p blocks.
//   cost a + (1/p)n b
// ReduceScatter, 1 step: rank r sends block j of its input to rank j, for every j, and receives
// every peer's contribution to block r into its own scratch slot; it then reduces the p
// contributions locally in rank order x_0 (+) x_1 (+) ... (+) x_{p-1}.
//   cost a + (1/p)n b + ((p-1)/p)n g
// AllReduce = ReduceScatter then AllGather, 2 steps.
//   cost 2a + (2/p)n b + ((p-1)/p)n g
//
// Rank order: yes, every block is reduced locally from all p contributions in rank order.
// Memory: ReduceScatter needs scratch for the p-1 contributions of the rank's block.
#include "algorithms/generators.hpp"

namespace hccl::algo {

void meshReduceStep(RankSchedule& out, std::uint32_t p, std::uint32_t r, std::uint64_t c, Slice dst,
                    const std::function<Slice(std::uint32_t)>& contribution) {
  Step& s = out.newStep();
  // Peers' contributions land in scratch slots in rank order, skipping our own.
  auto slot = [&](std::uint32_t i) {
    const std::uint64_t idx = i < r ? i : i - 1;
    return Slice{Buf::Scratch, idx * c, c};
  };
  for (std::uint32_t i = 1; i < p; ++i) {
    // Stagger the peers (r+1, r+2, ...) so that not every rank starts with rank 0.
    const std::uint32_t j = (r + i) % p;
    send(s, j, contribution(j));
    recv(s, j, slot(j));
  }
  if (p == 1) {
    copy(s, dst, contribution(r));
    return;
  }
  // Fold left to right: acc = x_0 (+) x_1, acc = acc (+) x_2, ...; the last fold writes dst.
  auto operand = [&](std::uint32_t i) { return i == r ? contribution(r) : slot(i); };
  // The running sum reuses the slot of the first peer it absorbs.
  const Slice acc = r == 0 ? slot(1) : slot(0);
  Slice left = operand(0);
  for (std::uint32_t i = 1; i < p; ++i) {
    const Slice into = i + 1 == p ? dst : acc;
    // `into` may only alias an operand exactly; the own contribution may sit where dst is.
    reduce(s, into, left, operand(i));
    left = into;
  }
}

RankSchedule meshReduceScatter(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  const Slice dst = pb.resultSlice(r);
  const Slice ownBlock = bl.block(src, r);
  // In place, writing the result at the start of the output could clobber our own block's
  // contribution before it is read; reduce into scratch first then.
  const bool viaScratch = pb.inPlace && ownBlock.overlaps(dst) && !(ownBlock == dst);
  const std::uint64_t c = bl.count(r);
  const Slice target = viaScratch ? Slice{Buf::Scratch, (pb.ranks - 1) * c, c} : dst;
  meshReduceStep(out, pb.ranks, r, c, target, [&](std::uint32_t j) { return bl.block(src, j); });
  if (viaScratch) copy(out.steps.back(), dst, target);
  prune(out);
  return out;
}

RankSchedule meshAllGather(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const Slice mine = bl.block(Buf::Output, r);
  const Slice own = pb.inPlace ? mine : Slice{Buf::Input, 0, bl.count(r)};
  Step& s = out.newStep();
  for (std::uint32_t i = 1; i < pb.ranks; ++i) {
    const std::uint32_t j = (r + i) % pb.ranks;
    send(s, j, own);
    recv(s, j, bl.block(Buf::Output, j));
  }
  copy(s, mine, own);
  prune(out);
  return out;
}

RankSchedule meshAllReduce(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  const Slice mine = bl.block(Buf::Output, r);
  meshReduceStep(out, pb.ranks, r, bl.count(r), mine,
                 [&](std::uint32_t j) { return bl.block(src, j); });
  Step& s = out.newStep();
  for (std::uint32_t i = 1; i < pb.ranks; ++i) {
    const std::uint32_t j = (r + i) % pb.ranks;
    send(s, j, mine);
    recv(s, j, bl.block(Buf::Output, j));
  }
  prune(out);
  return out;
}

}  // namespace hccl::algo
