#include "algorithms/hierarchical.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "algorithms/plan.hpp"

namespace hccl::algo {
namespace {

// Runs one group collective of rank `me` and appends it to `out`.
struct Composer {
  const Layout& layout;
  const LevelAlgorithms& algs;
  std::uint32_t me;
  RankSchedule& out;

  void phase(int level, const Problem& q, BufferRegion in, BufferRegion outRegion,
             BufferRegion scratchRegion) const {
    Embedding e;
    e.members = layout.groupOf(level, me);
    e.level = static_cast<std::uint8_t>(level);
    e.to = {in, outRegion, scratchRegion};
    const Generator g =
        phaseGenerator(algs[static_cast<std::size_t>(level)], q.coll, "the hierarchy");
    embed(out, g(q, layout.indexIn(level, me)), e);
  }
};

std::vector<int> levelsInUse(const Layout& layout) {
  std::vector<int> u;
  for (const LevelGroup& g : layout.shape().levels) u.push_back(g.level);
  return u;
}

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
    default:
      throw std::invalid_argument(fmt::format("{} is not composed over levels yet", name(pb.coll)));
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
  if (!layout.symmetric()) {
    const GeneratorSpec* spec =
        findGenerator(algs[static_cast<std::size_t>(used.empty() ? 0 : used.back())], c);
    return spec && spec->rankOrdered;
  }
  // Over several levels ReduceScatter reduces the outer level first (server-major order), and
  // any collective on interleaved servers reduces server by server.
  if (used.size() > 1 && (!layout.blockOrder() || c == Collective::ReduceScatter)) return false;
  for (std::size_t i = 0; i < used.size(); ++i) {
    const Algorithm a = algs[static_cast<std::size_t>(used[i])];
    const Collective phaseColl =
        c == Collective::AllReduce && i + 1 < used.size() ? Collective::ReduceScatter : c;
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
