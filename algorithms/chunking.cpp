#include "algorithms/chunking.hpp"

#include <algorithm>

namespace hccl::algo {
namespace {

// Collectives whose per-rank blocks are chunked block by block (the others: the whole vector).
bool blockwise(Collective c) {
  return c == Collective::ReduceScatter || c == Collective::AllGather || c == Collective::Scatter ||
         c == Collective::Gather || c == Collective::AllToAll;
}

// Problems that run as one chunk: rank-local ones (their ranks could not agree on chunk counts,
// DESIGN-collectives.md), AllToAllV (per-pair counts, rank-local) and Barrier (no data).
bool unchunked(const Problem& pb) {
  return pb.rankLocal() || pb.coll == Collective::AllToAllV || pb.coll == Collective::Barrier;
}

// The per-block extent that chunking divides.
std::uint64_t extent(const Problem& pb) {
  return blockwise(pb.coll) ? pb.blocks.largest() : pb.total();
}

// Chunk j's part of every block, laid out as the chunk's own blocks, appended to `m`.
void perBlock(const Blocks& whole, const Blocks& chunk, std::uint64_t start, BufferMap& m) {
  for (std::uint32_t i = 0; i < whole.parts(); ++i)
    if (chunk.count(i) > 0) m.push_back({chunk.offset(i), whole.offset(i) + start, chunk.count(i)});
}

}  // namespace

ChunkPlan::ChunkPlan(const Problem& pb, std::uint32_t rank, std::uint64_t chunkElems)
    : coll_(pb.coll),
      inPlace_(pb.inPlace),
      root_(rank == pb.root),
      inputCount_(pb.bufferCount(Buf::Input, rank)),
      outputCount_(pb.bufferCount(Buf::Output, rank)),
      rank_(rank) {
  const bool unsplittable =
      pb.coll == Collective::ReduceScatter && pb.inPlace && !pb.blocks.isUniform();
  if (unchunked(pb) || chunkElems == 0 || unsplittable || chunkElems >= extent(pb)) {
    chunks_ = 1;
    runs_.push_back({0, pb});
    return;
  }
  chunkElems_ = chunkElems;
  const std::uint64_t m = extent(pb);
  chunks_ = static_cast<std::size_t>((m + chunkElems - 1) / chunkElems);
  // Chunk j takes min(C, max(0, c - jC)) of a block of c = qC + r elements: C before chunk q,
  // r at q, 0 after; a run starts wherever some block's count changes.
  std::vector<std::size_t> starts{0};
  if (!blockwise(pb.coll)) {
    if (m % chunkElems != 0) starts.push_back(chunks_ - 1);
  } else {
    blocks_ = pb.blocks;
    for (std::uint32_t i = 0; i < pb.ranks; ++i) {
      const std::uint64_t c = pb.blocks.count(i), q = c / chunkElems;
      if (q >= 1 && q < chunks_) starts.push_back(static_cast<std::size_t>(q));
      if (c % chunkElems != 0 && q + 1 < chunks_) starts.push_back(static_cast<std::size_t>(q + 1));
    }
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  }
  runs_.reserve(starts.size());
  std::vector<std::uint64_t> counts(blockwise(pb.coll) ? pb.ranks : 0);
  for (const std::size_t j : starts) {
    Run run{j, pb};
    const std::uint64_t start = j * chunkElems;
    if (!blockwise(pb.coll)) {
      run.problem.blocks = Blocks::even(std::min(chunkElems, m - start), pb.ranks);
    } else {
      for (std::uint32_t i = 0; i < pb.ranks; ++i) {
        const std::uint64_t ci = pb.blocks.count(i);
        counts[i] = ci > start ? std::min(chunkElems, ci - start) : 0;
      }
      run.problem.blocks = Blocks::of(counts);
    }
    runs_.push_back(std::move(run));
  }
}

std::size_t ChunkPlan::runOf(std::size_t chunk) const {
  const auto after = std::upper_bound(runs_.begin(), runs_.end(), chunk,
                                      [](std::size_t j, const Run& r) { return j < r.first; });
  return static_cast<std::size_t>(after - runs_.begin()) - 1;
}

void ChunkPlan::maps(std::size_t chunk, BufferMap& input, BufferMap& output) const {
  input.clear();
  output.clear();
  if (chunkElems_ == 0) {  // the whole call
    if (inputCount_ > 0) input.push_back({0, 0, inputCount_});
    if (outputCount_ > 0) output.push_back({0, 0, outputCount_});
    return;
  }
  const std::uint64_t start = chunk * chunkElems_;
  const Blocks& cb = problem(chunk).blocks;
  if (!blockwise(coll_)) {
    const std::uint64_t len = cb.total();
    if (inputCount_ > 0) input.push_back({0, start, len});
    if (outputCount_ > 0) output.push_back({0, start, len});
    return;
  }
  const std::uint64_t mine = cb.count(rank_);
  if (coll_ == Collective::ReduceScatter) {
    if (!inPlace_) {
      perBlock(blocks_, cb, start, input);
      if (mine > 0) output.push_back({0, start, mine});
    } else {
      // Equal blocks: the result of chunk j lands where block 0's chunk j was read from.
      perBlock(blocks_, cb, start, output);
    }
  } else if (coll_ == Collective::AllGather) {
    if (!inPlace_ && mine > 0) input.push_back({0, start, mine});
    perBlock(blocks_, cb, start, output);
  } else if (coll_ == Collective::Scatter) {
    if (root_ && !inPlace_) perBlock(blocks_, cb, start, input);
    if (root_ && inPlace_)
      perBlock(blocks_, cb, start, output);
    else if (mine > 0)
      output.push_back({0, start, mine});
  } else if (coll_ == Collective::Gather) {
    if (!(root_ && inPlace_) && mine > 0) input.push_back({0, start, mine});
    if (root_) perBlock(blocks_, cb, start, output);
  } else {  // AllToAll: every block of both buffers
    if (!inPlace_) perBlock(blocks_, cb, start, input);
    perBlock(blocks_, cb, start, output);
  }
}

Chunk ChunkPlan::materialise(std::size_t chunk) const {
  Chunk c{problem(chunk), {}, {}};
  maps(chunk, c.input, c.output);
  return c;
}

std::vector<Chunk> planChunks(const Problem& pb, std::uint32_t rank, std::uint64_t chunkElems) {
  const ChunkPlan plan(pb, rank, chunkElems);
  std::vector<Chunk> out;
  out.reserve(plan.size());
  for (std::size_t j = 0; j < plan.size(); ++j) out.push_back(plan.materialise(j));
  return out;
}

Problem firstChunkProblem(const Problem& pb, std::uint64_t chunkElems) {
  const std::uint64_t m = extent(pb);
  const bool unsplittable =
      pb.coll == Collective::ReduceScatter && pb.inPlace && !pb.blocks.isUniform();
  if (unchunked(pb) || chunkElems == 0 || chunkElems >= m || unsplittable) return pb;
  Problem q = pb;
  if (!blockwise(pb.coll)) {
    q.blocks = Blocks::even(chunkElems, pb.ranks);
    return q;
  }
  std::vector<std::uint64_t> counts(pb.ranks);
  for (std::uint32_t i = 0; i < pb.ranks; ++i) counts[i] = std::min(chunkElems, pb.blocks.count(i));
  q.blocks = Blocks::of(counts);
  return q;
}

std::uint64_t chunkSizeFor(const Problem& pb, std::uint64_t scratchElems, const ScratchNeed& need) {
  if (unchunked(pb)) return 0;
  const std::uint64_t whole = need(pb);
  const std::uint64_t m = extent(pb);
  if (whole <= scratchElems || m <= 1) return 0;
  // Scratch grows about linearly with the chunk: start from the proportional guess, shrink
  // until the largest chunk fits.
  std::uint64_t c = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(static_cast<double>(m) * static_cast<double>(scratchElems) /
                                    static_cast<double>(whole)));
  while (c > 1) {
    const std::uint64_t s = need(firstChunkProblem(pb, c));
    if (s <= scratchElems) break;
    c = std::max<std::uint64_t>(
        1, std::min(c - 1, static_cast<std::uint64_t>(static_cast<double>(c) *
                                                      static_cast<double>(scratchElems) /
                                                      static_cast<double>(s))));
  }
  return c;
}

std::uint64_t chunkSizeFor(const Problem& pb, std::uint64_t scratchElems,
                           const std::function<RankSchedule(const Problem&, std::uint32_t)>& gen) {
  return chunkSizeFor(pb, scratchElems, [&](const Problem& q) {
    std::uint64_t s = 0;
    for (std::uint32_t r = 0; r < q.ranks; ++r) s = std::max(s, scratchCount(gen(q, r)));
    return s;
  });
}

}  // namespace hccl::algo
