#include "algorithms/hierarchical.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "algorithms/compose_levels.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/reverse.hpp"

namespace hccl::algo {

std::vector<int> levelsInUse(const Layout& layout) {
  std::vector<int> u;
  for (const LevelGroup& g : layout.shape().levels) u.push_back(g.level);
  return u;
}

namespace {

// Element offsets of the ranks' blocks laid out server by server: stage[k] is where the block of
// serverMajor()[k] starts; stage[ranks] is the total.
std::vector<std::uint64_t> stagedOffsets(const Layout& layout, const Blocks& blocks) {
  std::vector<std::uint64_t> at(layout.ranks() + 1, 0);
  for (std::uint32_t k = 0; k < layout.ranks(); ++k)
    at[k + 1] = at[k] + blocks.count(layout.serverMajor()[k]);
  return at;
}

// The blocks of a group at `level`: member j stands for the ranks of its unit one level down.
Blocks unitBlocks(const Layout& layout, int level, std::uint32_t me,
                  const std::vector<std::uint64_t>& stage) {
  std::vector<std::uint64_t> counts;
  for (std::uint32_t q : layout.groupOf(level, me)) {
    const auto [first, last] = layout.unit(level, q);
    counts.push_back(stage[last] - stage[first]);
  }
  return Blocks::of(counts);
}

void allReduce(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const BufferRegion tmp{Buf::Scratch, 0};
  // Level i reduces [o, o+count) of its source; from the second level on, data is in Output.
  auto step = [&](auto& self, std::size_t i, std::uint64_t o, std::uint64_t count,
                  Buf src) -> void {
    const int lvl = used[i];
    const auto g = static_cast<std::uint32_t>(c.layout.groupOf(lvl, c.me).size());
    if (i + 1 == used.size()) {
      const Problem q = Problem::allReduce(g, count, src == Buf::Output);
      c.phase(lvl, q, {src, o}, {Buf::Output, o}, tmp);
      return;
    }
    const Blocks bl = Blocks::even(count, g);
    const std::uint32_t idx = c.layout.indexIn(lvl, c.me);
    // The rank's reduced piece must stay at its natural offset for the next level and the
    // closing AllGather: out of place, point the ReduceScatter's output there; in place, ask the
    // generator to leave the result in its block.
    if (src == Buf::Output) {
      Problem q{Collective::ReduceScatter, g, 0, true, bl};
      q.resultInBlock = true;
      c.phase(lvl, q, {Buf::Input, 0}, {Buf::Output, o}, tmp);
    } else {
      c.phase(lvl, Problem{Collective::ReduceScatter, g, 0, false, bl}, {src, o},
              {Buf::Output, o + bl.offset(idx)}, tmp);
    }
    self(self, i + 1, o + bl.offset(idx), bl.count(idx), Buf::Output);
    c.phase(lvl, Problem{Collective::AllGather, g, 0, true, bl}, {Buf::Input, 0}, {Buf::Output, o},
            tmp);
  };
  step(step, 0, 0, pb.total(), pb.inPlace ? Buf::Output : Buf::Input);
}

void reduceScatter(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const Layout& L = c.layout;
  const auto stage = stagedOffsets(L, pb.blocks);
  const std::uint64_t n = pb.total();
  const Buf src = pb.inPlace ? Buf::Output : Buf::Input;
  // Scratch: [staged input][level outputs...][generators' own scratch]
  BufferRegion data{src, 0};
  std::uint64_t free = 0;
  if (!L.blockOrder()) {
    Step& s = c.out.newStep();
    for (std::uint32_t k = 0; k < L.ranks(); ++k) {
      const std::uint32_t q = L.serverMajor()[k];
      copy(s, {Buf::Scratch, stage[k], pb.blocks.count(q)}, pb.blocks.block(src, q));
    }
    data = {Buf::Scratch, 0};
    free = n;
  }
  // Level outputs shrink as we go in; reserve them all, then the generators' scratch.
  std::vector<std::uint64_t> outAt(used.size());
  for (std::size_t i = used.size(); i-- > 1;) {
    const auto [first, last] = L.unit(used[i], c.me);
    outAt[i] = free;
    free += stage[last] - stage[first];
  }
  const BufferRegion tmp{Buf::Scratch, free};
  for (std::size_t i = used.size(); i-- > 0;) {
    const int lvl = used[i];
    const Blocks bl = unitBlocks(L, lvl, c.me, stage);
    const auto g = static_cast<std::uint32_t>(bl.parts());
    const Problem q{Collective::ReduceScatter, g, 0, false, bl};
    const BufferRegion to =
        i == 0 ? BufferRegion{Buf::Output, 0} : BufferRegion{Buf::Scratch, outAt[i]};
    c.phase(lvl, q, data, to, tmp);
    data = to;
  }
}

void allGather(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const Layout& L = c.layout;
  const auto stage = stagedOffsets(L, pb.blocks);
  const BufferRegion dst =
      L.blockOrder() ? BufferRegion{Buf::Output, 0} : BufferRegion{Buf::Scratch, 0};
  const BufferRegion tmp{Buf::Scratch, L.blockOrder() ? 0 : pb.total()};
  for (std::size_t i = 0; i < used.size(); ++i) {
    const int lvl = used[i];
    const Blocks bl = unitBlocks(L, lvl, c.me, stage);
    const auto g = static_cast<std::uint32_t>(bl.parts());
    // The region this level completes: the units of the group's members, side by side.
    std::uint32_t first = L.ranks();
    for (std::uint32_t q : L.groupOf(lvl, c.me)) first = std::min(first, L.unit(lvl, q).first);
    const BufferRegion region{dst.buf, dst.offset + stage[first]};
    if (i == 0) {
      // The rank's own block enters here: in place it already sits in the output.
      const bool own = pb.inPlace && L.blockOrder();
      const Slice mine = pb.inPlace ? pb.blocks.block(Buf::Output, c.me)
                                    : Slice{Buf::Input, 0, pb.blocks.count(c.me)};
      c.phase(lvl, Problem{Collective::AllGather, g, 0, own, bl}, {mine.buf, mine.offset}, region,
              tmp);
    } else {
      c.phase(lvl, Problem{Collective::AllGather, g, 0, true, bl}, {Buf::Input, 0}, region, tmp);
    }
  }
  if (!L.blockOrder()) {
    Step& s = c.out.newStep();
    for (std::uint32_t k = 0; k < L.ranks(); ++k) {
      const std::uint32_t q = L.serverMajor()[k];
      copy(s, pb.blocks.block(Buf::Output, q), {Buf::Scratch, stage[k], pb.blocks.count(q)});
    }
  }
}

// Scatter, outer level first (HCCL: inter Scatter, then intra Scatter). At level i take part the
// ranks whose index at every inner level equals the root's: the carriers, one per unit of level
// i+1. A group's root holds the data of its members' units side by side (the root's at first
// in its Input, or Output in place; a carrier's in Scratch[0, unit)) and scatters them in place,
// reading only; every other member receives its unit into Scratch[0, unit), or at level 0 its
// block into Output. A carrier finally copies its own block from where it held it. Needs servers
// in rank order (units contiguous in the root's buffer).
void scatter(const Composer& c, const std::vector<int>& used, const Problem& pb) {
  const Layout& L = c.layout;
  const auto stage = stagedOffsets(L, pb.blocks);
  const auto carrierAt = [&](std::size_t i) {
    for (std::size_t j = 0; j < i; ++j)
      if (L.indexIn(used[j], c.me) != L.indexIn(used[j], pb.root)) return false;
    return true;
  };
  const std::uint64_t held = unitBlocks(L, used.back(), c.me, stage).largest();
  const BufferRegion tmp{Buf::Scratch, held};
  // Where this rank holds data: `cur` holds the elements from staged position `base` on.
  std::optional<BufferRegion> cur;
  std::uint64_t base = 0;
  if (c.me == pb.root) cur = BufferRegion{pb.inPlace ? Buf::Output : Buf::Input, 0};
  for (std::size_t i = used.size(); i-- > 0;) {
    if (!carrierAt(i)) continue;
    const int lvl = used[i];
    const Blocks bl = unitBlocks(L, lvl, c.me, stage);
    const auto g = static_cast<std::uint32_t>(bl.parts());
    const Problem q{Collective::Scatter, g, L.indexIn(lvl, pb.root), true, bl};
    const std::uint32_t idx = L.indexIn(lvl, c.me);
    if (idx == q.root) {
      std::uint32_t first = L.ranks();
      for (std::uint32_t m : L.groupOf(lvl, c.me)) first = std::min(first, L.unit(lvl, m).first);
      const BufferRegion data{cur->buf, cur->offset + stage[first] - base};
      c.phase(lvl, q, {Buf::Input, 0}, data, tmp);
      if (i == 0 && !(c.me == pb.root && pb.inPlace))
        copy(c.out.stepAfterTransfers(), Slice{Buf::Output, 0, bl.count(idx)},
             Slice{data.buf, data.offset + bl.offset(idx), bl.count(idx)});
    } else {
      cur = i == 0 ? BufferRegion{Buf::Output, 0} : BufferRegion{Buf::Scratch, 0};
      base = stage[L.unit(lvl, c.me).first];
      c.phase(lvl, q, {Buf::Input, 0}, *cur, tmp);
    }
  }
}

}  // namespace

RankSchedule composeLevels(const Layout& layout, const LevelAlgorithms& algs, const Problem& pb,
                           std::uint32_t rank) {
  if (pb.ranks != layout.ranks())
    throw std::invalid_argument(
        fmt::format("a problem of {} ranks on a layout of {}", pb.ranks, layout.ranks()));
  RankSchedule out;
  const std::vector<int> used = levelsInUse(layout);
  const Composer c{layout, algs, rank, out};
  if (!layout.symmetric()) {
    // Unequal servers cannot be split level by level: run the outermost level's algorithm flat
    // over every rank, on the links of that level (shape() presents the layout the same way).
    const int top = used.empty() ? 0 : used.back();
    return composeFlat(layout, algs[static_cast<std::size_t>(top)], top, pb, rank);
  }
  if (used.size() <= 1) {
    // One level: the level's algorithm over all ranks (its only group is in rank order).
    const int lvl = used.empty() ? 0 : used.front();
    c.phase(lvl, pb, {Buf::Input, 0}, {Buf::Output, 0}, {Buf::Scratch, 0});
    prune(out);
    return out;
  }
  switch (pb.coll) {
    case Collective::AllReduce:
      allReduce(c, used, pb);
      break;
    case Collective::ReduceScatter:
      reduceScatter(c, used, pb);
      break;
    case Collective::AllGather:
      allGather(c, used, pb);
      break;
    case Collective::Scatter:
      if (!layout.blockOrder())
        return composeFlat(layout, algs[static_cast<std::size_t>(used.back())], used.back(), pb,
                           rank);
      scatter(c, used, pb);
      break;
    case Collective::Broadcast:
      composeBroadcast(c, used, pb);
      break;
    case Collective::Barrier:
      composeBarrier(c, used);
      break;
    case Collective::Scan:
    case Collective::Exscan:
      // Interleaved servers hold no prefix range of ranks: flat (plan_levels.cpp says why).
      if (!layout.blockOrder())
        return composeFlat(layout, algs[static_cast<std::size_t>(used.back())], used.back(), pb,
                           rank);
      composeScan(c, used, pb);
      break;
    case Collective::Reduce:
      composeReduce(c, used, pb);
      break;
    case Collective::AllToAll:
      composeAllToAll(c, used, pb);
      break;
    case Collective::Gather:
      // The Scatter composition run backwards: each level's Gather is its Scatter reversed.
      return gatherByReversing(pb, rank, [&](const Problem& sp, std::uint32_t r) {
        return composeLevels(layout, algs, sp, r);
      });
    default: {
      // Not composed over levels (yet): the outermost level's algorithm over every rank, as
      // phasesPerLevel() costs it.
      const int top = used.back();
      return composeFlat(layout, algs[static_cast<std::size_t>(top)], top, pb, rank);
    }
  }
  prune(out);
  return out;
}

RankSchedule composeFlat(const Layout& layout, Algorithm a, int level, const Problem& pb,
                         std::uint32_t rank) {
  if (pb.ranks != layout.ranks())
    throw std::invalid_argument(
        fmt::format("a problem of {} ranks on a layout of {}", pb.ranks, layout.ranks()));
  Embedding e;
  e.members.resize(layout.ranks());
  for (std::uint32_t r = 0; r < layout.ranks(); ++r) e.members[r] = r;
  e.level = static_cast<std::uint8_t>(level);
  RankSchedule out;
  embed(out, phaseGenerator(a, pb.coll, "a flat plan")(pb, rank), e);
  prune(out);
  return out;
}

bool levelsRankOrdered(const Layout& layout, const LevelAlgorithms& algs, Collective c) {
  const std::vector<int> used = levelsInUse(layout);
  const bool composed =
      c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::AllGather ||
      c == Collective::Scatter || c == Collective::Gather || c == Collective::Reduce ||
      c == Collective::Broadcast || c == Collective::Barrier ||
      ((c == Collective::Scan || c == Collective::Exscan) && layout.blockOrder()) ||
      c == Collective::AllToAll;
  if (!layout.symmetric() || !composed) {  // flat over every rank with the outermost algorithm
    const GeneratorSpec* spec =
        findGenerator(algs[static_cast<std::size_t>(used.empty() ? 0 : used.back())], c);
    return spec && spec->rankOrdered;
  }
  // Over several levels ReduceScatter reduces the outer level first (server-major order), and
  // any collective on interleaved servers reduces server by server.
  if (used.size() > 1 && (!layout.blockOrder() || c == Collective::ReduceScatter)) return false;
  for (std::size_t i = 0; i < used.size(); ++i) {
    const Algorithm a = algs[static_cast<std::size_t>(used[i])];
    // AllReduce and Reduce reduce-scatter at the inner levels (their AllGather/Gather only copy).
    const bool splits = c == Collective::AllReduce || c == Collective::Reduce;
    Collective phaseColl = splits && i + 1 < used.size() ? Collective::ReduceScatter : c;
    if (c == Collective::Scan && i > 0) phaseColl = Collective::Exscan;  // totals' prefix
    const GeneratorSpec* spec = findGenerator(a, phaseColl);
    if (!spec || !spec->rankOrdered) return false;
  }
  return true;
}

RankSchedule composeHierarchical(const Layout& layout, const LevelAlgorithms& algs,
                                 const Problem& pb, std::uint32_t rank,
                                 std::optional<Algorithm> ahcInter) {
  return compose(layout, planKeyFor(layout, algs, ahcInter), pb, rank);
}

bool composedRankOrdered(const Layout& layout, const LevelAlgorithms& algs, Collective c) {
  const PlanKey key = planKeyFor(layout, algs);
  return planOf(key).rankOrdered(layout, key, c);
}

}  // namespace hccl::algo
