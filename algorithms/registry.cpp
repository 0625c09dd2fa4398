#include <fmt/format.h>

#include <array>
#include <stdexcept>

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
// only copies; it needs equal blocks (AllToAllV would need per-pair counts).
constexpr std::array kSpecs = {
    GeneratorSpec{A::Ring, C::AllReduce, ringAllReduce, false, true},
    GeneratorSpec{A::Ring, C::ReduceScatter, ringReduceScatter, false, true},
    GeneratorSpec{A::Ring, C::AllGather, ringAllGather, true, true},
    GeneratorSpec{A::Ring, C::Broadcast, ringBroadcast, true, true},
    GeneratorSpec{A::Ring, C::Reduce, ringReduce, false, true},
    GeneratorSpec{A::Rhd, C::AllReduce, rhdAllReduce, true, true},
    GeneratorSpec{A::Rhd, C::ReduceScatter, rhdReduceScatter, false, true},
    GeneratorSpec{A::Rhd, C::AllGather, rhdAllGather, true, true},
    GeneratorSpec{A::Rhd, C::Broadcast, rhdBroadcast, true, true},
    GeneratorSpec{A::Rhd, C::Reduce, rhdReduce, true, true},
    GeneratorSpec{A::Mesh, C::AllReduce, meshAllReduce, true, true},
    GeneratorSpec{A::Mesh, C::ReduceScatter, meshReduceScatter, true, true},
    GeneratorSpec{A::Mesh, C::AllGather, meshAllGather, true, true},
    GeneratorSpec{A::MeshOneShot, C::AllReduce, meshOneShotAllReduce, true, true},
    GeneratorSpec{A::NHR, C::AllReduce, nhrAllReduce, false, true},
    GeneratorSpec{A::NHR, C::ReduceScatter, nhrReduceScatter, false, true},
    GeneratorSpec{A::NHR, C::AllGather, nhrAllGather, true, true},
    GeneratorSpec{A::NHR, C::Broadcast, nhrBroadcast, true, true},
    GeneratorSpec{A::NHR, C::Scatter, nhrScatter, true, true},
    GeneratorSpec{A::NB, C::AllReduce, nbAllReduce, false, true},
    GeneratorSpec{A::NB, C::ReduceScatter, nbReduceScatter, false, true},
    GeneratorSpec{A::NB, C::AllGather, nbAllGather, true, true},
    GeneratorSpec{A::NB, C::Broadcast, nbBroadcast, true, true},
    GeneratorSpec{A::NB, C::Scatter, nbScatter, true, true},
    GeneratorSpec{A::Pairwise, C::AllToAll, pairwiseAllToAll, true, false},
};

}  // namespace

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
