// Where a communicator's hierarchy comes from, in precedence order:
//   1. an HCCL rank table file (RANK_TABLE_FILE), describing MPI_COMM_WORLD;
//   2. an emulation spec (HCCL_TOPO_EMULATE), describing MPI_COMM_WORLD;
//   3. discovery: the all-gathered RankRecords of the communicator. Ranks with the same hostname
//      and boot id share a server. Supernodes come from the records' hints when every rank gives
//      one (HCCL_LOGIC_SUPERPOD_ID), else from a configured grouping (HCCL_TOPO_SUPERNODES: a
//      count of servers per supernode, or a hostname regex), else everything is one supernode.
// Sources 1 and 2 describe the world; a sub-communicator takes the subset of its world ranks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "topology/hierarchy.hpp"
#include "topology/records.hpp"

namespace hccl::topo {

inline constexpr const char* kEnvRankTable = "RANK_TABLE_FILE";
inline constexpr const char* kEnvEmulate = "HCCL_TOPO_EMULATE";
inline constexpr const char* kEnvSupernodes = "HCCL_TOPO_SUPERNODES";
inline constexpr const char* kEnvSupernodeHint = "HCCL_LOGIC_SUPERPOD_ID";

inline constexpr std::size_t kMaxHostnamePatternLength = 256;

struct SupernodeGrouping {
  enum class Kind : std::uint8_t { Single, ServersPerSupernode, HostnamePattern };
  Kind kind = Kind::Single;
  std::uint32_t serversPerSupernode = 0;  // ServersPerSupernode: servers in rank order, N at a time
  // HostnamePattern: ECMAScript regex (at most kMaxHostnamePatternLength bytes, no
  // back-references: it is matched in linear time) searched in each hostname; capture group 1 (or
  // the whole match when there is no group) names the supernode. A hostname that does not match
  // is an error.
  std::string hostnamePattern;

  // "" or "single" -> Single; "<N>" (N >= 1) -> N servers per supernode;
  // "regex:<pattern>" -> HostnamePattern. Throws TopologyError naming the text and valid forms.
  static SupernodeGrouping parse(std::string_view text);
};

// Throws TopologyError on an empty list, inconsistent hints (some ranks give one and others not,
// or two ranks of one server disagree) or a hostname the pattern does not match.
// Servers are named by hostname (plus "@<boot id>" when two servers share a hostname).
Hierarchy hierarchyFromRecords(std::span<const RankRecord> records,
                               const SupernodeGrouping& grouping = {});

struct TopologySource {
  std::string rankTableFile;
  std::string emulationSpec;
  SupernodeGrouping grouping;
  std::string supernodeHint;  // this process's hint for its RankRecord

  // Reads the four environment variables above; throws TopologyError on a bad grouping or a
  // hint that is not printable ASCII of at most RankRecord::kHintMax bytes.
  static TopologySource fromEnvironment();
};

enum class SourceKind : std::uint8_t { RankTable, Emulation, Discovery };
std::string_view name(SourceKind k);

struct ResolvedHierarchy {
  Hierarchy hierarchy;
  SourceKind kind = SourceKind::Discovery;
  std::string origin;  // the file, the spec, or "discovery"
};

// worldRanks[i] = MPI_COMM_WORLD rank of communicator rank i (empty: the communicator is the
// world). records: one per communicator rank, in communicator rank order (used by discovery
// only; may be empty when a rank table or spec is set). Throws TopologyError, never returns a
// partial hierarchy.
ResolvedHierarchy resolveHierarchy(const TopologySource& source, std::uint32_t worldSize,
                                   std::span<const std::uint32_t> worldRanks,
                                   std::span<const RankRecord> records);

}  // namespace hccl::topo
