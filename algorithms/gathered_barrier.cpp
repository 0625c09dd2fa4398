// Gathered Barrier: every rank signals the root (pb.root), the root waits for all of them, then
// signals each one; a non-root leaves on the root's signal. (A non-root's signal goes to every
// rank, one post on the slots; the root alone waits for it.)
//
//   non-root r:  send signal -> every rank, wait for the root's signal, then take the other
//                non-roots' signals (sent before the root released: no wait)   (one step)
//   root:        wait for every rank's signal; then signal every rank (two steps)
//
// Why a second Barrier beside mesh's one step: who leaves first. Mesh's Barrier lets the rank
// that came last leave at once and the others a crossing later; this one lets the root leave
// first and every other rank a crossing after it. After a Bcast the root is the rank whose next
// call starts the data moving: with the root released first, the next Bcast's data is already
// on its way while the other ranks leave, as Open MPI's basic (linear) Barrier does. Only its
// sequence rule chooses it, there (registry.cpp: right after a Broadcast, at 2-8 ranks on the
// shared-memory link); the model never weighs it (catalog.cpp): two crossings in a row against
// mesh's one.
//
// Buffers: none (zero-byte signals only).
// Cost (alpha only): 2 a on the critical path of a rank that arrives last; every rank polls p - 1
//   flags (as in fullmesh's Barrier).
// Rank order: nothing is reduced.
#include "algorithms/generators.hpp"

namespace hccl::algo {

RankSchedule gatheredBarrier(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks, root = pb.root;
  if (p == 1) return out;
  Step& in = out.newStep();
  if (r != root) {
    // Every rank's signal goes to every other rank, as one post on the shared-memory slots
    // (SlotProgram takes a step that sends to all its peers, and every reader reads a writer's
    // every post): signalling the root alone left the Barrier off the slots at more than two
    // ranks. A non-root takes the root's release first; the other ranks' signals were sent
    // before the root could release, so they are there by then and cost no wait.
    for (std::uint32_t i = 1; i < p; ++i) sendSignal(in, (r + i) % p);
    recvSignal(in, root);
    for (std::uint32_t i = 1; i < p; ++i)
      if ((r + i) % p != root) recvSignal(in, (r + i) % p);
    return out;
  }
  for (std::uint32_t i = 1; i < p; ++i) recvSignal(in, (root + i) % p);
  Step& release = out.newStep();
  for (std::uint32_t i = 1; i < p; ++i) sendSignal(release, (root + i) % p);
  return out;
}

}  // namespace hccl::algo
