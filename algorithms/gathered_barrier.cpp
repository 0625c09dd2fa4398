// Gathered Barrier: every rank signals the root (pb.root), the root waits for all of them, then
// signals each one; a non-root leaves on the root's signal.
//
//   non-root r:  send signal -> root, wait for the root's signal     (one step)
//   root:        wait for every rank's signal; then signal every rank (two steps)
//
// Why a second Barrier beside mesh's one step: who leaves first. Mesh's Barrier lets the rank
// that came last leave at once and the others a crossing later; this one lets the root leave
// first and every other rank a crossing after it. After a Bcast the root is the rank whose next
// call starts the data moving: with the root released first, the next Bcast's data is already
// on its way while the other ranks leave, as Open MPI's basic (linear) Barrier does. Only its
// sequence rule chooses it, there (registry.cpp: right after a Broadcast, at two ranks on the
// shared-memory link); the model never weighs it (catalog.cpp): two crossings in a row against
// mesh's one.
//
// Buffers: none (zero-byte signals only).
// Cost (alpha only): 2 a on the critical path of a rank that arrives last; the root polls p - 1
//   flags.
// Rank order: nothing is reduced.
#include "algorithms/generators.hpp"

namespace hccl::algo {

RankSchedule gatheredBarrier(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks, root = pb.root;
  if (p == 1) return out;
  Step& in = out.newStep();
  if (r != root) {
    sendSignal(in, root);
    recvSignal(in, root);
    return out;
  }
  for (std::uint32_t i = 1; i < p; ++i) recvSignal(in, (root + i) % p);
  Step& release = out.newStep();
  for (std::uint32_t i = 1; i < p; ++i) sendSignal(release, (root + i) % p);
  return out;
}

}  // namespace hccl::algo
