#include "algorithms/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace hccl::algo {

void Slice::tooLarge(std::uint64_t n) {
  throw std::length_error(
      fmt::format("a slice of {} elements: a schedule's slices hold at most 2^48", n));
}

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
  b.largest_ = base + (extra > 0 ? 1 : 0);
  return b;
}

Blocks Blocks::uniform(std::uint64_t perBlock, std::uint32_t parts) {
  if (parts == 0) throw std::invalid_argument("Blocks::uniform: zero parts");
  Blocks b;
  b.offsets_.resize(parts + 1);
  for (std::uint32_t i = 0; i < parts; ++i) b.offsets_[i + 1] = b.offsets_[i] + perBlock;
  b.largest_ = perBlock;
  return b;
}

Blocks Blocks::of(std::span<const std::uint64_t> counts) {
  if (counts.empty()) throw std::invalid_argument("Blocks::of: no blocks");
  Blocks b;
  b.offsets_.resize(counts.size() + 1);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    b.offsets_[i + 1] = b.offsets_[i] + counts[i];
    b.largest_ = std::max(b.largest_, counts[i]);
  }
  return b;
}

Blocks Blocks::only(std::uint32_t parts, std::uint32_t known, std::uint64_t count) {
  if (known >= parts)
    throw std::invalid_argument(
        fmt::format("Blocks::only: block {} of {} blocks does not exist", known, parts));
  if (parts == 1) return uniform(count, 1);
  Blocks b;
  b.offsets_.assign(std::size_t{parts} + 1, 0);
  b.offsets_[known + 1] = count;
  b.knownOnly_ = known;
  b.firstUnknown_ = known == 0 ? 1 : 0;
  return b;
}

void Blocks::unknown(std::uint32_t block, std::string_view what, std::uint32_t i) const {
  throw std::logic_error(fmt::format(
      "the {} of block {} is not known to this rank: it knows only block {} of {} (a rank-local "
      "problem; block {} is unknown)",
      what, i, knownOnly_, parts(), block));
}

std::uint64_t Blocks::largest() const {
  // A rank-local view does not know the other blocks: fail as count() of the first unknown one.
  if (!complete()) {
    const std::uint32_t first = knownOnly_ == 0 ? 1 : 0;
    unknown(first, "count", first);
  }
  return largest_;
}

bool Blocks::isUniform() const {
  for (std::uint32_t i = 1; i < parts(); ++i)
    if (count(i) != count(0)) return false;
  return true;
}

PairCounts PairCounts::of(std::uint32_t p, std::span<const std::uint64_t> counts) {
  if (p == 0 || counts.size() != std::size_t{p} * p)
    throw std::invalid_argument(
        fmt::format("PairCounts::of: {} counts for {} ranks; valid: p * p counts, row-major",
                    counts.size(), p));
  if (std::all_of(counts.begin(), counts.end(), [&](std::uint64_t v) { return v == counts[0]; }))
    return equal(p, counts[0]);
  PairCounts c;
  c.p_ = p;
  c.counts_.assign(counts.begin(), counts.end());
  return c;
}

PairCounts PairCounts::equal(std::uint32_t p, std::uint64_t count) {
  if (p == 0) throw std::invalid_argument("PairCounts::equal: zero ranks");
  PairCounts c;
  c.p_ = p;
  c.each_ = count;
  return c;
}

PairCounts PairCounts::local(std::uint32_t p, std::uint32_t r, std::span<const std::uint64_t> send,
                             std::span<const std::uint64_t> recv) {
  if (p == 0 || r >= p || send.size() != p || recv.size() != p)
    throw std::invalid_argument(
        fmt::format("PairCounts::local: rank {} of {} with {} send and {} receive counts; valid: "
                    "rank < p and p counts each",
                    r, p, send.size(), recv.size()));
  if (send[r] != recv[r])
    throw std::invalid_argument(
        fmt::format("PairCounts::local: rank {} sends {} elements to itself but receives {}", r,
                    send[r], recv[r]));
  if (p == 1) return equal(1, send[0]);
  PairCounts c;
  c.p_ = p;
  c.localTo_ = r;
  c.counts_.assign(send.begin(), send.end());
  c.counts_.insert(c.counts_.end(), recv.begin(), recv.end());
  return c;
}

std::uint64_t PairCounts::count(std::uint32_t from, std::uint32_t to) const {
  if (from >= p_ || to >= p_)
    throw std::out_of_range(
        fmt::format("PairCounts: pair ({}, {}) outside {} ranks", from, to, p_));
  if (!known(from, to))
    throw std::logic_error(
        fmt::format("the count from rank {} to rank {} is not known to rank {}: it knows its own "
                    "row and column only (a rank-local problem)",
                    from, to, localTo_));
  if (!complete()) return from == localTo_ ? counts_[to] : counts_[std::size_t{p_} + from];
  return counts_.empty() ? each_ : counts_[std::size_t{from} * p_ + to];
}

Blocks PairCounts::sendBlocks(std::uint32_t r) const {
  std::vector<std::uint64_t> row(p_);
  for (std::uint32_t j = 0; j < p_; ++j) row[j] = count(r, j);
  return Blocks::of(row);
}

Blocks PairCounts::recvBlocks(std::uint32_t r) const {
  std::vector<std::uint64_t> col(p_);
  for (std::uint32_t i = 0; i < p_; ++i) col[i] = count(i, r);
  return Blocks::of(col);
}

PairCounts PairCounts::localTo(std::uint32_t r) const {
  std::vector<std::uint64_t> row(p_), col(p_);
  for (std::uint32_t j = 0; j < p_; ++j) {
    row[j] = count(r, j);
    col[j] = count(j, r);
  }
  return local(p_, r, row, col);
}

bool PairCounts::symmetric() const {
  if (complete() && counts_.empty()) return true;
  for (std::uint32_t i = 0; i < p_; ++i)
    for (std::uint32_t j = i + 1; j < p_; ++j)
      if (count(i, j) != count(j, i)) return false;
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
Problem Problem::gather(std::uint32_t p, std::uint64_t perRank, std::uint32_t root, bool inPlace) {
  return {Collective::Gather, p, root, inPlace, Blocks::uniform(perRank, p)};
}
Problem Problem::allToAll(std::uint32_t p, std::uint64_t perPair, bool inPlace) {
  return {Collective::AllToAll, p, 0, inPlace, Blocks::uniform(perPair, p)};
}
Problem Problem::barrier(std::uint32_t p) {
  return {Collective::Barrier, p, 0, false, Blocks::uniform(0, p)};
}
Problem Problem::scan(std::uint32_t p, std::uint64_t count, bool inPlace) {
  return {Collective::Scan, p, 0, inPlace, Blocks::even(count, p)};
}
Problem Problem::exscan(std::uint32_t p, std::uint64_t count, bool inPlace) {
  return {Collective::Exscan, p, 0, inPlace, Blocks::even(count, p)};
}

namespace {

std::uint32_t rankCount(std::span<const std::uint64_t> counts, std::string_view what) {
  if (counts.empty() || counts.size() > 0xffffffffu)
    throw std::invalid_argument(
        fmt::format("Problem::{}: {} counts; valid: one per rank", what, counts.size()));
  return static_cast<std::uint32_t>(counts.size());
}

void checkRoot(std::uint32_t root, std::uint32_t p, std::string_view what) {
  if (root >= p)
    throw std::invalid_argument(
        fmt::format("Problem::{}: root {} outside {} ranks", what, root, p));
}

}  // namespace

Problem Problem::allGatherV(std::span<const std::uint64_t> counts, bool inPlace) {
  return {Collective::AllGather, rankCount(counts, "allGatherV"), 0, inPlace, Blocks::of(counts)};
}
Problem Problem::gatherV(std::span<const std::uint64_t> counts, std::uint32_t root, bool inPlace) {
  const std::uint32_t p = rankCount(counts, "gatherV");
  checkRoot(root, p, "gatherV");
  return {Collective::Gather, p, root, inPlace, Blocks::of(counts)};
}
Problem Problem::scatterV(std::span<const std::uint64_t> counts, std::uint32_t root, bool inPlace) {
  const std::uint32_t p = rankCount(counts, "scatterV");
  checkRoot(root, p, "scatterV");
  return {Collective::Scatter, p, root, inPlace, Blocks::of(counts)};
}
Problem Problem::allToAllV(std::uint32_t p, std::span<const std::uint64_t> counts, bool inPlace) {
  Problem pb{Collective::AllToAllV, p, 0, inPlace, Blocks::uniform(0, p)};
  pb.pairs = PairCounts::of(p, counts);
  if (inPlace && !pb.pairs.symmetric())
    throw std::invalid_argument(
        "Problem::allToAllV: in place needs count(i, j) == count(j, i) for every pair");
  return pb;
}
Problem Problem::allToAllVEqual(std::uint32_t p, std::uint64_t perPair, bool inPlace) {
  if (p == 0) throw std::invalid_argument("Problem::allToAllVEqual: zero ranks");
  Problem pb{Collective::AllToAllV, p, 0, inPlace, Blocks::uniform(0, p)};
  pb.pairs = PairCounts::equal(p, perPair);
  return pb;
}
Problem Problem::gatherVNonRoot(std::uint32_t p, std::uint32_t root, std::uint32_t rank,
                                std::uint64_t ownCount) {
  checkRoot(root, p, "gatherVNonRoot");
  if (rank == root || rank >= p)
    throw std::invalid_argument(fmt::format(
        "Problem::gatherVNonRoot: rank {} of {} with root {}; valid: a rank other than the root "
        "(the root knows every count: gatherV)",
        rank, p, root));
  return {Collective::Gather, p, root, false, Blocks::only(p, rank, ownCount)};
}
Problem Problem::scatterVNonRoot(std::uint32_t p, std::uint32_t root, std::uint32_t rank,
                                 std::uint64_t ownCount) {
  checkRoot(root, p, "scatterVNonRoot");
  if (rank == root || rank >= p)
    throw std::invalid_argument(fmt::format(
        "Problem::scatterVNonRoot: rank {} of {} with root {}; valid: a rank other than the root "
        "(the root knows every count: scatterV)",
        rank, p, root));
  return {Collective::Scatter, p, root, false, Blocks::only(p, rank, ownCount)};
}
Problem Problem::allToAllVAt(std::uint32_t p, std::uint32_t rank,
                             std::span<const std::uint64_t> sendCounts,
                             std::span<const std::uint64_t> recvCounts, bool inPlace) {
  Problem pb{Collective::AllToAllV, p, 0, inPlace, Blocks::uniform(0, p)};
  pb.pairs = PairCounts::local(p, rank, inPlace ? recvCounts : sendCounts, recvCounts);
  return pb;
}

Problem Problem::localView(std::uint32_t r) const {
  switch (coll) {
    case Collective::Gather:
      return r == root ? *this : gatherVNonRoot(ranks, root, r, blocks.count(r));
    case Collective::Scatter:
      return r == root ? *this : scatterVNonRoot(ranks, root, r, blocks.count(r));
    case Collective::AllToAllV: {
      Problem v = *this;
      v.pairs = pairs.localTo(r);
      return v;
    }
    default:
      return *this;
  }
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
    case Collective::Gather:
      return gather(p, count, root, inPlace);
    case Collective::AllToAllV:
      return allToAllVEqual(p, count, inPlace);
    case Collective::Barrier:
      return barrier(p);
    case Collective::Scan:
      return scan(p, count, inPlace);
    case Collective::Exscan:
      return exscan(p, count, inPlace);
  }
  return Problem{c, p, root, inPlace, Blocks::uniform(count, p)};
}

std::uint64_t Problem::bufferCount(Buf b, std::uint32_t r) const {
  const bool isRoot = r == root;
  // Rank-local problems know their own rank's counts only; AllToAllV has no total.
  switch (coll) {
    case Collective::Gather:
      if (b == Buf::Input) return isRoot && inPlace ? 0 : blocks.count(r);
      return b == Buf::Output && isRoot ? blocks.total() : 0;
    case Collective::Scatter:
      if (b == Buf::Input) return isRoot && !inPlace ? blocks.total() : 0;
      if (b == Buf::Output) return isRoot && inPlace ? blocks.total() : blocks.count(r);
      return 0;
    case Collective::AllToAllV:
      if (b == Buf::Input) return inPlace ? 0 : pairs.sendBlocks(r).total();
      return b == Buf::Output ? pairs.recvBlocks(r).total() : 0;
    case Collective::Barrier:
      return 0;
    default:
      break;
  }
  const std::uint64_t n = total();
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
    case Collective::AllToAll:
    case Collective::Scan:
    case Collective::Exscan:
      if (b == Buf::Input) return inPlace ? 0 : n;
      return b == Buf::Output ? n : 0;
    case Collective::Scatter:
    case Collective::Gather:
    case Collective::AllToAllV:
    case Collective::Barrier:
      break;  // above
  }
  return 0;
}

std::vector<Slice> Problem::writableOutput(std::uint32_t r) const {
  const Slice whole{Buf::Output, 0, bufferCount(Buf::Output, r)};
  const auto only = [](Slice s) { return s.count ? std::vector<Slice>{s} : std::vector<Slice>{}; };
  switch (coll) {
    case Collective::ReduceScatter:
      return only(inPlace && !resultInBlock ? resultSlice(r) : whole);
    case Collective::Broadcast:
      return r == root ? std::vector<Slice>{} : only(whole);
    case Collective::Scatter:
      return r == root && inPlace ? std::vector<Slice>{} : only(whole);
    case Collective::Gather:
      if (r == root && inPlace) {
        std::vector<Slice> v;
        const Slice own = blocks.block(Buf::Output, r);
        if (own.offset > 0) v.push_back({Buf::Output, 0, own.offset});
        if (own.end() < whole.end()) v.push_back({Buf::Output, own.end(), whole.end() - own.end()});
        return v;
      }
      return only(whole);
    case Collective::Exscan:
      return r == 0 ? std::vector<Slice>{} : only(whole);
    case Collective::AllReduce:
    case Collective::AllGather:
    case Collective::Reduce:
    case Collective::AllToAll:
    case Collective::AllToAllV:
    case Collective::Barrier:
    case Collective::Scan:
      break;
  }
  return only(whole);
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
    out.xfers.emplace_back(t.dir, e.members[t.peer], remap(t.slice, e),
                           static_cast<std::uint8_t>(std::max(t.level, e.level)), t.push);
  }
  out.ops.reserve(s.ops.size());
  for (const LocalOp& op : s.ops)
    out.ops.emplace_back(op.kind, remap(op.dst, e), remap(op.a, e), remap(op.b, e));
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
         (t.level ? fmt::format(" L{}", t.level) : std::string()) + (t.push ? " push" : "") +
         (t.post ? " post" : "");
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
  if (p.coll == Collective::AllToAllV) {
    std::string s = fmt::format("{} p={}", name(p.coll), p.ranks);
    if (p.pairs.complete()) {
      std::uint64_t n = 0;
      for (std::uint32_t i = 0; i < p.ranks; ++i) n += p.pairs.sendBlocks(i).total();
      s += fmt::format(" n={}", n);
    } else {
      const std::uint32_t r = p.pairs.localRank();
      s += fmt::format(" (rank {}'s view: sends {}, receives {})", r, p.pairs.sendBlocks(r).total(),
                       p.pairs.recvBlocks(r).total());
    }
    if (p.inPlace) s += " in-place";
    return s;
  }
  if (!p.blocks.complete()) {
    std::uint32_t me = 0;
    while (!p.blocks.known(me)) ++me;
    return fmt::format("{}v p={} root={} (rank {}'s view: {} elements)", name(p.coll), p.ranks,
                       p.root, me, p.blocks.count(me));
  }
  std::string s = fmt::format("{} p={} n={}", name(p.coll), p.ranks, p.total());
  if (rooted(p.coll)) s += fmt::format(" root={}", p.root);
  if (p.inPlace && p.coll != Collective::Broadcast && p.coll != Collective::Barrier)
    s += " in-place";
  if (p.inPlace && p.resultInBlock && p.coll == Collective::ReduceScatter) s += " result-in-block";
  if (!p.blocks.isUniform() &&
      (p.coll == Collective::ReduceScatter || p.coll == Collective::AllGather ||
       p.coll == Collective::Scatter || p.coll == Collective::Gather))
    s += " (uneven blocks)";
  return s;
}

}  // namespace hccl::algo
