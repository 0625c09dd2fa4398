// Binomial slice trees: the schedule skeleton NHR and NB share (HCCL's reduce_scatter_nhr.cc and
// reduce_scatter_nb.cc are mirror images of each other).
//
// The data is cut into p slices, one per rank (physical block place[s] holds logical slice s;
// NHR renumbers slices for AllReduce and Broadcast so that a step's slices are adjacent). Slice s
// travels along a binomial tree whose position d is rank s + o*d (mod p), o = +1 for NHR and -1
// for NB. With K = ceil(log2 p) = bit-length(p-1) steps and h = 2^k:
//
//   ReduceScatter step k = 0..K-1: for every d = 0 mod 2h with d+h < p, position d+h hands its
//     partial sum to position d. Seen from rank r: it sends the floor((p-1+h)/2h) slices at its
//     positions h, 3h, 5h, ... to rank r - o*h and receives as many, its positions 0, 2h, 4h, ...,
//     from rank r + o*h, adding them to its own partial sums. After step k position d (d = 0 mod
//     2h) holds the sum over positions d..d+2h-1, so after step K-1 rank s holds slice s summed
//     over every rank. Each rank sends every slice but its own exactly once: (p-1)/p of the data.
//   AllGather (tree): the same messages reversed in time and direction; rank r sends at step
//     K-1-k the slices at its positions 0, 2h, 4h, ... to r + o*h.
//   Scatter from a root: scatter position e is rank root - o*e. At step k every position e < h
//     with e+h < p sends to position e+h (rank r - o*h) the slices of positions e+h, e+3h, e+5h,
//     ... < p, i.e. of that receiver's future subtree: floor((p-1-e+h)/2h) slices, the full
//     floor((p-1+h)/2h) for e = 0. HCCL's scatter_nhr.cc sends that full count to every receiver,
//     the extra slices being ones the sender does not hold (scatter_nb.cc tries to skip them); we
//     send only what the subtree needs, which leaves the busiest rank's volume, hence the cost,
//     unchanged.
//
// Several slices of one step go to the same peer; they travel as one transfer per run that is
// contiguous at both ends (the cost model adds the bytes of a peer's transfers in a step).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "algorithms/metrics.hpp"
#include "algorithms/schedule.hpp"

namespace hccl::algo::tree {

// ceil(log2 p): the step count of every tree phase (0 for p = 1).
std::uint32_t stepCount(std::uint32_t p);
// Slices a rank sends (and receives) at ReduceScatter step k: floor((p-1+2^k)/2^(k+1)).
std::uint64_t sharesAt(std::uint32_t p, std::uint32_t k);

class SliceTree {
 public:
  // `place` maps logical slice -> physical block; empty means the identity.
  SliceTree(std::uint32_t p, int orient, std::vector<std::uint32_t> place = {});

  std::uint32_t ranks() const { return p_; }
  int orient() const { return orient_; }
  std::uint32_t steps() const { return stepCount(p_); }
  std::uint32_t block(std::uint32_t slice) const { return place_[slice]; }
  // r + o*dist and r - o*dist (mod p): away from and towards a slice tree's root.
  std::uint32_t outward(std::uint32_t r, std::uint64_t dist) const;
  std::uint32_t inward(std::uint32_t r, std::uint64_t dist) const;
  // The slice whose tree has rank r at position d.
  std::uint32_t sliceAt(std::uint32_t r, std::uint64_t d) const { return inward(r, d); }
  // The d in [0, p) with b = outward(a, d): rank b's position in slice a's tree.
  std::uint32_t span(std::uint32_t a, std::uint32_t b) const;

 private:
  std::uint32_t p_;
  int orient_;
  std::vector<std::uint32_t> place_;
};

// One slice of a message: where the sender reads it and where the receiver lands it.
struct Piece {
  Slice src, dst;
};
// Both ends build the same piece list and so cut it into the same transfers.
void sendRuns(Step& s, std::uint32_t peer, std::vector<Piece> pieces);
void recvRuns(Step& s, std::uint32_t peer, std::vector<Piece> pieces);

// Where one rank's data sits for the tree ReduceScatter, as buffer + base offset of a
// full-vector layout (physical block b at base + offset(b)). Partial sums start in `own` and move
// to `acc` at their first reduction (own == acc in place); receives that cannot land in `acc`
// directly land in Scratch from `landing` on.
struct ReduceBuffers {
  Slice own;
  Slice acc;
  std::uint64_t landing = 0;
};

// Where rank q's fully reduced slice (logical slice q) must end: its accumulator block or any
// slice of its output.
using ResultAt = std::function<Slice(std::uint32_t q)>;

// Appends the ReduceScatter phase for rank r.
void reduceScatter(RankSchedule& out, const SliceTree& t, std::uint32_t r, const Blocks& bl,
                   const ReduceBuffers& b, const ResultAt& result);

// scratchCount() of what reduceScatter() appends for rank r, without building it: the same walk
// over the rank's positions (its receives' landing slots, packed per step from b.landing, and the
// partial sums, results and sends it reads or writes where those buffers are Scratch), with no
// piece lists and no sort. O(p) time (p/2h positions at step k), O(1) memory.
std::uint64_t reduceScatterScratch(const SliceTree& t, std::uint32_t r, const Blocks& bl,
                                   const ReduceBuffers& b, const ResultAt& result);

// Where rank q keeps logical slice s.
using Holding = std::function<Slice(std::uint32_t q, std::uint32_t s)>;

// No rank: see allGather's holdsAll.
inline constexpr std::uint32_t kNoRank = ~std::uint32_t{0};

// Appends the tree AllGather phase for rank r: the reverse of reduceScatter. `src` says where a
// rank reads a slice it sends, `dst` where a rank lands a slice it receives (and later sends it
// from, unless `src` says otherwise). `holdsAll` already holds every slice (a Broadcast's root):
// it still sends, but nothing is sent to it, so its buffer is never written.
void allGather(RankSchedule& out, const SliceTree& t, std::uint32_t r, const Holding& src,
               const Holding& dst, std::uint32_t holdsAll = kNoRank);

// Scatter positions: position e of the scatter tree is rank root - o*e.
std::uint32_t scatterPosition(const SliceTree& t, std::uint32_t root, std::uint32_t r);
// The scatter positions rank q holds slices for after receiving its share: q's own position e
// first, then e + m*2^(k+1) for the step k it receives in (the root: every position).
std::vector<std::uint32_t> scatterHoldings(const SliceTree& t, std::uint32_t root, std::uint32_t q);

// Appends the Scatter phase for rank r; logical slice s is the one rank s must end with.
void scatter(RankSchedule& out, const SliceTree& t, std::uint32_t r, std::uint32_t root,
             const Holding& hold);

// The standalone collectives on identity-numbered slices, shared by NHR and NB.
//   ReduceScatter out of place: partial sums in Scratch[0, n), receives land after them; the
//     own block's last reduction writes Output directly. In place: partial sums in Output,
//     receives land in Scratch[0, ..), the result moves to Output[0, count(r)) at the last step.
//   Scatter: the root reads Input (in place: Output); every other rank lands its own block in
//     Output and the blocks it forwards later in Scratch, packed in the order it forwards them.
RankSchedule reduceScatterCollective(const Problem& pb, std::uint32_t r, const SliceTree& t);
RankSchedule scatterCollective(const Problem& pb, std::uint32_t r, const SliceTree& t);
// scratchCount(reduceScatterCollective(pb, r, t)) without building it (reduceScatterScratch()).
std::uint64_t reduceScatterCollectiveScratch(const Problem& pb, std::uint32_t r,
                                             const SliceTree& t);
// scratchCount(scatterCollective(pb, r, t)) without building it: a non-root rank packs the blocks
// it forwards (its holdings after its own) into Scratch, back to back; the root sends from its
// buffer. O(blocks held).
std::uint64_t scatterScratch(const Problem& pb, std::uint32_t r, const SliceTree& t);

}  // namespace hccl::algo::tree

// Costing tree schedules without building them (slice_tree_cost.cpp).
namespace hccl::algo::tree {

// A rank's clock in a costing from per-step counts (phasesPath; rhd.cpp's rhdReduceCost): when
// its last step finished and the level-0 path that led there (all these schedules use level 0
// alone: 32 bytes a rank to copy a step, not a whole Metrics).
struct Clock {
  double t = 0;
  std::uint64_t steps = 0, bytes = 0, reduced = 0;
  Metrics metrics() const;  // the path as the replay reports it
};

// One step of a rank under the replay's rules (metrics.hpp), on level 0: from `c`, the latest of
// its own clock and those of the partners it exchanges something with, it sends `tx` and receives
// `rx` elements. The step costs CostParams::linkTime() of its busiest direction (shared over
// params.links[0]) and, when `reduced`, gamma per byte received. A step with nothing either way
// is pruned: the caller skips it.
void advanceStep(Clock& c, std::uint64_t tx, std::uint64_t rx, bool reduced, std::size_t elemSize,
                 const CostParams& params);

// A phase of a tree schedule as its cost sees it.
enum class CostPhase {
  ReduceScatter,   // reduceScatter(): step k, r sends positions h, 3h, .. to r - o*h
  AllGather,       // allGather(): the ReduceScatter's messages reversed
  BruckAllGather,  // NB's Bruck AllGather: step k, r sends blocks r, r-1, .., r-m+1 to r+h
  Scatter,         // scatter(): step k, position e < h hands e+h's subtree to r - o*h
  Gather,          // the Scatter reversed (reverse.hpp)
};

// The critical path of the phases run one after the other on blocks `bl` (logical slice s in
// block t.block(s)), as the whole-communicator replay (criticalPath()) computes it, from each
// rank's element counts per step rather than its schedule: every (rank, step) moves the sum of
// its slices' counts to one peer and receives that of another (the ReduceScatter reduces what it
// receives), so the step's cost is alpha + beta * max(sent, received) [+ gamma * received], a
// step with nothing either way is pruned, and a step starts when its rank and the partners it
// exchanges something with have all finished their previous steps (the replay's posting rule).
// `root` is the Scatter's and Gather's root; an AllGather phase sends nothing to it and it
// receives nothing there (allGather()'s holdsAll: a Broadcast's root); kNoRank for none.
// Time O(p log p) and memory O(p), where the replay is O(p^2): every rank's step lists p/2h
// slices. Used where some block is empty, which breaks lockstep (rank_cost.hpp).
Metrics phasesPath(const SliceTree& t, const Blocks& bl, std::span<const CostPhase> phases,
                   std::size_t elemSize, const CostParams& params, std::uint32_t root = kNoRank);

// Rank r's own path through the phases (rankPath() of its built schedule, to the last bit), from
// the same per-step counts: each step sends what r sends and receives what r receives, one after
// the other, as if every partner were ready (lockstep costing). Time O(p) (the p/2h slices of
// each step, as the schedule lists them), memory O(1).
Metrics rankPhasesPath(const SliceTree& t, const Blocks& bl, std::span<const CostPhase> phases,
                       std::uint32_t r, std::size_t elemSize, const CostParams& params,
                       std::uint32_t root = kNoRank);

}  // namespace hccl::algo::tree
