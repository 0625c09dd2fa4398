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

#include <algorithm>
#include <stdexcept>

#include "algorithms/generators.hpp"
#include "algorithms/rank_cost.hpp"
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

std::uint64_t meshScanScratch(const Problem& pb, std::uint32_t r) {
  return std::uint64_t{r} * pb.total();
}

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

namespace {

// A path followed by one more step (`step`: that step alone, its time in step.time), summed as
// the replay sums it: the start's time plus the step's.
Metrics then(const Metrics& start, const Metrics& step) {
  Metrics m = start;
  for (std::size_t l = 0; l < m.level.size(); ++l) {
    m.level[l].steps += step.level[l].steps;
    m.level[l].bytes += step.level[l].bytes;
  }
  m.reducedBytes += step.reducedBytes;
  m.time = start.time + step.time;
  return m;
}

Metrics priced(const StepLoad& sl, const CostParams& params) {
  Metrics m;
  m.time = addStepLoad(sl, params, m);
  return m;
}

}  // namespace

// The replay of meshBroadcast's schedule without building it (p ranks of up to 2p-3 transfers:
// p^2, 1.7 s a decision at 2048 ranks). Every rank posts its first step at time 0 and a step
// starts once the rank and every partner have posted theirs. The Scatter: the root sends every
// non-root its block and finishes at A (its p-1 blocks on its port); non-root r receives its c_r
// (if any) and finishes at B_r, its own load from 0. The AllGather: every non-root exchanges with
// every non-root (each that holds a block sends it to all the others) and receives the root's
// block if there is one, which the root sends to all; so every rank's AllGather step has, among
// itself and its partners, every non-root that posted late (B_r) and the root when its block is
// not empty, and starts at the same S = max(max_r B_r, A if c_root > 0); it ends at S plus its
// own step's cost. A rank without an AllGather step (every other block empty) ends at its
// Scatter's end. The critical path is the latest end, the lowest rank of equal ones, as the
// replay's. Every step is costed by addStepLoad() from its loads as addStep() sums them, so the
// times are the replay's to the last bit (tests/algorithms/closed_cost_test.cpp); where paths tie
// in time the replay keeps the partner matched first, which this does not model (only the steps
// and bytes of equal times may differ). O(p) time with O(1) memory: a rank's steps are priced
// again only when its counts differ from the rank before (an even split has two kinds of block).
Metrics meshBroadcastCost(const GeneratorSpec&, const Problem& pb, std::size_t elemSize,
                          const CostParams& params) {
  const std::uint32_t p = pb.ranks, root = pb.root;
  const std::uint64_t n = pb.total();
  if (p <= 1 || n == 0) return {};
  const Blocks& bl = pb.blocks;
  const LargestOther largestBut(bl);
  const std::uint64_t e = elemSize, cRoot = bl.count(root);
  // A rank's AllGather step: its c elements to `to` peers, and `got` elements (the largest block
  // `largest`) from their holders.
  const auto gatherStep = [&](std::uint64_t c, std::uint32_t to, std::uint64_t got,
                              std::uint64_t largest) {
    StepLoad sl;
    if (c > 0 && to > 0) {
      sl.add(0, Dir::Send, c * e);
      sl.total[0][0] = to * c * e;
    }
    if (got > 0) {
      sl.add(0, Dir::Recv, largest * e);
      sl.total[0][1] = got * e;
    }
    return priced(sl, params);
  };
  // The Scatter: the root's step (A; none when every other block is empty), the latest non-root.
  Metrics rootScatter;
  if (n > cRoot) {
    StepLoad sl;
    sl.add(0, Dir::Send, largestBut(root) * e);
    sl.total[0][0] = (n - cRoot) * e;
    rootScatter = priced(sl, params);
  }
  const auto receive = [&](std::uint64_t c) {
    StepLoad sl;
    sl.add(0, Dir::Recv, c * e);
    return priced(sl, params);
  };
  Metrics latest;  // the latest non-root Scatter end, the first of equal ones
  std::uint64_t pricedCount = 0;
  Metrics b;
  for (std::uint32_t r = 0; r < p; ++r) {
    const std::uint64_t c = bl.count(r);
    if (r == root || c == 0) continue;
    if (c != pricedCount) b = receive(pricedCount = c);
    if (b.time > latest.time) latest = b;
  }
  const Metrics start = cRoot > 0 && rootScatter.time > latest.time ? rootScatter : latest;
  // Rank r's end: its AllGather step after `start`, or without one its Scatter's end.
  const auto endOf = [&](std::uint32_t r) -> Metrics {
    const std::uint64_t c = bl.count(r);
    // The root sends its block to all and receives nothing (its buffer is not the output).
    if (r == root) return cRoot > 0 ? then(start, gatherStep(cRoot, p - 1, 0, 0)) : rootScatter;
    if ((p > 2 && c > 0) || n > c) return then(start, gatherStep(c, p - 2, n - c, largestBut(r)));
    return c > 0 ? receive(c) : Metrics{};
  };
  // The latest end, the lowest rank of equal ones. A rank's end is a function of whether it is
  // the root, its count and the largest other block: priced again only when these differ from
  // the rank's before, and the path built for the slowest rank alone.
  std::uint32_t slowest = 0;
  double latestEnd = 0, end = 0;
  std::uint64_t lastCount = 0, lastOther = 0;
  for (std::uint32_t r = 0; r < p; ++r) {
    const std::uint64_t c = bl.count(r), other = r == root ? 0 : largestBut(r);
    if (r == 0 || r == root || r == root + 1 || c != lastCount || other != lastOther)
      end = endOf(r).time;
    lastCount = c;
    lastOther = other;
    if (r == 0 || end > latestEnd) {
      latestEnd = end;
      slowest = r;
    }
  }
  return endOf(slowest);
}

}  // namespace hccl::algo
