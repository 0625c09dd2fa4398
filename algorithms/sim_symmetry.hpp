// Which ranks a simulation of a composed schedule must run (simulator.hpp,
// simulateRepresentatives()): the servers that are alike under the algorithms' symmetry are
// represented by one, all of whose ranks are simulated.
//
// Every server is alike (server 0 represents all) when
//   - the collective has no root and no rank order (AllReduce, ReduceScatter, AllGather,
//     AllToAll, Barrier),
//   - every server has the same number of ranks (and every supernode the same servers),
//   - the plan is per-level, flat, pipeline or AHC (over equal servers: its inter algorithm decides
//     as a level1 algorithm's does below; tree's servers differ), and
//   - every algorithm of a level in use between servers is symmetric for its group size g:
//     translation-symmetric (ring; pairwise, fullmesh, pipeline) for any g, H-D_R (peers
//     r xor 2^k) and NHR (its slice runs differ per rank otherwise) only when g is a power of two
//     (the flat plan: every rank is one group of g = p, and ranks per server must be a power of two
//     too); NB too (some ranks' runs of blocks wrap around block 0 and go as two transfers, but
//     a step's transfers to one peer are one flow, SimOptions::bundle), and
//   - the count gives every rank a non-empty block (total >= p).
// Otherwise every server is simulated. Level0 algorithms never matter: a representative server
// runs all its ranks.
// Block sizes: with a count that p does not divide, servers carry blocks one element apart, so
// the representative's timeline differs from the slowest server's by at most a few elements'
// time per step, but those can reorder the flows leaving a shared NIC: sim_symmetry_test.cpp
// bounds the difference at 5e-2 relative (3.2% measured, 8x3 ranks, 64 KiB, half duplex).
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/decision.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/schedule.hpp"
#include "algorithms/simulator.hpp"

namespace hccl::algo {

struct SimPlan {
  SimRanks ranks;
  std::uint32_t servers = 0, simulatedServers = 0;
  std::string why;  // "symmetric: server 0 represents 64", or why every server runs
};

// The ranks to simulate for `key`'s schedule of `pb` on `lay`, with a schedule source composing
// any rank's on demand. `allServers` forces every server (the reference run of the tests).
SimPlan simPlan(const Layout& lay, const PlanKey& key, const Problem& pb, bool allServers = false);

// The reason every server must run, or empty when server 0 represents them all.
std::string asymmetry(const Layout& lay, const PlanKey& key, Collective c);

}  // namespace hccl::algo
