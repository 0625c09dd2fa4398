// AllToAll over two levels, HCCL's order (reference section 2: AlltoAll "intra, then inter"):
// a rank first exchanges inside its server so that it holds everything its server sends to the
// ranks of its own local index on every server, then the ranks of one local index exchange
// between servers, one aggregated message per server pair.
//
// Steps and peers (S servers of g ranks; rank (s, j) = server s, local index j; c elements per
// pair; every rank's Input holds one block per destination rank, its Output one per source):
//   1. pack (local copies): Scratch A[j'][s'] <- the block for rank (s', j'), grouped by the
//      destination's local index j', so each server peer's share is contiguous.
//   2. level0 AllToAll among the g ranks of the server, S*c per pair: (s, j) sends A[j'] to
//      (s, j') and receives B[j*][s'] = what (s, j*) sends to (s', j), for every j* and s'.
//   3. repack (local copies): A[s'][j*] <- B[j*][s'], grouped by destination server.
//   4. level1 AllToAll among the S ranks of local index j, g*c per pair: (s, j) sends A[s'] to
//      (s', j) and receives what (s*, j*) sends to (s, j) for every j*, s*: its whole result.
//      Where servers hold consecutive ranks that is already Output's order; otherwise it lands
//      in Scratch and a last local copy puts each block at its source rank.
// Every byte crosses a server link once, as flat; what changes is that a rank sends S-1
// messages of g*c between servers instead of p-g messages of c.
//
// Cost (alpha-beta, pairwise per level): AllToAll_L0(S*c per pair) + AllToAll_L1(g*c per pair)
//   = (g-1)(a0 + S*c b0) + (S-1)(a1 + g*c b1)   against flat pairwise (p-1)(a1 + c b1),
// plus the local copies of steps 1, 3 (and 5), which the model does not charge. It pays where
// the server links' alpha dominates (small c, many ranks per server).
//
// Buffers: A = Scratch[0, pc), B = Scratch[pc, 2pc), the generators' scratch from 2pc on. In
// place, step 1 reads Output, which is free from then on. Two levels only (three: flat).
#include "algorithms/compose_levels.hpp"

namespace hccl::algo {

void composeAllToAll(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const Layout& L = c.layout;
  const int l0 = used[0], l1 = used[1];
  const std::vector<std::uint32_t>& server = L.groupOf(l0, c.me);
  const std::vector<std::uint32_t>& peers = L.groupOf(l1, c.me);
  const auto g = static_cast<std::uint32_t>(server.size());
  const auto S = static_cast<std::uint32_t>(peers.size());
  const std::uint64_t n = pb.blocks.count(0);
  const std::uint64_t total = std::uint64_t{g} * S * n;
  if (n == 0) return;
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  // The rank at server index s, local index j, as the groups of this rank see them.
  const auto rankAt = [&](std::uint32_t s, std::uint32_t j) { return L.groupOf(l1, server[j])[s]; };
  Step& pack = c.out.newStep();
  for (std::uint32_t j = 0; j < g; ++j)
    for (std::uint32_t s = 0; s < S; ++s)
      copy(pack, Slice{Buf::Scratch, (std::uint64_t{j} * S + s) * n, n},
           pb.blocks.block(src, rankAt(s, j)));
  const BufferRegion a{Buf::Scratch, 0}, b{Buf::Scratch, total}, tmp{Buf::Scratch, 2 * total};
  c.phase(l0, Problem::allToAll(g, S * n), a, b, tmp);
  Step& repack = c.out.newStep();
  for (std::uint32_t j = 0; j < g; ++j)
    for (std::uint32_t s = 0; s < S; ++s)
      copy(repack, Slice{Buf::Scratch, (std::uint64_t{s} * g + j) * n, n},
           Slice{Buf::Scratch, total + (std::uint64_t{j} * S + s) * n, n});
  // Received block [s][j] comes from the rank of local index j on peer s's server.
  bool direct = true;
  for (std::uint32_t s = 0; s < S; ++s)
    for (std::uint32_t j = 0; j < g; ++j)
      direct = direct && L.groupOf(l0, peers[s])[j] == s * g + j;
  c.phase(l1, Problem::allToAll(S, g * n), a, direct ? BufferRegion{Buf::Output, 0} : b, tmp);
  if (direct) return;
  Step& unpack = c.out.newStep();
  for (std::uint32_t s = 0; s < S; ++s)
    for (std::uint32_t j = 0; j < g; ++j)
      copy(unpack, pb.blocks.block(Buf::Output, L.groupOf(l0, peers[s])[j]),
           Slice{Buf::Scratch, total + (std::uint64_t{s} * g + j) * n, n});
}

}  // namespace hccl::algo
