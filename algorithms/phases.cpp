#include "algorithms/phases.hpp"

#include <fmt/format.h>

namespace hccl::algo {

CommShape CommShape::flat(std::uint32_t p, int level) {
  CommShape s;
  s.ranks = p;
  if (p > 1) s.levels.push_back({level, p});
  return s;
}

CommShape CommShape::servers(std::uint32_t servers, std::uint32_t perServer) {
  CommShape s;
  s.ranks = servers * perServer;
  if (perServer > 1) s.levels.push_back({0, perServer});
  if (servers > 1) s.levels.push_back({1, servers});
  return s;
}

CommShape CommShape::pods(std::uint32_t pods, std::uint32_t serversPerPod,
                          std::uint32_t perServer) {
  CommShape s = servers(serversPerPod, perServer);
  s.ranks *= pods;
  if (pods > 1) s.levels.push_back({2, pods});
  return s;
}

std::string CommShape::describe() const {
  if (levels.empty()) return fmt::format("{} rank{}", ranks, ranks == 1 ? "" : "s");
  if (!symmetric)
    return fmt::format("{} ranks flat over level{} links (groups of unequal size)", ranks,
                       levels.back().level);
  std::string out = fmt::format("{} ranks:", ranks);
  static constexpr const char* kWhat[] = {"per server", "servers", "pods"};
  for (const LevelGroup& g : levels)
    out += fmt::format(" L{} {} {},", g.level, g.size, kWhat[g.level]);
  out.pop_back();
  return out;
}

std::vector<std::vector<Phase>> phasesPerLevel(Collective c, const CommShape& shape,
                                               std::uint64_t count) {
  const std::size_t k = shape.levels.size();
  std::vector<std::vector<Phase>> out(k);
  if (k == 0) return out;
  switch (c) {
    case Collective::AllReduce: {
      std::uint64_t n = count;
      for (std::size_t i = 0; i + 1 < k; ++i) {
        out[i] = {{Collective::ReduceScatter, n}, {Collective::AllGather, n}};
        n = (n + shape.levels[i].size - 1) / shape.levels[i].size;  // the largest block
      }
      out[k - 1] = {{Collective::AllReduce, n}};
      break;
    }
    case Collective::Reduce: {  // AllReduce's levels, with Gathers to the root
      std::uint64_t n = count;
      for (std::size_t i = 0; i + 1 < k; ++i) {
        out[i] = {{Collective::ReduceScatter, n}, {Collective::Gather, n}};
        n = (n + shape.levels[i].size - 1) / shape.levels[i].size;  // the largest block
      }
      out[k - 1] = {{Collective::Reduce, n}};
      break;
    }
    case Collective::ReduceScatter: {
      std::uint64_t n = count * shape.ranks;
      for (std::size_t i = k; i-- > 0;) {
        out[i] = {{Collective::ReduceScatter, n}};
        n /= shape.levels[i].size;
      }
      break;
    }
    case Collective::AllGather: {
      std::uint64_t n = count;
      for (std::size_t i = 0; i < k; ++i) {
        n *= shape.levels[i].size;
        out[i] = {{Collective::AllGather, n}};
      }
      break;
    }
    case Collective::Scatter:
    case Collective::Gather: {  // outer level first (Gather: the same levels, reversed)
      std::uint64_t n = count;
      for (std::size_t i = 0; i < k; ++i) {
        n *= shape.levels[i].size;
        out[i] = {{c, n}};
      }
      break;
    }
    case Collective::Broadcast: {
      // Level i: the Broadcast of region_i (the root's units) and the AllGather of its pieces
      // (the other units); the top level only broadcasts (hier_broadcast.cpp).
      std::uint64_t n = count;
      for (std::size_t i = 0; i + 1 < k; ++i) {
        out[i] = {{Collective::Broadcast, n}, {Collective::AllGather, n}};
        n = (n + shape.levels[i].size - 1) / shape.levels[i].size;  // the largest piece
      }
      out[k - 1] = {{Collective::Broadcast, n}};
      break;
    }
    case Collective::Barrier:  // one Barrier per level (hier_barrier.cpp)
      for (std::size_t i = 0; i < k; ++i) out[i] = {{Collective::Barrier, 0}};
      break;
    case Collective::Scan:
    case Collective::Exscan:    // a prefix and a Broadcast of the totals' prefix per inner level
      if (!shape.blockOrder) {  // interleaved servers: flat
        out[k - 1] = {{c, count}};
        break;
      }
      for (std::size_t i = 0; i + 1 < k; ++i)
        out[i] = {{i == 0 ? c : Collective::Exscan, count}, {Collective::Broadcast, count}};
      out[k - 1] = {{k == 1 ? c : Collective::Exscan, count}};
      break;
    case Collective::AllToAll:  // per pair at level i: the blocks for the others' coordinates
      for (std::size_t i = 0; i < k; ++i)
        out[i] = {{c, count * (shape.ranks / shape.levels[i].size)}};
      break;
    default:  // the other collectives run flat on the top level until composed
      out[k - 1] = {{c, count}};
      break;
  }
  return out;
}

std::uint64_t localCopies(Collective c, const CommShape& shape, std::uint64_t count) {
  const std::size_t k = shape.levels.size();
  if (c != Collective::AllToAll || k < 2 || !shape.symmetric) return 0;
  // hier_alltoall.cpp: a pack of the rank's p blocks before each level, and an unpack after
  // the last where ranks are not numbered server by server.
  return (k + (shape.blockOrder ? 0 : 1)) * shape.ranks * count;
}

Problem phaseProblem(const Phase& ph, std::uint32_t size, bool inPlace) {
  // AllToAll(V): the phase's count is per pair, as MPI's (AllToAllV costed as equal pairs).
  if (ph.coll == Collective::AllToAll) return Problem::allToAll(size, ph.total, inPlace);
  if (ph.coll == Collective::AllToAllV) return Problem::allToAllVEqual(size, ph.total, inPlace);
  if (ph.coll == Collective::Barrier) return Problem::barrier(size);
  Problem pb{ph.coll, size, 0, inPlace, Blocks::even(ph.total, size)};
  if (ph.coll == Collective::Broadcast) pb.inPlace = true;
  return pb;
}

}  // namespace hccl::algo
