#include "algorithms/provenance.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <stdexcept>

namespace hccl::algo::prov {

RankSets::RankSets(std::uint32_t ranks, std::size_t garbageBytes)
    : n_(ranks),
      words_((ranks + 63) / 64),
      ranges_(std::uint64_t{ranks} * ranks <= kRange),
      ids_(16, IdHash{this}, IdEq{this}),
      garbageBytes_(garbageBytes) {
  info_.push_back({~0u, 0});  // id 0: the empty set
  bits_.assign(words_, 0);
  ids_.insert(kEmpty);
  probe_ = 1;  // id 1: the probe row
  info_.push_back({kFree, 0});
  bits_.resize(2 * std::size_t{words_}, 0);
  singles_.resize(n_);
  for (std::uint32_t r = 0; r < n_; ++r) singles_[r] = range(r, 1);
  all_ = range(0, n_);
  pinned_ = ids() - 1;
  made_ = 0;
}

std::uint32_t RankSets::range(std::uint32_t first, std::uint32_t count) {
  if (first + count > n_) throw std::out_of_range("RankSets::range: ranks outside the group");
  Bits b(words_, 0);
  for (std::uint32_t r = first; r < first + count; ++r) b[r / 64] |= std::uint64_t{1} << (r % 64);
  return intern(b);
}

// Range id kRange | ((len - 1) * n + start): ranks start, start + 1, ... (mod n), len of them.
void RankSets::bitsOf(std::uint32_t id, Bits& out) const {
  if (!(id & kRange)) {
    out.assign(row(id), row(id) + words_);
    return;
  }
  out.assign(words_, 0);
  const std::uint32_t start = (id & ~kRange) % n_, len = (id & ~kRange) / n_ + 1;
  for (std::uint32_t i = 0; i < len; ++i) {
    const std::uint32_t r = (start + i) % n_;
    out[r / 64] |= std::uint64_t{1} << (r % 64);
  }
}

std::uint32_t RankSets::min(std::uint32_t s) const {
  if (!(s & kRange)) return info_[s].min;
  const std::uint32_t start = (s & ~kRange) % n_, len = (s & ~kRange) / n_ + 1;
  return start + len > n_ ? 0 : start;  // a range that wraps holds rank 0
}

std::uint32_t RankSets::max(std::uint32_t s) const {
  if (!(s & kRange)) return info_[s].max;
  const std::uint32_t start = (s & ~kRange) % n_, len = (s & ~kRange) / n_ + 1;
  return start + len > n_ ? n_ - 1 : start + len - 1;
}

// The range id of `bits` when its ranks are one run, cyclically (a single run start: a rank in
// the set whose predecessor mod n is not), else 0.
std::uint32_t RankSets::rangeOf(const Bits& bits) const {
  if (!ranges_ || n_ == 0) return 0;
  std::uint32_t count = 0, starts = 0, start = 0;
  std::uint64_t carry = (bits[(n_ - 1) / 64] >> ((n_ - 1) % 64)) & 1;  // rank n-1 precedes 0
  for (std::uint32_t w = 0; w < words_; ++w) {
    const std::uint64_t x = bits[w];
    const std::uint64_t first = x & ~((x << 1) | carry);
    carry = x >> 63;
    if (first) {
      starts += static_cast<std::uint32_t>(std::popcount(first));
      start = w * 64 + static_cast<std::uint32_t>(std::countr_zero(first));
    }
    count += static_cast<std::uint32_t>(std::popcount(x));
  }
  if (count == 0) return 0;
  if (count == n_) return kRange | ((n_ - 1) * n_);  // every rank: one id, start 0
  return starts == 1 ? kRange | ((count - 1) * n_ + start) : 0;
}

std::size_t RankSets::IdHash::operator()(std::uint32_t id) const {
  std::size_t h = 0x9e3779b97f4a7c15ULL;
  const std::uint64_t* b = sets->row(id);
  for (std::uint32_t w = 0; w < sets->words_; ++w) h = (h ^ b[w]) * 0x100000001b3ULL + (h >> 29);
  return h;
}

bool RankSets::IdEq::operator()(std::uint32_t a, std::uint32_t b) const {
  return std::equal(sets->row(a), sets->row(a) + sets->words_, sets->row(b));
}

std::uint32_t RankSets::intern(const Bits& bits) {
  if (const std::uint32_t r = rangeOf(bits)) return r;
  std::copy(bits.begin(), bits.end(), bits_.begin() + std::size_t{probe_} * words_);
  if (auto it = ids_.find(probe_); it != ids_.end()) return *it;
  std::uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
    std::copy(bits.begin(), bits.end(), bits_.begin() + std::size_t{id} * words_);
  } else {
    id = static_cast<std::uint32_t>(info_.size());
    info_.emplace_back();
    bits_.insert(bits_.end(), bits.begin(), bits.end());
  }
  Info info{~0u, 0};
  for (std::uint32_t w = 0; w < words_; ++w) {
    if (!bits[w]) continue;
    const std::uint32_t lo = w * 64 + static_cast<std::uint32_t>(std::countr_zero(bits[w]));
    const std::uint32_t hi = w * 64 + 63 - static_cast<std::uint32_t>(std::countl_zero(bits[w]));
    if (info.min == ~0u) info.min = lo;
    info.max = hi;
  }
  info_[id] = info;
  ids_.insert(id);
  ++made_;
  return id;
}

bool RankSets::collectWanted() const {
  const std::size_t setBytes = std::size_t{words_} * 8 + 48;
  const std::size_t made = made_ * setBytes + unions_.size() * 32;
  return made > std::max(garbageBytes_, kept_ * setBytes);
}

std::vector<bool> RankSets::liveMarks() const {
  std::vector<bool> live(info_.size(), false);
  for (std::uint32_t i = 0; i <= pinned_; ++i) live[i] = true;
  return live;
}

void RankSets::collect(const std::vector<bool>& live) {
  kept_ = 0;
  for (std::uint32_t id = pinned_ + 1; id < info_.size(); ++id) {
    if (info_[id].min == kFree) continue;
    if (live[id]) {
      ++kept_;
      continue;
    }
    ids_.erase(id);  // hashed and compared by its bits, still in place
    info_[id].min = kFree;
    free_.push_back(id);
  }
  // Highest ids last, reused first: what stays in use drifts down.
  std::sort(free_.begin(), free_.end(), std::greater<>());
  decltype(unions_)().swap(unions_);  // may name collected ids
  made_ = 0;
}

std::uint32_t RankSets::single(std::uint32_t rank) {
  if (rank >= n_) throw std::out_of_range("RankSets::single: rank outside the group");
  return singles_[rank];
}

std::uint32_t RankSets::unite(std::uint32_t a, std::uint32_t b) {
  if (a > b) std::swap(a, b);
  if ((a & kRange) && (b & kRange)) {  // two arcs that touch or overlap make one, no bits read
    const std::uint32_t sa = (a & ~kRange) % n_, la = (a & ~kRange) / n_ + 1;
    const std::uint32_t sb = (b & ~kRange) % n_, lb = (b & ~kRange) / n_ + 1;
    const auto arc = [&](std::uint32_t s, std::uint64_t len) {
      return len >= n_ ? all_ : kRange | static_cast<std::uint32_t>((len - 1) * n_ + s);
    };
    if (const std::uint32_t gap = (sb + n_ - sa) % n_; gap <= la)
      return arc(sa, std::max<std::uint64_t>(la, std::uint64_t{gap} + lb));
    if (const std::uint32_t gap = (sa + n_ - sb) % n_; gap <= lb)
      return arc(sb, std::max<std::uint64_t>(lb, std::uint64_t{gap} + la));
  }
  const std::uint64_t key = (std::uint64_t{a} << 32) | b;
  auto it = unions_.find(key);
  if (it != unions_.end()) return it->second;
  Bits u, v;
  bitsOf(a, u);
  bitsOf(b, v);
  for (std::uint32_t w = 0; w < words_; ++w) u[w] |= v[w];
  const std::uint32_t id = intern(u);
  unions_.emplace(key, id);
  return id;
}

bool RankSets::intersects(std::uint32_t a, std::uint32_t b) const {
  if ((a & kRange) && (b & kRange)) {  // two arcs of the circle of ranks
    const std::uint32_t sa = (a & ~kRange) % n_, la = (a & ~kRange) / n_ + 1;
    const std::uint32_t sb = (b & ~kRange) % n_, lb = (b & ~kRange) / n_ + 1;
    return (sb + n_ - sa) % n_ < la || (sa + n_ - sb) % n_ < lb;
  }
  Bits u, v;
  bitsOf(a, u);
  bitsOf(b, v);
  for (std::uint32_t w = 0; w < words_; ++w)
    if (u[w] & v[w]) return true;
  return false;
}

std::string RankSets::format(const std::uint64_t* bits, std::uint32_t n) {
  std::string out;
  std::uint32_t r = 0;
  auto has = [&](std::uint32_t x) { return (bits[x / 64] >> (x % 64)) & 1; };
  while (r < n) {
    if (!has(r)) {
      ++r;
      continue;
    }
    std::uint32_t e = r;
    while (e + 1 < n && has(e + 1)) ++e;
    if (!out.empty()) out += ',';
    out += e == r ? std::to_string(r) : std::to_string(r) + "-" + std::to_string(e);
    r = e + 1;
  }
  return out.empty() ? "none" : out;
}

std::string RankSets::difference(std::uint32_t a, std::uint32_t b) const {
  Bits d, e;
  bitsOf(a, d);
  bitsOf(b, e);
  for (std::uint32_t w = 0; w < words_; ++w) d[w] &= ~e[w];
  return format(d.data(), n_);
}

std::string RankSets::common(std::uint32_t a, std::uint32_t b) const {
  Bits d, e;
  bitsOf(a, d);
  bitsOf(b, e);
  for (std::uint32_t w = 0; w < words_; ++w) d[w] &= e[w];
  return format(d.data(), n_);
}

std::string RankSets::toString(std::uint32_t s) const {
  Bits d;
  bitsOf(s, d);
  return format(d.data(), n_);
}

IntervalMap::IntervalMap(std::uint64_t size, Value init) : size_(size) {
  if (size > 0) segs_.emplace(0, Seg{size, init});
}

Value IntervalMap::block(const Seg& s, std::uint64_t k) {
  Value v = s.v;
  // Set ids wrap modulo 2^32 like the unsigned they are: a ramp reproduces what it was made of.
  v.set += static_cast<std::uint32_t>(static_cast<std::uint64_t>(s.setStep) * k);
  v.delta += s.deltaStep * static_cast<std::int64_t>(k);
  return v;
}

Value IntervalMap::tail(const Seg& s, std::uint64_t k) {
  if (s.tailFlags & Value::kUninit) return Value{};
  Value v = block(s, k);
  v.set += s.tailSet;
  v.delta += s.tailDelta;
  v.flags = s.tailFlags;
  return v;
}

void IntervalMap::setTail(Seg& s, const Value& t) {
  s.tailFlags = t.flags;
  s.tailSet = t.uninit() ? 0 : t.set - s.v.set;
  s.tailDelta = t.uninit() ? 0 : t.delta - s.v.delta;
}

// Splits the run containing pos so that a run starts at pos. A ramp is cut into the blocks
// before pos's block, that block (plain, and its gap as a plain never-written run), and the
// blocks after it, before the plain cut.
void IntervalMap::split(std::uint64_t pos) {
  if (pos == 0 || pos >= size_) return;
  auto it = std::prev(segs_.upper_bound(pos));  // the run containing pos
  if (it->first == pos) return;
  if (it->second.period > 0) {
    const Seg ramp = it->second;
    const std::uint64_t start = it->first, c = ramp.period, written = c - ramp.gap;
    const std::uint64_t k = (pos - start) / c, blocks = (ramp.end - start + c - 1) / c;
    const auto put = [&](std::uint64_t from, std::uint64_t to) {  // blocks [from, to)
      const std::uint64_t b = start + from * c, e = std::min(start + to * c, ramp.end);
      if (to - from > 1) {
        Seg part = ramp;
        part.end = e;
        part.v = block(ramp, from);  // tail offsets from the head stay the same
        segs_.emplace(b, part);
        return;
      }
      const std::uint64_t w = std::min(b + written, e);
      segs_.emplace(b, Seg{w, block(ramp, from)});
      if (w < e) segs_.emplace(w, Seg{e, tail(ramp, from)});
    };
    segs_.erase(it);
    if (k > 0) put(0, k);
    put(k, k + 1);
    if (k + 1 < blocks) put(k + 1, blocks);
    it = std::prev(segs_.upper_bound(pos));
    if (it->first == pos) return;
  }
  Seg tail = it->second;
  it->second.end = pos;
  segs_.emplace_hint(std::next(it), pos, tail);
}

void IntervalMap::markSets(std::vector<bool>& live) const {
  for (const auto& [start, s] : segs_) {
    if (s.v.uninit()) continue;
    const std::uint64_t blocks = s.period ? (s.end - start + s.period - 1) / s.period : 1;
    // Ids move evenly along a ramp: when the first and the last are past live (range ids) and
    // the ids between do not wrap around, so are they all.
    // A compound ramp's tails step the same way from their own first id.
    for (const bool tails : {false, true}) {
      if (tails && (s.gap == 0 || (s.tailFlags & Value::kUninit))) break;
      // Blocks whose tail the run reaches (it may end after the last block's head).
      const std::uint64_t written = s.period - s.gap;
      const std::uint64_t held =
          tails ? (s.end - start - written + s.period - 1) / s.period : blocks;
      const auto first = static_cast<std::int64_t>(tails ? tail(s, 0).set : s.v.set);
      const std::int64_t last = first + static_cast<std::int64_t>(held - 1) * s.setStep;
      const auto n = static_cast<std::int64_t>(live.size());
      if (first >= n && last >= n && last <= std::int64_t{0xffffffff}) continue;
      for (std::uint64_t k = 0; k < held; ++k) {
        const std::uint32_t id = tails ? tail(s, k).set : block(s, k).set;
        if (id < live.size()) live[id] = true;
      }
    }
  }
}

std::vector<Piece> IntervalMap::read(std::uint64_t off, std::uint64_t count) const {
  std::vector<Piece> out;
  if (count == 0) return out;
  auto it = std::prev(segs_.upper_bound(off));
  const std::uint64_t end = off + count;
  // Never-written elements next to each other are one piece, as one run held them before ramps
  // had gaps: what a report of an uninitialized read names does not depend on the storage form.
  const auto piece = [&](std::uint64_t from, std::uint64_t to, Value v) {
    const std::uint64_t b = std::max(from, off), e = std::min(to, end);
    if (b >= e) return;
    if (v.uninit() && !out.empty() && out.back().v.uninit() && out.back().end == b - off) {
      out.back().end = e - off;
      return;
    }
    if (!v.uninit()) v.delta += static_cast<std::int64_t>(off);
    out.push_back({b - off, e - off, v});
  };
  for (; it != segs_.end() && it->first < end; ++it) {
    const Seg& s = it->second;
    if (s.period == 0) {
      piece(it->first, s.end, s.v);
      continue;
    }
    const std::uint64_t written = s.period - s.gap;
    const std::uint64_t first = off > it->first ? (off - it->first) / s.period : 0;
    for (std::uint64_t k = first;; ++k) {
      const std::uint64_t bs = it->first + k * s.period;
      if (bs >= s.end || bs >= end) break;
      piece(bs, std::min(bs + written, s.end), block(s, k));
      if (s.gap > 0) piece(bs + written, std::min(bs + s.period, s.end), tail(s, k));
    }
  }
  return out;
}

std::pair<std::uint64_t, std::uint64_t> IntervalMap::unwrittenFrom(Segs::const_iterator it,
                                                                   std::uint64_t x) {
  const std::uint64_t start = it->first;
  const Seg& s = it->second;
  x = std::max(x, start);
  if (x >= s.end) return {s.end, s.end};
  if (s.period == 0) return s.v.uninit() ? std::pair{x, s.end} : std::pair{s.end, s.end};
  // Ramps without gaps, and compound ones, are written (coalesce).
  if (s.gap == 0 || !(s.tailFlags & Value::kUninit)) return {s.end, s.end};
  const std::uint64_t bs = start + (x - start) / s.period * s.period;
  const std::uint64_t g = bs + s.period - s.gap;  // block's gap, else the next block's
  const std::uint64_t b = x >= g ? x : g;
  const std::uint64_t e = x >= g ? bs + s.period : g + s.gap;
  if (b >= s.end) return {s.end, s.end};
  return {b, std::min(e, s.end)};
}

std::optional<Piece> IntervalMap::firstUninit(std::uint64_t off, std::uint64_t count) const {
  if (count == 0) return std::nullopt;
  auto it = std::prev(segs_.upper_bound(off));
  const std::uint64_t end = off + count;
  std::uint64_t b = end, e = end;  // the first never-written range, continued across runs
  for (; it != segs_.end() && it->first < end; ++it) {
    const auto [gb, ge] = unwrittenFrom(it, b == end ? off : e);
    if (b == end) {
      if (gb == ge) continue;
      b = gb;
    } else if (gb != e || gb == ge) {
      break;
    }
    e = ge;
    if (e < it->second.end || e >= end) break;
  }
  if (b >= end) return std::nullopt;
  return Piece{b - off, std::min(e, end) - off, {}};
}

void IntervalMap::write(std::uint64_t off, const std::vector<Piece>& pieces) {
  if (pieces.empty()) return;
  const std::uint64_t end = off + pieces.back().end;
  split(off);
  split(end);
  segs_.erase(segs_.lower_bound(off), segs_.lower_bound(end));
  for (const Piece& p : pieces) {
    Value v = p.v;
    if (!v.uninit()) v.delta -= static_cast<std::int64_t>(off);
    segs_.emplace(off + p.begin, Seg{off + p.end, v});
  }
  coalesce(off, end);
}

void IntervalMap::fill(std::uint64_t off, std::uint64_t count, Value v) {
  if (count == 0) return;
  if (!v.uninit()) v.delta += static_cast<std::int64_t>(off);
  write(off, {Piece{0, count, v}});
}

void IntervalMap::absorbDead(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& live) {
  // The value of the element at x as fill() takes it (delta relative to the buffer start).
  const auto at = [this](std::uint64_t x) {
    Value v = read(x, 1).front().v;
    if (!v.uninit()) v.delta -= static_cast<std::int64_t>(x);
    return v;
  };
  std::uint64_t from = 0;  // the first element not yet known live
  for (const auto& [b, e] : live) {
    const std::uint64_t lo = std::min(b, size_), hi = std::min(e, size_);
    if (lo >= hi) continue;
    if (from < lo) fill(from, lo - from, at(from > 0 ? from - 1 : lo));
    from = std::max(from, hi);
  }
  if (from > 0 && from < size_)
    fill(from, size_ - from, at(from - 1));
  else if (from == 0 && size_ > 0)
    fill(0, size_, Value{});  // nothing live: one run
}

// Two neighbouring runs merge when they hold the same plain value, or when the right one
// continues the left one's ramp (a plain run counts as a ramp of one block whose steps are
// whatever the next block makes them). Gapped ramps also grow by a plain block or gap that
// continues them, and begin from a written run, a never-written one and a written one of the
// first's length (the steps from the first to the third): looking back one run more than the
// range written reaches such a first run, and a run that grew is compared with the next one
// even past the range.
void IntervalMap::coalesce(std::uint64_t lo, std::uint64_t hi) {
  auto it = std::prev(segs_.upper_bound(lo > 0 ? lo - 1 : 0));
  if (it != segs_.begin()) --it;
  // A run that grew (a ramp taking a gap that starts at hi) may now continue the run after it.
  bool grew = false;
  while (true) {
    auto next = std::next(it);
    if (next == segs_.end() || (next->first > hi && !grew)) return;
    if (mergeNext(it)) {
      grew = true;
      continue;
    }
    if (next->first > hi) return;
    it = next;
    grew = false;
  }
}

bool IntervalMap::mergeNext(Segs::iterator it) {
  const auto next = std::next(it);
  Seg& l = it->second;
  const Seg& r = next->second;
  const std::uint64_t lenL = l.end - it->first, lenR = r.end - next->first;
  // The steps from one plain block to the next.
  const auto setStep = [](const Value& a, const Value& b) {
    return static_cast<std::int64_t>(static_cast<std::int32_t>(b.set - a.set));
  };
  const auto take = [&](std::uint64_t n) {  // l absorbs the n runs after it
    auto last = next;
    for (std::uint64_t i = 1; i < n; ++i) ++last;
    l.end = last->second.end;
    segs_.erase(next, std::next(last));
    return true;
  };
  if (l.period == 0 && r.period == 0 && l.v == r.v) return take(1);
  if (l.gap == 0 && r.gap == 0 && !l.v.uninit() && !r.v.uninit() && l.v.flags == r.v.flags) {
    const std::uint64_t cl = l.period ? l.period : lenL;
    const std::uint64_t cr = r.period ? r.period : lenR;
    // The steps: the ramp's own, else from the left block to the right one.
    std::int64_t ss = l.period ? l.setStep : r.period ? r.setStep : setStep(l.v, r.v);
    std::int64_t ds = l.period ? l.deltaStep : r.period ? r.deltaStep : r.v.delta - l.v.delta;
    const bool sameSteps =
        !(l.period && r.period) || (l.setStep == r.setStep && l.deltaStep == r.deltaStep);
    if (cl == cr && lenL % cl == 0 && sameSteps &&
        block(Seg{l.end, l.v, cl, ss, ds}, lenL / cl) == r.v) {
      l.period = cl;
      l.setStep = ss;
      l.deltaStep = ds;
      return take(1);
    }
    if (l.period != 0 || r.period != 0) return false;  // two plain runs may begin a compound one
  }
  if (l.gap > 0) {  // a gapped or compound ramp: next comes its last block's tail, or a block
    const std::uint64_t written = l.period - l.gap;
    if (lenL % l.period == written)
      return r.period == 0 && r.v == tail(l, lenL / l.period) && lenR == l.gap && take(1);
    const Value want = block(l, lenL / l.period);
    if (r.period == 0 && lenR == written && r.v == want) return take(1);
    return r.period == l.period && r.gap == l.gap && r.setStep == l.setStep &&
           r.deltaStep == l.deltaStep && r.v == want && r.tailFlags == l.tailFlags &&
           r.tailSet == l.tailSet && r.tailDelta == l.tailDelta && take(1);
  }
  // A written run, a gap or another written run (the tail), then a block of the first's length
  // or a gapped or compound ramp that continues them.
  if (l.period != 0 || l.v.uninit() || r.period != 0 || (r.v.uninit() && !(r.v == Value{})))
    return false;
  const auto third = std::next(next);
  if (third == segs_.end()) return false;
  const Seg& x = third->second;
  const std::uint64_t period = lenL + lenR;
  if (x.period == 0 && !x.v.uninit() && x.v.flags == l.v.flags && x.end - third->first == lenL) {
    l.period = period;
    l.gap = lenR;
    l.setStep = setStep(l.v, x.v);
    l.deltaStep = x.v.delta - l.v.delta;
    setTail(l, r.v);
    return take(2);
  }
  Seg first{l.end, l.v, period, x.setStep, x.deltaStep, lenR};
  setTail(first, r.v);
  if (x.period == period && x.gap == lenR && block(first, 1) == x.v &&
      x.tailFlags == first.tailFlags && x.tailSet == first.tailSet &&
      x.tailDelta == first.tailDelta) {
    l = first;
    return take(2);
  }
  return false;
}

}  // namespace hccl::algo::prov
