// Broadcast over levels, HCCL's order (reference section 2: intra Scatter, inter Broadcast,
// intra AllGather) made to respect the write contract (the root's buffer is not output, so the
// root receives nothing) and nested to any number of levels.
//
// Pieces: region_0 is the whole vector; region_{i+1} of a rank is piece idx_i (its index at
// level i) of its region_i split evenly over level i's group. A level-i group shares region_i.
// A rank's depth d is the innermost level whose group spans the root's unit one level down
// (d = 0: the root's server; d = 1: another server of the root's supernode; d = 2: another
// supernode). Steps and peers of a rank of depth d:
//   1. receive region_d by a level-d Broadcast from the member of its group that lies in the
//      root's unit (for d = 0 the root itself sends the whole vector to its server);
//   2. send, as the root of its group at each level i = d+1 .. top, region_i by a level-i
//      Broadcast (it holds it: region_i lies within region_d); inner levels first, so that a
//      rank of the root's server passes region_1 on before its level2 send (outer first, the
//      level1 receiver's own level2 send would wait behind it: two level2 steps on the path);
//   3. AllGather at levels d-1 .. 0 the pieces of region_i, ending with the whole vector.
// Two levels (S servers of g ranks): the root's server gets the vector (L0 Bc, n); piece j goes
// from the root's server's rank j to local index j on every server (L1 Bc, n/g); the other
// servers gather the pieces (L0 AG). Three levels add, between the two, the L2 Broadcast of
// piece (j, s) (n/(gS)) to the other supernodes and their L1 AllGather of piece j. Every byte
// crosses each outer level's links once per receiving unit. A piece of 0 elements skips its
// phase on every member of the group (they share it).
//
// Buffers: everything in Output at its natural offset (the root's only read); no scratch of its
// own.
// Cost (critical path, the level algorithms' formulas; n_i = n / (g_0 ... g_{i-1})):
//   Bc_L0(n) + Bc_L1(n_1) + ... + Bc_top(n_top) + AG_{top-1}(n_{top-1}) + ... + AG_L0(n);
//   two levels with NHR outside and fullmesh inside: 2a0 + (2/g)n b0 + 2ceil(log2 S)a1 +
//   2((S-1)/S)(n/g)b1 + a0 + (1/g)n b0.
// Rank order: nothing is reduced.
#include "algorithms/compose_levels.hpp"

namespace hccl::algo {

void composeBroadcast(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const Layout& L = c.layout;
  const std::size_t k = used.size();
  // region[i] = {offset, count} of region_i.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> region(k);
  region[0] = {0, pb.total()};
  for (std::size_t i = 0; i + 1 < k; ++i) {
    const auto g = static_cast<std::uint32_t>(L.groupOf(used[i], c.me).size());
    const Blocks bl = Blocks::even(region[i].second, g);
    const std::uint32_t idx = L.indexIn(used[i], c.me);
    region[i + 1] = {region[i].first + bl.offset(idx), bl.count(idx)};
  }
  // The rank's depth: its indices above d equal the root's.
  std::size_t d = k - 1;
  for (std::size_t i = 0; i + 1 < k; ++i) {
    bool same = true;
    for (std::size_t j = i + 1; j < k; ++j)
      same = same && L.indexIn(used[j], c.me) == L.indexIn(used[j], pb.root);
    if (same) {
      d = i;
      break;
    }
  }
  const BufferRegion tmp{Buf::Scratch, 0};
  const auto bcast = [&](std::size_t i) {
    const auto [off, count] = region[i];
    if (count == 0) return;
    const auto g = static_cast<std::uint32_t>(L.groupOf(used[i], c.me).size());
    const BufferRegion at{Buf::Output, off};
    c.phase(used[i], Problem::broadcast(g, count, L.indexIn(used[i], pb.root)), at, at, tmp);
  };
  bcast(d);
  for (std::size_t i = d + 1; i < k; ++i) bcast(i);
  for (std::size_t i = d; i-- > 0;) {
    const auto [off, count] = region[i];
    if (count == 0) continue;
    const auto g = static_cast<std::uint32_t>(L.groupOf(used[i], c.me).size());
    const BufferRegion at{Buf::Output, off};
    c.phase(used[i], Problem{Collective::AllGather, g, 0, true, Blocks::even(count, g)}, at, at,
            tmp);
  }
}

}  // namespace hccl::algo
