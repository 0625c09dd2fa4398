// Emulation specs: a string that tells one machine which cluster to pretend to be, for tests and
// demos (and, through hccl_topo --emulate, for looking at a layout before running it).
//
// Grammar (also printed by `hccl_topo --help`; kEmulationGrammar below is the same text):
//
//   SPEC    := [ORDER ":"] LAYOUT
//   LAYOUT  := P x S x R              P supernodes, each of S servers of R ranks
//            | POD {"," POD}          one or more supernodes, in order
//   POD     := SERVERS | "(" SERVERS ")"
//   SERVERS := TERM {"+" TERM}        the servers of one supernode, in order
//   TERM    := R | S x R              one server of R ranks, or S servers of R ranks each
//   ORDER   := block | rr             block (default): ranks fill server 0, then server 1, ...
//                                     rr (or round-robin, interleaved): rank k goes to the next
//                                     server in turn, skipping servers that are full
//
// "x", "X" and "*" multiply; spaces are ignored. Counts are integers 1..65536 and the layout holds
// at most 1048576 ranks. A count may carry a unit word that must fit its place: supernode(s),
// superpod(s), pod(s) / server(s), node(s) / rank(s).
//
// Examples: "8", "2x4", "2 supernodes x 2 servers x 4 ranks", "3+5", "1+4+2", "(4+4),(4)",
// "(2x8),(8)", "rr: 2x4".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hccl::topo {

enum class RankOrder : std::uint8_t { Block, RoundRobin };

struct EmulationSpec {
  // supernodes[p][s] = number of ranks on server s of supernode p.
  std::vector<std::vector<std::uint32_t>> supernodes;
  RankOrder order = RankOrder::Block;

  std::uint32_t ranks() const;
  std::uint32_t servers() const;
  bool operator==(const EmulationSpec&) const = default;
};

inline constexpr std::uint32_t kMaxEmulatedCount = 65536;
inline constexpr std::uint32_t kMaxEmulatedRanks = 1u << 20;

extern const std::string_view kEmulationGrammar;

// Throws TopologyError naming the offending token, its column and what is valid there.
EmulationSpec parseEmulationSpec(std::string_view spec);

// Canonical text that parses back to the same spec, e.g. "2x2x4", "3+5", "rr:(4+4),(4)".
std::string formatEmulationSpec(const EmulationSpec& spec);

// The server (global index, supernode-major) of every rank under the spec's rank order.
std::vector<std::uint32_t> serverOfRank(const EmulationSpec& spec);

}  // namespace hccl::topo
