// Binds a schedule's named buffers (Input, Output, Scratch) to memory.
//
// A Binding maps a buffer's logical element range to memory piecewise: a sorted list of segments,
// each a run of logical elements [start, start + count) stored contiguously at `data`. Logical gaps
// are allowed (a slice touching one is a binding error). This is how chunked execution binds a
// chunk of a strided user buffer without copying it: e.g. a ReduceScatter chunk takes the same
// column of every rank's input block.
//
// Pointers are not const because Output and Scratch are written; the executor refuses schedules
// that write Input, so binding a user's const send buffer (through const_cast) is safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"

namespace hccl::engine {

struct Segment {
  std::uint64_t start = 0;  // first logical element
  void* data = nullptr;     // where it lives
  std::uint64_t count = 0;  // elements
};

class Binding {
 public:
  Binding() = default;  // binds nothing: only empty slices resolve

  // Logical [0, count) at data.
  static Binding contiguous(void* data, std::uint64_t count);
  // Segments sorted by start and not overlapping (logically); empty ones are dropped.
  // Throws std::invalid_argument naming the offending segment otherwise.
  static Binding pieces(std::span<const Segment> segments);
  // `blocks` runs of `blockCount` elements, run k at data + k * strideCount elements and logical
  // [k * blockCount, (k + 1) * blockCount): a column of a strided buffer.
  static Binding strided(void* data, std::size_t elemSize, std::uint64_t blockCount,
                         std::uint64_t strideCount, std::uint64_t blocks);

  // Rebinding without reallocating (chunk loops reuse one Binding): clear(), then add() segments
  // in increasing logical order. add() throws std::invalid_argument on overlap or disorder.
  void clear() { segs_.clear(); }
  void add(Segment s);

  std::span<const Segment> segments() const { return segs_; }
  bool empty() const { return segs_.empty(); }
  std::uint64_t end() const { return segs_.empty() ? 0 : segs_.back().start + segs_.back().count; }
  // Index of the segment holding logical element e, or segments().size() if e is unbound.
  std::size_t find(std::uint64_t e) const;
  std::string describe() const;  // "[0,4) [8,12)"

 private:
  std::vector<Segment> segs_;
};

struct Bindings {
  Binding input;
  Binding output;
  Binding scratch;

  const Binding& of(algo::Buf b) const {
    return b == algo::Buf::Input ? input : b == algo::Buf::Output ? output : scratch;
  }
};

}  // namespace hccl::engine
