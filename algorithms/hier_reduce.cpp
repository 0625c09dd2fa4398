// Reduce over levels, HCCL's two-level order (reference section 2: intra ReduceScatter, inter
// Reduce, intra Gather) carried to any number of levels, as the AllReduce composition with its
// closing AllGathers turned into Gathers towards the root:
//
//   L0 RS -> L1 RS -> ... -> top Reduce -> ... -> L1 Gather -> L0 Gather
//
// Steps and peers, on two levels (S servers of g ranks, rank (s, j) = server s, local index j,
// root (s0, j0), n elements split evenly over g as n_j = ceil or floor of n/g, 0 allowed):
//   1. level0 ReduceScatter on every server: (s, j) ends with piece j summed over server s.
//   2. level1 Reduce of piece j among the ranks of local index j (one per server) to (s0, j):
//      (s0, j) ends with piece j summed over every rank; each piece crosses the server links
//      once, towards the root's server only.
//   3. level0 Gather on the root's server only, to (s0, j0): the root ends with the whole sum.
// On more levels each inner level splits its region again; the Gather at level i runs in the
// groups that lie in the root's unit one level up (its server for level 0, its supernode for
// level 1). Groups share their region, so a 0-element region skips its phases on every member.
//
// Buffers: the working vector W is Output at the root (its result) and Scratch[0, n) elsewhere
// (a non-root's Output is not result: the write contract); pieces sit at their natural offset in
// W, so the phases after the first work in place there, and the generators' own scratch starts
// at Scratch[n]. Every member of the first ReduceScatter reads an Input, out of place: in place
// at the root its data is in Output, which the first phase also writes, so the root first copies
// it to Scratch[0, n) (one local copy of the vector, as an in-place ReduceScatter makes).
//
// Cost (alpha-beta-gamma, two levels): RS_L0(n) + Reduce_L1(n/g) + Gather_L0(n), each the
// level algorithm's formula on its group and links; with Ring everywhere
//   (g-1)(a0 + n/g b0 + n/g c) + (S-1)(a1 + n/g b1 + n/g c) + (g-1)(a0 + n/g b0),
// against a flat ring Reduce's (gS-1)(a1 + n b1 + n c): the levels pay g-1 more level0 steps and
// move 1/g of the vector between servers. phasesPerLevel() gives the selector these phases.
//
// Rank order: with servers holding consecutive ranks (blockOrder), every level combines
// consecutive rank ranges in order, so the composition reduces in rank order when each level's
// ReduceScatter (inner levels) and Reduce (top level) do (levelsRankOrdered()).
#include "algorithms/compose_levels.hpp"

namespace hccl::algo {

void composeReduce(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const Layout& L = c.layout;
  const std::uint64_t n = pb.total();
  const bool root = c.me == pb.root;
  const Buf w = root ? Buf::Output : Buf::Scratch;
  const BufferRegion tmp{Buf::Scratch, n};
  Buf src = pb.inPlace && root ? Buf::Output : Buf::Input;
  if (src == Buf::Output && n > 0) {
    copy(c.out.newStep(), Slice{Buf::Scratch, 0, n}, Slice{Buf::Output, 0, n});
    src = Buf::Scratch;
  }
  // Level i reduces [o, o+count) of its source (from the second level on, W itself).
  auto step = [&](auto& self, std::size_t i, std::uint64_t o, std::uint64_t count,
                  bool inW) -> void {
    if (count == 0) return;
    const int lvl = used[i];
    const auto g = static_cast<std::uint32_t>(L.groupOf(lvl, c.me).size());
    const std::uint32_t rootIdx = L.indexIn(lvl, pb.root);
    if (i + 1 == used.size()) {
      const Problem q = Problem::reduce(g, count, rootIdx, true);
      c.phase(lvl, q, {w, o}, {w, o}, tmp);
      return;
    }
    const Blocks bl = Blocks::even(count, g);
    const std::uint32_t idx = L.indexIn(lvl, c.me);
    if (inW) {
      Problem q{Collective::ReduceScatter, g, 0, true, bl};
      q.resultInBlock = true;
      c.phase(lvl, q, {Buf::Input, 0}, {w, o}, tmp);
    } else {
      c.phase(lvl, Problem{Collective::ReduceScatter, g, 0, false, bl}, {src, o},
              {w, o + bl.offset(idx)}, tmp);
    }
    self(self, i + 1, o + bl.offset(idx), bl.count(idx), true);
    if (L.unit(used[i + 1], c.me) != L.unit(used[i + 1], pb.root)) return;
    c.phase(lvl, Problem{Collective::Gather, g, rootIdx, true, bl}, {w, o + bl.offset(idx)}, {w, o},
            tmp);
  };
  step(step, 0, 0, n, false);
}

}  // namespace hccl::algo
