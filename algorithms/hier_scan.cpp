// Scan and Exscan over levels: a hierarchical prefix in rank order (safe for non-commutative
// ops), for servers holding consecutive rank ranges (blockOrder) only; on interleaved servers a
// server's ranks are not a prefix range, and the flat plan serves (plan_levels.cpp refuses).
//
// Steps and peers, two levels (S servers of g ranks, rank (s, j) = server s, local index j,
// x_{s,j} its input, n elements):
//   1. level0 Scan (Exscan) on every server: (s, j) holds P = x_{s,0} (+) .. (+) x_{s,j} (for
//      Exscan up to x_{s,j-1}; nothing at j = 0). The last rank (s, g-1) forms its server's total
//      T_s = P (Exscan: P (+) x_{s,g-1}).
//   2. level1 Exscan of T_s among the last ranks, one per server: (s, g-1) holds
//      E_s = T_0 (+) .. (+) T_{s-1} (nothing for s = 0).
//   3. level0 Broadcast of E_s from (s, g-1) on every server but the first.
//   4. local: result = E_s (+) P (E_s alone where P is empty; P alone on server 0).
// On three levels step 2 is itself this composition among the last ranks of the servers (an
// Exscan over levels 1 and 2: level1 Exscan of server totals within each supernode, level2
// Exscan of supernode totals among the supernodes' last servers, level1 Broadcast, combine), so
// every level runs one prefix and one Broadcast, and each level's links carry n elements per
// step. What each rank holds after each phase, at depth i (ranks whose inner indices are all
// last): P = the prefix within its level-i group, T at the group's last member = the group's
// total, E = the exclusive prefix of the totals of the groups before it, then E (+) P.
//
// Buffers: P is built in the result slot (Output at depth 0, the caller's E slot deeper), so the
// combine is dst = E (+) dst. Scratch holds, per depth, the total T and the exclusive prefix E
// (n elements each) and, for an in-place Exscan, a copy of the input (T needs it after Output
// became P); the generators' scratch follows. Rank 0 of an Exscan writes no Output.
//
// Cost (alpha-beta-gamma, two levels, per level algorithm's formulas):
//   Scan_L0(n) + Exscan_L1(n) + Bc_L0(n) + n c; with H-D_R everywhere
//   ceil(log2 g)(a0 + n b0 + n c) + ceil(log2 S)(a1 + n b1 + n c) + ceil(log2 g)(a0 + n b0) + n c,
// against a flat H-D_R Scan's ceil(log2 gS)(a1 + n b1 + n c): the server links pay ceil(log2 S)
// steps instead of ceil(log2 gS).
// Rank order: yes. Every reduction puts the lower ranks' part on the left (P's within a group,
// T = P (+) x, E (+) P), and with block order the groups before a rank hold exactly the lower
// ranks; the level algorithms' Scan and Exscan (H-D_R, fullmesh) are rank-ordered.
#include "algorithms/compose_levels.hpp"

namespace hccl::algo {

void composeScan(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const Layout& L = c.layout;
  const std::uint64_t n = pb.total();
  if (n == 0) return;
  const bool exclusive = pb.coll == Collective::Exscan;
  // Slots of n elements in Scratch: 0 the in-place input copy, then T and E per inner depth.
  const BufferRegion tmp{Buf::Scratch, (1 + 2 * (used.size() - 1)) * n};
  const auto slot = [&](std::size_t k) { return BufferRegion{Buf::Scratch, k * n}; };
  const auto whole = [&](BufferRegion r) { return Slice{r.buf, r.offset, n}; };
  // Depth i: the prefix (exclusive from depth 1 on) of value `x` over the groups at levels
  // used[i..], into `dst`. Run by the ranks whose indices at every inner level are the last.
  auto depth = [&](auto& self, std::size_t i, BufferRegion x, bool inPlace, bool excl,
                   BufferRegion dst) -> void {
    const int lvl = used[i];
    const auto g = static_cast<std::uint32_t>(L.groupOf(lvl, c.me).size());
    const std::uint32_t idx = L.indexIn(lvl, c.me);
    const Problem q = excl ? Problem::exscan(g, n, inPlace) : Problem::scan(g, n, inPlace);
    c.phase(lvl, q, x, dst, tmp);
    if (i + 1 == used.size()) return;
    const BufferRegion e = slot(2 + 2 * i);
    if (idx == g - 1) {
      BufferRegion t = dst;
      if (excl) {
        t = slot(1 + 2 * i);
        reduce(c.out.stepAfterTransfers(), whole(t), whole(dst), whole(x));
      }
      self(self, i + 1, t, false, true, e);
    }
    // E exists unless every group before this one is empty: the group is the first of all.
    bool first = true;
    for (std::size_t j = i + 1; j < used.size(); ++j)
      first = first && L.indexIn(used[j], c.me) == 0;
    if (first) return;
    c.phase(lvl, Problem::broadcast(g, n, g - 1), e, e, tmp);
    Step& s = c.out.stepAfterTransfers();
    if (excl && idx == 0)
      copy(s, whole(dst), whole(e));
    else
      reduce(s, whole(dst), whole(e), whole(dst));
  };
  BufferRegion x{Buf::Input, 0};
  bool inPlace = false;
  if (pb.inPlace) {
    x = {Buf::Output, 0};
    inPlace = true;
    if (exclusive) {  // T needs the input after Output became P
      copy(c.out.newStep(), whole(slot(0)), whole(x));
      x = slot(0);
      inPlace = false;
    }
  }
  depth(depth, 0, x, inPlace, exclusive, {Buf::Output, 0});
}

}  // namespace hccl::algo
