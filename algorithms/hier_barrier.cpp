// Barrier over levels: one Barrier per level, inner first, every rank taking part at every level
// (dissemination per level, as the level algorithms' Barriers are: NHR's and NB's dissemination,
// fullmesh's one step):
//
//   L0 Barrier -> L1 Barrier -> ... -> top Barrier
//
// Steps and peers (S servers of g ranks, rank (s, j) = server s, local index j):
//   1. level0 Barrier on every server: (s, j) leaves it knowing every rank of server s entered.
//   2. level1 Barrier among the ranks of local index j, one per server: (s, j) leaves it knowing
//      that every (s', j) finished step 1, so that every rank of every server entered.
//   On three levels the level2 Barrier among the same (server, local) positions of the
//   supernodes does the same for the supernodes. By induction, after level i a rank knows every
//   rank of its unit one level up entered; after the top level, every rank of the communicator.
// HCCL's alternative (intra gather, a Barrier among server leaders, intra release) pays the
// level0 steps twice for the same guarantee; running every index at level1 costs the server
// links g zero-byte messages per step instead of one, which carry no data.
//
// Buffers: none (zero-byte signals only).
// Cost (alpha only): sum over levels of the level algorithm's Barrier steps, with NHR or NB
//   ceil(log2 g) a0 + ceil(log2 S) a1, against a flat Barrier's ceil(log2 gS) a1.
// Rank order: nothing is reduced.
#include "algorithms/compose_levels.hpp"

namespace hccl::algo {

void composeBarrier(const Composer& c, const std::vector<int>& used) {
  const BufferRegion none{Buf::Scratch, 0};
  for (const int lvl : used) {
    const auto g = static_cast<std::uint32_t>(c.layout.groupOf(lvl, c.me).size());
    c.phase(lvl, Problem::barrier(g), none, none, none);
  }
}

}  // namespace hccl::algo
