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
#include <utility>

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
  // unequal size: composeFlat), that generator's formula; the AllToAll, AllReduce, Reduce,
  // ReduceScatter, AllGather, Broadcast, Scatter, Gather, Scan and Exscan over levels by their own
  // (from their phases' generators' formulas). Nothing for the other compositions (Barrier).
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
    using Formula = std::optional<std::uint64_t> (*)(
        const Layout&, const PlanKey&, const std::vector<int>&, const Problem&, std::uint32_t);
    static constexpr std::pair<Collective, Formula> kFormulas[] = {
        {Collective::AllReduce, allReduceScratch}, {Collective::ReduceScatter, stagedScratch},
        {Collective::AllGather, stagedScratch},    {Collective::Broadcast, broadcastScratch},
        {Collective::Reduce, reduceExactScratch},  {Collective::Scatter, scatterScratch},
        {Collective::Gather, scatterScratch},      {Collective::AllToAll, allToAllScratch},
        {Collective::Scan, scanScratch},           {Collective::Exscan, scanScratch},
    };
    for (const auto& [coll, formula] : kFormulas)
      if (coll == pb.coll) return formula(layout, key, used, pb, rank);
    return std::nullopt;
  }

  // Reduce over levels bounds the non-roots it cannot tell (reduceScratch); the others are exact.
  std::optional<std::uint64_t> scratchBound(const Layout& layout, const PlanKey& key,
                                            const Problem& pb, std::uint32_t rank) const override {
    const std::vector<int> used = levelsInUse(layout);
    if (pb.coll == Collective::Reduce && used.size() > 1 && layout.symmetric())
      return reduceScratch(layout, key, used, pb, rank, true);
    return scratchOf(layout, key, pb, rank);
  }

 private:
  // The scratch formula of level l's algorithm for phase q, run by the member at `index`.
  static std::optional<std::uint64_t> phaseScratch(const PlanKey& key, int l, const Problem& q,
                                                   std::uint32_t index) {
    const GeneratorSpec* spec = findGenerator(key.algorithms[static_cast<std::size_t>(l)], q.coll);
    if (!spec || !spec->scratch) return std::nullopt;
    return spec->scratch(q, index);
  }

  // A rank's place in its group at level l of a symmetric layout.
  struct Member {
    int level;
    std::uint32_t size, index;
  };
  static Member memberAt(const Layout& layout, int l, std::uint32_t rank) {
    return {l, static_cast<std::uint32_t>(layout.groupOf(l, rank).size()), layout.indexIn(l, rank)};
  }

  // The largest of the phase scratches a rank's composition runs, each at the offset the
  // composition gives it; nothing once some phase has no formula.
  class Largest {
   public:
    // Phase scratch `s` placed at Scratch[at]: nothing when the phase needs none.
    void phase(std::optional<std::uint64_t> s, std::uint64_t at = 0) {
      if (!s)
        ok_ = false;
      else if (*s > 0)
        top_ = std::max(top_, at + *s);
    }
    // Elements the composition itself keeps in Scratch[0, end).
    void held(std::uint64_t end) { top_ = std::max(top_, end); }
    bool ok() const { return ok_; }
    std::uint64_t top() const { return top_; }
    std::optional<std::uint64_t> value() const {
      return ok_ ? std::optional<std::uint64_t>(top_) : std::nullopt;
    }

   private:
    std::uint64_t top_ = 0;
    bool ok_ = true;
  };

  // The walk hierarchical.cpp's allReduce() and hier_reduce.cpp's composeReduce() share: each
  // inner level reduce-scatters the rank's count evenly over its group, keeping the rank's piece
  // for the next level; the top level runs its own collective on what is left.
  //   inner(member, blocks, first): the inner level's phases' scratch into `acc`;
  //   top(member, count): the top level's.
  // Stops early when the piece is empty and `stopWhenEmpty` (Reduce: the empty levels run nothing).
  template <class Inner, class Top>
  static void splitByLevels(const Layout& layout, const std::vector<int>& used, std::uint32_t rank,
                            std::uint64_t count, bool stopWhenEmpty, Largest& acc,
                            const Inner& inner, const Top& top) {
    for (std::size_t i = 0; i < used.size() && acc.ok(); ++i) {
      if (stopWhenEmpty && count == 0) return;
      const Member m = memberAt(layout, used[i], rank);
      if (i + 1 == used.size()) {
        top(m, count);
        return;
      }
      const Blocks bl = Blocks::even(count, m.size);
      inner(m, bl, i == 0);
      count = bl.count(m.index);
    }
  }

  // hierarchical.cpp's allReduce(): every phase's scratch starts at Scratch[0], and its Input and
  // Output are the call's, so the composition needs its largest phase's. The phases as it runs
  // them: inner levels a ReduceScatter (out of place into the rank's piece, or in place leaving it
  // in its block) and an AllGather in place, the top level an AllReduce of the piece.
  static std::optional<std::uint64_t> allReduceScratch(const Layout& layout, const PlanKey& key,
                                                       const std::vector<int>& used,
                                                       const Problem& pb, std::uint32_t rank) {
    Largest acc;
    splitByLevels(
        layout, used, rank, pb.total(), false, acc,
        [&](const Member& m, const Blocks& bl, bool first) {
          const bool inOutput = !first || pb.inPlace;
          Problem rs{Collective::ReduceScatter, m.size, 0, inOutput, bl};
          rs.resultInBlock = inOutput;
          acc.phase(phaseScratch(key, m.level, rs, m.index));
          acc.phase(phaseScratch(key, m.level, Problem{Collective::AllGather, m.size, 0, true, bl},
                                 m.index));
        },
        [&](const Member& m, std::uint64_t count) {
          const bool inOutput = used.size() > 1 || pb.inPlace;
          acc.phase(
              phaseScratch(key, m.level, Problem::allReduce(m.size, count, inOutput), m.index));
        });
    return acc.value();
  }

  // hier_reduce.cpp's composeReduce(): the in-place root copies its data to Scratch[0, n); a
  // non-root's working vector is Scratch[0, n), of which its phases touch parts; every phase's own
  // scratch starts at Scratch[n]. So the largest phase scratch s gives n + s (s > 0), past
  // whatever the working vector holds; when no phase needs scratch a non-root's top is inside
  // the working vector, which the formula does not track: nothing then (the schedule tells), or
  // with `bound` the working vector's end n, which the top cannot pass.
  static std::optional<std::uint64_t> reduceExactScratch(const Layout& layout, const PlanKey& key,
                                                         const std::vector<int>& used,
                                                         const Problem& pb, std::uint32_t rank) {
    return reduceScratch(layout, key, used, pb, rank, false);
  }
  static std::optional<std::uint64_t> reduceScratch(const Layout& layout, const PlanKey& key,
                                                    const std::vector<int>& used, const Problem& pb,
                                                    std::uint32_t rank, bool bound) {
    const std::uint64_t n = pb.total();
    if (n == 0) return 0;
    const bool root = rank == pb.root;
    Largest acc;
    std::size_t level = 0;  // the index in `used` of the level the walk is at
    splitByLevels(
        layout, used, rank, n, true, acc,
        [&](const Member& m, const Blocks& bl, bool first) {
          const std::uint32_t rootIdx = layout.indexIn(m.level, pb.root);
          Problem rs{Collective::ReduceScatter, m.size, 0, !first, bl};
          rs.resultInBlock = !first;
          acc.phase(phaseScratch(key, m.level, rs, m.index));
          // The Gather back towards the root runs in the root's unit one level up.
          const int up = used[++level];
          if (layout.unit(up, rank) == layout.unit(up, pb.root))
            acc.phase(phaseScratch(
                key, m.level, Problem{Collective::Gather, m.size, rootIdx, true, bl}, m.index));
        },
        [&](const Member& m, std::uint64_t count) {
          acc.phase(phaseScratch(
              key, m.level, Problem::reduce(m.size, count, layout.indexIn(m.level, pb.root), true),
              m.index));
        });
    if (!acc.ok()) return std::nullopt;
    if (acc.top() > 0) return n + acc.top();
    if (root) return pb.inPlace ? n : 0;
    return bound ? std::optional<std::uint64_t>(n) : std::nullopt;
  }

  // hier_broadcast.cpp's composeBroadcast(): its data stays in Output and every phase's scratch
  // starts at Scratch[0], so the composition needs its largest phase's. Region_i's count (the
  // rank's piece of region_{i-1}, split evenly over level i-1's group); the rank's depth d (the
  // innermost level whose indices above it are all the root's); Broadcasts of region_i at levels
  // d..top, AllGathers in place at levels d-1..0; a region of 0 elements runs nothing.
  static std::optional<std::uint64_t> broadcastScratch(const Layout& layout, const PlanKey& key,
                                                       const std::vector<int>& used,
                                                       const Problem& pb, std::uint32_t rank) {
    const std::size_t k = used.size();
    std::vector<Member> m(k);
    std::vector<std::uint64_t> region(k);
    for (std::size_t i = 0; i < k; ++i) {
      m[i] = memberAt(layout, used[i], rank);
      region[i] =
          i == 0 ? pb.total() : Blocks::even(region[i - 1], m[i - 1].size).count(m[i - 1].index);
    }
    std::size_t d = k - 1;
    for (std::size_t i = k - 1; i-- > 0;) {
      if (layout.indexIn(used[i + 1], rank) != layout.indexIn(used[i + 1], pb.root)) break;
      d = i;
    }
    Largest acc;
    for (std::size_t i = 0; i < k && acc.ok(); ++i) {
      if (region[i] == 0) continue;
      const Problem q =
          i >= d ? Problem::broadcast(m[i].size, region[i], layout.indexIn(used[i], pb.root))
                 : Problem{Collective::AllGather, m[i].size, 0, true,
                           Blocks::even(region[i], m[i].size)};
      acc.phase(phaseScratch(key, used[i], q, m[i].index));
    }
    return acc.value();
  }

  // hier_scan.cpp's composeScan(); on interleaved servers the top level's generator runs flat
  // (composeFlat numbers the ranks as they are).
  // Scratch holds slot 0 (an in-place Exscan's input copy), then per inner depth i the total T
  // (slot 1+2i) and the exclusive prefix E (slot 2+2i), n elements each; every phase's scratch
  // starts past them. A rank reaches depth i when its indices at the levels below are their
  // groups' last. There it runs its level's Scan (Exscan from depth 1 on, or for an Exscan); the
  // last member of an Exscan forms T; a rank not in the first group of every level above gets E
  // by a Broadcast from its group's last member. In the first group of every level above, no E:
  // the Exscan there writes none into it at index 0 (MPI leaves rank 0's Output undefined).
  static std::optional<std::uint64_t> scanScratch(const Layout& layout, const PlanKey& key,
                                                  const std::vector<int>& used, const Problem& pb,
                                                  std::uint32_t rank) {
    if (!layout.blockOrder()) {
      const GeneratorSpec* g =
          findGenerator(key.algorithms[static_cast<std::size_t>(used.back())], pb.coll);
      if (!g || !g->scratch) return std::nullopt;
      return g->scratch(pb, rank);
    }
    const std::uint64_t n = pb.total();
    if (n == 0) return 0;
    const std::size_t k = used.size();
    const bool exclusive = pb.coll == Collective::Exscan;
    const std::uint64_t tmp = (1 + 2 * (k - 1)) * n;
    Largest acc;
    if (pb.inPlace && exclusive) acc.held(n);
    for (std::size_t i = 0; i < k && acc.ok(); ++i) {
      const Member m = memberAt(layout, used[i], rank);
      const bool excl = exclusive || i > 0, inPlace = i == 0 && pb.inPlace && !exclusive;
      const Problem q =
          excl ? Problem::exscan(m.size, n, inPlace) : Problem::scan(m.size, n, inPlace);
      acc.phase(phaseScratch(key, used[i], q, m.index), tmp);
      if (i + 1 == k) break;
      bool first = true;
      for (std::size_t j = i + 1; j < k; ++j) first = first && layout.indexIn(used[j], rank) == 0;
      if (!first) {
        acc.held((3 + 2 * i) * n);  // E
        acc.phase(phaseScratch(key, used[i], Problem::broadcast(m.size, n, m.size - 1), m.index),
                  tmp);
      }
      if (m.index != m.size - 1) break;     // deeper depths are the group's last member's
      if (excl) acc.held((2 + 2 * i) * n);  // T
    }
    return acc.value();
  }

  // hierarchical.cpp's scatter() (and the Gather, its schedule reversed, with the same scratch):
  // a carrier at level i (its indices at the inner levels are the root's) scatters its group's
  // units in place; a member that is not the group's root receives its unit into Scratch[0, unit)
  // (at level 0 its block into Output), every phase's own scratch starts at Scratch[held], held
  // the largest unit of the rank's top-level group. Servers not in rank order run flat.
  static std::optional<std::uint64_t> scatterScratch(const Layout& layout, const PlanKey& key,
                                                     const std::vector<int>& used,
                                                     const Problem& pb, std::uint32_t rank) {
    if (!pb.blocks.complete()) return std::nullopt;
    Problem sp = pb;
    sp.coll = Collective::Scatter;
    if (!layout.blockOrder()) return phaseScratch(key, used.back(), sp, rank);
    // Block order: a unit's staged elements are its ranks' blocks, side by side.
    const auto unitBlocks = [&](int l) {
      const std::vector<std::uint32_t>& group = layout.groupOf(l, rank);
      std::vector<std::uint64_t> counts(group.size());
      for (std::size_t j = 0; j < group.size(); ++j) {
        const auto [first, last] = layout.unit(l, group[j]);
        counts[j] = pb.blocks.offset(last) - pb.blocks.offset(first);
      }
      return Blocks::of(counts);
    };
    const std::uint64_t held = unitBlocks(used.back()).largest();
    Largest acc;
    bool carrier = true;  // at level i: the indices at levels below i are the root's
    std::vector<bool> carrierAt(used.size());
    for (std::size_t i = 0; i < used.size(); ++i) {
      carrierAt[i] = carrier;
      carrier = carrier && layout.indexIn(used[i], rank) == layout.indexIn(used[i], pb.root);
    }
    for (std::size_t i = used.size(); i-- > 0 && acc.ok();) {
      if (!carrierAt[i]) continue;
      const Blocks bl = unitBlocks(used[i]);
      const auto g = static_cast<std::uint32_t>(bl.parts());
      const Problem q{Collective::Scatter, g, layout.indexIn(used[i], pb.root), true, bl};
      const std::uint32_t idx = layout.indexIn(used[i], rank);
      acc.phase(phaseScratch(key, used[i], q, idx), held);
      if (idx != q.root && i > 0) acc.held(bl.count(idx));
    }
    return acc.value();
  }

  // hierarchical.cpp's reduceScatter() and allGather(): the ranks' blocks staged server by server
  // (serverMajor()), a level's group's members standing for their units' staged blocks.
  //   ReduceScatter: outermost level first, each out of place from the last level's output; on
  //   servers not in rank order the input is staged in Scratch[0, n) first; then the level
  //   outputs (the rank's unit at each level from the outermost down to level 1, side by side);
  //   every phase's own scratch from their end on.
  //   AllGather: innermost level first, into Output (servers in rank order) or into the staged
  //   Scratch[0, n), copied out at the end; every phase's own scratch from the end of what the
  //   composition holds (0 or n).
  // Chunk sizing at three levels built a rank's composition (O(p): its staged offsets) for every
  // edge rank and chunk it tried, 6-15 ms at 4096 ranks; this is O(the rank's groups).
  static std::optional<std::uint64_t> stagedScratch(const Layout& layout, const PlanKey& key,
                                                    const std::vector<int>& used, const Problem& pb,
                                                    std::uint32_t rank) {
    if (!pb.blocks.complete()) return std::nullopt;
    const bool rs = pb.coll == Collective::ReduceScatter;
    // Staged offsets: in rank order the blocks' own; else hierarchical.cpp's stagedOffsets().
    std::vector<std::uint64_t> stage;
    std::uint64_t staged = 0;  // the end of the staged blocks in Scratch (a block of 0 is none)
    if (!layout.blockOrder()) {
      stage.assign(layout.ranks() + 1, 0);
      for (std::uint32_t k = 0; k < layout.ranks(); ++k) {
        const std::uint64_t c = pb.blocks.count(layout.serverMajor()[k]);
        stage[k + 1] = stage[k] + c;
        if (c > 0) staged = stage[k + 1];
      }
    }
    const auto at = [&](std::uint32_t pos) {
      return layout.blockOrder() ? pb.blocks.offset(pos) : stage[pos];
    };
    const auto unitCount = [&](int l, std::uint32_t q) {
      const auto [first, last] = layout.unit(l, q);
      return at(last) - at(first);
    };
    const auto unitBlocks = [&](int l) {
      const std::vector<std::uint32_t>& group = layout.groupOf(l, rank);
      std::vector<std::uint64_t> counts(group.size());
      for (std::size_t j = 0; j < group.size(); ++j) counts[j] = unitCount(l, group[j]);
      return Blocks::of(counts);
    };
    Largest acc;
    acc.held(staged);
    std::uint64_t free = layout.blockOrder() ? 0 : pb.total();
    if (rs)
      for (std::size_t i = used.size(); i-- > 1;) {
        const std::uint64_t unit = unitCount(used[i], rank);
        free += unit;
        if (unit > 0) acc.held(free);
      }
    for (std::size_t i = 0; i < used.size() && acc.ok(); ++i) {
      const Blocks bl = unitBlocks(used[i]);
      const auto g = static_cast<std::uint32_t>(bl.parts());
      // AllGather's first level runs in place where the rank's block already sits in Output.
      const bool inPlace = !rs && (i > 0 || (pb.inPlace && layout.blockOrder()));
      acc.phase(phaseScratch(key, used[i], Problem{pb.coll, g, 0, inPlace, bl},
                             layout.indexIn(used[i], rank)),
                free);
    }
    return acc.value();
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
