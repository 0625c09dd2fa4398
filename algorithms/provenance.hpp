// Provenance values and interval maps used by the verifier (internal to algorithms/).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace hccl::algo::prov {

// Interned sets of ranks, so a provenance value is a few words and set union is cached.
//
// A set whose ranks are one run modulo p (a single, every rank, a ring's partial sum, a prefix)
// has an id computed from its run and takes no memory: a ring ReduceScatter in place leaves
// p-1 different partial sums in each rank's blocks, p^2 sets at once, and their ids step
// evenly from one block to the next, so a rank's blocks stay a few ramps (IntervalMap). Other
// sets are stored as p bits, and dropped when nothing holds them (collect()).
class RankSets {
 public:
  // Garbage (sets no value holds) may grow to what is kept, and at least to garbageBytes.
  explicit RankSets(std::uint32_t ranks, std::size_t garbageBytes = std::size_t{64} << 20);
  RankSets(const RankSets&) = delete;  // the interning table points back at its owner
  RankSets& operator=(const RankSets&) = delete;

  static constexpr std::uint32_t kEmpty = 0;
  std::uint32_t single(std::uint32_t rank);
  std::uint32_t all() const { return all_; }
  // Ranks [first, first + count).
  std::uint32_t range(std::uint32_t first, std::uint32_t count);
  std::uint32_t unite(std::uint32_t a, std::uint32_t b);
  bool intersects(std::uint32_t a, std::uint32_t b) const;
  std::uint32_t min(std::uint32_t s) const;
  std::uint32_t max(std::uint32_t s) const;
  // Ranks in a but not in b, as "0-3,7".
  std::string difference(std::uint32_t a, std::uint32_t b) const;
  // Ranks in both, as "0-3,7".
  std::string common(std::uint32_t a, std::uint32_t b) const;
  std::string toString(std::uint32_t s) const;
  // The ranks whose bit is set in `bits` (n ranks), as "0-3,7", or "none".
  static std::string format(const std::uint64_t* bits, std::uint32_t n);

  // Sets no value refers to any more are dropped and their ids reused, so what is held follows
  // the partial sums alive, not every one ever made: a ReduceScatter of one element per rank
  // makes p^2 of them (p-bit sets: 8 GB at 4096 ranks) while its ranks hold O(p). The owner
  // asks collectWanted() at a moment when every id in use sits in its values, marks those in
  // liveMarks() (the empty set, the singles and all() are marked already) and calls collect().
  bool collectWanted() const;
  std::vector<bool> liveMarks() const;
  void collect(const std::vector<bool>& live);
  // Ids at or below this are never collected (marking may skip them).
  std::uint32_t pinned() const { return pinned_; }
  std::uint32_t ids() const { return static_cast<std::uint32_t>(info_.size()); }

 private:
  using Bits = std::vector<std::uint64_t>;
  struct Info {
    std::uint32_t min, max;
  };
  // The interning table holds set ids; hashing and comparing read their bits in bits_ (one copy
  // of each set, where a map keyed by the bits kept two).
  struct IdHash {
    const RankSets* sets;
    std::size_t operator()(std::uint32_t id) const;
  };
  struct IdEq {
    const RankSets* sets;
    bool operator()(std::uint32_t a, std::uint32_t b) const;
  };
  const std::uint64_t* row(std::uint32_t id) const {
    return bits_.data() + std::size_t{id} * words_;
  }
  std::uint32_t intern(const Bits& bits);
  std::uint32_t rangeOf(const Bits& bits) const;
  void bitsOf(std::uint32_t id, Bits& out) const;

  // Range ids carry this bit (used while p^2 fits below it, so up to 46340 ranks).
  static constexpr std::uint32_t kRange = 1u << 31;

  static constexpr std::uint32_t kFree = ~0u - 1;  // Info::min of a collected id
  std::uint32_t n_, words_;
  bool ranges_;
  std::vector<std::uint64_t> bits_;  // set id i: words [i * words_, (i + 1) * words_)
  std::vector<Info> info_;
  std::unordered_set<std::uint32_t, IdHash, IdEq> ids_;
  std::unordered_map<std::uint64_t, std::uint32_t> unions_;
  std::vector<std::uint32_t> singles_;
  std::uint32_t all_ = 0;
  std::uint32_t probe_ = 0;          // the row a set is put in to look it up, never handed out
  std::uint32_t pinned_ = 0;         // the empty set, the probe, the singles and all()
  std::vector<std::uint32_t> free_;  // collected ids, reused first
  std::size_t made_ = 0, kept_ = 0;  // ids made since the last collect, and ids it kept
  std::size_t garbageBytes_;
};

// What one run of elements holds. Element at position x holds input index x + delta (in an
// interval map) or i + delta (in a piece, i counted from the start of the slice read).
struct Value {
  enum Flags : std::uint8_t {
    kUninit = 1,   // never written
    kOrdered = 2,  // combined lower ranks on the left at every reduction
    kDup = 4,      // some rank counted twice
    kMixed = 8,    // combined elements of different input positions
  };
  std::uint32_t set = RankSets::kEmpty;
  std::int64_t delta = 0;
  std::uint8_t flags = kUninit;

  bool uninit() const { return flags & kUninit; }
  bool operator==(const Value&) const = default;
};

struct Piece {
  std::uint64_t begin, end;  // relative to the slice read
  Value v;
};

// A buffer's content as runs [begin, end) -> Value, covering [0, size).
//
// A run may also be a ramp: consecutive blocks of `period` elements whose values step evenly from
// one block to the next, the set id by setStep and the delta by deltaStep. That is what gathered
// blocks are (block i of an AllGather result holds rank i's elements: set single(i), whose id is
// one more than single(i-1)'s, at delta -offset(i)), and a ring ReduceScatter's partial sums left
// in place (ranges of ranks one shorter and one later per block, at delta 0), so a result of p
// blocks is one run, not p, and thousands of ranks' buffers fit in memory. Ramps are only a
// storage form: read() gives their blocks as separate pieces, and write() folds pieces that
// continue one another back into one.
//
// A ramp may also have a gap: each block's first period - gap elements hold its value and the
// last gap elements were never written (the run may end after a block's written part, before
// its gap). That is a binomial AllGather in place half way (NHR's, keeping the caller's block
// order): after its step i a rank holds every h-th block, h = p / 2^(i+1), the blocks between
// not yet written. As plain runs that is p runs in each of p ranks (1.5 GB at 4096 ranks);
// as a gapped ramp, one.
//
// Or the last gap elements of each block may hold a second value that steps with the first (a
// compound block): gathered blocks of uneven sizes that repeat with a period of two non-empty
// blocks (the sweep's r % 3 elements: 0, 1, 2, 0, 1, 2, ...), where each block holds another
// rank's elements. As plain runs that was 2p/3 runs in each rank (H-D_R's AllGather at 4096
// ranks: 413 MB at its last step); as compound ramps, a few a rank.
class IntervalMap {
 public:
  explicit IntervalMap(std::uint64_t size = 0, Value init = {});
  std::uint64_t size() const { return size_; }
  // Pieces covering [off, off + count), with deltas made relative to off.
  std::vector<Piece> read(std::uint64_t off, std::uint64_t count) const;
  // The first never-written run inside [off, off + count) (relative to off), if any: read()
  // without building the pieces.
  std::optional<Piece> firstUninit(std::uint64_t off, std::uint64_t count) const;
  // Marks in `live` the set id of every written run (the ids below live.size()).
  void markSets(std::vector<bool>& live) const;
  // Overwrite [off, off + total of pieces) with pieces (relative deltas).
  void write(std::uint64_t off, const std::vector<Piece>& pieces);
  void fill(std::uint64_t off, std::uint64_t count, Value v);
  // How many runs (plain or ramps) are stored.
  std::size_t runs() const { return segs_.size(); }
  // Gives every element outside `live` (sorted, disjoint [begin, end) ranges) the value of the
  // live element on its left (on its right before the first), so that it joins that run: the
  // caller knows nothing reads those elements again, so what they hold cannot change a verdict.
  // A ReduceScatter's partial sums already sent (NB's, NHR's) differ from their neighbours in
  // a ruler pattern, p runs in each of p ranks' scratch; the ones still live are few runs.
  void absorbDead(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& live);

 private:
  struct Seg {
    std::uint64_t end;
    Value v;                   // a ramp's first block
    std::uint64_t period = 0;  // a ramp's block length, 0 for a plain run
    // What a ramp's set id and delta add from one block to the next.
    std::int64_t setStep = 0, deltaStep = 0;
    // A ramp's last `gap` elements of each block (0: none): never written while tailFlags is
    // kUninit, else block k's tail holds {v.set + tailSet + setStep * k, v.delta + tailDelta +
    // deltaStep * k, tailFlags}. Offsets from the head, not a Value: a run takes 80 bytes.
    std::uint64_t gap = 0;
    std::int64_t tailDelta = 0;
    std::uint32_t tailSet = 0;
    std::uint8_t tailFlags = Value::kUninit;
  };
  // Block k's tail (what its last gap elements hold), and a ramp's tail set from block 0's.
  static Value tail(const Seg& s, std::uint64_t k);
  static void setTail(Seg& s, const Value& t);
  using Segs = std::map<std::uint64_t, Seg>;
  // Block k of a ramp starting at `start`, as a plain value.
  static Value block(const Seg& s, std::uint64_t k);
  void split(std::uint64_t pos);
  // Merges runs that continue one another from the run containing lo to the one starting at hi.
  void coalesce(std::uint64_t lo, std::uint64_t hi);
  // Merges into `it` the run after it (or the two after it, a gap and a block), if they continue
  // it; true when it did.
  bool mergeNext(Segs::iterator it);
  // The never-written elements of run `it` from x on: the first such range [begin, end) at or
  // after x, begin == end if none.
  static std::pair<std::uint64_t, std::uint64_t> unwrittenFrom(Segs::const_iterator it,
                                                               std::uint64_t x);
  std::uint64_t size_;
  Segs segs_;
};

}  // namespace hccl::algo::prov
