// Ring: every rank receives from its left neighbour (r-1) and sends to its right (r+1).
//
// ReduceScatter, p-1 steps. The data is cut into p blocks. At step k (k = 0..p-2) rank r sends
// its partial sum of block r-1-k to the right and receives the left neighbour's partial sum of
// block r-2-k, which it reduces with its own contribution. A block's partial sum starts at rank
// b+1 and travels once around the ring, so after step k rank r holds block r-2-k summed over the
// k+2 ranks r-k-1..r, and after the last step it holds block r over all p ranks.
//   cost (p-1)a + ((p-1)/p)n b + ((p-1)/p)n g
// AllGather, p-1 steps: at step k rank r forwards block r-k (its own block first) and receives
// block r-k-1; after step k it holds the k+2 blocks r-k-1..r.
//   cost (p-1)a + ((p-1)/p)n b
// AllReduce = ReduceScatter then AllGather on the same blocks, 2(p-1) steps.
//   cost 2(p-1)a + 2((p-1)/p)n b + ((p-1)/p)n g
// Broadcast: the whole buffer travels root -> root+1 -> ... -> root-1, one hop per step.
//   cost (p-1)a + (p-1)n b
// Reduce: the partial sum travels root+1 -> root+2 -> ... -> root, each rank adding its own.
//   cost (p-1)a + (p-1)n b + (p-1)n g
//   (The reference's alternative rows, Broadcast as Scatter+AllGather at 2(p-1)a + 2(p-1)n b and
//   Reduce as ReduceScatter+Gather, describe other schedules; this file follows the primary rows.)
// Scatter, p-1 steps, farthest block first: with position e = r - root, the root sends at step k
//   the block of position p-1-k to its right; position e receives at step k the block of position
//   p-2+e-k (its own at the last step, straight into Output) and forwards it at step k+1, so the
//   block of position d leaves at step p-1-d and arrives at step p-2. Every link carries one block
//   per step; blocks in transit alternate between two scratch slots of the largest block.
//   cost (p-1)a + ((p-1)/p)n b
// Gather: the Scatter run backwards (reverse.hpp), nearest block first into the root.
//   cost (p-1)a + ((p-1)/p)n b
//
// Costed in lockstep (rank_cost.hpp); AllReduce with empty blocks by ringAllReduceCost below,
// Broadcast and Reduce as chains. A rank's path is summed from its per-step counts (the *Path
// functions at the end, PathFn): O(p) small steps, no schedule.
//
// Rank order: no for the reductions (block b is accumulated starting from rank b+1); the
// copies-only collectives trivially keep it.
#include <algorithm>
#include <utility>

#include "algorithms/generators.hpp"
#include "algorithms/reverse.hpp"

namespace hccl::algo {
namespace {

std::uint32_t wrap(std::int64_t x, std::uint32_t p) {
  const auto m = static_cast<std::int64_t>(p);
  return static_cast<std::uint32_t>(((x % m) + m) % m);
}

// The ReduceScatter pass shared by AllReduce and ReduceScatter: after it, rank r holds block r
// summed over every rank. Partial sums are kept where `acc` says.
//   own(b):  this rank's contribution to block b
//   acc(b):  where the partial sum of block b is received and accumulated
struct RingReducePass {
  const Blocks& blocks;
  std::uint32_t p, r;

  template <typename Own, typename RecvAt, typename AccAt>
  void run(RankSchedule& out, Own own, RecvAt recvAt, AccAt accAt) const {
    const std::uint32_t left = wrap(r - 1LL, p), right = wrap(r + 1LL, p);
    for (std::uint32_t k = 0; k + 1 < p; ++k) {
      const std::uint32_t sendBlock = wrap(static_cast<std::int64_t>(r) - 1 - k, p);
      const std::uint32_t recvBlock = wrap(static_cast<std::int64_t>(r) - 2 - k, p);
      Step& s = out.newStep();
      send(s, right, k == 0 ? own(sendBlock) : accAt(sendBlock, k - 1));
      const Slice landed = recvAt(recvBlock, k);
      recv(s, left, landed);
      reduce(s, accAt(recvBlock, k), landed, own(recvBlock));
    }
  }
};

void ringGatherPass(RankSchedule& out, const Blocks& blocks, std::uint32_t p, std::uint32_t r,
                    Slice firstSend) {
  const std::uint32_t left = wrap(r - 1LL, p), right = wrap(r + 1LL, p);
  for (std::uint32_t k = 0; k + 1 < p; ++k) {
    Step& s = out.newStep();
    const std::uint32_t sendBlock = wrap(static_cast<std::int64_t>(r) - k, p);
    send(s, right, k == 0 ? firstSend : blocks.block(Buf::Output, sendBlock));
    recv(s, left, blocks.block(Buf::Output, wrap(static_cast<std::int64_t>(r) - k - 1, p)));
  }
}

}  // namespace

RankSchedule ringReduceScatter(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const std::uint32_t p = pb.ranks;
  const Slice mine = pb.resultSlice(r);
  if (!pb.inPlace) {
    if (p == 1) copy(out.newStep(), mine, bl.block(Buf::Input, 0));
    const std::uint64_t maxBlock = bl.largest();
    // Partial sums alternate between two scratch slots: a step sends one while receiving into
    // the other. The last partial sum (block r) lands in the output directly.
    auto slot = [&](std::uint32_t b, std::uint32_t k) {
      if (k + 2 == p) return mine;
      return Slice{Buf::Scratch, (k % 2) * maxBlock, bl.count(b)};
    };
    RingReducePass{bl, p, r}.run(
        out, [&](std::uint32_t b) { return bl.block(Buf::Input, b); }, slot, slot);
    return out;
  }
  // In place: partial sums accumulate in the output's own blocks; receives land in scratch.
  RingReducePass{bl, p, r}.run(
      out, [&](std::uint32_t b) { return bl.block(Buf::Output, b); },
      [&](std::uint32_t b, std::uint32_t) {
        return Slice{Buf::Scratch, 0, bl.count(b)};
      },
      [&](std::uint32_t b, std::uint32_t) { return bl.block(Buf::Output, b); });
  // Block r is complete at its own offset; MPI wants it at the start of the buffer.
  const Slice done = bl.block(Buf::Output, r);
  if (!(done == mine)) {
    if (done.offset >= mine.count) {
      copy(out.lastStep(), mine, done);
    } else {  // overlapping move (uneven blocks): go through scratch
      Step& s = out.lastStep();
      copy(s, Slice{Buf::Scratch, 0, mine.count}, done);
      copy(s, mine, Slice{Buf::Scratch, 0, mine.count});
    }
  }
  return out;
}

RankSchedule ringAllGather(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Slice own =
      pb.inPlace ? pb.blocks.block(Buf::Output, r) : Slice{Buf::Input, 0, pb.blocks.count(r)};
  ringGatherPass(out, pb.blocks, pb.ranks, r, own);
  // Out of place the own block also goes to its output slot; the first step's transfers do not
  // touch that slot, so the copy rides along with them.
  if (!pb.inPlace) copy(out.firstStep(), pb.blocks.block(Buf::Output, r), own);
  return out;
}

RankSchedule ringAllReduce(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const std::uint32_t p = pb.ranks;
  if (p == 1) {
    if (!pb.inPlace) copy(out.newStep(), bl.span(Buf::Output, 0, 1), bl.span(Buf::Input, 0, 1));
    return out;
  }
  auto outBlock = [&](std::uint32_t b, std::uint32_t) { return bl.block(Buf::Output, b); };
  if (!pb.inPlace) {
    // Partial sums are received straight into the output block they belong to and reduced there
    // with this rank's input: no scratch, no initial copy.
    RingReducePass{bl, p, r}.run(
        out, [&](std::uint32_t b) { return bl.block(Buf::Input, b); }, outBlock, outBlock);
  } else {
    RingReducePass{bl, p, r}.run(
        out, [&](std::uint32_t b) { return bl.block(Buf::Output, b); },
        [&](std::uint32_t b, std::uint32_t) {
          return Slice{Buf::Scratch, 0, bl.count(b)};
        },
        outBlock);
  }
  ringGatherPass(out, bl, p, r, bl.block(Buf::Output, r));
  return out;
}

RankSchedule ringBroadcast(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks;
  const std::uint32_t v = wrap(static_cast<std::int64_t>(r) - pb.root, p);  // hops from root
  const Slice all = {Buf::Output, 0, pb.total()};
  if (v > 0) recv(out.newStep(), wrap(r - 1LL, p), all);
  if (v + 1 < p) send(out.newStep(), wrap(r + 1LL, p), all);
  return out;
}

RankSchedule ringReduce(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks;
  const std::uint64_t n = pb.total();
  const std::uint32_t v = wrap(static_cast<std::int64_t>(r) - pb.root, p);
  const bool isRoot = v == 0;
  const Slice own = isRoot && pb.inPlace ? Slice{Buf::Output, 0, n} : Slice{Buf::Input, 0, n};
  if (p == 1) {
    copy(out.newStep(), Slice{Buf::Output, 0, n}, own);
    return out;
  }
  const std::uint32_t left = wrap(r - 1LL, p), right = wrap(r + 1LL, p);
  if (v == 1) {  // the chain starts here with this rank's input
    send(out.newStep(), right, own);
    return out;
  }
  // Receive the partial sum of ranks root+1..r-1, add our contribution, pass it on.
  const Slice acc = isRoot ? Slice{Buf::Output, 0, n} : Slice{Buf::Scratch, 0, n};
  const Slice landing = isRoot && pb.inPlace ? Slice{Buf::Scratch, 0, n} : acc;
  Step& s = out.newStep();
  recv(s, left, landing);
  reduce(s, acc, landing, own);
  if (!isRoot) send(out.newStep(), right, acc);
  return out;
}

RankSchedule ringScatter(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const std::uint32_t p = pb.ranks;
  const std::uint32_t e = wrap(static_cast<std::int64_t>(r) - pb.root, p);  // position
  const auto rankAt = [&](std::uint32_t d) { return (pb.root + d) % p; };
  const std::uint32_t right = wrap(r + 1LL, p), left = wrap(r - 1LL, p);
  if (e == 0) {
    const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
    for (std::uint32_t k = 0; k + 1 < p; ++k)
      send(out.newStep(), right, bl.block(src, rankAt(p - 1 - k)));
    if (!pb.inPlace)
      copy(out.firstStep(), Slice{Buf::Output, 0, bl.count(r)}, bl.block(Buf::Input, r));
    prune(out);
    return out;
  }
  const std::uint64_t slotSize = bl.largest();
  const auto inTransit = [&](std::uint32_t k, std::uint32_t d) {
    return d == e ? Slice{Buf::Output, 0, bl.count(r)}
                  : Slice{Buf::Scratch, (k % 2) * slotSize, bl.count(rankAt(d))};
  };
  // Step k: receive the block of position p-2+e-k (k >= e-1), forward the one of p-1+e-k (k >= e).
  for (std::uint32_t k = e - 1; k + 1 < p; ++k) {
    Step& s = out.newStep();
    if (k >= e) send(s, right, inTransit(k - 1, p - 1 + e - k));
    recv(s, left, inTransit(k, p - 2 + e - k));
  }
  prune(out);
  return out;
}

RankSchedule ringGather(const Problem& pb, std::uint32_t r) {
  return gatherByReversing(pb, r, ringScatter);
}

// scratchCount(ringAllReduce(pb, r)): out of place partial sums land in the output; in place
// step k receives block r-2-k at Scratch[0, count), every block but r-1 once.
std::uint64_t ringAllReduceScratch(const Problem& pb, std::uint32_t r) {
  const std::uint32_t p = pb.ranks;
  if (!pb.inPlace || p == 1) return 0;
  return LargestOther(pb.blocks)(wrap(r - 1LL, p));
}

// scratchCount(ringReduce(pb, r)): the chain's first rank sends its input; the others past it
// accumulate at Scratch[0, n), the root in its output (in place its receive lands in Scratch).
std::uint64_t ringReduceScratch(const Problem& pb, std::uint32_t r) {
  const std::uint32_t p = pb.ranks;
  const std::uint32_t v = wrap(static_cast<std::int64_t>(r) - pb.root, p);
  if (p == 1 || v == 1) return 0;
  return v > 0 || pb.inPlace ? pb.total() : 0;
}

// scratchCount(ringReduceScatter(pb, r)), walking the same steps without building them.
std::uint64_t ringReduceScatterScratch(const Problem& pb, std::uint32_t r) {
  const Blocks& bl = pb.blocks;
  const std::uint32_t p = pb.ranks;
  const auto received = [&](std::uint32_t k) {  // the block step k receives
    return wrap(static_cast<std::int64_t>(r) - 2 - k, p);
  };
  std::uint64_t top = 0;
  if (!pb.inPlace) {
    // Step k < p-2 receives into slot k%2; its send re-reads the previous step's slot, already
    // counted. The last step lands in the output.
    const std::uint64_t maxBlock = bl.largest();
    for (std::uint32_t k = 0; k + 2 < p; ++k)
      if (const std::uint64_t c = bl.count(received(k)); c > 0)
        top = std::max(top, (k % 2) * maxBlock + c);
    return top;
  }
  // In place every step's receive lands at Scratch[0, count). The overlapping final move of
  // block r through Scratch[0, count(r)) adds nothing: the last step received block r there.
  for (std::uint32_t k = 0; k + 1 < p; ++k) top = std::max(top, bl.count(received(k)));
  return top;
}

// scratchCount(ringScatter(pb, r)), and of ringGather's (reversing keeps the Scratch slices): a
// non-root's step k receives the block of position p-2+e-k into slot k%2 (its own, at the last
// step, into the output); its sends re-read the previous step's slot. The root uses none.
std::uint64_t ringScatterScratch(const Problem& pb, std::uint32_t r) {
  const Blocks& bl = pb.blocks;
  const std::uint32_t p = pb.ranks;
  const std::uint32_t e = wrap(static_cast<std::int64_t>(r) - pb.root, p);
  if (e == 0) return 0;
  const std::uint64_t slotSize = bl.largest();
  std::uint64_t top = 0;
  for (std::uint32_t k = e - 1; k + 2 < p; ++k)
    if (const std::uint64_t c = bl.count((pb.root + p - 2 + e - k) % p); c > 0)
      top = std::max(top, (k % 2) * slotSize + c);
  return top;
}

namespace {

// Block indices that walk down the ring one step at a time.
std::uint32_t down(std::uint32_t b, std::uint32_t p) {
  return b == 0 ? p - 1 : b - 1;
}

// The ReduceScatter pass: step k sends block r-1-k, receives and reduces block r-2-k.
void ringReducePassPath(PairPath& m, const Blocks& bl, std::uint32_t p, std::uint32_t r) {
  std::uint32_t sent = down(r, p);
  for (std::uint32_t k = 0; k + 1 < p; ++k) {
    const std::uint32_t got = down(sent, p);
    m.step(bl.count(sent), bl.count(got), bl.count(got));
    sent = got;
  }
}

// The AllGather pass: step k forwards block r-k, receives block r-k-1.
void ringGatherPassPath(PairPath& m, const Blocks& bl, std::uint32_t p, std::uint32_t r) {
  std::uint32_t sent = r;
  for (std::uint32_t k = 0; k + 1 < p; ++k) {
    const std::uint32_t got = down(sent, p);
    m.step(bl.count(sent), bl.count(got), 0);
    sent = got;
  }
}

// ringScatter's step k at position e (of p, from `root`) as (sent, received) counts, k from e-1
// (the root: 0) to p-2.
std::pair<std::uint64_t, std::uint64_t> ringScatterStep(const Problem& pb, std::uint32_t e,
                                                        std::uint32_t k) {
  const std::uint32_t p = pb.ranks;
  const auto at = [&](std::uint32_t d) { return pb.blocks.count((pb.root + d) % p); };
  if (e == 0) return {at(p - 1 - k), 0};
  return {k >= e ? at(p - 1 + e - k) : 0, at(p - 2 + e - k)};
}

}  // namespace

Metrics ringReduceScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                              const CostParams& params) {
  PairPath m(elemSize, params);
  ringReducePassPath(m, pb.blocks, pb.ranks, r);
  return m.path();
}

Metrics ringAllGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                          const CostParams& params) {
  PairPath m(elemSize, params);
  ringGatherPassPath(m, pb.blocks, pb.ranks, r);
  return m.path();
}

Metrics ringAllReducePath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                          const CostParams& params) {
  PairPath m(elemSize, params);
  ringReducePassPath(m, pb.blocks, pb.ranks, r);
  ringGatherPassPath(m, pb.blocks, pb.ranks, r);
  return m.path();
}

Metrics ringScatterPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                        const CostParams& params) {
  PairPath m(elemSize, params);
  const std::uint32_t p = pb.ranks, e = wrap(static_cast<std::int64_t>(r) - pb.root, p);
  for (std::uint32_t k = e == 0 ? 0 : e - 1; k + 1 < p; ++k) {
    const auto [sent, got] = ringScatterStep(pb, e, k);
    m.step(sent, got, 0);
  }
  return m.path();
}

// The Scatter's steps backwards, every transfer turned around (reverse.hpp).
Metrics ringGatherPath(const Problem& pb, std::uint32_t r, std::size_t elemSize,
                       const CostParams& params) {
  PairPath m(elemSize, params);
  const std::uint32_t p = pb.ranks, e = wrap(static_cast<std::int64_t>(r) - pb.root, p);
  const std::uint32_t first = e == 0 ? 0 : e - 1;
  for (std::uint32_t k = p - 1; k-- > first;) {
    const auto [sent, got] = ringScatterStep(pb, e, k);
    m.step(got, sent, 0);
  }
  return m.path();
}

// With every block non-empty the ranks run in lockstep. With fewer elements than ranks the empty
// blocks' transfers are pruned, and the critical path is a one-element block's chain around the
// ring twice, which every block of one element shows in lockstep:
//   2(p-1)(a + e b) + (p-1) e g.
Metrics ringAllReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                          const CostParams& params) {
  return lockstepCost(g, withoutEmptyBlocks(pb), elemSize, params);
}

}  // namespace hccl::algo
