// Chunked execution: a large call becomes a loop of smaller calls of the same collective, each
// small enough that its schedule's scratch fits a bounded buffer (HCCL_BUFFSIZE).
//
// Chunk j takes elements [j*C, (j+1)*C) of every rank's block (of the whole vector for AllReduce,
// Broadcast, Reduce, Scan and Exscan). Rank-local problems (GatherV/ScatterV non-roots'),
// AllToAllV and Barrier run as one chunk. Its schedule is generated for its own, smaller Problem;
// the maps below bind that schedule's logical Input/Output offsets to the caller's memory, block by
// block, so a chunk of a ReduceScatter input or an AllGather output (strided in user memory) needs
// no copy. Equal chunks have equal Problems, so the engine generates one schedule and reuses it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/schedule.hpp"

namespace hccl::algo {

// Logical elements [logical, logical+count) of a chunk's buffer live at user element offset
// `physical`.
struct Segment {
  std::uint64_t logical = 0;
  std::uint64_t physical = 0;
  std::uint64_t count = 0;
  bool operator==(const Segment&) const = default;
};
using BufferMap = std::vector<Segment>;  // sorted by logical offset, gap-free from 0

struct Chunk {
  Problem problem;
  BufferMap input;   // empty when the chunk has no Input on this rank
  BufferMap output;  // empty when the chunk has no Output on this rank
};

// `pb` cut for `rank` into chunks of at most `chunkElems` elements per block (0 = no limit); a
// single chunk when splitting is impossible without copies (in-place ReduceScatter whose blocks
// differ in size).
//
// Cut lazily: a call of a few GB a rank on thousands of ranks has tens of thousands of chunks,
// and each chunk's Problem and maps hold O(p) counts and segments, so cutting them all up front
// cost O(chunks x p) time and memory (4096 ranks, 1 GiB ReduceScatter: 31,459 chunks, 15 s,
// 4.5 GB). Consecutive chunks with the same counts form a run and share one Problem (and so one
// schedule); a chunk's maps are computed when the executor reaches it, into buffers the caller
// reuses. Runs: one or two for equal blocks (the full chunks, the last partial one), at most
// 2 x (distinct counts) + 1 for V forms, found from where each block's count ends. A run is kept
// as its first chunk only and its Problem made when asked (O(p)): a V form with every count
// distinct has thousands of runs at 4096 ranks, and a Problem each was O(runs x p) (8,193 runs,
// 0.5 GB at 4096 ranks).
class ChunkPlan {
 public:
  ChunkPlan() = default;
  ChunkPlan(const Problem& pb, std::uint32_t rank, std::uint64_t chunkElems);

  std::size_t size() const { return chunks_; }
  bool empty() const { return chunks_ == 0; }
  // Runs of consecutive chunks with equal Problems, in chunk order.
  std::size_t runs() const { return starts_.size(); }
  Problem runProblem(std::size_t run) const;   // O(p)
  std::size_t runOf(std::size_t chunk) const;  // O(log runs)
  Problem problem(std::size_t chunk) const { return runProblem(runOf(chunk)); }
  // Chunk `chunk`'s maps, written over `input` and `output` (their capacity is reused; O(p),
  // nothing else allocated).
  void maps(std::size_t chunk, BufferMap& input, BufferMap& output) const;
  Chunk materialise(std::size_t chunk) const;

 private:
  // Elements of block `i` in the chunk that starts at element `start` of every block.
  std::uint64_t part(std::uint32_t i, std::uint64_t start) const;
  // Chunk j's part of every block, laid out as the chunk's own blocks, appended to `m`.
  void perBlock(std::uint64_t start, BufferMap& m) const;

  Problem whole_;      // the call (its blocks: what every chunk is cut from)
  bool root_ = false;  // this rank is the root (Scatter, Gather)
  std::uint64_t inputCount_ = 0, outputCount_ = 0;  // the whole call's buffers on this rank
  std::uint32_t rank_ = 0;
  std::uint64_t chunkElems_ = 0;  // 0: one chunk, the whole call
  std::uint64_t extent_ = 0;      // what chunks divide: the largest block, or the whole vector
  std::size_t chunks_ = 0;
  std::vector<std::size_t> starts_;  // each run's first chunk, ascending
};

// How many runs' schedules a plan builds with itself (the engine's Plan, hccl_info's --timing):
// every run of a call whose blocks are equal (its full chunks, the last partial one). A V form's
// later runs get theirs when their first chunk starts.
inline constexpr std::size_t kRunsPlanned = 2;

// Every chunk materialised: for tests and small calls (O(chunks x p)).
std::vector<Chunk> planChunks(const Problem& pb, std::uint32_t rank, std::uint64_t chunkElems);

// The scratch (elements) a problem's schedule needs on its neediest rank.
using ScratchNeed = std::function<std::uint64_t(const Problem&)>;

// The largest chunk size (elements per block) whose schedule needs at most `scratchElems` of
// scratch on every rank, found by asking `need` of the whole problem and of candidate chunks;
// 0 means "no chunking needed". Every rank computes the same value, so the chunks line up.
std::uint64_t chunkSizeFor(const Problem& pb, std::uint64_t scratchElems, const ScratchNeed& need);

// The same with `need` generating every rank's schedule (the reference that scratch_ranks.hpp's
// faster need is tested against).
std::uint64_t chunkSizeFor(const Problem& pb, std::uint64_t scratchElems,
                           const std::function<RankSchedule(const Problem&, std::uint32_t)>& gen);

// The Problem of planChunks(pb, r, chunkElems)'s first chunk (the largest), without planning the
// others (a ReduceScatter of a few GB a rank cut into small chunks has tens of thousands).
Problem firstChunkProblem(const Problem& pb, std::uint64_t chunkElems);

}  // namespace hccl::algo
