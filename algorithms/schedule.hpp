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

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/types.hpp"

namespace hccl::algo {

enum class Buf : std::uint8_t { Input, Output, Scratch };
inline constexpr int kNumBufs = 3;
std::string_view name(Buf b);

// A schedule of a 4096-rank communicator holds tens of thousands of slices (16380 transfers and
// 4095 local ops in a 512x8 pipeline AllReduce), and the first touch of its pages was most of
// the time a first call took to build it (~12 us a page fault on the 2-core development VM). So the
// three types below are laid out to waste no bytes: Slice is 16 bytes (its count, at most 2^48
// elements, shares a word with `buf` and leaves that word's last byte as tail padding), so that
// Transfer and LocalOp put their own small fields into its tail padding (Transfer 24 bytes
// instead of 40, LocalOp 48 instead of 80). For that Slice has a constructor (a class with one is
// not "POD for layout", and only such a class's tail padding may be reused), taking (buf,
// offset, count) as the aggregate did. The one thing this forbids: copying bytes (memcpy,
// std::copy through a Slice*) onto the `slice` of a Transfer or the `b` of a LocalOp; assignment
// is fine. `count` being a bit-field, code changes it through the constructor (a count past 2^48
// throws std::length_error there) rather than by assigning the field, which would cut it.
struct Slice {
  // A count that does not fit is refused where the Slice is made, never cut.
  static constexpr std::uint64_t kMaxCount = (std::uint64_t{1} << 48) - 1;
  std::uint64_t offset = 0;
  std::uint64_t count : 48 = 0;
  Buf buf : 8 = Buf::Output;

  Slice() = default;
  Slice(Buf b, std::uint64_t off, std::uint64_t n)
      : offset(off), count(checked(n) & kMaxCount), buf(b) {}
  std::uint64_t end() const { return offset + count; }
  bool overlaps(const Slice& o) const {
    return buf == o.buf && count > 0 && o.count > 0 && offset < o.end() && o.offset < end();
  }
  bool operator==(const Slice&) const = default;

 private:
  static std::uint64_t checked(std::uint64_t n) {
    if (n > kMaxCount) tooLarge(n);
    return n;
  }
  [[noreturn]] static void tooLarge(std::uint64_t n);
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
  [[no_unique_address]] Slice slice;  // the fields below sit in its tail padding (see Slice)
  Dir dir = Dir::Send;
  std::uint8_t level = 0;  // hierarchy level whose links carry it: 0 server, 1 inter-server, 2 pod
  // Written by the sender into the receiver's memory (a push) where the link reaches it, instead
  // of read by the receiver. It changes nothing of what the message carries (the send carries
  // its slice as it is when its step begins) but when the receiver's slice is open to writing:
  // from the start of the step before the receive's (nothing of that step may touch it), so
  // that the sender can write its slice piece by piece while the op of its own step before
  // produces it (a reduction's result goes to the peer from the cache instead of being read back
  // from memory by the peer). Both ends of a message carry the same flag, so the link's two ends
  // agree on who copies; the verifier checks both rules.
  // (push and post share one byte: the slice's tail padding holds dir, level, them and peer.)
  bool push : 1 = false;
  // One of a post: the sender's one slice to several peers of the step, which a link with
  // broadcast slots (the shared-memory link: engine/slot_executor.hpp) writes once for all its
  // readers. Only the cost model reads it (metrics.hpp: the post counts once in the sender's
  // load, and its round is the link's post_step_us); both ends carry it.
  bool post : 1 = false;
  std::uint32_t peer = 0;  // rank in the schedule's own group

  Transfer() = default;
  Transfer(Dir d, std::uint32_t to, Slice sl, std::uint8_t lvl = 0, bool pushed = false)
      : slice(sl), dir(d), level(lvl), push(pushed), peer(to) {}
  bool operator==(const Transfer&) const = default;
};
static_assert(sizeof(Transfer) == 24, "Transfer's fields fit in its slice's tail padding");

enum class OpKind : std::uint8_t { Copy, Reduce };

// Copy:   dst = a                      (b unused)
// Reduce: dst = a (+) b, element-wise; a is the left operand, so an algorithm that keeps lower
//         ranks on the left reduces in rank order. dst may be a or b, or a third slice.
struct LocalOp {
  Slice dst;
  Slice a;
  [[no_unique_address]] Slice b;  // `kind` sits in its tail padding (see Slice)
  OpKind kind = OpKind::Copy;

  LocalOp() = default;
  LocalOp(OpKind k, Slice d, Slice x, Slice y) : dst(d), a(x), b(y), kind(k) {}
  bool operator==(const LocalOp&) const = default;
};
static_assert(sizeof(Slice) == 16, "count and buf share a word");
static_assert(sizeof(LocalOp) == 48, "LocalOp's kind fits in its b's tail padding");

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
// A push (Transfer::push) on both ends.
inline void sendPush(Step& s, std::uint32_t peer, Slice sl) {
  if (sl.count) s.xfers.push_back({Dir::Send, peer, sl, 0, true});
}
inline void recvPush(Step& s, std::uint32_t peer, Slice sl) {
  if (sl.count) s.xfers.push_back({Dir::Recv, peer, sl, 0, true});
}
// One of a post (Transfer::post) on both ends: the sender calls it for every reader of the slice.
inline void sendPost(Step& s, std::uint32_t peer, Slice sl) {
  if (sl.count) s.xfers.push_back({Dir::Send, peer, sl, 0}), s.xfers.back().post = true;
}
inline void recvPost(Step& s, std::uint32_t peer, Slice sl) {
  if (sl.count) s.xfers.push_back({Dir::Recv, peer, sl, 0}), s.xfers.back().post = true;
}
// A zero-byte message, kept even though it carries nothing: Barrier's synchronisation. Its
// slice is an empty Scratch slice, so it touches no memory.
inline void sendSignal(Step& s, std::uint32_t peer) {
  s.xfers.push_back({Dir::Send, peer, Slice{Buf::Scratch, 0, 0}, 0});
}
inline void recvSignal(Step& s, std::uint32_t peer) {
  s.xfers.push_back({Dir::Recv, peer, Slice{Buf::Scratch, 0, 0}, 0});
}
// Drops steps left empty by the builders above.
void prune(RankSchedule& s);

// How a collective's elements are split into one block per rank: block i is
// [offset(i), offset(i+1)). ReduceScatter, AllGather, Scatter and Gather use the caller's
// per-rank counts (equal for the non-V forms); AllReduce, Broadcast, Reduce, Scan and Exscan split
// their count as evenly as possible.
//
// Rank-local blocks (Blocks::only): what a GatherV or ScatterV non-root knows, its own count and
// nothing else. Asking for anything it does not know (another block's count, an offset past an
// unknown block, the total) throws std::logic_error naming the block, so a generator that serves
// rank-local problems cannot depend on another rank's arguments by accident.
class Blocks {
 public:
  Blocks() = default;
  static Blocks even(std::uint64_t total, std::uint32_t parts);
  static Blocks uniform(std::uint64_t perBlock, std::uint32_t parts);
  static Blocks of(std::span<const std::uint64_t> counts);
  // `parts` blocks of which only block `known` (holding `count` elements) is known.
  static Blocks only(std::uint32_t parts, std::uint32_t known, std::uint64_t count);

  std::uint32_t parts() const { return static_cast<std::uint32_t>(offsets_.size()) - 1; }
  std::uint64_t offset(std::uint32_t i) const {
    if (i > firstUnknown_) unknown(firstUnknown_, "offset", i);
    return offsets_[i];
  }
  std::uint64_t count(std::uint32_t i) const {
    if (knownOnly_ != kAllKnown && i != knownOnly_) unknown(i, "count", i);
    return offsets_[i + 1] - offsets_[i];
  }
  std::uint64_t total() const { return offset(parts()); }
  // Every count known (not a rank-local view), and whether block i's count is.
  bool complete() const { return knownOnly_ == kAllKnown; }
  bool known(std::uint32_t i) const { return complete() || i == knownOnly_; }
  // Blocks [first, last) as one contiguous slice of buffer b.
  Slice span(Buf b, std::uint32_t first, std::uint32_t last) const {
    return {b, offset(first), offset(last) - offset(first)};
  }
  Slice block(Buf b, std::uint32_t i) const { return span(b, i, i + 1); }
  // The count of the largest block (0 without blocks): the size of a slot any block fits. O(1):
  // the pipeline's chunk sizing asks it of every edge rank (~90 at 512x8) for every chunk it
  // tries, and walking 4096 blocks each time was a third of that sizing.
  std::uint64_t largest() const;
  bool isUniform() const;
  auto operator<=>(const Blocks&) const = default;  // cache keys

 private:
  static constexpr std::uint32_t kAllKnown = 0xffffffffu;
  [[noreturn]] void unknown(std::uint32_t block, std::string_view what, std::uint32_t i) const;

  std::vector<std::uint64_t> offsets_{0};
  // Rank-local blocks: the one known block (its offsets_ entries are 0 and count); else kAllKnown.
  std::uint32_t knownOnly_ = kAllKnown;
  // offset(i) is known for i <= firstUnknown_: the first block whose count is unknown.
  std::uint32_t firstUnknown_ = kAllKnown;
  // largest() of complete blocks, kept by the factories (a function of offsets_, so comparisons
  // order Blocks as before); 0 for rank-local ones, whose largest() throws.
  std::uint64_t largest_ = 0;
};

// The largest block other than block r, for every r in O(1) after one O(p) pass over complete
// blocks: the largest block and the second largest (equal to it when two blocks tie). Mesh
// Broadcast and Reduce price a rank's busiest receive or send by it.
class LargestOther {
 public:
  explicit LargestOther(const Blocks& bl) {
    const std::uint32_t p = bl.parts();
    for (std::uint32_t j = 1; j < p; ++j) {
      const std::uint64_t c = bl.count(j);
      if (c > bl.count(top_)) {
        second_ = bl.count(top_);
        top_ = j;
      } else {
        second_ = std::max(second_, c);
      }
    }
    topCount_ = p == 0 ? 0 : bl.count(top_);
  }
  std::uint64_t operator()(std::uint32_t r) const { return r == top_ ? second_ : topCount_; }

 private:
  std::uint32_t top_ = 0;
  std::uint64_t second_ = 0, topCount_ = 0;
};

// AllToAllV's counts: count(i, j) elements go from rank i to rank j. Rank i's Input is its row,
// packed in peer order (sendBlocks(i)); its Output is its column, packed in peer order
// (recvBlocks(i)). MPI's displacements are not part of the schedule: the engine binds each packed
// block to user memory at its displacement (BufferMap, chunking.hpp), and the adapter packs
// AllToAllW's per-peer datatypes to bytes (elemSize 1).
//
// Rank-local (local()): rank r knows its row (sendcounts) and its column (recvcounts) only;
// count(i, j) with neither i nor j = r throws std::logic_error, as Blocks::only does.
class PairCounts {
 public:
  PairCounts() = default;
  // Every pair, row-major: counts[i * p + j] = count(i, j).
  static PairCounts of(std::uint32_t p, std::span<const std::uint64_t> counts);
  // Every pair `count` elements (what the selector costs): O(1) memory.
  static PairCounts equal(std::uint32_t p, std::uint64_t count);
  // Rank r's view: send[j] = count(r, j), recv[i] = count(i, r); send[r] must equal recv[r].
  static PairCounts local(std::uint32_t p, std::uint32_t r, std::span<const std::uint64_t> send,
                          std::span<const std::uint64_t> recv);

  std::uint32_t ranks() const { return p_; }
  std::uint64_t count(std::uint32_t from, std::uint32_t to) const;
  bool complete() const { return localTo_ == kAll; }
  // The rank whose view this is (meaningful when !complete()).
  std::uint32_t localRank() const { return localTo_; }
  bool known(std::uint32_t from, std::uint32_t to) const {
    return complete() || from == localTo_ || to == localTo_;
  }
  Blocks sendBlocks(std::uint32_t r) const;  // row r
  Blocks recvBlocks(std::uint32_t r) const;  // column r
  // Rank r's view of a complete matrix.
  PairCounts localTo(std::uint32_t r) const;
  // count(i, j) == count(j, i) for every pair: what in-place AllToAllV needs.
  bool symmetric() const;
  auto operator<=>(const PairCounts&) const = default;  // part of Problem's cache key

 private:
  static constexpr std::uint32_t kAll = 0xffffffffu;
  std::uint32_t p_ = 0;
  std::uint32_t localTo_ = kAll;
  // Complete: p * p counts row-major, or none when every pair holds each_ (of() stores an equal
  // matrix so too, so that equal matrices compare equal). Rank-local: the row of localTo_, then
  // its column (2p counts, never p * p: 65536 ranks would be 34 GB).
  std::vector<std::uint64_t> counts_;
  std::uint64_t each_ = 0;
};

// What is asked of a schedule. Buffer layouts, by collective (counts in elements):
//   AllReduce      Input[total] -> Output[total];          in place: Output holds the input
//   ReduceScatter  Input[total] -> Output[count(r)];       in place: Output[total] holds the
//                                                           input, the result lands at Output[0..)
//   AllGather      Input[count(r)] -> Output[total], block i at offset(i); in place: Output's
//                                                           block r holds the input. AllGatherV is
//                                                           the same with uneven blocks (every
//                                                           rank knows every count)
//   Broadcast      Output[total] on every rank; the root's holds the data (always "in place")
//   Reduce         Input[total] -> Output[total] on the root only; non-roots have no Output;
//                                                           in place: the root's Output holds its
//                                                           input
//   Scatter        root's Input[total] -> Output[count(r)]; in place: the root has no Input, its
//                                                           total-sized Output holds the data and
//                                                           must stay unchanged (its own block is
//                                                           already in place)
//   Gather         Input[count(r)] -> the root's Output[total], block i at offset(i); non-roots
//                                                           have no Output; in place: the root
//                                                           has no Input, its Output's block root
//                                                           holds its data and stays unchanged
//   ScatterV,      Scatter and Gather with uneven blocks. A non-root knows only its own count:
//   GatherV                                                 its problem is rank-local
//                                                           (gatherVNonRoot, scatterVNonRoot,
//                                                           localView), its blocks Blocks::only
//   AllToAll       Input[total] -> Output[total], equal blocks: Input block j goes to rank j,
//                                                           Output block i comes from rank i;
//                                                           in place: Output holds the input
//   AllToAllV      Input[row r] -> Output[column r] (PairCounts): Input block j goes to rank j,
//                                                           Output block i comes from rank i;
//                                                           rank-local on every rank (localView);
//                                                           in place (symmetric counts only):
//                                                           Output holds the input
//   Barrier        no buffers; every rank leaves only after every rank entered (total() = 0)
//   Scan           Input[total] -> Output[total] = inputs of ranks 0..r reduced in rank order;
//                                                           in place: Output holds the input
//   Exscan         Input[total] -> Output[total] = inputs of ranks 0..r-1 reduced in rank order;
//                                                           rank 0's Output is not written (MPI
//                                                           leaves it undefined); in place: Output
//                                                           holds the input
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
  // AllToAllV only (empty otherwise); its blocks are Blocks::uniform(0, ranks), unused.
  PairCounts pairs{};

  static Problem allReduce(std::uint32_t p, std::uint64_t count, bool inPlace = false);
  static Problem reduceScatter(std::uint32_t p, std::uint64_t perRank, bool inPlace = false);
  static Problem allGather(std::uint32_t p, std::uint64_t perRank, bool inPlace = false);
  static Problem broadcast(std::uint32_t p, std::uint64_t count, std::uint32_t root);
  static Problem reduce(std::uint32_t p, std::uint64_t count, std::uint32_t root,
                        bool inPlace = false);
  static Problem scatter(std::uint32_t p, std::uint64_t perRank, std::uint32_t root,
                         bool inPlace = false);
  static Problem gather(std::uint32_t p, std::uint64_t perRank, std::uint32_t root,
                        bool inPlace = false);
  static Problem allToAll(std::uint32_t p, std::uint64_t perPair, bool inPlace = false);
  static Problem barrier(std::uint32_t p);
  static Problem scan(std::uint32_t p, std::uint64_t count, bool inPlace = false);
  static Problem exscan(std::uint32_t p, std::uint64_t count, bool inPlace = false);
  // The V forms with every count: AllGatherV on every rank, GatherV/ScatterV on the root (and in
  // the verifier), AllToAllV in the verifier. counts.size() = p (p * p row-major for AllToAllV).
  static Problem allGatherV(std::span<const std::uint64_t> counts, bool inPlace = false);
  static Problem gatherV(std::span<const std::uint64_t> counts, std::uint32_t root,
                         bool inPlace = false);
  static Problem scatterV(std::span<const std::uint64_t> counts, std::uint32_t root,
                          bool inPlace = false);
  static Problem allToAllV(std::uint32_t p, std::span<const std::uint64_t> counts,
                           bool inPlace = false);
  // Every pair `perPair` elements, without a p * p matrix.
  static Problem allToAllVEqual(std::uint32_t p, std::uint64_t perPair, bool inPlace = false);
  // What a rank knows of a V call (DESIGN-collectives.md, "What each rank knows"): a GatherV or
  // ScatterV non-root its own count; an AllToAllV rank its sendcounts and recvcounts (in place:
  // recvcounts for both).
  static Problem gatherVNonRoot(std::uint32_t p, std::uint32_t root, std::uint32_t rank,
                                std::uint64_t ownCount);
  static Problem scatterVNonRoot(std::uint32_t p, std::uint32_t root, std::uint32_t rank,
                                 std::uint64_t ownCount);
  static Problem allToAllVAt(std::uint32_t p, std::uint32_t rank,
                             std::span<const std::uint64_t> sendCounts,
                             std::span<const std::uint64_t> recvCounts, bool inPlace = false);
  // From the count as MPI gives it: per rank for ReduceScatter, AllGather, Scatter and Gather,
  // per pair for AllToAll and AllToAllV (equal counts), the whole vector otherwise, none for
  // Barrier.
  static Problem fromMpiCount(Collective c, std::uint32_t p, std::uint64_t count, bool inPlace,
                              std::uint32_t root = 0);

  // Rank r's view of a complete V problem (what gatherVNonRoot & co. build from MPI's
  // arguments): the tests compare the schedules generated from both. Only GatherV, ScatterV
  // (at non-roots) and AllToAllV have one; any other problem, and the root's, is returned as is.
  // Call it for the V forms only: a uniform Gather's non-root knows every count ([same]).
  Problem localView(std::uint32_t r) const;
  // True for a rank-local view: its generators may use only the rank's own counts.
  bool rankLocal() const { return !blocks.complete() || !pairs.complete(); }

  std::uint64_t total() const { return blocks.total(); }
  // Where rank r's ReduceScatter result must end up.
  Slice resultSlice(std::uint32_t r) const {
    return inPlace && resultInBlock ? blocks.block(Buf::Output, r)
                                    : Slice{Buf::Output, 0, blocks.count(r)};
  }
  // Elements each named buffer must hold on rank r (0 when the buffer is absent).
  std::uint64_t bufferCount(Buf b, std::uint32_t r) const;
  // The parts of Output rank r may write (write_contract.hpp): its result, as disjoint slices in
  // offset order. Empty where the standard names no output: a Broadcast root's buffer, an
  // in-place Scatter root's, a Gather non-root, Exscan's rank 0. An in-place Gather root may
  // write every block but its own.
  std::vector<Slice> writableOutput(std::uint32_t r) const;
  auto operator<=>(const Problem&) const = default;  // cache keys
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
