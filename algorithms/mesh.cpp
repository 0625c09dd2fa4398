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
// Scatter (direct), 1 step: the root sends block i to rank i, for every i; HCCL's Star and Mesh
//   rooted form. Each non-root uses only its own count, so it serves ScatterV's rank-local
//   problems.
//   cost a + (1/p)n b (parallel links; the root's port carries ((p-1)/p)n)
// Gather (direct): the Scatter run backwards (reverse.hpp): every rank sends its block to the
//   root at once; serves GatherV's rank-local problems.
//   cost a + (1/p)n b
//
// Broadcast = Scatter + AllGather, 2 steps: the root sends block i to rank i; then every
//   non-root sends its block to every other non-root while the root sends its own block to
//   all. The root receives nothing (its buffer is not the call's output).
//   cost 2a + (2/p)n b (the reference's Mesh row)
// AllToAll (and AllToAllV), 1 step: rank r sends its block j to every j and receives every
//   peer's block for it; in place the receives land in Scratch (the blocks they replace are still
//   being sent) and are copied into place at the end of the step. AllToAllV uses only the rank's
//   row and column: it serves rank-local problems.
//   cost a + (1/p)n b (n: the bytes a rank sends, equal blocks)
// Scan and Exscan, 1 step: rank r sends its input to every higher rank and receives every lower
//   rank's input into Scratch slot i (i < r), then folds the slots left to right, x_0 (+) ... (+)
//   x_{r-1}, and for Scan its own input last, into Output: rank order by construction. Scratch:
//   r whole vectors on rank r, so this is for small messages (the model weighs it).
//   cost a + n b + (r) n g on rank r (the last rank's r = p-1 bounds the call)
// Barrier, 1 step: every rank signals every peer and waits for all of them.
//   cost a (p-1 zero-byte messages each way per rank)
//
// Rank order: yes, every block is reduced locally from all p contributions in rank order.
// Memory: ReduceScatter needs scratch for the p-1 contributions of the rank's block.
#include <fmt/format.h>

#include <stdexcept>

#include "algorithms/generators.hpp"
#include "algorithms/reverse.hpp"

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

std::uint64_t meshReduceScatterScratch(const Problem& pb, std::uint32_t r) {
  // meshReduceScatter's slots for the p-1 peers' contributions, and the in-place detour past them.
  const std::uint64_t c = pb.blocks.count(r);
  if (pb.ranks == 1 || c == 0) return 0;
  const Slice dst = pb.resultSlice(r),
              ownBlock = pb.blocks.block(pb.inPlace ? Buf::Output : Buf::Input, r);
  const bool viaScratch = pb.inPlace && ownBlock.overlaps(dst) && !(ownBlock == dst);
  return (pb.ranks - 1) * c + (viaScratch ? c : 0);
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

RankSchedule meshAllReduceGathering(const Problem& pb, std::uint32_t r, bool push) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  const Slice mine = bl.block(Buf::Output, r);
  meshReduceStep(out, pb.ranks, r, bl.count(r), mine,
                 [&](std::uint32_t j) { return bl.block(src, j); });
  Step& s = out.newStep();
  const auto gather = push ? sendPush : send;
  const auto take = push ? recvPush : recv;
  for (std::uint32_t i = 1; i < pb.ranks; ++i) {
    const std::uint32_t j = (r + i) % pb.ranks;
    gather(s, j, mine);
    take(s, j, bl.block(Buf::Output, j));
  }
  prune(out);
  return out;
}

RankSchedule meshAllReduce(const Problem& pb, std::uint32_t r) {
  return meshAllReduceGathering(pb, r, /*push=*/false);
}

RankSchedule meshScatter(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks;
  Step& s = out.newStep();
  if (r != pb.root) {
    recv(s, pb.root, Slice{Buf::Output, 0, pb.blocks.count(r)});
    prune(out);
    return out;
  }
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  for (std::uint32_t i = 1; i < p; ++i) {
    const std::uint32_t j = (r + i) % p;
    send(s, j, pb.blocks.block(src, j));
  }
  if (!pb.inPlace) copy(s, Slice{Buf::Output, 0, pb.blocks.count(r)}, pb.blocks.block(src, r));
  prune(out);
  return out;
}

RankSchedule meshGather(const Problem& pb, std::uint32_t r) {
  return gatherByReversing(pb, r, meshScatter);
}

RankSchedule meshBarrier(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks;
  if (p == 1) return out;
  Step& s = out.newStep();
  for (std::uint32_t i = 1; i < p; ++i) {
    sendSignal(s, (r + i) % p);
    recvSignal(s, (r + p - i) % p);
  }
  return out;
}

namespace {

void meshExchange(RankSchedule& out, std::uint32_t p, std::uint32_t r, const Blocks& sendBl,
                  const Blocks& recvBl, bool inPlace) {
  Step& s = out.newStep();
  std::uint64_t slot = 0;
  for (std::uint32_t i = 1; i < p; ++i) {
    const std::uint32_t to = (r + i) % p, from = (r + p - i) % p;
    send(s, to, sendBl.block(inPlace ? Buf::Output : Buf::Input, to));
    const Slice into = recvBl.block(Buf::Output, from);
    if (!inPlace) {
      recv(s, from, into);
      continue;
    }
    const Slice landing{Buf::Scratch, slot, into.count};
    slot += into.count;
    recv(s, from, landing);
    copy(s, into, landing);
  }
  if (!inPlace) copy(s, recvBl.block(Buf::Output, r), sendBl.block(Buf::Input, r));
  prune(out);
}

void requireEqualBlocks(const Problem& pb) {
  for (std::uint32_t j = 1; j < pb.ranks; ++j)
    if (pb.blocks.count(j) != pb.blocks.count(0))
      throw std::invalid_argument(fmt::format(
          "fullmesh AllToAll needs equal blocks: block {} holds {} elements, block 0 holds {}", j,
          pb.blocks.count(j), pb.blocks.count(0)));
}

}  // namespace

RankSchedule meshAllToAll(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  requireEqualBlocks(pb);
  meshExchange(out, pb.ranks, r, pb.blocks, pb.blocks, pb.inPlace);
  return out;
}

Metrics meshAllToAllPath(const Problem& pb, std::uint32_t, std::size_t elemSize,
                         const CostParams& params) {
  // meshExchange()'s one step: a block to each of the p-1 peers and one from each, in place too
  // (its landing copies move no bytes between ranks); equal blocks, so every rank alike. The
  // step's load is what addStep() adds up from those 2(p-1) transfers (one per peer and
  // direction, so the busiest is one block), without listing and sorting 2(p-1) of them (4095
  // peers at 4096 ranks, five representative ranks, each time the flat plan is costed).
  requireEqualBlocks(pb);
  Metrics m;
  const std::uint64_t bytes = pb.ranks > 1 ? pb.blocks.count(0) * elemSize : 0;
  if (bytes == 0) return m;  // pruned: no transfer, no step
  StepLoad sl;
  sl.used[0] = true;
  sl.busiest[0] = bytes;
  sl.total[0] = {bytes * (pb.ranks - 1), bytes * (pb.ranks - 1)};
  m.time += addStepLoad(sl, params, m);
  return m;
}

std::uint64_t meshAllToAllScratch(const Problem& pb, std::uint32_t r) {
  // meshExchange's landing slots, one per peer, packed.
  return pb.inPlace ? pb.total() - pb.blocks.count(r) : 0;
}

RankSchedule meshAllToAllV(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks recvBl = pb.pairs.recvBlocks(r);
  meshExchange(out, pb.ranks, r, pb.inPlace ? recvBl : pb.pairs.sendBlocks(r), recvBl, pb.inPlace);
  return out;
}

namespace {

RankSchedule meshPrefix(const Problem& pb, std::uint32_t r, bool exclusive) {
  RankSchedule out;
  const std::uint64_t n = pb.total();
  const Slice output{Buf::Output, 0, n};
  const Slice own = pb.inPlace ? output : Slice{Buf::Input, 0, n};
  const auto slot = [&](std::uint32_t i) { return Slice{Buf::Scratch, i * n, n}; };
  Step& s = out.newStep();
  for (std::uint32_t j = r + 1; j < pb.ranks; ++j) send(s, j, own);
  for (std::uint32_t i = 0; i < r; ++i) recv(s, i, slot(i));
  // acc = x_0 (+) ... (+) x_i, kept in slot i; the last fold writes Output.
  if (exclusive) {
    if (r == 1) copy(s, output, slot(0));
    for (std::uint32_t i = 1; i < r; ++i)
      reduce(s, i + 1 == r ? output : slot(i), slot(i - 1), slot(i));
  } else {
    for (std::uint32_t i = 1; i < r; ++i) reduce(s, slot(i), slot(i - 1), slot(i));
    if (r == 0)
      copy(s, output, own);
    else
      reduce(s, output, slot(r - 1), own);
  }
  prune(out);
  return out;
}

}  // namespace

RankSchedule meshScan(const Problem& pb, std::uint32_t r) {
  return meshPrefix(pb, r, false);
}

RankSchedule meshExscan(const Problem& pb, std::uint32_t r) {
  return meshPrefix(pb, r, true);
}

RankSchedule meshBroadcast(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks;
  const Blocks& bl = pb.blocks;
  out.steps.resize(2);
  Step& scatterStep = out.steps[0];
  Step& gatherStep = out.steps[1];
  if (r == pb.root) {
    for (std::uint32_t i = 1; i < p; ++i) {
      const std::uint32_t j = (r + i) % p;
      send(scatterStep, j, bl.block(Buf::Output, j));
      send(gatherStep, j, bl.block(Buf::Output, r));
    }
  } else {
    recv(scatterStep, pb.root, bl.block(Buf::Output, r));
    for (std::uint32_t i = 1; i < p; ++i) {
      const std::uint32_t j = (r + i) % p;
      if (j != pb.root) send(gatherStep, j, bl.block(Buf::Output, r));
      recv(gatherStep, j, bl.block(Buf::Output, j));
    }
  }
  prune(out);
  return out;
}

}  // namespace hccl::algo
