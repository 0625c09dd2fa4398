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
// AllToAll's blocks must be equal (rank i's block j and rank j's block i are the same transfer).
// AllToAllV (PairCounts): the same steps with per-pair sizes, rank i's Input block j being its
// row's entry j and its Output block i-k its column's entry i-k; it uses only the rank's row and
// column, so it serves rank-local problems. In place (symmetric counts) the slots take the sizes
// of the blocks they hold.
//   cost (p-1)a + b * sum_k max_i count(i, i+k)
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "algorithms/generators.hpp"

namespace hccl::algo {

namespace {

// The exchange for rank r: Input block j of `send` goes to rank j, Output block i of `recv` comes
// from rank i (in place: Output holds `send`'s blocks, which equal `recv`'s).
RankSchedule exchange(std::uint32_t p, std::uint32_t r, const Blocks& send_, const Blocks& recv_,
                      bool inPlace) {
  RankSchedule out;
  // p-1 steps of two transfers: at thousands of ranks their allocations are most of the cost.
  out.steps.reserve(p);
  if (!inPlace) {
    for (std::uint32_t k = 1; k < p; ++k) {
      Step& s = out.newStep();
      send(s, (r + k) % p, send_.block(Buf::Input, (r + k) % p));
      recv(s, (r + p - k) % p, recv_.block(Buf::Output, (r + p - k) % p));
    }
    // No receive lands in block r, so the own copy can run with the first step.
    copy(out.firstStep(), recv_.block(Buf::Output, r), send_.block(Buf::Input, r));
    prune(out);
    return out;
  }
  // Scratch slot of step k (2k <= p), for the block of rank r-k: slots packed in step order.
  std::vector<std::uint64_t> slotAt(p / 2 + 1, 0);
  for (std::uint32_t k = 1; k < slotAt.size(); ++k)
    slotAt[k] = slotAt[k - 1] + recv_.count((r + p - k) % p);
  const auto slot = [&](std::uint32_t k) {
    return Slice{Buf::Scratch, slotAt[k - 1], recv_.count((r + p - k) % p)};
  };
  for (std::uint32_t k = 1; k < p; ++k) {
    Step& s = out.newStep();
    const std::uint32_t to = (r + k) % p, from = (r + p - k) % p;
    send(s, to, recv_.block(Buf::Output, to));
    if (2 * k > p) {
      recv(s, from, recv_.block(Buf::Output, from));
      copy(s, recv_.block(Buf::Output, to), slot(p - k));  // arrived at step p-k
    } else if (2 * k == p) {
      recv(s, from, slot(k));
      copy(s, recv_.block(Buf::Output, from), slot(k));
    } else {
      recv(s, from, slot(k));
    }
  }
  prune(out);
  return out;
}

}  // namespace

namespace {

void requireEqualBlocks(const Blocks& bl) {
  for (std::uint32_t j = 1; j < bl.parts(); ++j)
    if (bl.count(j) != bl.count(0))
      throw std::invalid_argument(fmt::format(
          "pairwise AllToAll needs equal blocks: block {} holds {} elements, block 0 holds {}", j,
          bl.count(j), bl.count(0)));
}

}  // namespace

RankSchedule pairwiseAllToAll(const Problem& pb, std::uint32_t r) {
  requireEqualBlocks(pb.blocks);
  return exchange(pb.ranks, r, pb.blocks, pb.blocks, pb.inPlace);
}

Metrics pairwiseAllToAllPath(const Problem& pb, std::uint32_t, std::size_t elemSize,
                             const CostParams& params) {
  // exchange()'s p-1 steps each send one block to a peer and receive one from another, in place
  // too (its copies move no bytes between ranks); equal blocks, so every rank alike.
  requireEqualBlocks(pb.blocks);
  PairPath path(elemSize, params);
  const std::uint64_t c = pb.ranks > 0 ? pb.blocks.count(0) : 0;
  for (std::uint32_t k = 1; k < pb.ranks; ++k) path.step(c, c, 0);
  return path.path();
}

std::uint64_t pairwiseAllToAllScratch(const Problem& pb, std::uint32_t r) {
  if (!pb.inPlace) return 0;
  // exchange()'s slots: step k <= p/2 parks rank r-k's block.
  const std::uint32_t p = pb.ranks;
  std::uint64_t top = 0;
  for (std::uint32_t k = 1; 2 * k <= p; ++k) top += pb.blocks.count((r + p - k) % p);
  return top;
}

RankSchedule pairwiseAllToAllV(const Problem& pb, std::uint32_t r) {
  const Blocks recvBl = pb.pairs.recvBlocks(r);
  return exchange(pb.ranks, r, pb.inPlace ? recvBl : pb.pairs.sendBlocks(r), recvBl, pb.inPlace);
}

}  // namespace hccl::algo
