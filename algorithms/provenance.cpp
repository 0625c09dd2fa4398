#include "algorithms/provenance.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <stdexcept>

namespace hccl::algo::prov {

RankSets::RankSets(std::uint32_t ranks, std::size_t garbageBytes)
    : n_(ranks),
      words_((ranks + 63) / 64),
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
  const std::uint64_t key = (std::uint64_t{a} << 32) | b;
  auto it = unions_.find(key);
  if (it != unions_.end()) return it->second;
  Bits u(row(a), row(a) + words_);
  for (std::uint32_t w = 0; w < words_; ++w) u[w] |= row(b)[w];
  const std::uint32_t id = intern(u);
  unions_.emplace(key, id);
  return id;
}

bool RankSets::intersects(std::uint32_t a, std::uint32_t b) const {
  for (std::uint32_t w = 0; w < words_; ++w)
    if (row(a)[w] & row(b)[w]) return true;
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
  Bits d(row(a), row(a) + words_);
  for (std::uint32_t w = 0; w < words_; ++w) d[w] &= ~row(b)[w];
  return format(d.data(), n_);
}

std::string RankSets::common(std::uint32_t a, std::uint32_t b) const {
  Bits d(row(a), row(a) + words_);
  for (std::uint32_t w = 0; w < words_; ++w) d[w] &= row(b)[w];
  return format(d.data(), n_);
}

std::string RankSets::toString(std::uint32_t s) const {
  return format(row(s), n_);
}

IntervalMap::IntervalMap(std::uint64_t size, Value init) : size_(size) {
  if (size > 0) segs_.emplace(0, Seg{size, init});
}

Value IntervalMap::block(const Seg& s, std::uint64_t k) {
  Value v = s.v;
  v.set += static_cast<std::uint32_t>(k);
  v.delta -= static_cast<std::int64_t>(k * s.period);
  return v;
}

// Splits the run containing pos so that a run starts at pos. A ramp is cut into the blocks
// before pos's block, that block (plain), and the blocks after it, before the plain cut.
void IntervalMap::split(std::uint64_t pos) {
  if (pos == 0 || pos >= size_) return;
  auto it = std::prev(segs_.upper_bound(pos));  // the run containing pos
  if (it->first == pos) return;
  if (it->second.period > 0) {
    const Seg ramp = it->second;
    const std::uint64_t start = it->first, c = ramp.period;
    const std::uint64_t k = (pos - start) / c, blocks = (ramp.end - start) / c;
    const std::uint64_t bs = start + k * c;
    const auto part = [&](std::uint64_t from, std::uint64_t to) {  // blocks [from, to)
      return Seg{start + to * c, block(ramp, from), to - from > 1 ? c : 0};
    };
    segs_.erase(it);
    if (k > 0) segs_.emplace(start, part(0, k));
    segs_.emplace(bs, part(k, k + 1));
    if (k + 1 < blocks) segs_.emplace(bs + c, part(k + 1, blocks));
    if (bs == pos) return;
    it = segs_.find(bs);
  }
  Seg tail = it->second;
  it->second.end = pos;
  segs_.emplace_hint(std::next(it), pos, tail);
}

void IntervalMap::markSets(std::vector<bool>& live, std::uint32_t skipUpTo) const {
  for (const auto& [start, s] : segs_) {
    if (s.v.uninit()) continue;
    const std::uint64_t blocks = s.period ? (s.end - start) / s.period : 1;
    if (s.v.set + blocks - 1 <= skipUpTo) continue;  // a ramp of singles, say
    for (std::uint64_t k = 0; k < blocks; ++k) live[block(s, k).set] = true;
  }
}

std::vector<Piece> IntervalMap::read(std::uint64_t off, std::uint64_t count) const {
  std::vector<Piece> out;
  if (count == 0) return out;
  auto it = std::prev(segs_.upper_bound(off));
  const std::uint64_t end = off + count;
  const auto piece = [&](std::uint64_t from, std::uint64_t to, Value v) {
    const std::uint64_t b = std::max(from, off), e = std::min(to, end);
    if (!v.uninit()) v.delta += static_cast<std::int64_t>(off);
    out.push_back({b - off, e - off, v});
  };
  for (; it != segs_.end() && it->first < end; ++it) {
    const Seg& s = it->second;
    if (s.period == 0) {
      piece(it->first, s.end, s.v);
      continue;
    }
    const std::uint64_t first = off > it->first ? (off - it->first) / s.period : 0;
    for (std::uint64_t k = first;; ++k) {
      const std::uint64_t bs = it->first + k * s.period;
      if (bs >= s.end || bs >= end) break;
      piece(bs, bs + s.period, block(s, k));
    }
  }
  return out;
}

std::optional<Piece> IntervalMap::firstUninit(std::uint64_t off, std::uint64_t count) const {
  if (count == 0) return std::nullopt;
  auto it = std::prev(segs_.upper_bound(off));
  const std::uint64_t end = off + count;
  for (; it != segs_.end() && it->first < end; ++it)
    if (it->second.v.uninit())
      return Piece{std::max(it->first, off) - off, std::min(it->second.end, end) - off, {}};
  return std::nullopt;
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

// Two neighbouring runs merge when they hold the same plain value, or when the right one
// continues the left one's ramp (a plain run counts as a ramp of one block).
void IntervalMap::coalesce(std::uint64_t lo, std::uint64_t hi) {
  auto it = std::prev(segs_.upper_bound(lo > 0 ? lo - 1 : 0));
  while (true) {
    auto next = std::next(it);
    if (next == segs_.end() || next->first > hi) return;
    Seg& l = it->second;
    const Seg& r = next->second;
    bool merged = false;
    if (l.period == 0 && r.period == 0 && l.v == r.v) {
      l.end = r.end;
      merged = true;
    } else if (!l.v.uninit() && !r.v.uninit() && l.v.flags == r.v.flags) {
      const std::uint64_t cl = l.period ? l.period : l.end - it->first;
      const std::uint64_t cr = r.period ? r.period : r.end - next->first;
      const std::uint64_t blocks = (l.end - it->first) / cl;
      if (cl == cr && (l.end - it->first) % cl == 0 && block(Seg{l.end, l.v, cl}, blocks) == r.v) {
        l.end = r.end;
        l.period = cl;
        merged = true;
      }
    }
    if (merged)
      segs_.erase(next);
    else
      it = next;
  }
}

}  // namespace hccl::algo::prov
