#include "algorithms/catalog.hpp"

namespace hccl::algo {
namespace {

using A = Algorithm;
constexpr std::array<AlgorithmInfo, kNumAlgorithms> kCatalog = {{
    {A::Ring,
     "ring: one block per step to the right neighbour; bandwidth-optimal, p-1 steps",
     {true, true, true}},
    {A::Rhd,
     "recursive halving-doubling: log2(p) pairwise exchanges; non-powers of two fold pairs first",
     {false, true, true}},
    {A::Mesh,
     "full mesh: every pair at once in one step (needs a link per peer)",
     {true, false, false}},
    {A::NHR,
     "nonuniform hierarchical ring: ceil(log2 p) steps for any p, no extra data",
     {false, true, true}},
    {A::NHR_V1, "legacy NHR (sqrt(p)-order steps), being phased out in HCCL", {false, true, false}},
    {A::NB,
     "nonuniform Bruck: ceil(log2 p) steps with doubling strides, no extra data",
     {false, true, true}},
    {A::AHC,
     "asymmetric hierarchical concatenate: groups of unequal size, LCM slicing",
     {false, true, false}},
    {A::AHC_Broke, "AHC when every group has the same size", {false, true, false}},
    {A::Pipeline,
     "pipeline: inter-server ring steps overlapped with intra-server transfers",
     {false, true, true}},
    {A::Pairwise, "pairwise: alltoall one peer per step", {false, true, false}},
    {A::MeshOneShot,
     "full mesh one-shot: whole vectors to every peer, each rank reduces all p (small messages)",
     {true, false, false}},
    // Not HCCL's: coll_hccl's level0 AllReduce on the shared-memory link. The model prices it
    // as Mesh less the memory read its streamed push saves (cost_model.hpp's memory_GBps), so
    // it wins where that term is on and its blocks are pushed (above the slots' inline size);
    // elsewhere it ties with Mesh, which comes first and keeps the tie.
    {A::MeshPush,
     "full mesh, pushed: Mesh AllReduce whose reducing rank writes its block into its peers "
     "(shared-memory link)",
     {true, false, false}},
    // Not HCCL's, and at no level of HCCL's: the model never weighs it (it costs two crossings
    // in a row where fullmesh's Barrier costs one). Only its sequence rule chooses it
    // (registry.cpp: a Barrier right after a Broadcast at 2-8 ranks on the shared-memory link).
    {A::Gathered,
     "gathered: Barrier where every rank signals a root, which leaves first and releases the "
     "others (after a Broadcast, at its root)",
     {false, false, false}},
}};

}  // namespace

std::span<const AlgorithmInfo> algorithmCatalog() {
  return kCatalog;
}
const AlgorithmInfo& info(Algorithm a) {
  return kCatalog[static_cast<std::size_t>(a)];
}

}  // namespace hccl::algo
