#include "algorithms/scratch_ranks.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/plan.hpp"

namespace hccl::algo {
namespace {

// Index i of a group of g is an edge for a root at index `at`.
bool edge(std::uint32_t i, std::uint32_t g, std::uint32_t at) {
  constexpr std::uint32_t kEnd = 4, kNearRoot = 3;
  const std::uint32_t d = i > at ? i - at : at - i;
  return i < kEnd || i + kEnd >= g || d <= kNearRoot;
}

}  // namespace

std::vector<std::uint32_t> edgeRanks(const Layout& layout, std::uint32_t root) {
  const std::uint32_t p = layout.ranks();
  std::vector<std::uint32_t> out;
  if (!layout.symmetric()) {
    out.resize(p);
    for (std::uint32_t r = 0; r < p; ++r) out[r] = r;
    return out;
  }
  root = std::min(root, p - 1);
  std::array<std::uint32_t, kNumLevels> size{}, at{};
  for (int l = 0; l < kNumLevels; ++l) {
    size[static_cast<std::size_t>(l)] = static_cast<std::uint32_t>(layout.groups(l).front().size());
    at[static_cast<std::size_t>(l)] = layout.indexIn(l, root);
  }
  for (std::uint32_t r = 0; r < p; ++r) {
    bool all = true;
    for (int l = 0; l < kNumLevels && all; ++l)
      all = edge(layout.indexIn(l, r), size[static_cast<std::size_t>(l)],
                 at[static_cast<std::size_t>(l)]);
    if (all || edge(r, p, root)) out.push_back(r);
  }
  return out;
}

bool generatorsAtEdges(Algorithm a, std::optional<Collective> c) {
  bool any = false;
  for (const GeneratorSpec& g : generatorSpecs()) {
    if (g.algorithm != a || (c && g.coll != *c)) continue;
    if (!g.edgeScratch) return false;
    any = true;
  }
  return any;
}

bool scratchAtEdges(const Layout& layout, const PlanKey& key, Collective c) {
  return layout.symmetric() && planOf(key).scratchAtEdges(layout, key, c);
}

std::uint64_t scratchOfEveryRank(const RankGenerator& gen, const Problem& pb) {
  std::uint64_t s = 0;
  for (std::uint32_t r = 0; r < pb.ranks; ++r) s = std::max(s, scratchCount(gen(pb, r)));
  return s;
}

ScratchNeed scratchNeed(const Layout& layout, const PlanKey& key, RankGenerator gen) {
  return [&layout, key, gen = std::move(gen)](const Problem& pb) {
    // Rank r's scratch from the plan's formula where it has one, through withPrivateInput's
    // rule (an in-place ReduceScatter runs out of place after copying its input past the
    // body's scratch), else from its schedule.
    const Plan& plan = planOf(key);
    const bool privateInput = needsPrivateInput(pb);
    Problem body = pb;
    if (privateInput) body.inPlace = false;
    const std::uint64_t copied = privateInput ? pb.total() : 0;
    // A rank the plan only bounds (Plan::scratchBound) waits until every other rank is seen:
    // its schedule is built only when its bound passes what they need, so the largest is the
    // same as from every schedule (it needs at most its bound).
    std::uint64_t s = 0;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> bounded;
    const auto see = [&](std::uint32_t r) {
      if (const auto x = plan.scratchOf(layout, key, body, r))
        s = std::max(s, *x + copied);
      else if (const auto b = plan.scratchBound(layout, key, body, r))
        bounded.emplace_back(r, *b + copied);
      else
        s = std::max(s, scratchCount(gen(pb, r)));
    };
    if (!scratchAtEdges(layout, key, pb.coll))
      for (std::uint32_t r = 0; r < pb.ranks; ++r) see(r);
    else
      for (std::uint32_t r : edgeRanks(layout, pb.root)) see(r);
    for (const auto& [r, b] : bounded)
      if (b > s) s = std::max(s, scratchCount(gen(pb, r)));
    return s;
  };
}

RankGenerator composedGenerator(const Layout& layout, const PlanKey& key) {
  return [&layout, key](const Problem& q, std::uint32_t r) {
    return withPrivateInput(q, r, [&layout, &key](const Problem& x, std::uint32_t y) {
      return compose(layout, key, x, y);
    });
  };
}

std::uint64_t engineChunkSize(const Layout& layout, const PlanKey& key, const Problem& pb,
                              bool sharedInPlace, std::uint64_t budgetElems) {
  Problem sizing = pb;
  if (!sharedInPlace) sizing.inPlace = false;
  return chunkSizeFor(sizing, budgetElems,
                      scratchNeed(layout, key, composedGenerator(layout, key)));
}

}  // namespace hccl::algo
