// The flat plan: a rank-order reduction that the per-level plan would reorder (servers that do
// not hold consecutive ranks, or a ReduceScatter over several levels), a GatherV or ScatterV
// whose non-roots know only their own counts, and an AllToAllV, whose ranks know only their own
// row and column (plan_levels.cpp), runs the outermost level's
// algorithm over every rank as one group, on that level's links. The choice is the whole
// selection again, on the communicator seen as one flat group.
//
// The collectives of kWeighed compose over levels too but ran flat before that composition
// existed; for them the model weighs this plan against the per-level one (a small Reduce pays
// fewer steps flat than through three phases, an AllToAll's local copies and intra-server
// exchange only pay where the server links' latency dominates), unless HCCL_ALGO names a level0
// algorithm for the call, which asks for the levels.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>

#include "algorithms/hierarchical.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/scratch_ranks.hpp"

namespace hccl::algo {

const Plan& levelsPlan();

namespace {

constexpr std::array kWeighed = {Collective::Reduce, Collective::AllToAll};

bool weighed(const Selection& s, const CallInfo& call) {
  return std::find(kWeighed.begin(), kWeighed.end(), call.coll) != kWeighed.end() &&
         !s.forced(call, 0);
}

int outermostLevel(const Layout& layout) {
  const CommShape shape = layout.shape();
  return shape.levels.empty() ? 0 : shape.levels.back().level;
}

class FlatPlan final : public Plan {
 public:
  std::string_view name() const override { return "flat"; }

  std::string whyNot(const Selection& s, const CallInfo& call) const override {
    if (s.shape().levels.size() > 1 && (!levelsPlan().whyNot(s, call).empty() || weighed(s, call)))
      return {};
    return "a flat plan serves only what the levels cannot split (rank-order reductions they "
           "would reorder, rank-local gatherv, scatterv and alltoallv), and reduce and alltoall "
           "where the "
           "model weighs them against the levels";
  }

  std::string beaten(double predicted) const override {
    return fmt::format("; flat plan {}", secondsText(predicted));
  }

  Decision decide(const Selection& s, const CallInfo& call, const Choice& choice) const override {
    Decision d = select(s.flattened(), call);
    if (d.ok() && &planOf(d.plan) != &levelsPlan()) {
      // One flat group has no servers for a whole plan to span; say so rather than compose it.
      d.error = fmt::format("one flat group cannot run the {} plan", planOf(d.plan).name());
      return d;
    }
    const std::string reordered = levelsPlan().whyNot(s, call);
    const std::string why =
        "; flat over all ranks: " + (reordered.empty() ? choice.text(d.predicted) : reordered);
    for (LevelChoice& c : d.levels) c.detail += why;
    return d;
  }

  RankSchedule compose(const Layout& layout, const PlanKey& key, const Problem& pb,
                       std::uint32_t rank) const override {
    const int top = outermostLevel(layout);
    return composeFlat(layout, key.algorithms[static_cast<std::size_t>(top)], top, pb, rank);
  }

  // One generator over every rank in rank order (servers in block order).
  bool scratchAtEdges(const Layout& layout, const PlanKey& key, Collective c) const override {
    return layout.blockOrder() &&
           generatorsAtEdges(key.algorithms[static_cast<std::size_t>(outermostLevel(layout))], c);
  }

  // The generator's formula (GeneratorSpec::scratch): composeFlat numbers the ranks as they are.
  std::optional<std::uint64_t> scratchOf(const Layout& layout, const PlanKey& key,
                                         const Problem& pb, std::uint32_t rank) const override {
    const GeneratorSpec* g =
        findGenerator(key.algorithms[static_cast<std::size_t>(outermostLevel(layout))], pb.coll);
    if (!g || !g->scratch) return std::nullopt;
    return g->scratch(pb, rank);
  }

  bool rankOrdered(const Layout& layout, const PlanKey& key, Collective c) const override {
    const GeneratorSpec* spec =
        findGenerator(key.algorithms[static_cast<std::size_t>(outermostLevel(layout))], c);
    return spec && spec->rankOrdered;
  }
};

}  // namespace

const Plan& flatPlan() {
  static const FlatPlan plan;
  return plan;
}

}  // namespace hccl::algo
