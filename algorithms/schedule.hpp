// The schedule: what every layer above executes, verifies, costs or prints.
//
// A schedule is plain data. For each rank it is an ordered list of steps; a step posts all of its
// transfers at once (sends and receives of slices of named buffers), waits for all of them, then
// runs its local operations (copy, reduce) in order. Buffers are named, never pointers:
//
//   Input   the user's send buffer (read-only; absent for in-place calls)
//   Output  the user's receive buffer
//   Scratch memory the engine owns, sized by scratchCount()
//
// Offsets and counts are in elements of the collective's datatype, so one schedule serves every
// datatype of the same count. Matching is MPI-like: the k-th send from rank a to rank b meets the
// k-th receive on b from a, whatever steps they sit in, so ranks need not agree on step numbers.
//
// Two properties the rest of the project leans on:
//  - chunked execution: the engine splits a large call into chunk-sized Problems, generates (and
//    caches) the schedule of a chunk once, and runs it in a loop, binding each named buffer to the
//    chunk's part of user memory; Scratch stays bounded by the chunk size (HCCL_BUFFSIZE).
//  - composition: a level's algorithm is generated for a group of g ranks and embedded into the
//    parent schedule with embed(): group ranks map to parent ranks, group buffers map to parent
//    buffer regions, and every transfer is tagged with the level whose links carry it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/types.hpp"

namespace hccl::algo {

enum class Buf : std::uint8_t { Input, Output, Scratch };
inline constexpr int kNumBufs = 3;
std::string_view name(Buf b);

struct Slice {
  Buf buf = Buf::Output;
  std::uint64_t offset = 0;
  std::uint64_t count = 0;

  std::uint64_t end() const { return offset + count; }
  bool overlaps(const Slice& o) const {
    return buf == o.buf && count > 0 && o.count > 0 && offset < o.end() && o.offset < end();
  }
  bool operator==(const Slice&) const = default;
};

inline Slice in(std::uint64_t off, std::uint64_t n) {
  return {Buf::Input, off, n};
}
inline Slice out(std::uint64_t off, std::uint64_t n) {
  return {Buf::Output, off, n};
}
inline Slice scratch(std::uint64_t off, std::uint64_t n) {
  return {Buf::Scratch, off, n};
}

enum class Dir : std::uint8_t { Send, Recv };

struct Transfer {
  Dir dir = Dir::Send;
  std::uint32_t peer = 0;  // rank in the schedule's own group
  Slice slice;
  std::uint8_t level = 0;  // hierarchy level whose links carry it: 0 server, 1 inter-server, 2 pod
  bool operator==(const Transfer&) const = default;
};

enum class OpKind : std::uint8_t { Copy, Reduce };

// Copy:   dst = a                      (b unused)
// Reduce: dst = a (+) b, element-wise; a is the left operand, so an algorithm that keeps lower
//         ranks on the left reduces in rank order. dst may be a or b, or a third slice.
struct LocalOp {
  OpKind kind = OpKind::Copy;
  Slice dst;
  Slice a;
  Slice b;
  bool operator==(const LocalOp&) const = default;
};

struct Step {
  std::vector<Transfer> xfers;
  std::vector<LocalOp> ops;
  bool operator==(const Step&) const = default;
};

struct RankSchedule {
  std::vector<Step> steps;
  bool operator==(const RankSchedule&) const = default;

  Step& newStep() { return steps.emplace_back(); }
  // The first or the last step, or a new one when there is none: where a local op goes that may
  // run alongside the first step's transfers, or must wait for the last step's.
  Step& firstStep() { return steps.empty() ? newStep() : steps.front(); }
  Step& lastStep() { return steps.empty() ? newStep() : steps.back(); }
  // The last step when it posts no transfers, else a new one: local work after every transfer
  // that may share a step with earlier local work.
  Step& stepAfterTransfers() {
    return steps.empty() || !steps.back().xfers.empty() ? newStep() : steps.back();
  }
};

// Step builders used by generators. Empty slices are dropped (both ends of a transfer derive its
// size from the same Problem, so they drop it alike), and so are copies of a slice onto itself.
inline void send(Step& s, std::uint32_t peer, Slice sl) {
  if (sl.count) s.xfers.push_back({Dir::Send, peer, sl, 0});
}
inline void recv(Step& s, std::uint32_t peer, Slice sl) {
  if (sl.count) s.xfers.push_back({Dir::Recv, peer, sl, 0});
}
inline void copy(Step& s, Slice dst, Slice src) {
  if (dst.count && !(dst == src)) s.ops.push_back({OpKind::Copy, dst, src, {}});
}
inline void reduce(Step& s, Slice dst, Slice a, Slice b) {
  if (dst.count) s.ops.push_back({OpKind::Reduce, dst, a, b});
}
// Drops steps left empty by the builders above.
void prune(RankSchedule& s);

// How a collective's elements are split into one block per rank: block i is
// [offset(i), offset(i+1)). ReduceScatter and AllGather use the caller's per-rank counts (equal
// for the _block forms); AllReduce, Broadcast and Reduce split their count as evenly as possible.
class Blocks {
 public:
  Blocks() = default;
  static Blocks even(std::uint64_t total, std::uint32_t parts);
  static Blocks uniform(std::uint64_t perBlock, std::uint32_t parts);
  static Blocks of(std::span<const std::uint64_t> counts);

  std::uint32_t parts() const { return static_cast<std::uint32_t>(offsets_.size()) - 1; }
  std::uint64_t offset(std::uint32_t i) const { return offsets_[i]; }
  std::uint64_t count(std::uint32_t i) const { return offsets_[i + 1] - offsets_[i]; }
  std::uint64_t total() const { return offsets_.back(); }
  // Blocks [first, last) as one contiguous slice of buffer b.
  Slice span(Buf b, std::uint32_t first, std::uint32_t last) const {
    return {b, offsets_[first], offsets_[last] - offsets_[first]};
  }
  Slice block(Buf b, std::uint32_t i) const { return span(b, i, i + 1); }
  // The count of the largest block (0 without blocks): the size of a slot any block fits.
  std::uint64_t largest() const;
  bool isUniform() const;
  bool operator==(const Blocks&) const = default;

 private:
  std::vector<std::uint64_t> offsets_{0};
};

// What is asked of a schedule. Buffer layouts, by collective (counts in elements):
//   AllReduce      Input[total] -> Output[total];          in place: Output holds the input
//   ReduceScatter  Input[total] -> Output[count(r)];       in place: Output[total] holds the
//                                                           input, the result lands at Output[0..)
//   AllGather      Input[count(r)] -> Output[total], block i at offset(i); in place: Output's
//                                                           block r holds the input
//   Broadcast      Output[total] on every rank; the root's holds the data (always "in place")
//   Reduce         Input[total] -> Output[total] on the root only; non-roots have no Output;
//                                                           in place: the root's Output holds its
//                                                           input
//   Scatter        root's Input[total] -> Output[count(r)]; in place: the root has no Input, its
//                                                           total-sized Output holds the data and
//                                                           must stay unchanged (its own block is
//                                                           already in place)
//   AllToAll       Input[total] -> Output[total], equal blocks: Input block j goes to rank j,
//                                                           Output block i comes from rank i;
//                                                           in place: Output holds the input
struct Problem {
  Collective coll = Collective::AllReduce;
  std::uint32_t ranks = 1;
  std::uint32_t root = 0;
  bool inPlace = false;
  Blocks blocks;
  // In-place ReduceScatter only: leave rank r's result in its own block (Output[offset(r)...))
  // instead of moving it to the start as MPI requires. Hierarchical AllReduce uses this so each
  // piece stays where the next level and the closing AllGather expect it.
  bool resultInBlock = false;

  static Problem allReduce(std::uint32_t p, std::uint64_t count, bool inPlace = false);
  static Problem reduceScatter(std::uint32_t p, std::uint64_t perRank, bool inPlace = false);
  static Problem allGather(std::uint32_t p, std::uint64_t perRank, bool inPlace = false);
  static Problem broadcast(std::uint32_t p, std::uint64_t count, std::uint32_t root);
  static Problem reduce(std::uint32_t p, std::uint64_t count, std::uint32_t root,
                        bool inPlace = false);
  static Problem scatter(std::uint32_t p, std::uint64_t perRank, std::uint32_t root,
                         bool inPlace = false);
  static Problem allToAll(std::uint32_t p, std::uint64_t perPair, bool inPlace = false);
  // From the count as MPI gives it: per rank for ReduceScatter, AllGather and Scatter, per pair
  // for AllToAll, the whole vector otherwise.
  static Problem fromMpiCount(Collective c, std::uint32_t p, std::uint64_t count, bool inPlace,
                              std::uint32_t root = 0);

  std::uint64_t total() const { return blocks.total(); }
  // Where rank r's ReduceScatter result must end up.
  Slice resultSlice(std::uint32_t r) const {
    return inPlace && resultInBlock ? blocks.block(Buf::Output, r)
                                    : Slice{Buf::Output, 0, blocks.count(r)};
  }
  // Elements each named buffer must hold on rank r (0 when the buffer is absent).
  std::uint64_t bufferCount(Buf b, std::uint32_t r) const;
  // The part of Output rank r may write (write_contract.hpp): its result. Empty where the
  // standard names no output: a Broadcast root's buffer, an in-place Scatter root's.
  Slice writableOutput(std::uint32_t r) const;
  bool operator==(const Problem&) const = default;
};

// Elements of Scratch the rank schedule touches.
std::uint64_t scratchCount(const RankSchedule& s);

// A whole schedule: one RankSchedule per rank of the group.
struct Schedule {
  Problem problem;
  std::vector<RankSchedule> ranks;
};

// ---- composition ------------------------------------------------------------------------------

// Where a group schedule's buffer lands in the parent: group buffer g becomes parent buffer
// `to[g].buf` shifted by `to[g].offset`.
struct BufferRegion {
  Buf buf = Buf::Output;
  std::uint64_t offset = 0;
};

struct Embedding {
  std::vector<std::uint32_t> members;  // group rank -> parent rank
  std::array<BufferRegion, kNumBufs> to{BufferRegion{Buf::Input, 0}, BufferRegion{Buf::Output, 0},
                                        BufferRegion{Buf::Scratch, 0}};
  std::uint8_t level = 0;
};

// Appends `part` (a group member's schedule) to `dst`, renaming peers and buffers.
void embed(RankSchedule& dst, const RankSchedule& part, const Embedding& e);
// Merges `part` into `dst` step by step starting at dst.steps[firstStep], so both run
// concurrently (transfers of step i of both are posted together); extends dst as needed.
void overlay(RankSchedule& dst, const RankSchedule& part, const Embedding& e,
             std::size_t firstStep);

// ---- printing ---------------------------------------------------------------------------------

std::string toString(const Slice& s);
std::string toString(const Transfer& t);
std::string toString(const LocalOp& op);
std::string toString(const RankSchedule& s);
std::string toString(const Problem& p);

}  // namespace hccl::algo
