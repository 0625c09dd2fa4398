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

BufferMap identity(std::uint64_t count) {
  if (count == 0) return {};
  return {Segment{0, 0, count}};
}

// Chunk j's part of every block, laid out as the chunk's own blocks.
BufferMap perBlock(const Problem& whole, const Blocks& chunk, std::uint64_t start) {
  BufferMap m;
  for (std::uint32_t i = 0; i < whole.ranks; ++i)
    if (chunk.count(i) > 0)
      m.push_back({chunk.offset(i), whole.blocks.offset(i) + start, chunk.count(i)});
  return m;
}

}  // namespace

std::vector<Chunk> planChunks(const Problem& pb, std::uint32_t rank, std::uint64_t chunkElems) {
  if (unchunked(pb))
    return {Chunk{pb, identity(pb.bufferCount(Buf::Input, rank)),
                  identity(pb.bufferCount(Buf::Output, rank))}};
  const std::uint64_t m = extent(pb);
  const bool unsplittable =
      pb.coll == Collective::ReduceScatter && pb.inPlace && !pb.blocks.isUniform();
  if (chunkElems == 0 || chunkElems >= m || unsplittable) {
    return {Chunk{pb, identity(pb.bufferCount(Buf::Input, rank)),
                  identity(pb.bufferCount(Buf::Output, rank))}};
  }
  std::vector<Chunk> out;
  for (std::uint64_t start = 0; start < m; start += chunkElems) {
    Chunk c{pb, {}, {}};
    if (!blockwise(pb.coll)) {
      const std::uint64_t len = std::min(chunkElems, m - start);
      c.problem.blocks = Blocks::even(len, pb.ranks);
      if (pb.bufferCount(Buf::Input, rank) > 0) c.input = {Segment{0, start, len}};
      if (pb.bufferCount(Buf::Output, rank) > 0) c.output = {Segment{0, start, len}};
      out.push_back(std::move(c));
      continue;
    }
    std::vector<std::uint64_t> counts(pb.ranks);
    for (std::uint32_t i = 0; i < pb.ranks; ++i) {
      const std::uint64_t ci = pb.blocks.count(i);
      counts[i] = ci > start ? std::min(chunkElems, ci - start) : 0;
    }
    c.problem.blocks = Blocks::of(counts);
    const std::uint64_t mine = counts[rank];
    if (pb.coll == Collective::ReduceScatter) {
      if (!pb.inPlace) {
        c.input = perBlock(pb, c.problem.blocks, start);
        if (mine > 0) c.output = {Segment{0, start, mine}};
      } else {
        // Equal blocks: the result of chunk j lands where block 0's chunk j was read from.
        c.output = perBlock(pb, c.problem.blocks, start);
      }
    } else if (pb.coll == Collective::AllGather) {
      if (!pb.inPlace && mine > 0) c.input = {Segment{0, start, mine}};
      c.output = perBlock(pb, c.problem.blocks, start);
    } else if (pb.coll == Collective::Scatter) {
      const bool root = rank == pb.root;
      if (root && !pb.inPlace) c.input = perBlock(pb, c.problem.blocks, start);
      if (root && pb.inPlace)
        c.output = perBlock(pb, c.problem.blocks, start);
      else if (mine > 0)
        c.output = {Segment{0, start, mine}};
    } else if (pb.coll == Collective::Gather) {
      const bool root = rank == pb.root;
      if (!(root && pb.inPlace) && mine > 0) c.input = {Segment{0, start, mine}};
      if (root) c.output = perBlock(pb, c.problem.blocks, start);
    } else {  // AllToAll: every block of both buffers
      if (!pb.inPlace) c.input = perBlock(pb, c.problem.blocks, start);
      c.output = perBlock(pb, c.problem.blocks, start);
    }
    out.push_back(std::move(c));
  }
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
