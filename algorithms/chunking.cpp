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

}  // namespace

ChunkPlan::ChunkPlan(const Problem& pb, std::uint32_t rank, std::uint64_t chunkElems)
    : whole_(pb),
      root_(rank == pb.root),
      inputCount_(pb.bufferCount(Buf::Input, rank)),
      outputCount_(pb.bufferCount(Buf::Output, rank)),
      rank_(rank) {
  const bool unsplittable =
      pb.coll == Collective::ReduceScatter && pb.inPlace && !pb.blocks.isUniform();
  starts_.push_back(0);
  if (unchunked(pb) || chunkElems == 0 || unsplittable || chunkElems >= extent(pb)) {
    chunks_ = 1;
    return;
  }
  chunkElems_ = chunkElems;
  extent_ = extent(pb);
  chunks_ = static_cast<std::size_t>((extent_ + chunkElems - 1) / chunkElems);
  // Chunk j takes min(C, max(0, c - jC)) of a block of c = qC + r elements: C before chunk q,
  // r at q, 0 after; a run starts wherever some block's count changes.
  if (!blockwise(pb.coll)) {
    if (extent_ % chunkElems != 0) starts_.push_back(chunks_ - 1);
    return;
  }
  for (std::uint32_t i = 0; i < pb.ranks; ++i) {
    const std::uint64_t c = pb.blocks.count(i), q = c / chunkElems;
    if (q >= 1 && q < chunks_) starts_.push_back(static_cast<std::size_t>(q));
    if (c % chunkElems != 0 && q + 1 < chunks_) starts_.push_back(static_cast<std::size_t>(q + 1));
  }
  std::sort(starts_.begin(), starts_.end());
  starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
  starts_.shrink_to_fit();
}

std::uint64_t ChunkPlan::part(std::uint32_t i, std::uint64_t start) const {
  const std::uint64_t c = whole_.blocks.count(i);
  return c > start ? std::min(chunkElems_, c - start) : 0;
}

void ChunkPlan::perBlock(std::uint64_t start, BufferMap& m) const {
  std::uint64_t at = 0;  // block i's offset in the chunk's own buffer
  for (std::uint32_t i = 0; i < whole_.ranks; ++i) {
    const std::uint64_t n = part(i, start);
    if (n > 0) m.push_back({at, whole_.blocks.offset(i) + start, n});
    at += n;
  }
}

Problem ChunkPlan::runProblem(std::size_t run) const {
  if (chunkElems_ == 0) return whole_;
  Problem q = whole_;
  const std::uint64_t start = starts_[run] * chunkElems_;
  if (!blockwise(whole_.coll)) {
    q.blocks = Blocks::even(std::min(chunkElems_, extent_ - start), whole_.ranks);
    return q;
  }
  std::vector<std::uint64_t> counts(whole_.ranks);
  for (std::uint32_t i = 0; i < whole_.ranks; ++i) counts[i] = part(i, start);
  q.blocks = Blocks::of(counts);
  return q;
}

std::size_t ChunkPlan::runOf(std::size_t chunk) const {
  return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), chunk) -
                                  starts_.begin()) -
         1;
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
  const Collective coll = whole_.coll;
  const bool inPlace = whole_.inPlace;
  if (!blockwise(coll)) {
    const std::uint64_t len = std::min(chunkElems_, extent_ - start);
    if (inputCount_ > 0) input.push_back({0, start, len});
    if (outputCount_ > 0) output.push_back({0, start, len});
    return;
  }
  const std::uint64_t mine = part(rank_, start);
  if (coll == Collective::ReduceScatter) {
    if (!inPlace) {
      perBlock(start, input);
      if (mine > 0) output.push_back({0, start, mine});
    } else {
      // Equal blocks: the result of chunk j lands where block 0's chunk j was read from.
      perBlock(start, output);
    }
  } else if (coll == Collective::AllGather) {
    if (!inPlace && mine > 0) input.push_back({0, start, mine});
    perBlock(start, output);
  } else if (coll == Collective::Scatter) {
    if (root_ && !inPlace) perBlock(start, input);
    if (root_ && inPlace)
      perBlock(start, output);
    else if (mine > 0)
      output.push_back({0, start, mine});
  } else if (coll == Collective::Gather) {
    if (!(root_ && inPlace) && mine > 0) input.push_back({0, start, mine});
    if (root_) perBlock(start, output);
  } else {  // AllToAll: every block of both buffers
    if (!inPlace) perBlock(start, input);
    perBlock(start, output);
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
