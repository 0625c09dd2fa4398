// The per-level plan: every level runs its phases of the call (phases.hpp) with the algorithm the
// per-level choice gives it (selection.hpp), composed as hierarchical.hpp describes. On servers of
// unequal size the shape presents one flat group, so this plan runs flat there.
//
// It cannot serve a rank-order reduction that splitting by server would reorder: servers that do
// not hold consecutive ranks, or a ReduceScatter (it runs the outer level first, so it reduces
// server-major), and a Scan or Exscan on such servers for any op (a server's ranks are no prefix
// range). The flat plan serves those.
#include <fmt/format.h>

#include "algorithms/generators.hpp"
#include "algorithms/hierarchical.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/scratch_ranks.hpp"

namespace hccl::algo {
namespace {

class LevelsPlan final : public Plan {
 public:
  std::string_view name() const override { return "per-level"; }

  std::string describe(const Selection& s) const override {
    return s.shape().symmetric ? "per-level plan" : "flat plan";
  }

  std::string whyNot(const Selection& s, const CallInfo& call) const override {
    const CommShape& shape = s.shape();
    // Split by server, a server's ranks would need each other's counts, which a non-root of a
    // GatherV or ScatterV does not know (its root does, so the two would compose differently).
    if (call.rankLocal && shape.levels.size() >= 2 &&
        (call.coll == Collective::Gather || call.coll == Collective::Scatter))
      return "a rank-local gatherv or scatterv cannot be split by server: a non-root knows only "
             "its own count";
    // AllToAllV (and W, packed into it): counts are rank-local, so a rank does not know the
    // other ranks' counts and cannot route their bytes through a level (hier_alltoall.cpp).
    if (call.coll == Collective::AllToAllV && shape.levels.size() >= 2)
      return "alltoallv counts are rank-local: a rank does not know the other ranks' counts, so "
             "it cannot route their bytes through a level";
    // A prefix split by server needs each server to hold a consecutive range of ranks, whatever
    // the op (hier_scan.cpp).
    if ((call.coll == Collective::Scan || call.coll == Collective::Exscan) &&
        shape.levels.size() >= 2 && !shape.blockOrder)
      return fmt::format(
          "servers do not hold consecutive ranks: split by server, {} would "
          "combine other ranks than the lower ones",
          hccl::name(call.coll));
    if (!s.needsRankOrder(call) || shape.levels.size() < 2) return {};
    if (!shape.blockOrder)
      return "servers do not hold consecutive ranks, and a rank-order reduction cannot be split "
             "by server";
    if (call.coll == Collective::ReduceScatter)
      return "a hierarchical reducescatter reduces server-major, not in rank order";
    return {};
  }

  Decision decide(const Selection& s, const CallInfo& call, const Choice&) const override {
    Decision d = s.chooseLevels(call, phasesPerLevel(call.coll, s.shape(), call.count));
    // The composition's own local copies (AllToAll's packs), on level0, the inner links.
    const std::uint64_t copied = localCopies(call.coll, s.shape(), call.count);
    if (d.ok() && copied > 0 && !d.levels.empty()) {
      const double t = s.model().params(call.type, call.op).beta[0] *
                       static_cast<double>(copied * call.elemSize);
      d.predicted += t;
      d.levels.front().predicted += t;
      // In the last level's words, so each level's own reason stays as it was.
      d.levels.back().detail += fmt::format("; plus local copies {}", secondsText(t));
    }
    return d;
  }

  RankSchedule compose(const Layout& layout, const PlanKey& key, const Problem& pb,
                       std::uint32_t rank) const override {
    return composeLevels(layout, key.algorithms, pb, rank);
  }

  // Each level's algorithm for every collective it runs as a phase there (phases.hpp; one level
  // in use: the collective itself).
  bool scratchAtEdges(const Layout& layout, const PlanKey& key, Collective c) const override {
    const CommShape shape = layout.shape();
    const std::vector<std::vector<Phase>> phases = phasesPerLevel(c, shape, 1);
    for (std::size_t i = 0; i < shape.levels.size() && i < phases.size(); ++i) {
      const Algorithm a = key.algorithms[static_cast<std::size_t>(shape.levels[i].level)];
      for (const Phase& ph : phases[i])
        if (!generatorsAtEdges(a, ph.coll)) return false;
    }
    return true;
  }

  bool rankOrdered(const Layout& layout, const PlanKey& key, Collective c) const override {
    return levelsRankOrdered(layout, key.algorithms, c);
  }
};

}  // namespace

const Plan& levelsPlan() {
  static const LevelsPlan plan;
  return plan;
}

}  // namespace hccl::algo
