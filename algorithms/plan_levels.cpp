// The per-level plan: every level runs its phases of the call (phases.hpp) with the algorithm the
// per-level choice gives it (selection.hpp), composed as hierarchical.hpp describes. On servers of
// unequal size the shape presents one flat group, so this plan runs flat there.
//
// It cannot serve a rank-order reduction that splitting by server would reorder: servers that do
// not hold consecutive ranks, or a ReduceScatter (it runs the outer level first, so it reduces
// server-major), and a Scan or Exscan on such servers for any op (a server's ranks are no prefix
// range). The flat plan serves those.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

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

  // Where composeLevels() runs one generator over every rank (one level in use, or servers of
  // unequal size: composeFlat), that generator's formula; the AllToAll, AllReduce and Reduce over
  // levels by their own (from their phases' generators' formulas). Nothing for the other
  // compositions.
  std::optional<std::uint64_t> scratchOf(const Layout& layout, const PlanKey& key,
                                         const Problem& pb, std::uint32_t rank) const override {
    const std::vector<int> used = levelsInUse(layout);
    const int top = used.empty() ? 0 : used.back();
    if (used.size() <= 1 || !layout.symmetric()) {
      const GeneratorSpec* g =
          findGenerator(key.algorithms[static_cast<std::size_t>(top)], pb.coll);
      if (!g || !g->scratch) return std::nullopt;
      // composeFlat numbers the ranks as they are; one level's one group by its index there.
      return g->scratch(pb, layout.symmetric() ? layout.indexIn(top, rank) : rank);
    }
    if (pb.coll == Collective::AllToAll) return allToAllScratch(layout, key, used, pb, rank);
    if (pb.coll == Collective::AllReduce) return allReduceScratch(layout, key, used, pb, rank);
    if (pb.coll == Collective::Reduce) return reduceScratch(layout, key, used, pb, rank);
    return std::nullopt;
  }

 private:
  // The scratch formula of level l's algorithm for phase q, run by the member at `index`.
  static std::optional<std::uint64_t> phaseScratch(const PlanKey& key, int l, const Problem& q,
                                                   std::uint32_t index) {
    const GeneratorSpec* spec = findGenerator(key.algorithms[static_cast<std::size_t>(l)], q.coll);
    if (!spec || !spec->scratch) return std::nullopt;
    return spec->scratch(q, index);
  }

  // hierarchical.cpp's allReduce(): every phase's scratch starts at Scratch[0], and its Input and
  // Output are the call's, so the composition needs its largest phase's. The phases as it runs
  // them: inner levels a ReduceScatter (out of place into the rank's piece, or in place leaving it
  // in its block) and an AllGather in place, the top level an AllReduce of the piece.
  static std::optional<std::uint64_t> allReduceScratch(const Layout& layout, const PlanKey& key,
                                                       const std::vector<int>& used,
                                                       const Problem& pb, std::uint32_t rank) {
    std::uint64_t count = pb.total(), top = 0;
    bool inOutput = pb.inPlace;
    for (std::size_t i = 0; i < used.size(); ++i) {
      const int l = used[i];
      const auto g = static_cast<std::uint32_t>(layout.groupOf(l, rank).size());
      const std::uint32_t idx = layout.indexIn(l, rank);
      std::optional<std::uint64_t> s;
      if (i + 1 == used.size()) {
        s = phaseScratch(key, l, Problem::allReduce(g, count, inOutput), idx);
        if (!s) return std::nullopt;
        top = std::max(top, *s);
        break;
      }
      const Blocks bl = Blocks::even(count, g);
      Problem rs{Collective::ReduceScatter, g, 0, inOutput, bl};
      rs.resultInBlock = inOutput;
      s = phaseScratch(key, l, rs, idx);
      const auto ag = phaseScratch(key, l, Problem{Collective::AllGather, g, 0, true, bl}, idx);
      if (!s || !ag) return std::nullopt;
      top = std::max({top, *s, *ag});
      count = bl.count(idx);
      inOutput = true;
    }
    return top;
  }

  // hier_reduce.cpp's composeReduce(): the in-place root copies its data to Scratch[0, n); a
  // non-root's working vector is Scratch[0, n), of which its phases touch parts; every phase's own
  // scratch starts at Scratch[n]. So the largest phase scratch s gives n + s (s > 0), past
  // whatever the working vector holds; when no phase needs scratch a non-root's top is inside
  // the working vector, which the formula does not track: nothing then (the schedule tells).
  static std::optional<std::uint64_t> reduceScratch(const Layout& layout, const PlanKey& key,
                                                    const std::vector<int>& used, const Problem& pb,
                                                    std::uint32_t rank) {
    const std::uint64_t n = pb.total();
    if (n == 0) return 0;
    const bool root = rank == pb.root;
    std::uint64_t gen = 0;
    std::uint64_t count = n;
    bool inW = false;
    for (std::size_t i = 0; i < used.size() && count > 0; ++i) {
      const int l = used[i];
      const auto g = static_cast<std::uint32_t>(layout.groupOf(l, rank).size());
      const std::uint32_t idx = layout.indexIn(l, rank), rootIdx = layout.indexIn(l, pb.root);
      std::optional<std::uint64_t> s;
      if (i + 1 == used.size()) {
        s = phaseScratch(key, l, Problem::reduce(g, count, rootIdx, true), idx);
        if (!s) return std::nullopt;
        gen = std::max(gen, *s);
        break;
      }
      const Blocks bl = Blocks::even(count, g);
      Problem rs{Collective::ReduceScatter, g, 0, inW, bl};
      rs.resultInBlock = inW;
      s = phaseScratch(key, l, rs, idx);
      if (!s) return std::nullopt;
      gen = std::max(gen, *s);
      // The Gather back towards the root runs in the root's unit one level up.
      if (layout.unit(used[i + 1], rank) == layout.unit(used[i + 1], pb.root)) {
        s = phaseScratch(key, l, Problem{Collective::Gather, g, rootIdx, true, bl}, idx);
        if (!s) return std::nullopt;
        gen = std::max(gen, *s);
      }
      count = bl.count(idx);
      inW = true;
    }
    if (gen > 0) return n + gen;
    if (root) return pb.inPlace ? n : 0;
    return std::nullopt;
  }

  // composeAllToAll's (hier_alltoall.cpp): pack area A = Scratch[0, pc) and landing area
  // B = [pc, 2pc), both filled whole before the last level (with two or more levels the first
  // exchange always lands in B), then each level's generator from 2pc on, its group AllToAll of
  // p/g blocks per member out of place.
  static std::optional<std::uint64_t> allToAllScratch(const Layout& layout, const PlanKey& key,
                                                      const std::vector<int>& used,
                                                      const Problem& pb, std::uint32_t rank) {
    const std::uint64_t n = pb.blocks.count(0);
    const std::uint32_t p = layout.ranks();
    std::uint64_t radix = 1;
    for (int l : used) radix *= layout.groupOf(l, rank).size();
    if (radix != p) return std::nullopt;  // the composition refuses it: let it say why
    if (n == 0) return 0;
    const std::uint64_t total = std::uint64_t{p} * n;
    std::uint64_t gen = 0;
    for (int l : used) {
      const std::uint32_t g = static_cast<std::uint32_t>(layout.groupOf(l, rank).size());
      const GeneratorSpec* spec =
          findGenerator(key.algorithms[static_cast<std::size_t>(l)], Collective::AllToAll);
      if (!spec || !spec->scratch) return std::nullopt;
      gen = std::max(gen, spec->scratch(Problem::allToAll(g, p / g * n), layout.indexIn(l, rank)));
    }
    return 2 * total + gen;
  }
};

}  // namespace

const Plan& levelsPlan() {
  static const LevelsPlan plan;
  return plan;
}

}  // namespace hccl::algo
