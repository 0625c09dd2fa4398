#include "coll_hccl/engine/binding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace hccl::engine {

Binding Binding::contiguous(void* data, std::uint64_t count) {
  Binding b;
  b.add({0, data, count});
  return b;
}

Binding Binding::pieces(std::span<const Segment> segments) {
  Binding b;
  b.segs_.reserve(segments.size());
  for (const Segment& s : segments) b.add(s);
  return b;
}

Binding Binding::strided(void* data, std::size_t elemSize, std::uint64_t blockCount,
                         std::uint64_t strideCount, std::uint64_t blocks) {
  if (blocks > 1 && strideCount < blockCount)
    throw std::invalid_argument(
        fmt::format("Binding::strided: stride {} shorter than the block of {} elements",
                    strideCount, blockCount));
  Binding b;
  b.segs_.reserve(blocks);
  auto* base = static_cast<std::byte*>(data);
  for (std::uint64_t k = 0; k < blocks; ++k)
    b.add({k * blockCount, base + k * strideCount * elemSize, blockCount});
  return b;
}

void Binding::add(Segment s) {
  if (s.count == 0) return;
  if (s.data == nullptr)
    throw std::invalid_argument(
        fmt::format("Binding: segment [{},{}) has a null pointer", s.start, s.start + s.count));
  if (s.start + s.count < s.start)
    throw std::invalid_argument(
        fmt::format("Binding: segment at {} of {} elements wraps around", s.start, s.count));
  if (!segs_.empty() && s.start < end())
    throw std::invalid_argument(fmt::format(
        "Binding: segment [{},{}) starts before the end {} of the previous one (segments must be "
        "sorted and disjoint)",
        s.start, s.start + s.count, end()));
  segs_.push_back(s);
}

std::size_t Binding::find(std::uint64_t e) const {
  auto it = std::upper_bound(segs_.begin(), segs_.end(), e,
                             [](std::uint64_t v, const Segment& s) { return v < s.start; });
  if (it == segs_.begin()) return segs_.size();
  --it;
  if (e >= it->start + it->count) return segs_.size();
  return static_cast<std::size_t>(it - segs_.begin());
}

std::string Binding::describe() const {
  if (segs_.empty()) return "nothing";
  std::string s;
  // Adjacent segments print as one range: what matters in an error is which elements are bound.
  std::uint64_t lo = segs_.front().start, hi = lo;
  auto flush = [&] { s += fmt::format("{}[{},{})", s.empty() ? "" : " ", lo, hi); };
  for (const Segment& seg : segs_) {
    if (seg.start != hi) {
      if (hi != lo) flush();
      lo = seg.start;
    }
    hi = seg.start + seg.count;
  }
  flush();
  return s;
}

}  // namespace hccl::engine
