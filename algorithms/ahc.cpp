// AHC, Asymmetric Hierarchical Concatenate (HCCL "AHC"; "AHC_BROKE" when all servers are equal,
// which runs the same schedule): AllReduce, ReduceScatter and AllGather over G servers of unequal
// sizes m_1..m_G in one supernode (reference section 1, AHC).
//
// Slicing. L = LCM(m_1..m_G). The vector is cut into L slices (Blocks::even semantics, so slice
// sizes differ by at most one element). Member j of server g owns the slices
// [j L/m_g, (j+1) L/m_g): its "range", the same fraction 1/m_g of the vector in every server.
// Cutting the slice axis at every server's member boundaries gives segments; a segment lies in
// exactly one range per server, and its G owners are HCCL's "logical same-index cards". (HCCL
// counts L*G slices: it also splits each segment among its G owners, which the inter-server
// algorithm below does itself.) For ReduceScatter/AllGather the vector is per server: server h's
// "super-block" SB_h is its members' blocks side by side (member order), S_h elements, cut into
// L slices of its own; a segment covers the same slice indices of every super-block.
//
// AllReduce (n elements):
//   1 level0  ReduceScatter inside each server (the intra algorithm), blocks = the members'
//             ranges, result left in place (in place: the result-in-block variant).
//             After: member j holds its range reduced over its server.
//   2 level1  For each segment it owns, an in-place AllReduce among the segment's owners ordered
//             by server (the inter algorithm). After: member j holds its range reduced over all.
//   3 level0  AllGather inside each server, blocks = the ranges. After: everything everywhere.
// AllGather (blocks b_r, placed in rank order):
//   1 level0  AllGather of the server's blocks: every member holds SB_g (in the output when the
//             server's ranks are consecutive, else staged in scratch).
//   2 level1  For each owned segment, an AllGather among its owners with uneven blocks: owner of
//             server h contributes SB_h's slices of the segment. The results land in a scratch
//             area T laid out segment-major, server-minor, so every segment's blocks are
//             contiguous. After: member j holds its range of every super-block.
//   3 level0  The other servers' parts of T are copied to W, the same layout without this
//             server, in which member j's range is one contiguous block; an in-place AllGather
//             of W inside the server. After: every member holds every other super-block.
//             Closing copies put W (and a staged SB_g) at the MPI positions.
// ReduceScatter (blocks b_r, input in rank order):
//   0         Copy the input into Z (segment-major, server-minor, all servers), where member j's
//             range of every super-block is contiguous.
//   1 level0  ReduceScatter of Z inside the server, blocks = the members' ranges in Z. After:
//             member j holds its range of every super-block, reduced over its server.
//   2 level1  For each owned segment, a ReduceScatter among its owners with uneven blocks (SB_h's
//             part of the segment to the owner of server h). After: member j holds its range of
//             its own SB_g reduced over all ranks.
//   3 level0  One step of direct transfers: the overlap of member k's range with member j's block
//             goes from k to j (a copy when k = j). After: rank r holds its block.
//
// Order of the segments. A rank works through its segments one after another, in an order that
// every rank derives alike: by round, then by index, where rounds colour the segments greedily so
// that the segments of one rank get distinct rounds. Deadlock freedom holds for any order common
// to all ranks: a segment's collective involves only its owners; take, among the segments not yet
// complete, the first in the common order; each of its owners has completed all of its earlier
// segments and (phase 1 depending only on the server) reaches it, so its collective, deadlock-free
// on its own, completes. Message matching between two owners stays aligned because both post
// their common segments in the same order, and phases 1 and 3 only pair ranks of one server while
// phase 2 only pairs ranks of different servers. Rounds rather than plain increasing order: two
// consecutive segments always share an owner, so increasing order chains every segment of the
// vector behind the previous one (the inter phase would cost an AllReduce of all n elements);
// with rounds the longest chain crosses at most one segment per round, about n/min(m) elements.
//
// Cost ([T] section 14.9, labelled AllReduce, NB inside and between servers; m = smallest server,
// m+d = largest, G servers, C = inter/intra bandwidth convergence ratio):
//   2(ceil(log(m+d)) + ceil(log G)) a + 2((m+d-1)/(m+d) + (G-1)C/(Gm)) n b
//   + ((m+d-1)/(m+d) + (G-1)/(Gm)) n g
// This schedule, per rank of a server of m_g ranks: level0 carries RS + AG of n over m_g
// (2(m_g-1)/m_g n bytes with ring or NB), level1 the owned segments' AllReduces, n/m_g elements in
// all (2(G-1)/G n/m_g bytes sent); level1 steps are those of one inter AllReduce per owned
// segment, and the critical path passes at most one segment per round (one round when all servers
// are equal, where the formula's step count is met exactly). AllGather of N = sum of blocks (S_g
// the own server's): a member receives its server's other blocks and (m_g-1)/m_g (N-S_g) on
// level0, (N-S_g)/m_g on level1. ReduceScatter: (m_g-1)/m_g N on level0 (plus the parts of its
// block another member reduced), and on level1 what the inter ReduceScatters of its 1/m_g share
// of every super-block move.
//
// Rank order: no (segments start their reductions at different servers); never chosen for
// non-commutative ops or HCCL_DETERMINISTIC=strict.
#include "algorithms/ahc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/generators.hpp"

namespace hccl::algo {
namespace {

// The slice arithmetic stays in 64 bits below this; real server sizes are far from it.
constexpr std::uint64_t kMaxSlices = std::uint64_t{1} << 32;

std::uint64_t lcmOf(const std::vector<std::uint32_t>& sizes) {
  std::uint64_t l = 1;
  for (std::uint32_t m : sizes) {
    l = std::lcm(l, std::uint64_t{m});  // l <= 2^32 and m < 2^32: no overflow
    if (l > kMaxSlices) return 0;
  }
  return l;
}

std::string sizesText(const std::vector<std::uint32_t>& sizes) {
  std::string s;
  for (std::uint32_t m : sizes) s += fmt::format("{}{}", s.empty() ? "" : "+", m);
  return s;
}

// Element offset of slice boundary k when `total` elements are cut into `slices` slices.
struct SliceAxis {
  std::uint64_t total, slices;
  std::uint64_t at(std::uint64_t k) const {
    return k * (total / slices) + std::min(k, total % slices);
  }
};

// Everything about the servers, their ranges and segments, as every rank computes it alike.
struct Geometry {
  std::vector<std::vector<std::uint32_t>> members;  // per server, canonical order
  std::uint64_t slices = 1;                         // L
  std::vector<std::uint64_t> cuts;                  // segment s = slices [cuts[s], cuts[s+1])
  std::vector<std::vector<std::size_t>> first;      // [g][j]: member j owns segments
                                                    //   [first[g][j], first[g][j+1])
  std::vector<std::vector<std::uint32_t>> owner;    // [s][g]: the member of server g owning s
  std::vector<std::size_t> order;                   // segments in processing order
  std::uint32_t g = 0, j = 0;                       // this rank's server and index in it

  auto servers() const { return static_cast<std::uint32_t>(members.size()); }
  std::uint32_t size(std::uint32_t h) const {
    return static_cast<std::uint32_t>(members[h].size());
  }
  std::size_t segments() const { return cuts.size() - 1; }
  // Slice boundary where member k of server h starts its range (k = size(h): the end).
  std::uint64_t rangeCut(std::uint32_t h, std::uint32_t k) const { return cuts[first[h][k]]; }
  // The owners of segment s, one per server in server order: the group of the inter phase.
  std::vector<std::uint32_t> owners(std::size_t s) const {
    std::vector<std::uint32_t> o(servers());
    for (std::uint32_t h = 0; h < servers(); ++h) o[h] = members[h][owner[s][h]];
    return o;
  }
  // This rank's segments, in processing order.
  std::vector<std::size_t> mine() const {
    std::vector<std::size_t> out;
    for (std::size_t s : order)
      if (owner[s][g] == j) out.push_back(s);
    return out;
  }
};

Geometry geometryOf(const Layout& lay, std::uint32_t rank) {
  Geometry geo;
  geo.members = lay.groups(0);
  std::vector<std::uint32_t> sizes;
  for (const auto& m : geo.members) sizes.push_back(static_cast<std::uint32_t>(m.size()));
  geo.slices = lcmOf(sizes);
  const std::uint64_t L = geo.slices;
  for (std::uint32_t h = 0; h < geo.servers(); ++h)
    for (std::uint64_t k = 0; k <= sizes[h]; ++k) geo.cuts.push_back(k * L / sizes[h]);
  std::sort(geo.cuts.begin(), geo.cuts.end());
  geo.cuts.erase(std::unique(geo.cuts.begin(), geo.cuts.end()), geo.cuts.end());
  const std::size_t K = geo.segments();
  geo.first.resize(geo.servers());
  geo.owner.assign(K, std::vector<std::uint32_t>(geo.servers()));
  for (std::uint32_t h = 0; h < geo.servers(); ++h) {
    for (std::uint64_t k = 0; k <= sizes[h]; ++k)
      geo.first[h].push_back(static_cast<std::size_t>(
          std::lower_bound(geo.cuts.begin(), geo.cuts.end(), k * L / sizes[h]) - geo.cuts.begin()));
    for (std::uint32_t k = 0; k < sizes[h]; ++k)
      for (std::size_t s = geo.first[h][k]; s < geo.first[h][k + 1]; ++s) geo.owner[s][h] = k;
    for (std::uint32_t k = 0; k < sizes[h]; ++k)
      if (geo.members[h][k] == rank) {
        geo.g = h;
        geo.j = k;
      }
  }
  // Greedy rounds: the smallest round none of the segment's owners has used yet.
  std::vector<std::vector<std::vector<std::size_t>>> used(geo.servers());
  for (std::uint32_t h = 0; h < geo.servers(); ++h) used[h].resize(sizes[h]);
  std::vector<std::size_t> round(K);
  for (std::size_t s = 0; s < K; ++s) {
    std::size_t r = 0;
    auto taken = [&](std::size_t x) {
      for (std::uint32_t h = 0; h < geo.servers(); ++h) {
        const auto& u = used[h][geo.owner[s][h]];
        if (std::find(u.begin(), u.end(), x) != u.end()) return true;
      }
      return false;
    };
    while (taken(r)) ++r;
    round[s] = r;
    for (std::uint32_t h = 0; h < geo.servers(); ++h) used[h][geo.owner[s][h]].push_back(r);
  }
  geo.order.resize(K);
  std::iota(geo.order.begin(), geo.order.end(), std::size_t{0});
  std::stable_sort(geo.order.begin(), geo.order.end(),
                   [&](std::size_t a, std::size_t b) { return round[a] < round[b]; });
  return geo;
}

struct Ctx {
  const Geometry& geo;
  Algorithm intra, inter;
  RankSchedule& out;

  // Runs `q` among `members` (this rank is members[index]) on the links of `level`.
  void run(Algorithm a, const Problem& q, std::vector<std::uint32_t> members, std::uint32_t index,
           int level, BufferRegion in, BufferRegion o, BufferRegion tmp) const {
    Embedding e;
    e.members = std::move(members);
    e.level = static_cast<std::uint8_t>(level);
    e.to = {in, o, tmp};
    if (q.ranks == 1) {
      // Alone: out of place the data only moves to the output; in place nothing is left to do.
      RankSchedule part;
      if (!q.inPlace)
        copy(part.newStep(), Slice{Buf::Output, 0, q.total()}, Slice{Buf::Input, 0, q.total()});
      prune(part);
      embed(out, part, e);
      return;
    }
    embed(out, phaseGenerator(a, q.coll, "AHC", true)(q, index), e);
  }

  void inside(const Problem& q, BufferRegion in, BufferRegion o, BufferRegion tmp) const {
    run(intra, q, geo.members[geo.g], geo.j, 0, in, o, tmp);
  }
  void between(std::size_t s, const Problem& q, BufferRegion in, BufferRegion o,
               BufferRegion tmp) const {
    run(inter, q, geo.owners(s), geo.g, 1, in, o, tmp);
  }
};

void allReduce(const Ctx& c, const Problem& pb) {
  const Geometry& geo = c.geo;
  const SliceAxis ax{pb.total(), geo.slices};
  const std::uint32_t m = geo.size(geo.g);
  std::vector<std::uint64_t> range(m);
  for (std::uint32_t k = 0; k < m; ++k)
    range[k] = ax.at(geo.rangeCut(geo.g, k + 1)) - ax.at(geo.rangeCut(geo.g, k));
  const Blocks ranges = Blocks::of(range);
  const BufferRegion tmp{Buf::Scratch, 0};
  if (pb.inPlace) {
    Problem q{Collective::ReduceScatter, m, 0, true, ranges};
    q.resultInBlock = true;
    c.inside(q, {Buf::Input, 0}, {Buf::Output, 0}, tmp);
  } else {
    c.inside(Problem{Collective::ReduceScatter, m, 0, false, ranges}, {Buf::Input, 0},
             {Buf::Output, ranges.offset(geo.j)}, tmp);
  }
  if (geo.servers() > 1)
    for (std::size_t s : geo.mine()) {
      const std::uint64_t at = ax.at(geo.cuts[s]), n = ax.at(geo.cuts[s + 1]) - at;
      c.between(s, Problem::allReduce(geo.servers(), n, true), {Buf::Input, 0}, {Buf::Output, at},
                tmp);
    }
  c.inside(Problem{Collective::AllGather, m, 0, true, ranges}, {Buf::Input, 0}, {Buf::Output, 0},
           tmp);
}

// The super-blocks of a ReduceScatter/AllGather: server h's members' blocks side by side.
struct SuperBlocks {
  const Geometry& geo;
  std::vector<std::vector<std::uint64_t>> start;  // [h][k]: member k's block in SB_h; [h][m_h]
                                                  //   = S_h

  SuperBlocks(const Geometry& g, const Blocks& b) : geo(g), start(g.servers()) {
    for (std::uint32_t h = 0; h < geo.servers(); ++h) {
      start[h] = {0};
      for (std::uint32_t q : geo.members[h]) start[h].push_back(start[h].back() + b.count(q));
    }
  }
  SliceAxis axis(std::uint32_t h) const { return {start[h].back(), geo.slices}; }
  // Elements of SB_h in segment s.
  std::uint64_t len(std::size_t s, std::uint32_t h) const {
    return axis(h).at(geo.cuts[s + 1]) - axis(h).at(geo.cuts[s]);
  }
  // Where slice boundary k falls in a segment-major layout of the servers for which `in(h)`.
  template <typename In>
  std::uint64_t layoutAt(std::uint64_t k, In in) const {
    std::uint64_t at = 0;
    for (std::uint32_t h = 0; h < geo.servers(); ++h)
      if (in(h)) at += axis(h).at(k);
    return at;
  }
  // Where SB_h's part of segment s sits in that layout.
  template <typename In>
  std::uint64_t layoutPiece(std::size_t s, std::uint32_t h, In in) const {
    std::uint64_t at = layoutAt(geo.cuts[s], in);
    for (std::uint32_t x = 0; x < h; ++x)
      if (in(x)) at += len(s, x);
    return at;
  }
  // Calls f(rank, offset in the rank's block, offset from x, count) for the pieces of SB_h's
  // elements [x, y) in the members' blocks.
  template <typename F>
  void pieces(std::uint32_t h, std::uint64_t x, std::uint64_t y, F f) const {
    for (std::uint32_t k = 0; k < geo.size(h); ++k) {
      const std::uint64_t lo = std::max(x, start[h][k]), hi = std::min(y, start[h][k + 1]);
      if (lo < hi) f(geo.members[h][k], lo - start[h][k], lo - x, hi - lo);
    }
  }
};

const auto kAll = [](std::uint32_t) { return true; };

void allGather(const Ctx& c, const Problem& pb) {
  const Geometry& geo = c.geo;
  const SuperBlocks sb(geo, pb.blocks);
  const std::uint32_t g = geo.g, m = geo.size(g), G = geo.servers();
  const auto others = [g](std::uint32_t h) { return h != g; };
  const auto& own = geo.members[g];
  bool consecutive = true;
  for (std::uint32_t k = 0; k < m; ++k) consecutive = consecutive && own[k] == own[0] + k;

  // Scratch: [SB_g staged unless in the output][T][W][the phases' own scratch]
  std::uint64_t free = 0;
  BufferRegion stage{Buf::Output, pb.blocks.offset(own[0])};
  if (!consecutive) {
    stage = {Buf::Scratch, 0};
    free = sb.start[g].back();
  }
  const std::uint64_t myFrom = geo.rangeCut(g, geo.j), myTo = geo.rangeCut(g, geo.j + 1);
  const std::uint64_t tAt = free, tFrom = sb.layoutAt(myFrom, kAll);
  free += sb.layoutAt(myTo, kAll) - tFrom;
  const std::uint64_t wAt = free;
  free += sb.layoutAt(geo.slices, others);
  const BufferRegion tmp{Buf::Scratch, free};

  // 1: every member gets SB_g.
  std::vector<std::uint64_t> counts(m);
  for (std::uint32_t k = 0; k < m; ++k) counts[k] = pb.blocks.count(own[k]);
  const bool inPlace = pb.inPlace && consecutive;
  const BufferRegion mine = pb.inPlace ? BufferRegion{Buf::Output, pb.blocks.offset(own[geo.j])}
                                       : BufferRegion{Buf::Input, 0};
  c.inside(Problem{Collective::AllGather, m, 0, inPlace, Blocks::of(counts)}, mine, stage, tmp);

  if (G > 1) {
    // 2: per owned segment, every server's part of it, into T.
    const std::vector<std::size_t> segs = geo.mine();
    for (std::size_t s : segs) {
      std::vector<std::uint64_t> lens(G);
      for (std::uint32_t h = 0; h < G; ++h) lens[h] = sb.len(s, h);
      const std::uint64_t from = sb.axis(g).at(geo.cuts[s]);
      c.between(s, Problem{Collective::AllGather, G, 0, false, Blocks::of(lens)},
                {stage.buf, stage.offset + from},
                {Buf::Scratch, tAt + sb.layoutPiece(s, 0, kAll) - tFrom}, tmp);
    }
    // 3: the other servers' parts from T into this member's block of W, gathered in the server.
    Step& st = c.out.newStep();
    for (std::size_t s : segs)
      for (std::uint32_t h = 0; h < G; ++h)
        if (h != g)
          copy(st, {Buf::Scratch, wAt + sb.layoutPiece(s, h, others), sb.len(s, h)},
               {Buf::Scratch, tAt + sb.layoutPiece(s, h, kAll) - tFrom, sb.len(s, h)});
    std::vector<std::uint64_t> wRange(m);
    for (std::uint32_t k = 0; k < m; ++k)
      wRange[k] =
          sb.layoutAt(geo.rangeCut(g, k + 1), others) - sb.layoutAt(geo.rangeCut(g, k), others);
    c.inside(Problem{Collective::AllGather, m, 0, true, Blocks::of(wRange)}, {Buf::Input, 0},
             {Buf::Scratch, wAt}, tmp);
  }
  // Closing copies to the MPI positions.
  Step& st = c.out.newStep();
  for (std::uint32_t h = 0; h < G; ++h) {
    if (h == g) continue;
    for (std::size_t s = 0; s < geo.segments(); ++s) {
      const std::uint64_t from = sb.axis(h).at(geo.cuts[s]), w = wAt + sb.layoutPiece(s, h, others);
      sb.pieces(
          h, from, from + sb.len(s, h),
          [&](std::uint32_t q, std::uint64_t inBlock, std::uint64_t delta, std::uint64_t n) {
            copy(st, {Buf::Output, pb.blocks.offset(q) + inBlock, n}, {Buf::Scratch, w + delta, n});
          });
    }
  }
  if (!consecutive)
    for (std::uint32_t k = 0; k < m; ++k)
      if (!(pb.inPlace && k == geo.j))
        copy(st, pb.blocks.block(Buf::Output, own[k]),
             {Buf::Scratch, sb.start[g][k], pb.blocks.count(own[k])});
}

void reduceScatter(const Ctx& c, const Problem& pb) {
  const Geometry& geo = c.geo;
  const SuperBlocks sb(geo, pb.blocks);
  const std::uint32_t g = geo.g, m = geo.size(g), G = geo.servers();
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  const std::uint64_t n = pb.total();
  const std::uint64_t myFrom = geo.rangeCut(g, geo.j), myTo = geo.rangeCut(g, geo.j + 1);
  // Scratch: [Z, n][R: my range of Z][F: my range of SB_g][the phases' own scratch]
  const std::uint64_t rAt = n, rFrom = sb.layoutAt(myFrom, kAll);
  const std::uint64_t fAt = rAt + sb.layoutAt(myTo, kAll) - rFrom;
  const std::uint64_t fFrom = sb.axis(g).at(myFrom), fTo = sb.axis(g).at(myTo);
  const BufferRegion tmp{Buf::Scratch, fAt + fTo - fFrom};

  // 0: the input into Z.
  {
    Step& st = c.out.newStep();
    for (std::size_t s = 0; s < geo.segments(); ++s)
      for (std::uint32_t h = 0; h < G; ++h) {
        const std::uint64_t from = sb.axis(h).at(geo.cuts[s]), z = sb.layoutPiece(s, h, kAll);
        sb.pieces(
            h, from, from + sb.len(s, h),
            [&](std::uint32_t q, std::uint64_t inBlock, std::uint64_t delta, std::uint64_t cnt) {
              copy(st, {Buf::Scratch, z + delta, cnt}, {src, pb.blocks.offset(q) + inBlock, cnt});
            });
      }
  }
  // 1: my range of every super-block, reduced over the server, into R.
  std::vector<std::uint64_t> zRange(m);
  for (std::uint32_t k = 0; k < m; ++k)
    zRange[k] = sb.layoutAt(geo.rangeCut(g, k + 1), kAll) - sb.layoutAt(geo.rangeCut(g, k), kAll);
  c.inside(Problem{Collective::ReduceScatter, m, 0, false, Blocks::of(zRange)}, {Buf::Scratch, 0},
           {Buf::Scratch, rAt}, tmp);
  // 2: per owned segment, SB_g's part reduced over every server, into F.
  for (std::size_t s : geo.mine()) {
    std::vector<std::uint64_t> lens(G);
    for (std::uint32_t h = 0; h < G; ++h) lens[h] = sb.len(s, h);
    c.between(s, Problem{Collective::ReduceScatter, G, 0, false, Blocks::of(lens)},
              {Buf::Scratch, rAt + sb.layoutPiece(s, 0, kAll) - rFrom},
              {Buf::Scratch, fAt + sb.axis(g).at(geo.cuts[s]) - fFrom}, tmp);
  }
  // 3: ranges to blocks, directly.
  Step& st = c.out.newStep();
  const Slice result = pb.resultSlice(geo.members[g][geo.j]);
  const std::uint64_t myBlock = sb.start[g][geo.j];
  for (std::uint32_t k = 0; k < m; ++k) {
    const std::uint32_t peer = geo.members[g][k];
    // What I hold of member k's block, and what member k holds of mine.
    const std::uint64_t lo = std::max(fFrom, sb.start[g][k]),
                        hi = std::min(fTo, sb.start[g][k + 1]);
    const std::uint64_t theirFrom = sb.axis(g).at(geo.rangeCut(g, k)),
                        theirTo = sb.axis(g).at(geo.rangeCut(g, k + 1));
    const std::uint64_t lo2 = std::max(theirFrom, myBlock),
                        hi2 = std::min(theirTo, sb.start[g][geo.j + 1]);
    if (k == geo.j) {
      if (lo < hi)
        copy(st, {Buf::Output, result.offset + lo - myBlock, hi - lo},
             {Buf::Scratch, fAt + lo - fFrom, hi - lo});
      continue;
    }
    if (lo < hi) send(st, peer, {Buf::Scratch, fAt + lo - fFrom, hi - lo});
    if (lo2 < hi2) recv(st, peer, {Buf::Output, result.offset + lo2 - myBlock, hi2 - lo2});
  }
}

}  // namespace

Algorithm ahcDefaultInter(std::uint32_t servers) {
  RuleQuery q;
  q.within = RuleScope::AhcInter;
  q.groupSize = q.servers = servers;
  const HcclRule* row = firstMatch(defaultCostModel().hcclRules, q, [](Algorithm) { return true; });
  return row ? row->algorithm : Algorithm::Ring;
}

std::string ahcWhyNot(const std::vector<std::uint32_t>& serverSizes, Collective c) {
  if (c != Collective::AllReduce && c != Collective::ReduceScatter && c != Collective::AllGather)
    return fmt::format("AHC has no {}", name(c));
  if (serverSizes.empty()) return "AHC needs servers within one supernode";
  for (std::uint32_t m : serverSizes)
    if (m == 0) return fmt::format("AHC: an empty server in {}", sizesText(serverSizes));
  if (!lcmOf(serverSizes))
    return fmt::format("AHC: the LCM of the server sizes {} exceeds {} slices",
                       sizesText(serverSizes), kMaxSlices);
  return {};
}

RankSchedule ahcSchedule(const Layout& lay, Algorithm intra, Algorithm inter, const Problem& pb,
                         std::uint32_t rank) {
  if (pb.ranks != lay.ranks() || rank >= lay.ranks())
    throw std::invalid_argument(fmt::format(
        "AHC: rank {} of a problem of {} ranks on a layout of {}", rank, pb.ranks, lay.ranks()));
  for (const auto& pod : lay.groups(2))
    if (pod.size() > 1)
      throw std::invalid_argument(
          fmt::format("AHC runs within one supernode, not on {}", lay.describe()));
  std::vector<std::uint32_t> sizes;
  for (const auto& s : lay.groups(0)) sizes.push_back(static_cast<std::uint32_t>(s.size()));
  if (const std::string why = ahcWhyNot(sizes, pb.coll); !why.empty())
    throw std::invalid_argument(why);
  const Geometry geo = geometryOf(lay, rank);
  RankSchedule out;
  const Ctx c{geo, intra, inter, out};
  switch (pb.coll) {
    case Collective::AllReduce:
      allReduce(c, pb);
      break;
    case Collective::ReduceScatter:
      reduceScatter(c, pb);
      break;
    default:
      allGather(c, pb);
      break;
  }
  prune(out);
  return out;
}

}  // namespace hccl::algo
