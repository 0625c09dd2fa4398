// Mesh one-shot AllReduce (HCCL's small-message "Mesh + local reduce", as in its one-shot and
// strict-order mesh executors): one step in which rank r sends its whole input vector to every
// peer and receives every peer's whole vector into scratch; each rank then reduces the p vectors
// locally in rank order x_0 (+) x_1 (+) ... (+) x_{p-1}, so every rank computes the same result.
//   cost a + n b + (p-1)n g   (one link per peer; a rank with one link sends (p-1)n in turn)
//
// Against Mesh AllReduce (ReduceScatter then AllGather, 2a + (2/p)n b + ((p-1)/p)n g) it halves
// the startups and pays p/2 times the volume and p times the reduction: the small-message choice.
// Rank order: yes. Memory: (p-1)n elements of scratch.
#include "algorithms/generators.hpp"
#include "algorithms/rank_cost.hpp"

namespace hccl::algo {

RankSchedule meshOneShotAllReduce(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint64_t n = pb.total();
  const Slice whole{pb.inPlace ? Buf::Output : Buf::Input, 0, n};
  meshReduceStep(out, pb.ranks, r, n, Slice{Buf::Output, 0, n},
                 [&](std::uint32_t) { return whole; });
  prune(out);
  return out;
}

// Broadcast in one step: the root sends its whole vector to every peer. On the shared-memory
// slots that is one post every reader copies (engine/slot_executor.hpp), where Mesh's Broadcast
// (Scatter, then AllGather) sends each peer another block first and so leaves the slots for the
// general executor at more than two ranks. Its transfers are one post (Transfer::post): the model
// prices the root's one write and each reader's copy, not p-1 sends. At two ranks it is the ring's
// one message, and stays a plain one: the same schedule, priced (and so chosen) as the ring's.
RankSchedule meshOneShotBroadcast(const Problem& pb, std::uint32_t r) {
  RankSchedule out;
  const std::uint32_t p = pb.ranks;
  const Slice whole{Buf::Output, 0, pb.total()};
  Step& s = out.newStep();
  const bool post = p > 2;
  if (r == pb.root) {
    for (std::uint32_t i = 1; i < p; ++i) (post ? sendPost : send)(s, (r + i) % p, whole);
  } else {
    (post ? recvPost : recv)(s, pb.root, whole);
  }
  prune(out);
  return out;
}

// The replay of meshOneShotBroadcast's schedule without building it (the root's p-1 transfers
// and one a reader: 2p ends to match and walk a decision). Every rank has one step, posted at
// time 0, which starts at once: the root's send of the whole vector to each of p-1 peers and each
// reader's receive of it, each costed by addStepLoad() from the loads addStep() sums (the root
// writes a post once where the link has posts, else p-1 times), so the times are the replay's to
// the last bit. The critical path is the later of the two, the lowest rank of equal ones as the
// replay's: the root's if it is rank 0, else rank 0's, a reader. O(1).
Metrics meshOneShotBroadcastCost(const GeneratorSpec&, const Problem& pb, std::size_t elemSize,
                                 const CostParams& params) {
  const std::uint32_t p = pb.ranks;
  const std::uint64_t bytes = pb.total() * elemSize;
  if (p <= 1 || bytes == 0) return {};
  // meshOneShotBroadcast posts at more than two ranks; a post counts as one only where the link
  // has broadcast slots (metrics.hpp), and its step is then posts only.
  const bool post = p > 2 && params.posts[0];
  StepLoad write, read;
  write.add(0, Dir::Send, bytes);
  write.total[0][0] = post ? bytes : (p - 1) * bytes;
  write.postsOnly[0] = post;
  read.add(0, Dir::Recv, bytes);
  read.postsOnly[0] = post;
  Metrics rootPath, readerPath;
  rootPath.time = addStepLoad(write, params, rootPath);
  readerPath.time = addStepLoad(read, params, readerPath);
  if (readerPath.time > rootPath.time) return readerPath;
  if (rootPath.time > readerPath.time) return rootPath;
  return pb.root == 0 ? rootPath : readerPath;
}

}  // namespace hccl::algo
