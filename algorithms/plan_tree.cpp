// The tree plan: a small-message Broadcast over levels, the whole vector at every level, outer
// level first (model only: HCCL_ALGO has no word for it, as HCCL has no such plan; its level
// algorithms are the per-level choice, for small messages H-D_R's binomial tree by distance
// halving or fullmesh).
//
// Steps and peers (levels inner first, root R; a rank takes part at level i when its indices at
// every inner level equal R's):
//   top   Broadcast of the whole vector among the ranks at R's position in every supernode (or
//         server, on two levels), rooted at R's unit: they all hold the vector after it;
//   ...   the same one level down, rooted at the rank that received it;
//   L0    Broadcast of the whole vector inside every server from its rank at R's local index.
// The root only sends; every other rank receives the vector once, at one level.
// Buffers: Output only (the root's is read). No scratch of its own: a rank's is the largest of
// its levels' Broadcasts' (scratchOf).
// Cost: sum over levels of Bc_Li(n); two levels with H-D_R outside and fullmesh inside
//   ceil(log2 S)(a1 + n b1) + 2a0 + (2/g)n b0,
// against the level order's Bc_L0(n) + Bc_L1(n/g) + AG_L0(n): one phase fewer (the intra
// AllGather and the root server's first Broadcast become one), at the price of the whole vector
// on the server links: the model weighs the two, and the tree wins for tiny messages.
// Rank order: nothing is reduced.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "algorithms/generators.hpp"
#include "algorithms/hierarchical.hpp"
#include "algorithms/plan.hpp"

namespace hccl::algo {
namespace {

class TreePlan final : public Plan {
 public:
  std::string_view name() const override { return "tree"; }

  std::string describe(const Selection&) const override { return "tree plan"; }

  std::vector<Collective> collectives() const override { return {Collective::Broadcast}; }

  std::string whyNot(const Selection& s, const CallInfo& call) const override {
    if (call.coll != Collective::Broadcast) return "the tree plan serves only broadcast";
    if (s.shape().levels.size() < 2 || !s.shape().symmetric)
      return "the tree plan needs two or more levels of equal groups";
    // A level0 algorithm named for the call asks for HCCL's level order.
    if (s.forced(call, 0)) return "HCCL_ALGO names a level0 algorithm, which asks for the levels";
    return {};
  }

  std::string beaten(double predicted) const override {
    return fmt::format("; tree plan {}", secondsText(predicted));
  }

  Decision decide(const Selection& s, const CallInfo& call, const Choice& choice) const override {
    LevelPhases phases(s.shape().levels.size());
    for (auto& p : phases) p = {{Collective::Broadcast, call.count}};
    Decision d = s.chooseLevels(call, phases);
    if (!d.levels.empty())
      d.levels.back().detail +=
          "; tree over levels (the whole vector at each level): " + choice.text(d.predicted);
    return d;
  }

  RankSchedule compose(const Layout& layout, const PlanKey& key, const Problem& pb,
                       std::uint32_t rank) const override {
    if (pb.coll != Collective::Broadcast || !layout.symmetric())
      return composeLevels(layout, key.algorithms, pb, rank);
    const std::vector<int> used = levelsInUse(layout);
    RankSchedule out;
    const BufferRegion whole{Buf::Output, 0}, tmp{Buf::Scratch, 0};
    for (std::size_t i = used.size(); i-- > 0;) {
      if (!takesPart(layout, used, i, rank, pb.root) || pb.total() == 0) continue;
      const int lvl = used[i];
      Embedding e;
      e.members = layout.groupOf(lvl, rank);
      e.level = static_cast<std::uint8_t>(lvl);
      e.to = {whole, whole, tmp};
      const auto g = static_cast<std::uint32_t>(e.members.size());
      const Generator gen = phaseGenerator(key.algorithms[static_cast<std::size_t>(lvl)],
                                           Collective::Broadcast, "the tree plan");
      embed(out,
            gen(Problem::broadcast(g, pb.total(), layout.indexIn(lvl, pb.root)),
                layout.indexIn(lvl, rank)),
            e);
    }
    prune(out);
    return out;
  }

  // compose()'s scratch without building it: each level's Broadcast embeds its generator's
  // scratch at Scratch[0], so a rank needs the largest of its levels' generators' formulas
  // (GeneratorSpec::scratch). The formula never builds the level's Problem where the generator
  // uses no scratch (noScratch: every Broadcast generator today): that Problem's blocks are O(g),
  // and chunk sizing asks every rank (4096 at 2x2048) for each chunk it tries. Servers of unequal
  // size run composeLevels, which keeps building its schedules here.
  std::optional<std::uint64_t> scratchOf(const Layout& layout, const PlanKey& key,
                                         const Problem& pb, std::uint32_t rank) const override {
    if (pb.coll != Collective::Broadcast || !layout.symmetric()) return std::nullopt;
    if (pb.total() == 0) return 0;
    const std::vector<int> used = levelsInUse(layout);
    std::uint64_t top = 0;
    for (std::size_t i = used.size(); i-- > 0;) {
      if (!takesPart(layout, used, i, rank, pb.root)) continue;
      const int lvl = used[i];
      const GeneratorSpec* spec =
          findGenerator(key.algorithms[static_cast<std::size_t>(lvl)], Collective::Broadcast);
      if (!spec || !spec->scratch) return std::nullopt;
      if (spec->scratch == noScratch) continue;
      const auto g = static_cast<std::uint32_t>(layout.groupOf(lvl, rank).size());
      top = std::max(top,
                     spec->scratch(Problem::broadcast(g, pb.total(), layout.indexIn(lvl, pb.root)),
                                   layout.indexIn(lvl, rank)));
    }
    return top;
  }

  bool rankOrdered(const Layout&, const PlanKey&, Collective) const override { return true; }

 private:
  // Level used[i]'s Broadcast includes `rank` when its indices at every inner level are the root's.
  static bool takesPart(const Layout& layout, const std::vector<int>& used, std::size_t i,
                        std::uint32_t rank, std::uint32_t root) {
    for (std::size_t j = 0; j < i; ++j)
      if (layout.indexIn(used[j], rank) != layout.indexIn(used[j], root)) return false;
    return true;
  }
};

}  // namespace

const Plan& treePlan() {
  static const TreePlan plan;
  return plan;
}

}  // namespace hccl::algo
