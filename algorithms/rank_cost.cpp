#include "algorithms/rank_cost.hpp"

#include <algorithm>

#include "algorithms/generators.hpp"

namespace hccl::algo {

std::vector<std::uint32_t> representativeRanks(const Problem& pb) {
  const std::uint32_t p = pb.ranks, root = pb.root % std::max(p, 1u);
  std::vector<std::uint32_t> out{0, p - 1, root, (root + 1) % p, (root + p - 1) % p};
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::uint32_t> planRepresentatives(const Layout& layout) {
  const Layout::Groups& servers = layout.groups(0);
  std::vector<std::uint32_t> out, sizes;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const std::vector<std::uint32_t>& m = servers[i];
    const auto size = static_cast<std::uint32_t>(m.size());
    const bool newSize = std::find(sizes.begin(), sizes.end(), size) == sizes.end();
    if (i > 1 && i + 1 < servers.size() && !newSize) continue;
    if (newSize) sizes.push_back(size);
    out.push_back(m.front());
    if (m.size() > 1) out.push_back(m[1]);
    out.push_back(m.back());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::uint32_t> planRepresentatives(std::uint32_t servers, std::uint32_t perServer) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t s : {0u, 1u, servers - 1}) {
    if (s >= servers) continue;
    out.push_back(s * perServer);
    if (perServer > 1) out.push_back(s * perServer + 1);
    out.push_back(s * perServer + perServer - 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Metrics slowestRank(const RankGenerator& gen, const Problem& pb,
                    std::span<const std::uint32_t> ranks, std::size_t elemSize,
                    const CostParams& params) {
  return slowestRankPath([&](const Problem& q, std::uint32_t r, std::size_t elem,
                             const CostParams& cp) { return rankPath(gen(q, r), elem, cp); },
                         pb, ranks, elemSize, params);
}

Metrics slowestRankPath(const RankPathFn& path, const Problem& pb,
                        std::span<const std::uint32_t> ranks, std::size_t elemSize,
                        const CostParams& params) {
  Metrics worst;
  bool first = true;
  for (std::uint32_t r : ranks) {
    const Metrics m = path(pb, r, elemSize, params);
    if (first || m.time > worst.time) worst = m;
    first = false;
  }
  return worst;
}

Metrics lockstepCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                     const CostParams& params) {
  if (pb.ranks <= 1) return {};
  const std::vector<std::uint32_t> reps = representativeRanks(pb);
  if (g.path) return slowestRankPath(g.path, pb, reps, elemSize, params);
  const RankGenerator gen = [&](const Problem& q, std::uint32_t r) {
    return withPrivateInput(q, r, g.generate);
  };
  return slowestRank(gen, pb, reps, elemSize, params);
}

void PairPath::step(std::uint64_t sent, std::uint64_t got, std::uint64_t reduced) {
  if (sent == 0 && got == 0 && reduced == 0) return;
  if (!known_ || sent != sent_ || got != got_ || reduced != reduced_) {
    StepLoad ld;
    if (sent) ld.add(0, Dir::Send, sent * elem_);
    if (got) ld.add(0, Dir::Recv, got * elem_);
    ld.reduced = reduced * elem_;
    delta_ = stepDelta(ld, params_);
    known_ = true;
    sent_ = sent;
    got_ = got;
    reduced_ = reduced;
  }
  addStepDelta(delta_, path_);
}

Problem withoutEmptyBlocks(const Problem& pb) {
  const Blocks& bl = pb.blocks;
  if (bl.total() == 0 || pb.coll == Collective::AllToAllV) return pb;
  for (std::uint32_t i = 0; i < bl.parts(); ++i)
    if (bl.count(i) == 0) {
      Problem ones = pb;
      ones.blocks = Blocks::uniform(1, bl.parts());
      return ones;
    }
  return pb;
}

bool someBlockEmpty(const Problem& pb) {
  const Blocks& bl = pb.blocks;
  if (bl.total() == 0) return false;
  for (std::uint32_t i = 0; i < bl.parts(); ++i)
    if (bl.count(i) == 0) return true;
  return false;
}

Metrics chainCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                  const CostParams& params) {
  if (pb.ranks <= 1) return {};
  // The root's one step is one hop of the whole buffer (Broadcast: its send; Reduce: its
  // receive and reduction); the chain makes p-1 of them one after the other.
  const Metrics hop = rankPath(withPrivateInput(pb, pb.root, g.generate), elemSize, params);
  Metrics m;
  const std::uint64_t hops = pb.ranks - 1;
  for (std::size_t l = 0; l < m.level.size(); ++l)
    m.level[l] = {hop.level[l].steps * hops, hop.level[l].bytes * hops};
  m.reducedBytes = hop.reducedBytes * hops;
  m.time = hop.time * static_cast<double>(hops);
  return m;
}

Metrics replayCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                   const CostParams& params) {
  if (pb.ranks <= 1) return {};
  return criticalPath(buildSchedule(g.generate, pb), elemSize, params);
}

Metrics predictedPath(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                      const CostParams& params) {
  return (g.cost ? g.cost : lockstepCost)(g, pb, elemSize, params);
}

}  // namespace hccl::algo
