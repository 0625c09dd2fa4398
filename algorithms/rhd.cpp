// Recursive Halving-Doubling (HCCL "H-D_R"), for any rank count.
//
// Power-of-two p: log2(p) exchange rounds between partners r XOR d.
//   ReduceScatter: distance halving (d = p/2, p/4, .., 1); each round a rank keeps the half of its
//     current block range on its side of the partner split and sends the other half, so after
//     round k it holds p/2^(k+1) blocks summed over 2^(k+1) ranks; block i ends on rank i.
//     cost log(p)a + ((p-1)/p)n b + ((p-1)/p)n g
//   AllGather: distance doubling (d = 1, 2, .., p/2); the range a rank holds doubles each round.
//     cost log(p)a + ((p-1)/p)n b
//   AllReduce: vector halving with distance doubling (ReduceScatter on n split in p pieces, blocks
//     end bit-reversed, which AllReduce does not mind), then the mirror AllGather.
//     cost 2log(p)a + 2((p-1)/p)n b + ((p-1)/p)n g
//   Broadcast: binomial tree by distance halving, the whole buffer each round (costed by
//   rhdBroadcastCost: the rounds and the unfold, one chain of equal steps).
//     cost log(p)(a + n b)
//   Reduce: the AllReduce ReduceScatter, then a binomial gather to the root.
//     cost 2log(p)a + 2((p-1)/p)n b + ((p-1)/p)n g
//
// Other p: let p' = 2^floor(log2 p) and r = p - p'. The first 2r ranks ("part1") form pairs
// (2i, 2i+1). Step 1 folds each pair into one rank, which then stands for both (rank 1 merges
// into rank 0 in HCCL's 5-rank example); the p' remaining ranks run the power-of-two algorithm
// with renumbered ranks (pair i -> i, rank j >= 2r -> j - r, an order-preserving map); a last
// step restores part1.
//   AllReduce:      fold a+nb+ng; RS and AG on p' ranks; send the result back a+nb.
//                   cost (2floor(log p)+2)a + (2(p'-1)/p'+2)n b + ((p'-1)/p'+1)n g
//   ReduceScatter:  fold the whole vector; non-uniform RS among p' ranks where a pair's survivor
//                   owns both blocks of the pair (floor(log p) rounds, moving between
//                   (k+2^k-1)n/p and (2^(k+1)-2)n/p, k = floor(log p), depending on how the
//                   doubled owners fall); then the survivor sends block 2i+1 back a+(1/p)nb.
//   AllGather:      the mirror: block 2i+1 goes to its survivor, non-uniform AG, the survivor
//                   sends the whole result back (a+nb).
//   Broadcast:      the root's parity picks which rank of each pair joins the p' ranks; a
//                   binomial tree among them, then one step to the ranks left out.
//                   cost ceil(log p)(a+nb)
//   Reduce:         fold (survivor chosen by the root's parity), the p' ReduceScatter, a binomial
//                   gather to the root. cost (2floor(log p)+1)a + (2(p'-1)/p'+1)n b +
//                   ((p'-1)/p'+1)n g
//                   Costed by rhdReduceCost: the replay's rules (metrics.hpp) applied to every
//                   rank's per-step counts (a rank waits on partners the fold delays, so lockstep
//                   does not describe it), O(p log p) time and O(p) memory, no schedule built.
//
// Rank order: AllReduce and Reduce merge aligned groups of neighbouring ranks (pairs, then
// distance doubling on an order-preserving renumbering) with the lower group on the left, so they
// reduce in rank order. ReduceScatter pairs ranks p/2 apart first: not in rank order.
#include <algorithm>
#include <bit>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/slice_trees.hpp"

namespace hccl::algo {
namespace {

// The part1 fold: which ranks take part in the power-of-two core and under which number.
struct Fold {
  std::uint32_t p, core, extra;  // p = core + extra, core a power of two
  std::uint32_t keepOdd;         // 1 when the odd rank of each pair is the survivor

  Fold(std::uint32_t ranks, std::uint32_t odd)
      : p(ranks), core(std::bit_floor(ranks)), extra(ranks - std::bit_floor(ranks)), keepOdd(odd) {}

  bool inPart1(std::uint32_t r) const { return r < 2 * extra; }
  bool active(std::uint32_t r) const { return !inPart1(r) || r % 2 == keepOdd; }
  std::uint32_t pairPeer(std::uint32_t r) const { return r ^ 1u; }
  std::uint32_t coreRank(std::uint32_t r) const { return inPart1(r) ? r / 2 : r - extra; }
  std::uint32_t rankOf(std::uint32_t c) const { return c < extra ? 2 * c + keepOdd : c + extra; }
  // First original block owned by core rank c (c == core gives p): a survivor owns its pair's two.
  std::uint32_t firstBlock(std::uint32_t c) const { return c < extra ? 2 * c : c + extra; }
  std::uint32_t rounds() const { return static_cast<std::uint32_t>(std::countr_zero(core)); }
};

struct Range {
  std::uint32_t lo, hi;
};

// Where a rank's running partial sums live. They start in `own` (the caller's input, possibly
// read-only) and move to `acc` at the first reduction; both address the full vector by offset.
struct Partials {
  Slice own, acc;
  bool moved = false;
  Slice at(std::uint64_t off, std::uint64_t count) const {
    const Slice& b = moved ? acc : own;
    return {b.buf, b.offset + off, count};
  }
  Slice accAt(std::uint64_t off, std::uint64_t count) const {
    return {acc.buf, acc.offset + off, count};
  }
};

// Reduces `landing` (a peer's partial sum of [off, off+count)) into the partials, keeping the
// lower group on the left.
void accumulate(Step& s, Partials& pt, std::uint64_t off, std::uint64_t count, Slice landing,
                bool iAmLower) {
  const Slice mine = pt.at(off, count);
  const Slice dst = pt.accAt(off, count);
  if (iAmLower)
    reduce(s, dst, mine, landing);
  else
    reduce(s, dst, landing, mine);
}

// Power-of-two ReduceScatter with vector halving and distance doubling over `blocks` (one per
// core rank). Returns the ranges held before each round, for the mirror AllGather or gather.
std::vector<Range> halvingDoublingRS(RankSchedule& out, const Fold& f, std::uint32_t me,
                                     const Blocks& blocks, Partials& pt, Slice landingBase) {
  std::vector<Range> before;
  Range cur{0, f.core};
  for (std::uint32_t k = 0; k < f.rounds(); ++k) {
    const std::uint32_t bit = 1u << k, partner = f.rankOf(me ^ bit);
    const std::uint32_t mid = (cur.lo + cur.hi) / 2;
    const bool lower = (me & bit) == 0;
    const Range keep = lower ? Range{cur.lo, mid} : Range{mid, cur.hi};
    const Range give = lower ? Range{mid, cur.hi} : Range{cur.lo, mid};
    before.push_back(cur);
    const Slice g = blocks.span(Buf::Output, give.lo, give.hi);
    const Slice kp = blocks.span(Buf::Output, keep.lo, keep.hi);
    const Slice landing{landingBase.buf, landingBase.offset, kp.count};
    Step& s = out.newStep();
    send(s, partner, pt.at(g.offset, g.count));
    recv(s, partner, landing);
    accumulate(s, pt, kp.offset, kp.count, landing, lower);
    pt.moved = true;
    cur = keep;
  }
  return before;
}

// The mirror of halvingDoublingRS: gathers the full vector (in the accumulator) on every core rank.
void halvingDoublingAG(RankSchedule& out, const Fold& f, std::uint32_t me, const Blocks& blocks,
                       const Partials& pt, const std::vector<Range>& before) {
  Range cur = before.empty() ? Range{0, f.core} : Range{};
  if (!before.empty()) {
    const Range& last = before.back();
    const std::uint32_t mid = (last.lo + last.hi) / 2;
    cur = (me & (1u << (before.size() - 1))) == 0 ? Range{last.lo, mid} : Range{mid, last.hi};
  }
  for (std::uint32_t k = f.rounds(); k-- > 0;) {
    const Range parent = before[k];
    const Range theirs = cur.lo == parent.lo ? Range{cur.hi, parent.hi} : Range{parent.lo, cur.lo};
    const Slice mine = blocks.span(Buf::Output, cur.lo, cur.hi);
    const Slice other = blocks.span(Buf::Output, theirs.lo, theirs.hi);
    Step& s = out.newStep();
    const std::uint32_t partner = f.rankOf(me ^ (1u << k));
    send(s, partner, pt.accAt(mine.offset, mine.count));
    recv(s, partner, pt.accAt(other.offset, other.count));
    cur = parent;
  }
}

// Moves a finished block to where ReduceScatter's result belongs, through scratch when the two
// overlap.
void placeResult(Step& s, Slice done, Slice start, Slice scratchFree) {
  if (done == start) return;
  if (!start.overlaps(done)) {
    copy(s, start, done);
    return;
  }
  const Slice tmp{scratchFree.buf, scratchFree.offset, done.count};
  copy(s, tmp, done);
  copy(s, start, tmp);
}

// Part1's closing step: each survivor hands `all` back to the rank it folded.
void unfold(RankSchedule& out, const Fold& f, std::uint32_t r, Slice all) {
  if (!f.inPart1(r)) return;
  Step& s = out.newStep();
  if (f.active(r))
    send(s, f.pairPeer(r), all);
  else
    recv(s, f.pairPeer(r), all);
}

}  // namespace

RankSchedule rhdAllReduce(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint64_t n = pb.total();
  const Slice all{Buf::Output, 0, n};
  const Slice own = pb.inPlace ? all : Slice{Buf::Input, 0, n};
  const Fold f(pb.ranks, 0);
  if (f.inPart1(r)) {
    Step& s = out.newStep();
    if (!f.active(r)) {
      send(s, f.pairPeer(r), own);
    } else {  // survivor of the pair: x_r (+) x_r+1, lower rank on the left
      const Slice landing = pb.inPlace ? Slice{Buf::Scratch, 0, n} : all;
      recv(s, f.pairPeer(r), landing);
      reduce(s, all, own, landing);
    }
  } else if (!pb.inPlace) {
    copy(out.newStep(), all, own);
  }
  if (f.active(r)) {
    const Blocks pieces = Blocks::even(n, f.core);
    Partials pt{all, all, true};
    const auto before =
        halvingDoublingRS(out, f, f.coreRank(r), pieces, pt, Slice{Buf::Scratch, 0, 0});
    halvingDoublingAG(out, f, f.coreRank(r), pieces, pt, before);
  }
  unfold(out, f, r, all);
  prune(out);
  return out;
}

RankSchedule rhdReduceScatter(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const std::uint64_t n = pb.total();
  const Fold f(pb.ranks, 0);
  const Slice own = pb.inPlace ? Slice{Buf::Output, 0, n} : Slice{Buf::Input, 0, n};
  // Partial sums: in the output in place, else in scratch[0, n); receives land after them.
  Partials pt{own, pb.inPlace ? own : Slice{Buf::Scratch, 0, n}, false};
  const Slice landingBase{Buf::Scratch, pb.inPlace ? 0 : n, 0};
  if (f.inPart1(r)) {
    Step& s = out.newStep();
    if (!f.active(r)) {
      send(s, f.pairPeer(r), own);
    } else {
      const Slice landing = pb.inPlace ? Slice{Buf::Scratch, 0, n} : pt.acc;
      recv(s, f.pairPeer(r), landing);
      reduce(s, pt.acc, own, landing);
      pt.moved = true;
    }
  }
  if (f.active(r)) {
    // Distance halving over core ranks; a range of core ranks owns a contiguous run of blocks.
    const std::uint32_t me = f.coreRank(r);
    Range cur{0, f.core};
    for (std::uint32_t d = f.core / 2; d >= 1; d /= 2) {
      const std::uint32_t mid = cur.lo + d;
      const bool lower = (me & d) == 0;
      const Range keep = lower ? Range{cur.lo, mid} : Range{mid, cur.hi};
      const Range give = lower ? Range{mid, cur.hi} : Range{cur.lo, mid};
      const Slice g = bl.span(Buf::Output, f.firstBlock(give.lo), f.firstBlock(give.hi));
      const Slice kp = bl.span(Buf::Output, f.firstBlock(keep.lo), f.firstBlock(keep.hi));
      const Slice landing{landingBase.buf, landingBase.offset, kp.count};
      Step& s = out.newStep();
      const std::uint32_t partner = f.rankOf(me ^ d);
      send(s, partner, pt.at(g.offset, g.count));
      recv(s, partner, landing);
      accumulate(s, pt, kp.offset, kp.count, landing, lower);
      pt.moved = true;
      cur = keep;
    }
  }
  Step& last = out.stepAfterTransfers();
  const Slice scratchFree{Buf::Scratch, pb.inPlace ? 0 : n, 0};
  if (f.inPart1(r) && f.active(r)) {  // hand the pair's other block back
    const Slice theirs = bl.block(Buf::Output, f.pairPeer(r));
    send(last, f.pairPeer(r), pt.accAt(theirs.offset, theirs.count));
  } else if (f.inPart1(r)) {
    recv(last, f.pairPeer(r), pb.resultSlice(r));
  }
  if (f.active(r)) {
    const Slice mine = bl.block(Buf::Output, r);
    placeResult(last, pt.at(mine.offset, mine.count), pb.resultSlice(r), scratchFree);
  }
  prune(out);
  return out;
}

namespace {

// Elements of blocks [lo, hi) of Blocks::even(n, parts) (the first n % parts take one more),
// without building the blocks: the scratch formulas below run per edge rank per tried chunk.
std::uint64_t evenSpan(std::uint64_t n, std::uint32_t parts, std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t base = n / parts, ext = n % parts;
  return (hi - lo) * base + (std::min(hi, ext) - std::min(lo, ext));
}

// The core range halvingDoublingRS (round 0: bit 1) keeps first: every later round keeps a part
// of it, so its count is the largest landing of the rounds.
Range firstKeptByBit(const Fold& f, std::uint32_t me) {
  const std::uint32_t mid = f.core / 2;
  return (me & 1u) == 0 ? Range{0, mid} : Range{mid, f.core};
}

}  // namespace

// scratchCount(rhdAllReduce(pb, r)): in place the fold's survivor lands its peer's vector at
// Scratch[0, n); every round of the core's ReduceScatter lands the kept half at Scratch[0, kept),
// the first round's half the largest. The AllGather and the unfold stay in Output.
std::uint64_t rhdAllReduceScratch(const Problem& pb, std::uint32_t r) {
  const std::uint64_t n = pb.total();
  const Fold f(pb.ranks, 0);
  std::uint64_t top = pb.inPlace && f.inPart1(r) && f.active(r) ? n : 0;
  if (f.active(r) && f.core >= 2) {
    const Range keep = firstKeptByBit(f, f.coreRank(r));
    top = std::max(top, evenSpan(n, f.core, keep.lo, keep.hi));
  }
  return top;
}

// scratchCount(rhdReduceScatter(pb, r)): out of place the partial sums fill Scratch[0, n) (the
// fold's survivor receives its peer's vector there) and each round lands the kept range past
// them; in place the survivor lands at Scratch[0, n) and the rounds at Scratch[0, kept). The
// rounds halve by distance core/2 first, so the first round's range is the largest; the final
// move of the rank's block (through Scratch in place) fits in it, as the block is part of it.
std::uint64_t rhdReduceScatterScratch(const Problem& pb, std::uint32_t r) {
  const Blocks& bl = pb.blocks;
  const std::uint64_t n = pb.total();
  const Fold f(pb.ranks, 0);
  std::uint64_t top = f.inPart1(r) && f.active(r) ? n : 0;
  if (f.active(r) && f.core >= 2) {
    const std::uint32_t d = f.core / 2;
    const bool lower = (f.coreRank(r) & d) == 0;
    const Range keep = lower ? Range{0, d} : Range{d, f.core};
    const std::uint64_t kept = bl.offset(f.firstBlock(keep.hi)) - bl.offset(f.firstBlock(keep.lo));
    if (kept > 0) top = std::max(top, (pb.inPlace ? 0 : n) + kept);
  }
  return top;
}

// scratchCount(rhdReduce(pb, r)): a non-root keeps its partial sums at Scratch[0, n) (the fold's
// survivor receives its peer's vector there) and lands each round's kept range past them; the
// root lands them at Scratch[0) (in place its fold too, the whole vector). The first round's kept
// range is the largest landing, and the binomial gather adds nothing: a rank receives the ranges
// it gave away after its first round and sends the range it kept last, all inside that first one,
// inside the partial sums (scratch_formula_test holds the formula without a gather term).
std::uint64_t rhdReduceScratch(const Problem& pb, std::uint32_t r) {
  const std::uint64_t n = pb.total();
  const bool isRoot = r == pb.root;
  const Fold f(pb.ranks, pb.root % 2);
  std::uint64_t top = f.inPart1(r) && f.active(r) && (!isRoot || pb.inPlace) ? n : 0;
  if (f.active(r) && f.core >= 2) {
    const Range keep = firstKeptByBit(f, f.coreRank(r));
    if (const std::uint64_t kept = evenSpan(n, f.core, keep.lo, keep.hi); kept > 0)
      top = std::max(top, (isRoot ? 0 : n) + kept);
  }
  return top;
}

RankSchedule rhdAllGather(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const Fold f(pb.ranks, 0);
  const Slice ownBlock = bl.block(Buf::Output, r);
  const Slice own = pb.inPlace ? ownBlock : Slice{Buf::Input, 0, bl.count(r)};
  if (f.inPart1(r)) {
    Step& s = out.newStep();
    if (!f.active(r)) {
      send(s, f.pairPeer(r), own);
    } else {
      recv(s, f.pairPeer(r), bl.block(Buf::Output, f.pairPeer(r)));
      copy(s, ownBlock, own);
    }
  } else {
    copy(out.newStep(), ownBlock, own);
  }
  if (f.active(r)) {
    const std::uint32_t me = f.coreRank(r);
    for (std::uint32_t d = 1; d < f.core; d *= 2) {
      const std::uint32_t lo = me & ~(d - 1), plo = lo ^ d;
      const Slice mine = bl.span(Buf::Output, f.firstBlock(lo), f.firstBlock(lo + d));
      const Slice theirs = bl.span(Buf::Output, f.firstBlock(plo), f.firstBlock(plo + d));
      Step& s = out.newStep();
      send(s, f.rankOf(me ^ d), mine);
      recv(s, f.rankOf(me ^ d), theirs);
    }
  }
  unfold(out, f, r, Slice{Buf::Output, 0, pb.total()});
  prune(out);
  return out;
}

RankSchedule rhdBroadcast(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const Fold f(pb.ranks, pb.root % 2);
  const Slice all{Buf::Output, 0, pb.total()};
  if (f.active(r)) {
    const std::uint32_t rel = (f.coreRank(r) + f.core - f.coreRank(pb.root)) % f.core;
    for (std::uint32_t d = f.core / 2; d >= 1; d /= 2) {
      const auto abs = [&](std::uint32_t v) {
        return f.rankOf((v + f.coreRank(pb.root)) % f.core);
      };
      if (rel % (2 * d) == 0)
        send(out.newStep(), abs(rel + d), all);
      else if (rel % (2 * d) == d)
        recv(out.newStep(), abs(rel - d), all);
    }
  }
  unfold(out, f, r, all);
  return out;
}

// The replay of rhdBroadcast's schedule without building it. Every step moves the whole buffer to
// or from one peer, so every step costs the same c. A core rank posts its receive at time 0 and
// its sender reaches it after as many steps as the rounds before, then it sends at every later
// round: every core rank finishes the tree after `rounds` steps in a chain (the replay sums the
// same c step after step on every chain, so the times agree to the bit), and the pairs folded
// out take one step more (the survivor's send, the other rank's receive posted at 0). Lockstep
// cannot see that last step: no one rank's schedule holds the tree and the unfold.
Metrics rhdBroadcastCost(const GeneratorSpec&, const Problem& pb, std::size_t elemSize,
                         const CostParams& params) {
  if (pb.ranks <= 1 || pb.total() == 0) return {};
  const Fold f(pb.ranks, pb.root % 2);
  StepLoad step;
  step.add(0, Dir::Send, pb.total() * elemSize);
  Metrics m;
  for (std::uint32_t k = 0; k < f.rounds() + (f.extra > 0 ? 1u : 0u); ++k)
    m.time += addStepLoad(step, params, m);
  return m;
}

RankSchedule rhdReduce(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint64_t n = pb.total();
  const bool isRoot = r == pb.root;
  const Fold f(pb.ranks, pb.root % 2);
  const Slice own = isRoot && pb.inPlace ? Slice{Buf::Output, 0, n} : Slice{Buf::Input, 0, n};
  // Partial sums: the root accumulates in its output, the others in scratch[0, n).
  const Slice acc = isRoot ? Slice{Buf::Output, 0, n} : Slice{Buf::Scratch, 0, n};
  Partials pt{own, acc, own == acc};
  const Slice landingBase{Buf::Scratch, acc.buf == Buf::Scratch ? n : 0, 0};
  if (f.inPart1(r)) {
    Step& s = out.newStep();
    if (!f.active(r)) {
      send(s, f.pairPeer(r), own);
    } else {
      const Slice landing = own == acc ? Slice{landingBase.buf, landingBase.offset, n} : acc;
      recv(s, f.pairPeer(r), landing);
      if (r % 2 == 0)
        reduce(s, acc, own, landing);
      else
        reduce(s, acc, landing, own);
      pt.moved = true;
    }
  }
  if (f.active(r)) {
    const std::uint32_t me = f.coreRank(r), rootCore = f.coreRank(pb.root);
    const Blocks pieces = Blocks::even(n, f.core);
    const auto before = halvingDoublingRS(out, f, me, pieces, pt, landingBase);
    if (f.core == 1) copy(out.newStep(), acc, pt.at(0, n));
    // Binomial gather to the root, undoing the rounds in reverse.
    Range cur{0, f.core};
    if (!before.empty()) {
      const Range& last = before.back();
      const std::uint32_t mid = (last.lo + last.hi) / 2;
      cur = (me & (1u << (before.size() - 1))) == 0 ? Range{last.lo, mid} : Range{mid, last.hi};
    }
    const std::uint32_t rel = me ^ rootCore;
    for (std::uint32_t k = f.rounds(); k-- > 0;) {
      if (rel >= (2u << k)) break;  // already handed its range on
      const Range parent = before[k];
      const std::uint32_t partner = f.rankOf(me ^ (1u << k));
      if (rel & (1u << k)) {
        const Slice mine = pieces.span(Buf::Output, cur.lo, cur.hi);
        send(out.newStep(), partner, pt.accAt(mine.offset, mine.count));
        break;
      }
      const Range theirs =
          cur.lo == parent.lo ? Range{cur.hi, parent.hi} : Range{parent.lo, cur.lo};
      const Slice other = pieces.span(Buf::Output, theirs.lo, theirs.hi);
      recv(out.newStep(), partner, pt.accAt(other.offset, other.count));
      cur = parent;
    }
  }
  prune(out);
  return out;
}

Metrics rhdReduceCost(const GeneratorSpec&, const Problem& pb, std::size_t elemSize,
                      const CostParams& params) {
  const std::uint32_t p = pb.ranks;
  if (p <= 1) return {};
  const std::uint64_t n = pb.total();
  const Fold f(p, pb.root % 2);
  // Elements of core blocks [lo, hi) of Blocks::even(n, core).
  const std::uint64_t base = n / f.core, ext = n % f.core;
  const auto count = [&](std::uint64_t lo, std::uint64_t hi) {
    return (hi - lo) * base + (std::min(hi, ext) - std::min(lo, ext));
  };
  using tree::Clock;
  std::vector<Clock> clock(p);
  // One step of ranks a and b with each other: a sends `ab` elements to b and b `ba` to a;
  // `reduced`: each reduces what it receives. A transfer of nothing is dropped, a step with
  // nothing pruned; it starts when both have finished their previous steps.
  const auto pairStep = [&](std::uint32_t a, std::uint32_t b, std::uint64_t ab, std::uint64_t ba,
                            bool reduced) {
    if (ab == 0 && ba == 0) return;
    const auto run = [&](const Clock& own, const Clock& other, std::uint64_t tx, std::uint64_t rx) {
      Clock c = other.t > own.t ? other : own;
      tree::advanceStep(c, tx, rx, reduced, elemSize, params);
      return c;
    };
    Clock na = run(clock[a], clock[b], ab, ba), nb = run(clock[b], clock[a], ba, ab);
    clock[a] = na;
    clock[b] = nb;
  };
  // The fold: each pair's other rank hands its whole vector to the survivor.
  for (std::uint32_t i = 0; i < f.extra; ++i) {
    const std::uint32_t survivor = 2 * i + f.keepOdd;
    pairStep(f.pairPeer(survivor), survivor, n, 0, true);
  }
  // The ReduceScatter: at round k core rank c holds [lo[c], lo[c] + core/2^k) and exchanges
  // halves with c ^ 2^k, the lower keeping the lower half.
  std::vector<std::uint64_t> lo(f.core, 0);
  for (std::uint32_t k = 0; k < f.rounds(); ++k) {
    const std::uint32_t bit = 1u << k;
    const std::uint64_t half = f.core >> (k + 1);
    for (std::uint32_t c = 0; c < f.core; ++c) {
      if (c & bit) continue;
      const std::uint64_t l = lo[c], mid = l + half;
      pairStep(f.rankOf(c), f.rankOf(c | bit), count(mid, mid + half), count(l, mid), true);
      lo[c | bit] = mid;
    }
  }
  // The binomial gather, the rounds undone in reverse. Before round k's gather step, core rank
  // c holds the range it kept at ReduceScatter round k: core/2^(k+1) blocks from lo_{k+1}(c), the
  // sum over i <= k of bit i of c times core/2^(i+1) (at[] below: c's low bits reversed). Relative
  // to the root (rel = c ^ rootCore), the ranks with rel < 2^k receive it from c ^ 2^k.
  const std::uint32_t rootCore = f.coreRank(pb.root);
  std::vector<std::uint64_t> at(f.core, 0);
  for (std::uint32_t c = 0; c < f.core; ++c)
    for (std::uint32_t k = 0; k < f.rounds(); ++k)
      if (c & (1u << k)) at[c] += f.core >> (k + 1);
  for (std::uint32_t k = f.rounds(); k-- > 0;) {
    const std::uint32_t bit = 1u << k, low = (bit << 1) - 1;
    const std::uint64_t len = f.core >> (k + 1);
    for (std::uint32_t c = 0; c < f.core; ++c) {
      if ((c ^ rootCore) >= bit) continue;
      const std::uint32_t from = c ^ bit;
      const std::uint64_t start = at[from & low];
      pairStep(f.rankOf(from), f.rankOf(c), count(start, start + len), 0, false);
    }
  }
  const Clock* last = &clock.front();
  for (const Clock& c : clock)
    if (c.t > last->t) last = &c;
  return last->metrics();
}

}  // namespace hccl::algo
