// Pipeline (HCCL "pipeline"): a ring between servers whose every step also keeps the links inside
// the server busy, for two-level layouts (S servers of L ranks; rank (s, l) is local index l of
// server s; "block (t, j)" is the block of the rank at server t, local index j).
//
// AllGather, S steps. The inter-server ring runs among the ranks with the same local index.
//   step 0      send my block to (s+1, l) and to every local peer; receive (s-1, l)'s block from
//               it, and every local peer's own block.
//   step k      forward to (s+1, l) the block received from (s-1, l) in step k-1, i.e. block
//   (1..S-2)    (s-k, l), and send it to every local peer too; receive block (s-1-k, l) from
//               (s-1, l) and block (s-k, j) from each local peer j.
//   step S-1    intra only: send block (s+1, l) (received last) to every local peer; receive block
//               (s+1, j) from each.
//   After step k a rank holds the blocks of servers s-k..s at every local index (and server
//   s-k-1 at its own). Out of place the own block is also copied to the output (HCCL's LocalCopy).
//   cost max(a_inter + (n/p) b_inter, a_intra + (n/p) b_intra) (S-1) + a_intra + (n/p) b_intra
// ReduceScatter, S steps, the mirror image. Block (t, l)'s partial sum travels the same-index
//   ring t+1 -> t+2 -> ... -> t; on its way each server first reduces its local ranks'
//   contributions to the block at the rank with local index l, one step ahead of the ring:
//   step 0      intra only: exchange contributions to blocks (s-1, j); reduce server s's partial of
//               block (s-1, l).
//   step i+1    send the running sum of block (s-1-i, l) to (s+1, l), receive the running sum of
//   (i=0..S-2)  block (s-2-i, l) from (s-1, l); meanwhile exchange contributions to blocks
//               (s-2-i, j) locally; then add server s's partial to the received sum.
//   After the last step, rank (s, l) holds block (s, l) summed over every rank.
//   cost as AllGather, plus the reductions.
// AllReduce = ReduceScatter then AllGather over n split in p pieces (twice the cost above).
// Segments (m > 1): every block is cut into m segments (segment k: elements [w k/m, w (k+1)/m) of
//   a block of w) and each segment runs the passes above on its own, segment k's stage j in step
//   k + j, so that the intra-server-only stages (the reduce pass's first, the gather pass's last)
//   of one segment share a step with the inter-server stages of others instead of leaving the
//   links between servers idle: on 2 servers they are half the stages, and the rig measured them
//   (traced) at 10-30% of a 16 MiB AllReduce. m + stages - 1 steps instead of stages; each segment
//   has scratch of its own (segments of one step are in different stages).
//
// Rank order: no (the ring starts each block at a different server). Needs every server to have
// the same number of ranks, and a single supernode.
#include "algorithms/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace hccl::algo {
namespace {

struct Grid {
  const Layout& lay;
  std::uint32_t S, L, s, l;

  // The server's index is where the layout keeps its group: looking for it among the servers was
  // O(servers) for every edge rank chunk sizing asks the scratch of.
  Grid(const Layout& layout, std::uint32_t me)
      : lay(layout),
        S(static_cast<std::uint32_t>(layout.groups(0).size())),
        L(static_cast<std::uint32_t>(layout.groups(0).front().size())),
        s(static_cast<std::uint32_t>(&layout.groupOf(0, me) - layout.groups(0).data())),
        l(layout.indexIn(0, me)) {}
  // The ranks of server `server` (mod S), by local index.
  const std::vector<std::uint32_t>& server(std::int64_t server) const {
    const auto m = static_cast<std::int64_t>(S);
    return lay.groups(0)[static_cast<std::size_t>(((server % m) + m) % m)];
  }
  std::uint32_t at(std::int64_t server, std::uint32_t local) const {
    return this->server(server)[local];
  }
};

void check(const Layout& lay) {
  if (!lay.symmetric())
    throw std::invalid_argument("pipeline needs the same number of ranks on every server");
  // Level-2 groups partition the ranks, so all of them are single ranks (one supernode) exactly
  // when there are as many as ranks; walking them was O(ranks) a call, and chunk sizing calls
  // pipelineScratch for every edge rank.
  if (lay.groups(2).size() != lay.ranks())
    throw std::invalid_argument("pipeline runs within one supernode");
}

void xfer(Step& st, Dir d, std::uint32_t peer, Slice sl, std::uint8_t level) {
  if (sl.count) st.xfers.push_back({d, peer, sl, level});
}

// Segment k of m of every block: what one segment's passes see as its blocks. `largestBlock` is
// blocks.largest(), read once per schedule: it walks every block, and asking it per stage made a
// rank's schedule O(servers x ranks) (0.4-0.9 s at 8192x8).
struct Segment {
  const Blocks& blocks;
  std::uint32_t k, m;
  std::uint64_t largestBlock;

  std::uint64_t lo(std::uint64_t w) const { return w * k / m; }
  std::uint64_t part(std::uint64_t w) const { return w * (k + 1) / m - lo(w); }
  Slice of(Slice whole) const {
    return {whole.buf, whole.offset + lo(whole.count), part(whole.count)};
  }
  std::uint64_t count(std::uint32_t rank) const { return part(blocks.count(rank)); }
  Slice block(Buf b, std::uint32_t rank) const { return of(blocks.block(b, rank)); }
  // A slot every segment's part of every block fits.
  std::uint64_t largest() const { return (largestBlock + m - 1) / m; }
};

// Stage k (0..S-1) of the AllGather pass over `blocks`, all in Output; `own` is where this rank's
// block (of the segment) starts.
void gatherStage(Step& st, const Grid& g, const Segment& blocks, Slice own, std::uint32_t k) {
  const std::uint32_t me = g.at(g.s, g.l);
  auto blk = [&](std::int64_t server, std::uint32_t local) {
    return blocks.block(Buf::Output, g.at(server, local));
  };
  const auto s = static_cast<std::int64_t>(g.s);
  // What travels this step: my own block first, then the one that arrived from the left.
  const Slice fwd = k == 0 ? own : blk(s - k, g.l);
  if (k + 1 < g.S) {
    xfer(st, Dir::Send, g.at(s + 1, g.l), fwd, 1);
    xfer(st, Dir::Recv, g.at(s - 1, g.l), blk(s - 1 - k, g.l), 1);
  }
  const std::vector<std::uint32_t>& here = g.server(s);
  const std::vector<std::uint32_t>& from = g.server(s - k);
  for (std::uint32_t j = 0; j < g.L; ++j) {
    if (j == g.l) continue;
    xfer(st, Dir::Send, here[j], fwd, 0);
    xfer(st, Dir::Recv, here[j], blocks.block(Buf::Output, from[j]), 0);
  }
  if (k == 0) copy(st, blocks.block(Buf::Output, me), own);
}

// The ReduceScatter pass's scratch, in slots the largest block fits: L-1 slots for the local
// contributions, the server partial, the inter landing slot and two running sums (one is sent
// while the next is built). A caller keeps its own scratch from end() on.
struct PassScratch {
  std::uint32_t L, l;  // ranks per server, this rank's local index
  std::uint64_t c;     // slot size: the largest block
  std::uint64_t base;  // where this segment's slots start

  PassScratch(const Grid& g, const Segment& blocks)
      : L(g.L), l(g.l), c(blocks.largest()), base(blocks.k * stride()) {}
  std::uint64_t stride() const { return (L + 3) * c; }  // one segment's slots
  std::uint64_t local(std::uint32_t j) const { return base + (j < l ? j : j - 1) * c; }
  std::uint64_t partial() const { return base + (L - 1) * c; }
  std::uint64_t landing() const { return partial() + c; }
  std::uint64_t sum(std::uint32_t k) const { return landing() + (1 + k % 2) * c; }
  // Past this segment's slots: no slice of the pass ends beyond it (sum(1) is the highest slot
  // and no segment's part of a block is larger than c).
  std::uint64_t top() const { return sum(1) + c; }
  // Past every segment's slots.
  std::uint64_t end(std::uint32_t segments) const { return segments * stride(); }
};

// Stage `stage` (0..S-1) of the ReduceScatter pass: `contribution(rank)` is where this rank's
// input for that rank's block (of the segment) sits; the result for this rank lands in `result`.
template <typename Contribution>
void reduceStage(Step& st, const Grid& g, const Segment& blocks, Contribution contribution,
                 Slice result, std::uint32_t stage) {
  const auto s = static_cast<std::int64_t>(g.s);
  const PassScratch at(g, blocks);
  auto localSlot = [&](std::uint32_t j) { return Slice{Buf::Scratch, at.local(j), 0}; };
  auto sized = [](Slice sl, std::uint64_t n) { return Slice{sl.buf, sl.offset, n}; };

  // Server s's partial of block (t, l), reduced in rank order of the local ranks into `dst`.
  auto serverPartial = [&](std::int64_t t, Slice dst) {
    const std::vector<std::uint32_t>& here = g.server(s);
    const std::vector<std::uint32_t>& of = g.server(t);
    const std::uint32_t target = of[g.l];
    const std::uint64_t n = blocks.count(target);
    for (std::uint32_t j = 0; j < g.L; ++j) {
      if (j == g.l) continue;
      xfer(st, Dir::Send, here[j], contribution(of[j]), 0);
      xfer(st, Dir::Recv, here[j], sized(localSlot(j), n), 0);
    }
    auto term = [&](std::uint32_t j) {
      return j == g.l ? contribution(target) : sized(localSlot(j), n);
    };
    if (g.L == 1) {
      copy(st, dst, contribution(target));
      return;
    }
    reduce(st, dst, term(0), term(1));
    for (std::uint32_t j = 2; j < g.L; ++j) reduce(st, dst, dst, term(j));
  };

  if (stage == 0) {
    const Slice first =
        g.S == 1 ? result : Slice{Buf::Scratch, at.sum(0), blocks.count(g.at(s - 1, g.l))};
    serverPartial(s - 1, first);
    return;
  }
  const std::uint32_t i = stage - 1;
  const std::uint32_t sent = g.at(s - 1 - i, g.l), got = g.at(s - 2 - i, g.l);
  const Slice sending{Buf::Scratch, at.sum(i), blocks.count(sent)};
  const Slice landing{Buf::Scratch, at.landing(), blocks.count(got)};
  xfer(st, Dir::Send, g.at(s + 1, g.l), sending, 1);
  xfer(st, Dir::Recv, g.at(s - 1, g.l), landing, 1);
  const Slice partial{Buf::Scratch, at.partial(), blocks.count(got)};
  serverPartial(s - 2 - i, partial);
  const bool last = i + 2 == g.S;
  const Slice sum = last ? result : Slice{Buf::Scratch, at.sum(i + 1), blocks.count(got)};
  reduce(st, sum, landing, partial);
}

// Upper bounds of what one stage adds to a step: every stage posts at most one transfer each
// way to each of its L-1 local peers and its two ring neighbours; a reduce stage runs at most L
// reductions (or a copy), a gather stage at most its first one's copy.
struct StageSize {
  std::uint32_t xfers, ops;
};
StageSize gatherSize(const Grid& g, std::uint32_t stage) {
  return {2 * g.L, stage == 0 ? 1u : 0u};
}
StageSize reduceSize(const Grid& g, std::uint32_t) {
  return {2 * g.L, g.L};
}

// The passes of a collective as one list of stages per segment, segment k's stage j in step
// k + j (its stages stay in order; the segments of one step touch disjoint memory). Each step's
// lists are reserved once from sizeOf(j): growing them transfer by transfer was nearly half the
// instructions of a rank's schedule (512x8 and 8192x8 ReduceScatter).
template <typename SizeOf, typename StageOf>
void runSegments(RankSchedule& out, std::uint32_t stages, std::uint32_t segments, SizeOf sizeOf,
                 StageOf stageOf) {
  out.steps.reserve(out.steps.size() + stages + segments - 1);
  for (std::uint32_t t = 0; t + 1 < stages + segments; ++t) {
    Step& st = out.newStep();
    std::size_t xfers = 0, ops = 0;
    for (std::uint32_t k = 0; k < segments; ++k)
      if (k <= t && t - k < stages) {
        const StageSize n = sizeOf(t - k);
        xfers += n.xfers;
        ops += n.ops;
      }
    st.xfers.reserve(xfers);
    st.ops.reserve(ops);
    for (std::uint32_t k = 0; k < segments; ++k)
      if (k <= t && t - k < stages) stageOf(st, k, t - k);
  }
}

void allGather(RankSchedule& out, const Grid& g, const Problem& pb, std::uint32_t rank,
               std::uint32_t m) {
  const Slice own =
      pb.inPlace ? pb.blocks.block(Buf::Output, rank) : Slice{Buf::Input, 0, pb.blocks.count(rank)};
  // The gather pass has no scratch slots, so no largest block to read.
  runSegments(
      out, g.S, m, [&](std::uint32_t j) { return gatherSize(g, j); },
      [&](Step& st, std::uint32_t k, std::uint32_t j) {
        const Segment seg{pb.blocks, k, m, 0};
        gatherStage(st, g, seg, seg.of(own), j);
      });
}

void reduceScatter(RankSchedule& out, const Grid& g, const Problem& pb, std::uint32_t rank,
                   std::uint32_t m) {
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  const Slice result = pb.resultSlice(rank);
  const Slice own = pb.blocks.block(src, rank);
  // In place with unequal blocks the result may half-cover this rank's own contribution: build it
  // past the pass's scratch and move it at the end.
  const bool viaScratch = own.overlaps(result) && !(own == result);
  const std::uint64_t whole = pb.blocks.largest();
  const Slice staged{Buf::Scratch, PassScratch(g, Segment{pb.blocks, 0, m, whole}).end(m),
                     result.count};
  runSegments(
      out, g.S, m, [&](std::uint32_t j) { return reduceSize(g, j); },
      [&](Step& st, std::uint32_t k, std::uint32_t j) {
        const Segment seg{pb.blocks, k, m, whole};
        reduceStage(
            st, g, seg, [&](std::uint32_t q) { return seg.block(src, q); },
            seg.of(viaScratch ? staged : result), j);
      });
  if (viaScratch) copy(out.steps.back(), result, staged);
}

void allReduce(RankSchedule& out, const Grid& g, const Problem& pb, std::uint32_t rank,
               std::uint32_t m) {
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  const Slice mine = pb.blocks.block(Buf::Output, rank);
  const std::uint64_t whole = pb.blocks.largest();
  runSegments(
      out, 2 * g.S, m,
      [&](std::uint32_t j) { return j < g.S ? reduceSize(g, j) : gatherSize(g, j - g.S); },
      [&](Step& st, std::uint32_t k, std::uint32_t j) {
        const Segment seg{pb.blocks, k, m, whole};
        if (j < g.S)
          reduceStage(
              st, g, seg, [&](std::uint32_t q) { return seg.block(src, q); }, seg.of(mine), j);
        else
          gatherStage(st, g, seg, seg.of(mine), j - g.S);
      });
}

// The largest scratch end of the ReduceScatter pass of segment `seg`, walking the slots its
// stages use in the same order without building the steps (chunk sizing asks this of ~90 ranks
// per candidate chunk at 512x8, where a rank's schedule takes milliseconds).
std::uint64_t reducePassScratch(const Grid& g, const Segment& seg, bool firstInScratch) {
  const auto s = static_cast<std::int64_t>(g.s);
  const PassScratch at(g, seg);
  std::uint64_t top = 0;
  auto see = [&top](std::uint64_t offset, std::uint64_t n) {
    if (n > 0) top = std::max(top, offset + n);
  };
  // serverPartial's landing slots for the local contributions: the highest is local index L-2's.
  auto serverPartial = [&](std::int64_t t) {
    if (g.L > 1) see(at.local(g.l == g.L - 1 ? g.L - 2 : g.L - 1), seg.count(g.at(t, g.l)));
  };
  if (firstInScratch) see(at.sum(0), seg.count(g.at(s - 1, g.l)));
  serverPartial(s - 1);
  // Once a slice reaches the slots' end no later one can pass it: with blocks of one size that
  // is the first ring stage, and the walk (O(servers) for each of the edge ranks chunk sizing
  // asks about, 83% of a 1024x4 AllReduce's sizing) stops there.
  const std::uint64_t bound = at.top();
  for (std::uint32_t i = 0; i + 1 < g.S && top < bound; ++i) {
    const std::uint64_t sent = seg.count(g.at(s - 1 - i, g.l)),
                        got = seg.count(g.at(s - 2 - i, g.l));
    see(at.sum(i), sent);
    see(at.landing(), got);
    see(at.partial(), got);
    serverPartial(s - 2 - i);
    if (i + 2 != g.S) see(at.sum(i + 1), got);
  }
  return top;
}

// Every segment's pass: each has its own slots (PassScratch::base).
std::uint64_t reduceSegmentsScratch(const Grid& g, const Blocks& blocks, std::uint32_t m) {
  std::uint64_t top = 0;
  const std::uint64_t whole = blocks.largest();
  for (std::uint32_t k = 0; k < m; ++k)
    top = std::max(top, reducePassScratch(g, Segment{blocks, k, m, whole}, g.S > 1));
  return top;
}

}  // namespace

std::uint64_t pipelineScratch(const Layout& lay, const Problem& pb, std::uint32_t rank,
                              std::uint32_t segments) {
  check(lay);
  const Grid g(lay, rank);
  const std::uint32_t m = std::max(segments, 1u);
  switch (pb.coll) {
    case Collective::AllGather:
      return 0;  // the gather pass moves blocks between Input and Output only
    case Collective::AllReduce:
      return reduceSegmentsScratch(g, pb.blocks, m);
    case Collective::ReduceScatter: {
      std::uint64_t top = reduceSegmentsScratch(g, pb.blocks, m);
      const Slice result = pb.resultSlice(rank);
      const Slice own = pb.blocks.block(pb.inPlace ? Buf::Output : Buf::Input, rank);
      if (own.overlaps(result) && !(own == result) && result.count > 0)
        top = std::max(top, PassScratch(g, Segment{pb.blocks, 0, m, pb.blocks.largest()}).end(m) +
                                result.count);
      return top;
    }
    default:
      throw std::invalid_argument(fmt::format("pipeline has no {}", name(pb.coll)));
  }
}

RankSchedule pipelineSchedule(const Layout& lay, const Problem& pb, std::uint32_t rank,
                              std::uint32_t segments) {
  using Pass = void (*)(RankSchedule&, const Grid&, const Problem&, std::uint32_t, std::uint32_t);
  Pass pass = nullptr;
  switch (pb.coll) {
    case Collective::AllGather:
      pass = allGather;
      break;
    case Collective::ReduceScatter:
      pass = reduceScatter;
      break;
    case Collective::AllReduce:
      pass = allReduce;
      break;
    default:
      throw std::invalid_argument(fmt::format("pipeline has no {}", name(pb.coll)));
  }
  check(lay);
  if (segments == 0) throw std::invalid_argument("pipeline needs at least one segment");
  RankSchedule out;
  pass(out, Grid(lay, rank), pb, rank, segments);
  prune(out);
  return out;
}

}  // namespace hccl::algo
