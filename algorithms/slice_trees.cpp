#include "algorithms/slice_trees.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

namespace hccl::algo::tree {

std::uint32_t stepCount(std::uint32_t p) {
  return p <= 1 ? 0 : static_cast<std::uint32_t>(std::bit_width(p - 1));
}

std::uint64_t sharesAt(std::uint32_t p, std::uint32_t k) {
  const std::uint64_t h = std::uint64_t{1} << k;
  return (std::uint64_t{p} - 1 + h) / (2 * h);
}

SliceTree::SliceTree(std::uint32_t p, int orient, std::vector<std::uint32_t> place)
    : p_(p), orient_(orient), place_(std::move(place)) {
  if (p == 0) throw std::invalid_argument("SliceTree: zero ranks");
  if (orient != 1 && orient != -1)
    throw std::invalid_argument(fmt::format("SliceTree: orientation {} is not +1 or -1", orient));
  if (place_.empty()) {
    place_.resize(p);
    std::iota(place_.begin(), place_.end(), 0u);
  }
  std::vector<bool> seen(p);
  for (std::uint32_t b : place_) {
    if (place_.size() != p || b >= p || seen[b])
      throw std::invalid_argument(
          fmt::format("SliceTree: the slice placement is not a permutation of {} blocks", p));
    seen[b] = true;
  }
}

std::uint32_t SliceTree::outward(std::uint32_t r, std::uint64_t dist) const {
  const std::uint64_t d = dist % p_;
  const std::uint64_t v = orient_ > 0 ? r + d : r + p_ - d;
  return static_cast<std::uint32_t>(v % p_);
}

std::uint32_t SliceTree::inward(std::uint32_t r, std::uint64_t dist) const {
  return outward(r, p_ - dist % p_);
}

std::uint32_t SliceTree::span(std::uint32_t a, std::uint32_t b) const {
  const std::uint64_t fwd = (std::uint64_t{b} + p_ - a) % p_;
  return static_cast<std::uint32_t>(orient_ > 0 ? fwd : (p_ - fwd) % p_);
}

namespace {

bool continues(const Slice& prev, const Slice& next) {
  return prev.buf == next.buf && prev.end() == next.offset;
}

// Pieces in landing order, empty ones dropped, neighbours merged where both ends are contiguous.
std::vector<Piece> runs(std::vector<Piece> pieces) {
  std::erase_if(pieces, [](const Piece& p) { return p.dst.count == 0; });
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
    return std::tie(a.dst.buf, a.dst.offset) < std::tie(b.dst.buf, b.dst.offset);
  });
  std::vector<Piece> out;
  for (const Piece& p : pieces) {
    if (!out.empty() && continues(out.back().src, p.src) && continues(out.back().dst, p.dst)) {
      out.back().src.count += p.src.count;
      out.back().dst.count += p.dst.count;
    } else {
      out.push_back(p);
    }
  }
  return out;
}

// A reduction that extends the step's previous one when all three slices continue it, as long
// as the merged destination still aliases each operand exactly or not at all.
void reduceMerged(Step& s, Slice dst, Slice a, Slice b) {
  if (!dst.count) return;
  if (!s.ops.empty()) {
    LocalOp& last = s.ops.back();
    if (last.kind == OpKind::Reduce && continues(last.dst, dst) && continues(last.a, a) &&
        continues(last.b, b)) {
      LocalOp merged = last;
      merged.dst.count += dst.count;
      merged.a.count += a.count;
      merged.b.count += b.count;
      const auto clean = [&](const Slice& x) { return merged.dst == x || !merged.dst.overlaps(x); };
      if (clean(merged.a) && clean(merged.b)) {
        last = merged;
        return;
      }
    }
  }
  reduce(s, dst, a, b);
}

}  // namespace

void sendRuns(Step& s, std::uint32_t peer, std::vector<Piece> pieces) {
  for (const Piece& p : runs(std::move(pieces))) send(s, peer, p.src);
}

void recvRuns(Step& s, std::uint32_t peer, std::vector<Piece> pieces) {
  for (const Piece& p : runs(std::move(pieces))) recv(s, peer, p.dst);
}

void reduceScatter(RankSchedule& out, const SliceTree& t, std::uint32_t r, const Blocks& bl,
                   const ReduceBuffers& b, const ResultAt& result) {
  const std::uint32_t p = t.ranks(), steps = t.steps();
  const bool inPlace = b.own == b.acc;
  const auto at = [&](const Slice& base, std::uint32_t s) {
    const Slice blk = bl.block(base.buf, t.block(s));
    return Slice{base.buf, base.offset + blk.offset, blk.count};
  };
  // A partial sum leaves its owner's own contribution at the first reduction, which happens at
  // step 0 for every position d whose neighbour d+1 exists.
  const auto partial = [&](std::uint32_t s, std::uint64_t d, std::uint32_t k) {
    return at(k > 0 && d + 1 < p ? b.acc : b.own, s);
  };
  struct Arrival {
    std::uint32_t slice;
    bool final;
    Piece piece;
  };
  // The message rank q receives at step k. Out of place nothing is reduced before step 0, so
  // its receives land where their sums go; later ones land in scratch, packed in block order.
  const auto arrivals = [&](std::uint32_t q, std::uint32_t k) {
    const std::uint64_t h = std::uint64_t{1} << k;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> in;  // slice, position at q
    for (std::uint64_t d = 0; d + h < p; d += 2 * h) in.emplace_back(t.sliceAt(q, d), d);
    std::sort(in.begin(), in.end(),
              [&](const auto& x, const auto& y) { return t.block(x.first) < t.block(y.first); });
    std::vector<Arrival> got;
    std::uint64_t land = b.landing;
    for (const auto& [s, d] : in) {
      const bool final = d == 0 && k + 1 == steps;
      Slice dst;
      if (!inPlace && k == 0) {
        dst = final ? result(q) : at(b.acc, s);
      } else {
        dst = Slice{Buf::Scratch, land, bl.count(t.block(s))};
        land += dst.count;
      }
      got.push_back({s, final, {partial(s, d + h, k), dst}});
    }
    return got;
  };
  const auto pieces = [](const std::vector<Arrival>& a) {
    std::vector<Piece> v;
    for (const Arrival& x : a) v.push_back(x.piece);
    return v;
  };

  for (std::uint32_t k = 0; k < steps; ++k) {
    const std::uint64_t h = std::uint64_t{1} << k;
    Step& st = out.newStep();
    const std::uint32_t to = t.inward(r, h);
    sendRuns(st, to, pieces(arrivals(to, k)));
    const std::vector<Arrival> mine = arrivals(r, k);
    recvRuns(st, t.outward(r, h), pieces(mine));
    for (const Arrival& a : mine) {
      const Slice held = at(k > 0 ? b.acc : b.own, a.slice);
      const Slice landed = a.piece.dst;
      const Slice into = a.final ? result(r) : at(b.acc, a.slice);
      // The lower positions of the tree stay on the left: ascending ranks for NHR, descending
      // for NB, so either keeps rank order wherever a tree does not wrap around rank 0.
      const auto combine = [&](Slice dst) {
        if (t.orient() > 0)
          reduceMerged(st, dst, held, landed);
        else
          reduceMerged(st, dst, landed, held);
      };
      if (into.overlaps(held) && !(into == held)) {  // in place: the result moves to the front
        combine(landed);
        copy(st, into, landed);
      } else {
        combine(into);
      }
    }
  }
}

std::uint64_t reduceScatterScratch(const SliceTree& t, std::uint32_t r, const Blocks& bl,
                                   const ReduceBuffers& b, const ResultAt& result) {
  const std::uint32_t p = t.ranks(), steps = t.steps();
  const bool inPlace = b.own == b.acc;
  std::uint64_t top = 0;
  const auto see = [&](const Slice& s) {
    if (s.buf == Buf::Scratch && s.count > 0) top = std::max(top, s.end());
  };
  // Partial sums and own blocks matter only where they live in Scratch.
  const bool ownScratch = b.own.buf == Buf::Scratch, accScratch = b.acc.buf == Buf::Scratch;
  const auto seeAt = [&](const Slice& base, std::uint32_t s) {
    const std::uint32_t blk = t.block(s);
    if (bl.count(blk) > 0) top = std::max(top, base.offset + bl.offset(blk) + bl.count(blk));
  };
  // sliceAt(x, d + 2h) = sliceAt(x, d) + by (mod p), walked without a division.
  const auto inwardBy = [&](std::uint64_t d) {
    const auto m = static_cast<std::uint32_t>(d % p);
    return t.orient() > 0 ? (p - m) % p : m;
  };
  const auto advance = [p](std::uint32_t x, std::uint32_t by) {
    const std::uint64_t y = std::uint64_t{x} + by;
    return static_cast<std::uint32_t>(y >= p ? y - p : y);
  };
  for (std::uint32_t k = 0; k < steps; ++k) {
    const std::uint64_t h = std::uint64_t{1} << k;
    const std::uint32_t by = inwardBy(2 * h);
    const bool lands = inPlace || k > 0;  // receives land in Scratch from b.landing on
    std::uint64_t landed = 0;
    std::uint32_t got = t.sliceAt(r, 0), sent = t.sliceAt(r, h);
    for (std::uint64_t d = 0; d + h < p; d += 2 * h) {
      // The send of the slice at position d + h (to inward(r, h), its position d there).
      const Slice& from = k > 0 && d + h + 1 < p ? b.acc : b.own;
      if (from.buf == Buf::Scratch) seeAt(from, sent);
      // The receive of the slice at position d, and its reduction.
      const bool final = d == 0 && k + 1 == steps;
      if (lands) {
        landed += bl.count(t.block(got));
      } else if (final) {
        see(result(r));
      } else if (accScratch) {
        seeAt(b.acc, got);
      }
      if (k > 0 ? accScratch : ownScratch) seeAt(k > 0 ? b.acc : b.own, got);
      if (final)
        see(result(r));
      else if (accScratch)
        seeAt(b.acc, got);
      got = advance(got, by);
      sent = advance(sent, by);
    }
    if (landed > 0) top = std::max(top, b.landing + landed);
  }
  return top;
}

void allGather(RankSchedule& out, const SliceTree& t, std::uint32_t r, const Holding& src,
               const Holding& dst, std::uint32_t holdsAll) {
  const std::uint32_t p = t.ranks();
  for (std::uint32_t i = 0; i < t.steps(); ++i) {
    const std::uint32_t k = t.steps() - 1 - i;
    const std::uint64_t h = std::uint64_t{1} << k;
    const std::uint32_t to = t.outward(r, h), from = t.inward(r, h);
    std::vector<Piece> tx, rx;
    for (std::uint64_t d = 0; d + h < p; d += 2 * h) {
      const std::uint32_t s = t.sliceAt(r, d);
      tx.push_back({src(r, s), dst(to, s)});
    }
    for (std::uint64_t d = h; d < p; d += 2 * h) {
      const std::uint32_t s = t.sliceAt(r, d);
      rx.push_back({src(from, s), dst(r, s)});
    }
    Step& st = out.newStep();
    if (to != holdsAll) sendRuns(st, to, std::move(tx));
    if (r != holdsAll) recvRuns(st, from, std::move(rx));
  }
}

std::uint32_t scatterPosition(const SliceTree& t, std::uint32_t root, std::uint32_t r) {
  return t.span(r, root);
}

std::vector<std::uint32_t> scatterHoldings(const SliceTree& t, std::uint32_t root,
                                           std::uint32_t q) {
  const std::uint32_t e = scatterPosition(t, root, q);
  const std::uint64_t stride = e == 0 ? 1 : std::uint64_t{2} << (std::bit_width(e) - 1);
  std::vector<std::uint32_t> pos;
  for (std::uint64_t f = e; f < t.ranks(); f += stride)
    pos.push_back(static_cast<std::uint32_t>(f));
  return pos;
}

void scatter(RankSchedule& out, const SliceTree& t, std::uint32_t r, std::uint32_t root,
             const Holding& hold) {
  const std::uint32_t p = t.ranks();
  const std::uint64_t e = scatterPosition(t, root, r);
  for (std::uint32_t k = 0; k < t.steps(); ++k) {
    const std::uint64_t h = std::uint64_t{1} << k;
    // Positions below h already hold their share and pass on the part bound for e+h's subtree.
    if (e < h && e + h < p) {
      const std::uint32_t to = t.inward(r, h);
      std::vector<Piece> tx;
      for (std::uint64_t f = e + h; f < p; f += 2 * h) {
        const std::uint32_t s = t.inward(root, f);
        tx.push_back({hold(r, s), hold(to, s)});
      }
      sendRuns(out.newStep(), to, std::move(tx));
    } else if (e >= h && e < 2 * h) {
      const std::uint32_t from = t.outward(r, h);
      std::vector<Piece> rx;
      for (std::uint64_t f = e; f < p; f += 2 * h) {
        const std::uint32_t s = t.inward(root, f);
        rx.push_back({hold(from, s), hold(r, s)});
      }
      recvRuns(out.newStep(), from, std::move(rx));
    }
  }
}

RankSchedule reduceScatterCollective(const Problem& pb, std::uint32_t r, const SliceTree& t) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const auto resultAt = [&](std::uint32_t q) { return pb.resultSlice(q); };
  if (pb.ranks == 1) {
    if (!pb.inPlace) copy(out.newStep(), resultAt(0), bl.block(Buf::Input, 0));
    return out;
  }
  const Slice output{Buf::Output, 0, 0};
  const ReduceBuffers b =
      pb.inPlace ? ReduceBuffers{output, output, 0}
                 : ReduceBuffers{Slice{Buf::Input, 0, 0}, Slice{Buf::Scratch, 0, 0}, pb.total()};
  reduceScatter(out, t, r, bl, b, resultAt);
  prune(out);
  return out;
}

std::uint64_t scatterScratch(const Problem& pb, std::uint32_t r, const SliceTree& t) {
  if (r == pb.root) return 0;
  // As scatterCollective's layout(r): every block after the own one, at the running offset; a
  // trailing empty block leaves the top where the last filled one ends, which is the same sum.
  const std::vector<std::uint32_t> pos = scatterHoldings(t, pb.root, r);
  std::uint64_t top = 0;
  for (std::size_t i = 1; i < pos.size(); ++i) top += pb.blocks.count(t.inward(pb.root, pos[i]));
  return top;
}

std::uint64_t reduceScatterCollectiveScratch(const Problem& pb, std::uint32_t r,
                                             const SliceTree& t) {
  if (pb.ranks == 1) return 0;
  const Slice output{Buf::Output, 0, 0};
  const ReduceBuffers b =
      pb.inPlace ? ReduceBuffers{output, output, 0}
                 : ReduceBuffers{Slice{Buf::Input, 0, 0}, Slice{Buf::Scratch, 0, 0}, pb.total()};
  return reduceScatterScratch(t, r, pb.blocks, b,
                              [&](std::uint32_t q) { return pb.resultSlice(q); });
}

RankSchedule scatterCollective(const Problem& pb, std::uint32_t r, const SliceTree& t) {
  RankSchedule out;
  const Blocks& bl = pb.blocks;
  const std::uint32_t root = pb.root;
  // Scratch offsets of the blocks a non-root rank forwards, packed in holding order.
  std::map<std::uint32_t, std::map<std::uint32_t, std::uint64_t>> layouts;
  const auto layout = [&](std::uint32_t q) -> const std::map<std::uint32_t, std::uint64_t>& {
    if (auto it = layouts.find(q); it != layouts.end()) return it->second;
    std::map<std::uint32_t, std::uint64_t> offsets;
    std::uint64_t off = 0;
    const std::vector<std::uint32_t> pos = scatterHoldings(t, root, q);
    for (std::size_t i = 1; i < pos.size(); ++i) {
      const std::uint32_t s = t.inward(root, pos[i]);
      offsets[s] = off;
      off += bl.count(s);
    }
    return layouts.emplace(q, std::move(offsets)).first->second;
  };
  const Holding hold = [&](std::uint32_t q, std::uint32_t s) {
    if (q == root) return bl.block(pb.inPlace ? Buf::Output : Buf::Input, s);
    if (s == q) return Slice{Buf::Output, 0, bl.count(q)};
    return Slice{Buf::Scratch, layout(q).at(s), bl.count(s)};
  };
  scatter(out, t, r, root, hold);
  // The root never receives, so its own block can be copied alongside its first sends.
  if (r == root && !pb.inPlace)
    copy(out.firstStep(), Slice{Buf::Output, 0, bl.count(r)}, bl.block(Buf::Input, r));
  prune(out);
  return out;
}

}  // namespace hccl::algo::tree
