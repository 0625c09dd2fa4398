// The level0/level1/level2 hierarchy of a communicator.
//
//   level0  the ranks of one server
//   level1  between the servers of one supernode: the ranks with the same local index on every
//           server of the supernode ("same-index" groups)
//   level2  between supernodes: the ranks at the same position (server within its supernode, local
//           index) in every supernode
//
// Ranks are communicator ranks 0..size()-1 in any order: the ranks of one server need not be
// contiguous. Everything is numbered canonically so that every process that builds the hierarchy
// from the same input gets the same answer:
//   - supernodes in the order of their lowest rank;
//   - servers supernode-major, then by lowest rank (so the servers of a supernode are consecutive);
//   - the members of a server in ascending rank order; a rank's local index is its position there.
// Groups list their members in server (level1) or supernode (level2) order. In an asymmetric
// layout some groups are smaller than others (a server of 3 next to one of 5 leaves local indices
// 3 and 4 with a single-member level1 group); shape() reports whether a level's groups are uniform.
//
// Builders: Hierarchy::fromLabels (any per-rank labelling), fromSpec (emulation.hpp), and
// hierarchyFromRecords (records.hpp), hierarchyFromRankTable (rank_table.hpp), hierarchyFromJson
// (json.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "topology/emulation.hpp"
#include "topology/level_shape.hpp"

namespace hccl::topo {

inline constexpr int kNumLevels = 3;
static_assert(std::tuple_size_v<decltype(HierarchyShape::level)> == kNumLevels);

struct RankPlace {
  std::uint32_t supernode = 0;          // supernode index
  std::uint32_t server = 0;             // global server index
  std::uint32_t serverInSupernode = 0;  // position of the server within its supernode
  std::uint32_t local = 0;              // position of the rank within its server
  bool operator==(const RankPlace&) const = default;
};

// Names of the server and supernode of one rank, as the input spells them (host name, rank table
// server_id / super_pod_id, emulated "node3" / "pod1").
struct RankLabel {
  std::string server;
  std::string supernode;
};

class Hierarchy {
 public:
  // Ranks with equal server names share a server; a server must not appear in two supernodes.
  // Throws TopologyError on an empty list or a server claimed by two supernodes.
  static Hierarchy fromLabels(std::span<const RankLabel> labels);
  // Servers are named "node<i>", supernodes "pod<p>" (global indices, supernode-major).
  static Hierarchy fromSpec(const EmulationSpec& spec);

  std::uint32_t size() const { return static_cast<std::uint32_t>(places_.size()); }
  std::uint32_t numServers() const { return static_cast<std::uint32_t>(servers_.size()); }
  std::uint32_t numSupernodes() const { return static_cast<std::uint32_t>(supernodes_.size()); }

  const RankPlace& place(std::uint32_t rank) const { return places_.at(rank); }
  std::uint32_t serverOf(std::uint32_t rank) const { return place(rank).server; }
  std::uint32_t localIndexOf(std::uint32_t rank) const { return place(rank).local; }
  std::uint32_t supernodeOf(std::uint32_t rank) const { return place(rank).supernode; }

  // Members of a server, ascending; servers of a supernode, ascending global server indices.
  std::span<const std::uint32_t> serverMembers(std::uint32_t server) const {
    return servers_.at(server).members;
  }
  std::span<const std::uint32_t> supernodeServers(std::uint32_t supernode) const {
    return supernodes_.at(supernode).servers;
  }
  std::uint32_t supernodeOfServer(std::uint32_t server) const {
    return servers_.at(server).supernode;
  }
  const std::string& serverName(std::uint32_t server) const { return servers_.at(server).name; }
  const std::string& supernodeName(std::uint32_t supernode) const {
    return supernodes_.at(supernode).name;
  }

  // The group of `rank` at `level` (0, 1 or 2), members in canonical order; always contains rank.
  std::vector<std::uint32_t> group(int level, std::uint32_t rank) const;
  std::vector<std::uint32_t> level0Group(std::uint32_t rank) const { return group(0, rank); }
  std::vector<std::uint32_t> level1Group(std::uint32_t rank) const { return group(1, rank); }
  std::vector<std::uint32_t> level2Group(std::uint32_t rank) const { return group(2, rank); }
  std::uint32_t groupSize(int level, std::uint32_t rank) const;
  // Every group of a level: a partition of the ranks. level0 by server; level1 by (supernode,
  // local index); level2 by (server within supernode, local index).
  std::vector<std::vector<std::uint32_t>> groups(int level) const;

  // 1 when everything is on one server, 2 with several servers in one supernode, 3 with several
  // supernodes (level1 may then have groups of one, when each supernode has a single server).
  std::uint32_t levels() const;
  // Same number of ranks on every server and same number of servers in every supernode.
  bool symmetric() const;
  HierarchyShape shape(std::uint32_t rank) const;

  // Rank placement: ranks fill servers in server order (Block), are dealt to servers in turn
  // (RoundRobin, as an "rr:" emulation spec places them), or neither.
  std::optional<RankOrder> rankOrder() const;
  // The emulation spec with this layout and rank order, or nullopt when the order is irregular.
  std::optional<EmulationSpec> toSpec() const;
  // Compact shape for logs: "2 supernodes x 2 servers x 4 ranks", "servers of 3+5 ranks",
  // "supernodes of (4+4),(4) ranks", with ", round-robin ranks" or ", irregular rank order"
  // appended when the ranks are not in block order.
  std::string describe() const;

  // The hierarchy of a sub-communicator whose rank i is rank parentRanks[i] of this one (e.g. a
  // rank table describes MPI_COMM_WORLD; a communicator takes the subset of its world ranks).
  // Throws TopologyError on an out-of-range or repeated rank.
  Hierarchy subset(std::span<const std::uint32_t> parentRanks) const;

  // Same placement of ranks, ignoring names.
  bool sameLayout(const Hierarchy& o) const;
  bool operator==(const Hierarchy&) const = default;

 private:
  struct Server {
    std::string name;
    std::uint32_t supernode = 0;
    std::vector<std::uint32_t> members;
    bool operator==(const Server&) const = default;
  };
  struct Supernode {
    std::string name;
    std::vector<std::uint32_t> servers;
    bool operator==(const Supernode&) const = default;
  };

  std::vector<RankPlace> places_;
  std::vector<Server> servers_;
  std::vector<Supernode> supernodes_;
};

// "0-7", "0,8", "0-2,5,9-11": ascending runs compressed, for logs and hccl_topo.
std::string formatRankList(std::span<const std::uint32_t> ranks);

}  // namespace hccl::topo
