// Pairwise AllToAll (HCCL "pairwise"): a Mesh done one peer per step, so each rank drives a single
// link per direction and no port is shared by many flows.
//
// p-1 steps: at step k = 1..p-1 rank i sends its block for rank i+k to i+k and receives rank
// i-k's block for it into its output block i-k (indices mod p). Its own block is a local copy.
//   cost (p-1)a + b * sum_k max_i n(i, i+k) = (p-1)a + ((p-1)/p)n b for equal blocks
//
// In place (MPI_IN_PLACE: Output holds the blocks to send and receives the result): block i-k,
// where rank i-k's data belongs, is still to be sent at step p-k. Steps k > p/2 receive straight
// into it (sent already); steps k < p/2 receive into scratch slot k-1 and copy it into place at
// the end of step p-k, right after sending that block; step k = p/2 (p even) sends and receives
// block i+k = i-k at once, so its receive lands in a slot and is copied at the end of the step.
// Scratch: floor(p/2) blocks in place, none out of place.
//
// Blocks must be equal (rank i's block j and rank j's block i are the same transfer); AllToAllV
// needs per-pair counts, which a Problem does not carry.
#include <fmt/format.h>

#include <stdexcept>

#include "algorithms/generators.hpp"

namespace hccl::algo {

RankSchedule pairwiseAllToAll(const Problem& pb, std::uint32_t r) {
  const Blocks& bl = pb.blocks;
  const std::uint32_t p = pb.ranks;
  for (std::uint32_t j = 1; j < p; ++j)
    if (bl.count(j) != bl.count(0))
      throw std::invalid_argument(fmt::format(
          "pairwise AllToAll needs equal blocks: block {} holds {} elements, block 0 holds {}", j,
          bl.count(j), bl.count(0)));
  RankSchedule out;
  const std::uint64_t c = bl.count(0);
  const auto slot = [&](std::uint32_t i) { return Slice{Buf::Scratch, i * c, c}; };
  if (!pb.inPlace) {
    for (std::uint32_t k = 1; k < p; ++k) {
      Step& s = out.newStep();
      send(s, (r + k) % p, bl.block(Buf::Input, (r + k) % p));
      recv(s, (r + p - k) % p, bl.block(Buf::Output, (r + p - k) % p));
    }
    // No receive lands in block r, so the own copy can run with the first step.
    copy(out.firstStep(), bl.block(Buf::Output, r), bl.block(Buf::Input, r));
    prune(out);
    return out;
  }
  for (std::uint32_t k = 1; k < p; ++k) {
    Step& s = out.newStep();
    const std::uint32_t to = (r + k) % p, from = (r + p - k) % p;
    send(s, to, bl.block(Buf::Output, to));
    if (2 * k > p) {
      recv(s, from, bl.block(Buf::Output, from));
      copy(s, bl.block(Buf::Output, to), slot(p - k - 1));  // arrived at step p-k
    } else if (2 * k == p) {
      recv(s, from, slot(k - 1));
      copy(s, bl.block(Buf::Output, from), slot(k - 1));
    } else {
      recv(s, from, slot(k - 1));
    }
  }
  prune(out);
  return out;
}

}  // namespace hccl::algo
