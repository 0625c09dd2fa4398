#include "algorithms/sim_symmetry.hpp"

#include <fmt/format.h>

#include "algorithms/ahc.hpp"
#include "algorithms/plan.hpp"

namespace hccl::algo {
namespace {

bool powerOfTwo(std::uint32_t g) {
  return g != 0 && (g & (g - 1)) == 0;
}

// Empty when `a` over g members runs the same timeline on every member (up to block sizes).
std::string asymmetricAlgorithm(Algorithm a, std::uint32_t g) {
  switch (a) {
    case Algorithm::Ring:
    case Algorithm::Mesh:
    case Algorithm::MeshOneShot:
    case Algorithm::MeshPush:
    case Algorithm::Pairwise:
    case Algorithm::Pipeline:
      return {};
    case Algorithm::NB:
      // Some ranks' runs of blocks wrap around block 0 and go as two transfers where the others
      // send one, but a step's transfers to one peer move as one flow (SimOptions::bundle), so
      // every rank puts the same flows on its NIC.
      return {};
    case Algorithm::Rhd:
    case Algorithm::NHR:  // other g: slice runs differ per rank (nhr.cpp)
      return powerOfTwo(g) ? ""
                           : fmt::format("{} over {} members (not a power of two)", hcclName(a), g);
    default:
      return fmt::format("{} has no symmetry the simulator knows", hcclName(a));
  }
}

}  // namespace

std::string asymmetry(const Layout& lay, const PlanKey& key, Collective c) {
  switch (c) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AllToAll:
    case Collective::Barrier:
      break;
    default:
      return fmt::format("{} has a root or a rank order", name(c));
  }
  if (!lay.symmetric() || !lay.blockOrder()) return "servers of unequal size or interleaved ranks";
  const std::string_view plan = planOf(key).name();
  const CommShape shape = lay.shape();
  if (plan == "flat") {
    int top = 0;
    for (const LevelGroup& g : shape.levels) top = g.level;
    const Algorithm a = key.algorithms[static_cast<std::size_t>(top)];
    const std::uint32_t perServer = static_cast<std::uint32_t>(lay.groups(0).front().size());
    if (a == Algorithm::Rhd && !powerOfTwo(perServer))
      return fmt::format("flat H-D_R with {} ranks per server (not a power of two)", perServer);
    return asymmetricAlgorithm(a, lay.ranks());
  }
  if (plan == "pipeline") return {};
  if (plan == "AHC") {
    // Over servers of equal size AHC is RS inside, the inter algorithm among the same-index
    // cards (one segment per rank), AG inside: as symmetric as the inter algorithm.
    const auto servers = static_cast<std::uint32_t>(lay.groups(0).size());
    std::string why = asymmetricAlgorithm(key.inter.value_or(ahcDefaultInter(servers)), servers);
    return why.empty() ? why : fmt::format("AHC between servers: {}", why);
  }
  if (plan != "per-level") return fmt::format("the {} plan's servers differ", plan);
  for (const LevelGroup& g : shape.levels) {
    if (g.level == 0) continue;
    std::string why =
        asymmetricAlgorithm(key.algorithms[static_cast<std::size_t>(g.level)], g.size);
    if (!why.empty()) return fmt::format("level{}: {}", g.level, why);
  }
  return {};
}

SimPlan simPlan(const Layout& lay, const PlanKey& key, const Problem& pb, bool allServers) {
  SimPlan out;
  const Layout::Groups& servers = lay.groups(0);
  const std::uint32_t p = lay.ranks();
  out.servers = static_cast<std::uint32_t>(servers.size());
  out.why = allServers ? "every server asked for" : asymmetry(lay, key, pb.coll);
  // Fewer elements than ranks: some ranks' blocks are empty and their transfers skipped, so
  // servers run different steps (64x8 AllReduce of 256 elements over a ring).
  if (out.why.empty() && pb.blocks.total() != 0 && pb.blocks.total() < p)
    out.why = fmt::format("{} elements for {} ranks: some blocks are empty", pb.blocks.total(), p);
  const bool all = !out.why.empty();
  SimRanks& r = out.ranks;
  r.serverOf.assign(p, 0);
  r.rep.assign(p, 0);
  for (std::uint32_t s = 0; s < servers.size(); ++s)
    for (std::uint32_t i = 0; i < servers[s].size(); ++i) {
      const std::uint32_t rank = servers[s][i];
      r.serverOf[rank] = s;
      r.rep[rank] = all ? rank : servers[0][i];
    }
  for (std::uint32_t s = 0; s < (all ? servers.size() : 1); ++s)
    r.simulated.insert(r.simulated.end(), servers[s].begin(), servers[s].end());
  out.simulatedServers = all ? out.servers : 1;
  if (!all) out.why = fmt::format("symmetric: server 0 represents all {}", out.servers);
  r.schedule = [&lay, key, pb](std::uint32_t rank) { return compose(lay, key, pb, rank); };
  return out;
}

}  // namespace hccl::algo
