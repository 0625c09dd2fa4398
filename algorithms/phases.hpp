// Which collective each hierarchy level runs, and on how much data, when a collective is composed
// over levels (reference section 2; levels innermost first):
//   AllReduce      L0 RS -> L1 RS -> ... -> top AR -> ... -> L1 AG -> L0 AG
//   ReduceScatter  top RS -> ... -> L0 RS        (outer first: blocks crossing servers stay whole)
//   AllGather      L0 AG -> ... -> top AG        (inner first, for the same reason)
//   Reduce         L0 RS -> L1 RS -> ... -> top Reduce -> ... -> L1 Gather -> L0 Gather
//   Scatter        top Sc -> ... -> L0 Sc        (HCCL: inter Scatter, then intra Scatter)
//   Gather         L0 Ga -> ... -> top Ga        (the Scatter reversed)
//   Broadcast      L0 Bc (root's server) -> L1 Bc (one piece per server rank) -> ... -> top Bc
//                  -> ... -> L1 AG -> L0 AG (the other units; hier_broadcast.cpp)
//   Barrier        L0 Barrier -> L1 Barrier -> ... -> top Barrier
//   Scan, Exscan   L0 Scan (Exscan) -> L1 Exscan of server totals -> ... -> L1 Bc -> L0 Bc of
//                  the totals' prefix (hier_scan.cpp); interleaved servers: flat
//   AllToAll       two levels: L0 AllToAll (S*c per pair) -> L1 AllToAll (g*c per pair);
//                  three levels: flat
//   others         the whole collective flat over every rank on the outermost level
// With one level in use this is just the collective itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"

namespace hccl::algo {

// One level of a communicator as the selector sees it: `level` is 0 (inside a server), 1
// (between servers) or 2 (between supernodes); `size` is the number of ranks in each of its groups.
struct LevelGroup {
  int level = 0;
  std::uint32_t size = 1;
  bool operator==(const LevelGroup&) const = default;
};

struct CommShape {
  std::uint32_t ranks = 1;
  std::vector<LevelGroup> levels;  // levels whose groups have more than one rank, inner first
  bool symmetric = true;           // every group of a level has the same size
  bool blockOrder = true;          // servers hold consecutive rank ranges, in order
  // Ranks per server when the servers differ in size and share one supernode (what AHC needs;
  // `levels` then presents the layout as one flat group); empty otherwise.
  std::vector<std::uint32_t> serverSizes;

  // p ranks on one server; or `servers` servers of `perServer` ranks; or pods of those.
  static CommShape flat(std::uint32_t p, int level = 0);
  static CommShape servers(std::uint32_t servers, std::uint32_t perServer);
  static CommShape pods(std::uint32_t pods, std::uint32_t serversPerPod, std::uint32_t perServer);
  std::string describe() const;
};

struct Phase {
  Collective coll;
  std::uint64_t total;  // elements the phase's collective covers (its Problem's total); per
                        // pair for AllToAll(V), as MPI counts them
};

// Elements a rank copies locally, outside the phases, in the per-level composition of `c` for an
// MPI-level `count` (per pair for AllToAll): AllToAll's packs between its levels (and the unpack
// on interleaved servers); 0 for the others, whose compositions work in place. The per-level
// plan charges them at level0's byte time (a copy is one pass over memory, as a shared-memory
// transfer is).
std::uint64_t localCopies(Collective c, const CommShape& shape, std::uint64_t count);

// The phases run at shape.levels[i], for each i, for an MPI-level call of `count` elements
// (per rank for ReduceScatter/AllGather, total otherwise).
std::vector<std::vector<Phase>> phasesPerLevel(Collective c, const CommShape& shape,
                                               std::uint64_t count);

// The Problem of a phase on a group of `size` ranks (blocks split as evenly as possible).
Problem phaseProblem(const Phase& ph, std::uint32_t size, bool inPlace);

}  // namespace hccl::algo
