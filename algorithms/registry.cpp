#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "algorithms/decision.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/write_contract.hpp"

namespace hccl::algo {
namespace {

using A = Algorithm;
using C = Collective;

// Rank order is a property of the reduction tree: Ring accumulates around the ring from a
// different rank for every block; RHD's AllReduce and Reduce merge aligned neighbour groups
// (distance doubling) and its ReduceScatter pairs ranks p/2 apart; Mesh and its one-shot
// AllReduce reduce every block locally in rank order. NHR and NB reduce slice s along a binomial
// tree over the ring that starts at rank s and wraps around rank 0 for every s but one. Pairwise
// only copies; it needs equal blocks (AllToAllV would need per-pair counts). Every Gather is its
// Scatter reversed (reverse.hpp); NHR's, NB's and Mesh's Reduce is their ReduceScatter then their
// Gather (rs_gather_reduce.cpp), rank-ordered exactly when their ReduceScatter is (Mesh's only).
// Rank-local problems (GatherV/ScatterV non-roots) are served by the direct (fullmesh) Scatter and
// Gather only: the trees forward other ranks' blocks, whose counts a non-root does not know. Scan
// and Exscan (RHD's distance doubling) keep lower ranks on the left by construction; Barrier moves
// no data. Costs (rank_cost.hpp): lockstep unless named. Ring Broadcast and Reduce are chains; the
// trees of RHD's Broadcast, Reduce and Exscan make ranks wait on partners whose schedules differ
// from theirs (ranks outside the power of two): Broadcast is one chain of equal steps, the tree's
// rounds then the unfold (rhdBroadcastCost, O(log p)); Mesh's Broadcast (its root's p-1
// uneven blocks add up on a one-link port and every AllGather waits for the latest post) applies
// the replay's rules to every rank's block count (meshBroadcastCost, O(p) where the replay is
// p^2), and its one-shot Broadcast is the root's one post or a reader's copy
// (meshOneShotBroadcastCost, O(1)); Exscan (rhdExscanCost,
// O(p log p)) and RHD's Reduce, whose schedule lists O(p) blocks a rank (rhdReduceCost,
// O(p log p)), apply the replay's rules to every rank's per-step counts, and Mesh's Reduce (with
// uneven blocks the ReduceScatter ends at different times, and the root's Gather waits for the
// slowest) to every rank's block count (meshReduceCost, O(p) where the replay is p^2). NHR's and
// NB's AllReduce, Broadcast and Reduce run in lockstep while every block holds an element; when
// some block is empty the pruned transfers leave ranks waiting on partners (rank_cost_nhr/nb, p=9
// count=7): they are then costed from every rank's per-step counts (tree::phasesPath, O(p log p)).
// Ring's, NHR's and NB's lockstep ranks, and pairwise's and fullmesh's AllToAll, are costed from
// their per-step counts (`path`, rank_cost.hpp's PathFn) without building a schedule.
//
// The gathered Barrier (gathered_barrier.cpp) is chosen by its sequence rule alone: right after a
// Broadcast, gathered at its root, which then leaves first, so that its next call (osu_bcast's
// next Broadcast) starts moving while the other ranks leave and the readers find the data already
// there, as behind Open MPI's basic (linear) Barrier; the loop's period is two crossings either
// way. Measured (OSU osu_bcast) on the shared-memory slots at two ranks at every size and, once
// every rank's signal became a post the slots take, at 3, 4, 5 and 8 ranks on 2 cores (8 B-16 KiB
// 0.2-1.3 us against 3.5-12 us with fullmesh's Barrier, whose
// last comer leaves first while the root, there first, waits for a core to notice it; the
// Bcast + Barrier period within the noise), hence the bounds. Above 16 KiB at 4 ranks (the
// one-shot's block, which its root waits for every reader to copy, so the root's Bcast then
// waits for the readers to leave the Barrier) it gained nothing at 32-256 KiB and lost 8-11% at
// 512 KiB-1 MiB, hence the Bcast size bound above two ranks. The model never weighs it
// (catalog.cpp), as it costs two crossings in a row where fullmesh's Barrier costs one.
constexpr SequenceRule kAfterBroadcast{.afterBroadcast = true,
                                       .maxRanks = 8,
                                       .anySizeRanks = 2,
                                       .maxBroadcastBytes = 16384,
                                       .sharedMemory = true,
                                       .why =
                                           "gathered at the broadcast's root, which leaves "
                                           "first: its next call starts while the other ranks "
                                           "leave"};

constexpr std::array kSpecs = {
    GeneratorSpec{A::Ring, C::AllReduce, ringAllReduce, false, true, false, ringAllReduceCost,
                  ringAllReducePath, true, ringAllReduceScratch},
    GeneratorSpec{A::Ring, C::ReduceScatter, ringReduceScatter, false, true, false, nullptr,
                  ringReduceScatterPath, true, ringReduceScatterScratch},
    GeneratorSpec{A::Ring, C::AllGather, ringAllGather, true, true, false, nullptr,
                  ringAllGatherPath, true, noScratch},
    GeneratorSpec{A::Ring, C::Broadcast, ringBroadcast, true, true, false, chainCost, nullptr, true,
                  noScratch},
    GeneratorSpec{A::Ring, C::Reduce, ringReduce, false, true, false, chainCost, nullptr, true,
                  ringReduceScratch},
    GeneratorSpec{A::Ring, C::Scatter, ringScatter, true, true, false, nullptr, ringScatterPath,
                  true, ringScatterScratch},
    GeneratorSpec{A::Ring, C::Gather, ringGather, true, true, false, nullptr, ringGatherPath, true,
                  ringScatterScratch},
    GeneratorSpec{A::Rhd, C::AllReduce, rhdAllReduce, true, true, false, nullptr, nullptr, true,
                  rhdAllReduceScratch},
    GeneratorSpec{A::Rhd, C::ReduceScatter, rhdReduceScatter, false, true, false, nullptr, nullptr,
                  true, rhdReduceScatterScratch},
    GeneratorSpec{A::Rhd, C::AllGather, rhdAllGather, true, true, false, nullptr, nullptr, true,
                  noScratch},
    GeneratorSpec{A::Rhd, C::Broadcast, rhdBroadcast, true, true, false, rhdBroadcastCost, nullptr,
                  true, noScratch},
    GeneratorSpec{A::Rhd, C::Reduce, rhdReduce, true, true, false, rhdReduceCost, nullptr, true,
                  rhdReduceScratch},
    GeneratorSpec{A::Rhd, C::Scan, rhdScan, true, true, false, nullptr, nullptr, true,
                  rhdScanScratch},
    GeneratorSpec{A::Rhd, C::Exscan, rhdExscan, true, true, false, rhdExscanCost, nullptr, true,
                  rhdExscanScratch},
    GeneratorSpec{A::Mesh, C::AllReduce, meshAllReduce, true, true, false},
    GeneratorSpec{A::Mesh, C::ReduceScatter, meshReduceScatter, true, true, false, nullptr, nullptr,
                  true, meshReduceScatterScratch},
    GeneratorSpec{A::Mesh, C::AllGather, meshAllGather, true, true, false, nullptr, nullptr, true,
                  noScratch},
    GeneratorSpec{A::Mesh, C::Broadcast, meshBroadcast, true, true, false, meshBroadcastCost,
                  nullptr, true, noScratch},
    GeneratorSpec{A::Mesh, C::Reduce, meshReduce, true, true, false, meshReduceCost, nullptr, true,
                  meshReduceScratch},
    GeneratorSpec{A::Mesh, C::Scatter, meshScatter, true, true, true, nullptr, nullptr, true,
                  noScratch},
    GeneratorSpec{A::Mesh, C::Gather, meshGather, true, true, true, nullptr, nullptr, true,
                  noScratch},
    GeneratorSpec{A::Mesh, C::Barrier, meshBarrier, true, true, false},
    GeneratorSpec{A::Gathered, C::Barrier, gatheredBarrier, true, true, false, nullptr, nullptr,
                  true, nullptr, &kAfterBroadcast},
    GeneratorSpec{A::Mesh, C::Scan, meshScan, true, true, false, nullptr, nullptr, true,
                  meshScanScratch},
    GeneratorSpec{A::Mesh, C::Exscan, meshExscan, true, true, false, nullptr, nullptr, true,
                  meshScanScratch},
    GeneratorSpec{A::Mesh, C::AllToAll, meshAllToAll, true, false, false, nullptr, meshAllToAllPath,
                  true, meshAllToAllScratch},
    GeneratorSpec{A::Mesh, C::AllToAllV, meshAllToAllV, true, true, true},
    GeneratorSpec{A::MeshOneShot, C::AllReduce, meshOneShotAllReduce, true, true, false},
    GeneratorSpec{A::MeshOneShot, C::Broadcast, meshOneShotBroadcast, true, true, false,
                  meshOneShotBroadcastCost, nullptr, true, noScratch},
    GeneratorSpec{A::MeshPush, C::AllReduce, meshPushAllReduce, true, true, false},
    GeneratorSpec{A::NHR, C::AllReduce, nhrAllReduce, false, true, false, nhrAllReduceCost,
                  nhrAllReducePath, false},
    GeneratorSpec{A::NHR, C::ReduceScatter, nhrReduceScatter, false, true, false, nullptr,
                  nhrReduceScatterPath, true, nhrReduceScatterScratch},
    GeneratorSpec{A::NHR, C::AllGather, nhrAllGather, true, true, false, nullptr, nhrAllGatherPath,
                  true, noScratch},
    GeneratorSpec{A::NHR, C::Broadcast, nhrBroadcast, true, true, false, nhrBroadcastCost,
                  nhrBroadcastPath, true, noScratch},
    GeneratorSpec{A::NHR, C::Scatter, nhrScatter, true, true, false, nullptr, nhrScatterPath, true,
                  nhrScatterScratch},
    GeneratorSpec{A::NHR, C::Gather, nhrGather, true, true, false, nullptr, nhrGatherPath, true,
                  nhrScatterScratch},
    GeneratorSpec{A::NHR, C::Barrier, nhrBarrier, true, true, false},
    GeneratorSpec{A::NHR, C::Reduce, nhrReduce, false, true, false, nhrReduceCost, nhrReducePath,
                  false, nhrReduceScratch},
    GeneratorSpec{A::NB, C::AllReduce, nbAllReduce, false, true, false, nbAllReduceCost,
                  nbAllReducePath, true, nbAllReduceScratch},
    GeneratorSpec{A::NB, C::ReduceScatter, nbReduceScatter, false, true, false, nullptr,
                  nbReduceScatterPath, true, nbReduceScatterScratch},
    GeneratorSpec{A::NB, C::AllGather, nbAllGather, true, true, false, nullptr, nbAllGatherPath,
                  true, noScratch},
    GeneratorSpec{A::NB, C::Broadcast, nbBroadcast, true, true, false, nbBroadcastCost,
                  nbBroadcastPath, true, noScratch},
    GeneratorSpec{A::NB, C::Scatter, nbScatter, true, true, false, nullptr, nbScatterPath, true,
                  nbScatterScratch},
    GeneratorSpec{A::NB, C::Gather, nbGather, true, true, false, nullptr, nbGatherPath, true,
                  nbScatterScratch},
    GeneratorSpec{A::NB, C::Barrier, nbBarrier, true, true, false},
    GeneratorSpec{A::NB, C::Reduce, nbReduce, false, true, false, nbReduceCost, nbReducePath, true,
                  nbReduceScratch},
    GeneratorSpec{A::Pairwise, C::AllToAll, pairwiseAllToAll, true, false, false, nullptr,
                  pairwiseAllToAllPath, true, pairwiseAllToAllScratch},
    GeneratorSpec{A::Pairwise, C::AllToAllV, pairwiseAllToAllV, true, true, true},
};

}  // namespace

std::string SequenceRule::reason(const CallInfo& call) const {
  std::string conditions;
  // value(): the selector matched the rule on this call, so the root is there; a rule worded for
  // a call it does not match is a bug, and throws rather than print a wrong root.
  if (afterBroadcast) {
    conditions += fmt::format("after a broadcast from rank {}", call.afterBroadcastFrom.value());
    // The size bound, whether or not this communicator is above it: a reader of the line sees
    // why the same Barrier after a larger Bcast goes another way.
    if (maxBroadcastBytes > 0)
      conditions +=
          fmt::format(" of {} (above {} ranks at most {})", bytesText(call.afterBroadcastBytes),
                      anySizeRanks, bytesText(maxBroadcastBytes));
    conditions += ", ";
  }
  return conditions + std::string(why);
}

std::uint64_t noScratch(const Problem&, std::uint32_t) {
  return 0;
}

std::span<const GeneratorSpec> generatorSpecs() {
  return kSpecs;
}

const GeneratorSpec* findGenerator(Algorithm a, Collective c) {
  for (const GeneratorSpec& s : kSpecs)
    if (s.algorithm == a && s.coll == c) return &s;
  return nullptr;
}

Generator phaseGenerator(Algorithm a, Collective c, std::string_view of, bool unevenBlocks) {
  const GeneratorSpec* spec = findGenerator(a, c);
  if (!spec)
    throw std::invalid_argument(
        fmt::format("{} has no {} to run as a phase of {}", hcclName(a), name(c), of));
  if (unevenBlocks && !spec->unevenBlocks)
    throw std::invalid_argument(
        fmt::format("{} {} needs equal blocks to run as a phase of {}", hcclName(a), name(c), of));
  return spec->generate;
}

Schedule buildSchedule(Generator g, const Problem& pb) {
  Schedule s{pb, {}};
  s.ranks.reserve(pb.ranks);
  for (std::uint32_t r = 0; r < pb.ranks; ++r) s.ranks.push_back(withPrivateInput(pb, r, g));
  return s;
}

}  // namespace hccl::algo
