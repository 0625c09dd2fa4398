// Mesh AllReduce, pushed: Mesh's ReduceScatter step (every rank reduces its block from every
// peer's input, reading the peers' blocks in place on the shared-memory link), then an
// AllGather whose messages are pushes (Transfer::push): the rank that reduced a block writes it
// into its peers' Output instead of each peer reading it back.
//
// The schedule is Mesh's, message for message; only who copies changes. That lets the engine
// fuse the two steps on the shared-memory link: every peer exposes its Output block during the
// first step, and the rank reducing block r writes each cache-sized piece of it to the peers as
// soon as it computed it. At p = 2 a rank's memory traffic drops from reading 1.5n and writing
// n (the peer's input block, its own input block, the peer's result block) to reading n and
// writing n: the result block reaches the peer from the cache.
//   cost Mesh's, less (n/p) mu on the shared-memory link (cost_model.hpp's memory-traffic term,
//   memory_GBps: the block streamed from the cache, one push per reducing op, is not read from
//   memory), where its blocks exceed the slots' inline size
// Rank order: yes, as Mesh. Memory: Mesh's. In place, and where the link cannot push (no CMA,
// another server, a message small enough for a slot), it runs as Mesh does and the model prices
// it as Mesh (a tie, which Mesh keeps).
#include "algorithms/generators.hpp"

namespace hccl::algo {

RankSchedule meshPushAllReduce(const Problem& pb, std::uint32_t r) {
  // In place a peer's block of Output is its input until the first step has sent it, so it
  // cannot be open to writing from the first step on (Transfer::push): then it is Mesh.
  return meshAllReduceGathering(pb, r, /*push=*/!pb.inPlace);
}

}  // namespace hccl::algo
