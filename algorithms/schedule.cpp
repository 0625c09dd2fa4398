#include "algorithms/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace hccl::algo {

std::string_view name(Buf b) {
  switch (b) {
    case Buf::Input:
      return "in";
    case Buf::Output:
      return "out";
    case Buf::Scratch:
      return "tmp";
  }
  return "?";
}

Blocks Blocks::even(std::uint64_t total, std::uint32_t parts) {
  if (parts == 0) throw std::invalid_argument("Blocks::even: zero parts");
  Blocks b;
  b.offsets_.resize(parts + 1);
  const std::uint64_t base = total / parts, extra = total % parts;
  // The first `extra` blocks take one element more, so block sizes differ by at most one.
  for (std::uint32_t i = 0; i < parts; ++i)
    b.offsets_[i + 1] = b.offsets_[i] + base + (i < extra ? 1 : 0);
  return b;
}

Blocks Blocks::uniform(std::uint64_t perBlock, std::uint32_t parts) {
  if (parts == 0) throw std::invalid_argument("Blocks::uniform: zero parts");
  Blocks b;
  b.offsets_.resize(parts + 1);
  for (std::uint32_t i = 0; i < parts; ++i) b.offsets_[i + 1] = b.offsets_[i] + perBlock;
  return b;
}

Blocks Blocks::of(std::span<const std::uint64_t> counts) {
  if (counts.empty()) throw std::invalid_argument("Blocks::of: no blocks");
  Blocks b;
  b.offsets_.resize(counts.size() + 1);
  for (std::size_t i = 0; i < counts.size(); ++i) b.offsets_[i + 1] = b.offsets_[i] + counts[i];
  return b;
}

std::uint64_t Blocks::largest() const {
  std::uint64_t m = 0;
  for (std::uint32_t i = 0; i < parts(); ++i) m = std::max(m, count(i));
  return m;
}

bool Blocks::isUniform() const {
  for (std::uint32_t i = 1; i < parts(); ++i)
    if (count(i) != count(0)) return false;
  return true;
}

Problem Problem::allReduce(std::uint32_t p, std::uint64_t count, bool inPlace) {
  return {Collective::AllReduce, p, 0, inPlace, Blocks::even(count, p)};
}
Problem Problem::reduceScatter(std::uint32_t p, std::uint64_t perRank, bool inPlace) {
  return {Collective::ReduceScatter, p, 0, inPlace, Blocks::uniform(perRank, p)};
}
Problem Problem::allGather(std::uint32_t p, std::uint64_t perRank, bool inPlace) {
  return {Collective::AllGather, p, 0, inPlace, Blocks::uniform(perRank, p)};
}
Problem Problem::broadcast(std::uint32_t p, std::uint64_t count, std::uint32_t root) {
  return {Collective::Broadcast, p, root, true, Blocks::even(count, p)};
}
Problem Problem::reduce(std::uint32_t p, std::uint64_t count, std::uint32_t root, bool inPlace) {
  return {Collective::Reduce, p, root, inPlace, Blocks::even(count, p)};
}
Problem Problem::scatter(std::uint32_t p, std::uint64_t perRank, std::uint32_t root, bool inPlace) {
  return {Collective::Scatter, p, root, inPlace, Blocks::uniform(perRank, p)};
}
Problem Problem::allToAll(std::uint32_t p, std::uint64_t perPair, bool inPlace) {
  return {Collective::AllToAll, p, 0, inPlace, Blocks::uniform(perPair, p)};
}

Problem Problem::fromMpiCount(Collective c, std::uint32_t p, std::uint64_t count, bool inPlace,
                              std::uint32_t root) {
  switch (c) {
    case Collective::AllReduce:
      return allReduce(p, count, inPlace);
    case Collective::ReduceScatter:
      return reduceScatter(p, count, inPlace);
    case Collective::AllGather:
      return allGather(p, count, inPlace);
    case Collective::Broadcast:
      return broadcast(p, count, root);
    case Collective::Reduce:
      return reduce(p, count, root, inPlace);
    case Collective::Scatter:
      return scatter(p, count, root, inPlace);
    case Collective::AllToAll:
      return allToAll(p, count, inPlace);
  }
  return Problem{c, p, root, inPlace, Blocks::uniform(count, p)};
}

std::uint64_t Problem::bufferCount(Buf b, std::uint32_t r) const {
  const std::uint64_t n = total();
  const bool isRoot = r == root;
  switch (coll) {
    case Collective::AllReduce:
      return b == Buf::Input ? (inPlace ? 0 : n) : b == Buf::Output ? n : 0;
    case Collective::ReduceScatter:
      if (b == Buf::Input) return inPlace ? 0 : n;
      if (b == Buf::Output) return inPlace ? n : blocks.count(r);
      return 0;
    case Collective::AllGather:
      if (b == Buf::Input) return inPlace ? 0 : blocks.count(r);
      return b == Buf::Output ? n : 0;
    case Collective::Broadcast:
      return b == Buf::Output ? n : 0;
    case Collective::Reduce:
      if (b == Buf::Input) return inPlace && isRoot ? 0 : n;
      return b == Buf::Output && isRoot ? n : 0;
    case Collective::Scatter:
      if (b == Buf::Input) return isRoot && !inPlace ? n : 0;
      if (b == Buf::Output) return isRoot && inPlace ? n : blocks.count(r);
      return 0;
    case Collective::AllToAll:
      if (b == Buf::Input) return inPlace ? 0 : n;
      return b == Buf::Output ? n : 0;
  }
  return 0;
}

Slice Problem::writableOutput(std::uint32_t r) const {
  const Slice whole{Buf::Output, 0, bufferCount(Buf::Output, r)};
  switch (coll) {
    case Collective::ReduceScatter:
      return inPlace && !resultInBlock ? resultSlice(r) : whole;
    case Collective::Broadcast:
      return r == root ? Slice{Buf::Output, 0, 0} : whole;
    case Collective::Scatter:
      return r == root && inPlace ? Slice{Buf::Output, 0, 0} : whole;
    case Collective::AllReduce:
    case Collective::AllGather:
    case Collective::Reduce:
    case Collective::AllToAll:
      break;
  }
  return whole;
}

std::uint64_t scratchCount(const RankSchedule& s) {
  std::uint64_t top = 0;
  auto see = [&](const Slice& sl) {
    if (sl.buf == Buf::Scratch && sl.count > 0) top = std::max(top, sl.end());
  };
  for (const Step& st : s.steps) {
    for (const Transfer& t : st.xfers) see(t.slice);
    for (const LocalOp& op : st.ops) {
      see(op.dst);
      see(op.a);
      if (op.kind == OpKind::Reduce) see(op.b);
    }
  }
  return top;
}

void prune(RankSchedule& s) {
  std::erase_if(s.steps, [](const Step& st) { return st.xfers.empty() && st.ops.empty(); });
}

namespace {

Slice remap(const Slice& s, const Embedding& e) {
  const BufferRegion& r = e.to[static_cast<std::size_t>(s.buf)];
  return {r.buf, s.offset + r.offset, s.count};
}

Step remap(const Step& s, const Embedding& e) {
  Step out;
  out.xfers.reserve(s.xfers.size());
  for (const Transfer& t : s.xfers) {
    if (t.peer >= e.members.size())
      throw std::out_of_range(
          fmt::format("embed: peer {} outside a group of {}", t.peer, e.members.size()));
    out.xfers.push_back({t.dir, e.members[t.peer], remap(t.slice, e),
                         static_cast<std::uint8_t>(std::max(t.level, e.level))});
  }
  out.ops.reserve(s.ops.size());
  for (const LocalOp& op : s.ops)
    out.ops.push_back({op.kind, remap(op.dst, e), remap(op.a, e), remap(op.b, e)});
  return out;
}

}  // namespace

void embed(RankSchedule& dst, const RankSchedule& part, const Embedding& e) {
  for (const Step& s : part.steps) dst.steps.push_back(remap(s, e));
}

void overlay(RankSchedule& dst, const RankSchedule& part, const Embedding& e,
             std::size_t firstStep) {
  if (dst.steps.size() < firstStep + part.steps.size())
    dst.steps.resize(firstStep + part.steps.size());
  for (std::size_t i = 0; i < part.steps.size(); ++i) {
    Step add = remap(part.steps[i], e);
    Step& into = dst.steps[firstStep + i];
    into.xfers.insert(into.xfers.end(), add.xfers.begin(), add.xfers.end());
    into.ops.insert(into.ops.end(), add.ops.begin(), add.ops.end());
  }
}

std::string toString(const Slice& s) {
  return fmt::format("{}[{}+{}]", name(s.buf), s.offset, s.count);
}

std::string toString(const Transfer& t) {
  return fmt::format("{} {} {}{}", t.dir == Dir::Send ? "send" : "recv", toString(t.slice),
                     t.dir == Dir::Send ? "-> " : "<- ", t.peer) +
         (t.level ? fmt::format(" L{}", t.level) : std::string());
}

std::string toString(const LocalOp& op) {
  if (op.kind == OpKind::Copy) return fmt::format("copy {} = {}", toString(op.dst), toString(op.a));
  return fmt::format("reduce {} = {} (+) {}", toString(op.dst), toString(op.a), toString(op.b));
}

std::string toString(const RankSchedule& s) {
  std::string out;
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    out += fmt::format("  step {}:", i);
    const Step& st = s.steps[i];
    for (const Transfer& t : st.xfers) out += " " + toString(t) + ";";
    for (const LocalOp& op : st.ops) out += " " + toString(op) + ";";
    out += '\n';
  }
  return out;
}

std::string toString(const Problem& p) {
  std::string s = fmt::format("{} p={} n={}", name(p.coll), p.ranks, p.total());
  if (p.coll == Collective::Broadcast || p.coll == Collective::Reduce ||
      p.coll == Collective::Scatter)
    s += fmt::format(" root={}", p.root);
  if (p.inPlace && p.coll != Collective::Broadcast) s += " in-place";
  if (p.inPlace && p.resultInBlock && p.coll == Collective::ReduceScatter) s += " result-in-block";
  if (!p.blocks.isUniform() &&
      (p.coll == Collective::ReduceScatter || p.coll == Collective::AllGather))
    s += " (uneven blocks)";
  return s;
}

}  // namespace hccl::algo
