// HCCL rank tables (RANK_TABLE_FILE), versions 1.0 (server_list) and 1.2 (server_list plus
// super_pod_list), as described in HCCL's cluster_info_config docs:
//
//   {"status": "completed", "version": "1.2", "server_count": "2",
//    "server_list": [{"server_id": "nodeA", "host_ip": "...",          (host_ip optional)
//                     "device": [{"device_id": "0", "device_ip": "...", "super_device_id": "0",
//                                 "rank_id": "0"}, ...]}, ...],
//    "super_pod_list": [{"super_pod_id": "0", "server_list": [{"server_id": "nodeA"}, ...]}]}
//
// Every value is a JSON string, as HCCL writes them. Checked on load, each failure naming the file,
// the JSON path of the field (or the rank) and what was expected:
//   - a regular file of at most kMaxRankTableBytes, opened without blocking
//   - valid JSON (UTF-8, nesting at most 64 deep; errors at a line and column in characters);
//     required fields present with the right types; status "completed"; version 1.0
//     or 1.2; server_count equal to the number of servers; decimal ids; IP addresses parse;
//     device_ip present when there is more than one server; super_device_id present in 1.2
//   - server_id and super_pod_id without control characters, server_id 1 to 64 bytes; both unique;
//     device_id unique within its server
//   - rank_id runs 0..N-1 without duplicates or gaps (N = number of devices)
//   - the ranks of one server form a contiguous range (servers do not interleave)
//   - 1.2: super_pod_id unique; every server in exactly one super pod; the servers of one super pod
//     listed contiguously in server_list; super_pod_list absent from 1.0
//   - N equals the communicator size when the caller passes one
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/hierarchy.hpp"

namespace hccl::topo {

struct RankTableDevice {
  std::uint32_t rank = 0;
  std::uint32_t deviceId = 0;
  std::string deviceIp;                        // empty when absent (single-server tables)
  std::optional<std::uint32_t> superDeviceId;  // 1.2 only
};

struct RankTableServer {
  std::string id;
  std::string hostIp;                    // empty when absent
  std::vector<RankTableDevice> devices;  // in file order
};

struct RankTableSupernode {
  std::string id;
  std::vector<std::size_t> servers;  // indices into RankTable::servers, in file order
};

struct RankTable {
  std::string source;   // file name (or the label given to parseRankTable)
  std::string version;  // "1.0" or "1.2"
  std::uint32_t ranks = 0;
  std::vector<RankTableServer> servers;
  std::vector<RankTableSupernode> supernodes;  // empty for 1.0 (one implicit supernode)
};

// A rank table is read only if it is a regular file of at most this size (about 200,000 devices
// in HCCL's layout): a FIFO, a directory or a device is reported as what it is, never read.
inline constexpr std::uint64_t kMaxRankTableBytes = std::uint64_t{32} << 20;

// Throw TopologyError on any failure listed above. expectedRanks: the communicator size, if known.
RankTable parseRankTable(std::string_view jsonText, std::string_view source,
                         std::optional<std::uint32_t> expectedRanks = std::nullopt);
RankTable loadRankTable(const std::string& path,
                        std::optional<std::uint32_t> expectedRanks = std::nullopt);

// Servers are named by server_id, supernodes by super_pod_id ("0" for a 1.0 table).
Hierarchy hierarchyFromRankTable(const RankTable& table);

}  // namespace hccl::topo
