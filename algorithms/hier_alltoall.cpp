// AllToAll over levels, HCCL's order (reference section 2: AlltoAll "intra, then inter") nested
// to any number of levels: level 0 first, then level 1, then level 2, each level's exchange
// fixing one more coordinate of where a block is going, so that every byte crosses each level's
// links at most once (exactly once when source and destination differ in that coordinate) and a
// rank sends one aggregated message per member of its group at each level.
//
// Coordinates: a rank is (x_0, .., x_{k-1}), x_l its index in its group at level l (x_0 the local
// index in its server, x_1 the server's index in its pod, x_2 the pod's); its level-l group are
// the ranks differing from it in x_l only. Block (s, d) is what rank s sends rank d (c elements).
//
// Steps and peers (g_l the level-l group size, p = g_0 .. g_{k-1}):
//   before the level-l exchange, rank x holds the p blocks (s, d) with s_m = x_m for m >= l and
//   d_m = x_m for m < l (at l = 0: its own Input, one block per destination);
//   l.a pack (local copies): A[m][i] <- the i-th block it holds with d_l = m, in the order
//       (s's free coordinates, then d's free coordinates), so member m's share is contiguous;
//   l.b level-l AllToAll among its g_l group members, p/g_l * c per pair: it sends A[m] to
//       member m and receives B[m] from member m, the blocks that member held for d_l = x_l;
//       after it, x holds the blocks with s_m = x_m for m > l and d_m = x_m for m <= l.
//   After the last level x holds (s, x) for every s: its whole result. Where ranks are numbered
//   as the coordinates in mixed radix (servers of consecutive ranks, pods of consecutive
//   servers) B is already Output's order and the last exchange receives straight into Output;
//   otherwise it lands in B and a last local copy puts each block at its source rank.
// Two levels: (s, j) = server s, local index j; level0 gathers in A[j'][s'] the blocks for the
// ranks (s', j'), exchanges S*c per pair inside the server, level1 exchanges g*c per pair with
// the ranks (s', j) of its index: one aggregated message per server pair and index.
//
// Cost (alpha-beta, the levels' AllToAll algorithms, pairwise here), two levels (S servers of g):
//   (g-1)(a0 + S c b0) + (S-1)(a1 + g c b1) + copies,  three (P pods of S servers of g):
//   (g-1)(a0 + SP c b0) + (S-1)(a1 + gP c b1) + (P-1)(a2 + gS c b2) + copies,
// against flat pairwise (p-1)(a_top + c b_top). copies: k packs of p c elements (and the unpack
// where ranks are not in mixed radix), each p c elements read and written on the rank, which
// the model charges at the level0 link's byte time (phasesPerLevel's local-copy phase). It pays
// where the outer links' alpha dominates (small c, many ranks per server); every byte still
// crosses a server link once, as flat.
//
// Buffers: A = Scratch[0, pc), B = Scratch[pc, 2pc), the generators' scratch from 2pc on. In
// place, the first pack reads Output, which is free from then on.
#include <fmt/format.h>

#include <stdexcept>
#include <unordered_map>

#include "algorithms/compose_levels.hpp"

namespace hccl::algo {

void composeAllToAll(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const Layout& L = c.layout;
  const std::size_t k = used.size();
  const std::uint32_t p = L.ranks();
  const std::uint64_t n = pb.blocks.count(0);
  if (n == 0) return;
  // Mixed-radix codes of the coordinates (level 0 least significant) and the rank of each code.
  std::vector<std::uint32_t> size(k), radix(k + 1, 1);
  for (std::size_t l = 0; l < k; ++l) {
    size[l] = static_cast<std::uint32_t>(L.groupOf(used[l], c.me).size());
    radix[l + 1] = radix[l] * size[l];
  }
  if (radix[k] != p)
    throw std::invalid_argument(fmt::format(
        "alltoall over levels: groups of {} ranks make {}, not the {} ranks", k, radix[k], p));
  const auto code = [&](std::uint32_t q) {
    std::uint32_t v = 0;
    for (std::size_t l = 0; l < k; ++l) v += L.indexIn(used[l], q) * radix[l];
    return v;
  };
  std::vector<std::uint32_t> rankOf(p, p);
  for (std::uint32_t q = 0; q < p; ++q) rankOf[code(q)] = q;
  const auto digit = [&](std::uint32_t v, std::size_t l) { return v / radix[l] % size[l]; };
  // The blocks rank `y` (a code) sends member m at level l, in pack order: (s, d) codes.
  const auto sent = [&](std::uint32_t y, std::size_t l, std::uint32_t m) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    const std::uint32_t sHigh = y / radix[l] * radix[l], dLow = y % radix[l];
    const std::uint32_t above = p / radix[l + 1];
    for (std::uint32_t sLow = 0; sLow < radix[l]; ++sLow)
      for (std::uint32_t dHigh = 0; dHigh < above; ++dHigh)
        out.emplace_back(sHigh + sLow, (dHigh * size[l] + m) * radix[l] + dLow);
    return out;
  };
  const std::uint32_t me = code(c.me);
  // Where the blocks this rank holds are: (s, d) codes to slices; at first its own Input.
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  std::unordered_map<std::uint64_t, Slice> at;
  const auto key = [&](std::uint32_t s, std::uint32_t d) { return std::uint64_t{s} * p + d; };
  for (std::uint32_t d = 0; d < p; ++d) at[key(me, d)] = pb.blocks.block(src, rankOf[d]);
  const std::uint64_t total = std::uint64_t{p} * n;
  const BufferRegion a{Buf::Scratch, 0}, b{Buf::Scratch, total}, tmp{Buf::Scratch, 2 * total};
  for (std::size_t l = 0; l < k; ++l) {
    const std::uint32_t g = size[l];
    const std::uint64_t share = p / g;  // blocks per member
    Step& pack = c.out.newStep();
    for (std::uint32_t m = 0; m < g; ++m) {
      const auto blocks = sent(me, l, m);
      for (std::size_t i = 0; i < blocks.size(); ++i)
        copy(pack, Slice{Buf::Scratch, (m * share + i) * n, n},
             at[key(blocks[i].first, blocks[i].second)]);
    }
    // What arrives: member m's blocks for this rank's coordinate, in its pack order.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> arriving;
    for (std::uint32_t m = 0; m < g; ++m) {
      const std::uint32_t y = me - digit(me, l) * radix[l] + m * radix[l];
      for (const auto& blk : sent(y, l, digit(me, l))) arriving.push_back(blk);
    }
    bool direct = l + 1 == k;
    for (std::size_t i = 0; direct && i < arriving.size(); ++i)
      direct = rankOf[arriving[i].first] == i;
    c.phase(used[l], Problem::allToAll(g, share * n), a, direct ? BufferRegion{Buf::Output, 0} : b,
            tmp);
    if (direct) return;
    at.clear();
    for (std::size_t i = 0; i < arriving.size(); ++i)
      at[key(arriving[i].first, arriving[i].second)] = Slice{Buf::Scratch, total + i * n, n};
  }
  Step& unpack = c.out.newStep();
  for (std::uint32_t s = 0; s < p; ++s)
    copy(unpack, pb.blocks.block(Buf::Output, rankOf[s]), at[key(s, me)]);
}

}  // namespace hccl::algo
