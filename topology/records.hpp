// The per-rank record that ranks exchange (the Open MPI adapter all-gathers it during module
// enable) so that every rank can build the same hierarchy: who shares a server with whom, where
// each rank sits in its server, which NIC it would use, and an optional supernode hint.
//
// The wire form is fixed-size (RankRecord::kSize bytes), little-endian, self-describing (magic,
// version) and checksummed, so an all-gather of kSize bytes per rank is enough and a garbled or
// foreign buffer is rejected with a clear error instead of building a wrong hierarchy.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hccl::topo {

enum class NicKind : std::uint8_t {
  None = 0,      // no network device in hwloc's view
  Ethernet = 1,  // a plain network interface
  Verbs = 2,     // an OpenFabrics (verbs) device: InfiniBand or RoCE
};
std::string_view name(NicKind k);

using BootId = std::array<std::uint8_t, 16>;

// What tells servers apart: two processes are on the same server when both hostname and boot id
// match (emulated servers in network namespaces share the boot id but not the hostname).
struct HostIdentity {
  std::string hostname;
  std::optional<BootId> bootId;  // from /proc/sys/kernel/random/boot_id
};
HostIdentity localHostIdentity();
// "e9cbfa1e-cf03-42e2-9dfb-2aad613aa361" (surrounding whitespace allowed) -> 16 bytes.
std::optional<BootId> parseBootId(std::string_view text);
std::string formatBootId(const BootId& id);

struct RankRecord {
  static constexpr std::uint32_t kMagic = 0x50544348;  // bytes "HCTP" on the wire
  static constexpr std::uint16_t kVersion = 1;
  static constexpr std::size_t kHostnameMax = 64;  // HOST_NAME_MAX on Linux
  static constexpr std::size_t kNicNameMax = 32;   // verbs device name, e.g. "mlx5_0"
  static constexpr std::size_t kNetdevMax = 16;    // IFNAMSIZ
  static constexpr std::size_t kPciBusIdMax = 16;  // "0000:3b:00.0"
  static constexpr std::size_t kHintMax = 32;
  static constexpr std::size_t kSize = 212;

  std::string hostname;
  std::optional<BootId> bootId;
  // Logical hwloc index of the package / NUMA node that holds this rank's whole CPU binding;
  // -1 when the binding spans several or is unknown.
  std::int32_t package = -1;
  std::int32_t numa = -1;
  // The nearest network device (see LocalSummary::nearestNic).
  NicKind nicKind = NicKind::None;
  std::string nicVerbs;   // verbs device name ("mlx5_0"), empty for plain Ethernet
  std::string nicNetdev;  // network interface ("ens1f0"), empty when the verbs device has none
  std::string nicPciBusId;
  std::int32_t nicNuma = -1;
  std::int32_t nicPackage = -1;
  // Optional supernode label (e.g. from HCCL_LOGIC_SUPERPOD_ID); empty = none.
  std::string supernodeHint;

  // Throws TopologyError when a string is too long or holds a byte outside printable ASCII.
  std::array<std::byte, kSize> serialize() const;
  void serializeTo(std::span<std::byte> out) const;  // out.size() >= kSize
  // Validates size, magic, version, checksum, lengths, padding and enum ranges; throws
  // TopologyError saying which check failed.
  static RankRecord deserialize(std::span<const std::byte> bytes);

  bool sameHost(const RankRecord& o) const { return hostname == o.hostname && bootId == o.bootId; }
  bool operator==(const RankRecord&) const = default;
};

// Splits an all-gathered buffer (n * kSize bytes, rank order) into records; errors name the rank.
std::vector<RankRecord> deserializeRecords(std::span<const std::byte> gathered);

// One line for logs: "host vm (boot e9cbfa1e) package 0 NUMA 0, NIC eth0 (ethernet, ...)".
std::string describe(const RankRecord& r);

}  // namespace hccl::topo
