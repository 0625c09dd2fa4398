// Local discovery with hwloc: packages, NUMA nodes, cores, this process's binding, and the PCI
// network devices that could carry the inter-server traffic, with their locality.
//
// LocalTopology owns an hwloc topology: the machine's own (discover()), or a synthetic or XML one
// for tests. I/O objects are kept (hwloc drops them by default), so NICs appear when hwloc sees
// them on the PCI bus; a VM may show none, which is not an error (nearestNic is then empty).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/records.hpp"

struct hwloc_topology;

namespace hccl::topo {

struct Nic {
  std::string pciBusId;        // "0000:3b:00.0"; empty when hwloc shows no PCI parent
  std::string netdev;          // network interface ("ens1f0"), if any
  std::string verbs;           // OpenFabrics device ("mlx5_0"), if any
  std::uint16_t pciClass = 0;  // 0x0200 Ethernet, 0x0207 InfiniBand, 0 unknown
  NicKind kind = NicKind::Ethernet;
  std::int32_t package = -1;  // logical index of the package / NUMA node it hangs off; -1 when
  std::int32_t numa = -1;     // its locality spans several (or hwloc does not say)
  bool operator==(const Nic&) const = default;
};

struct LocalSummary {
  std::uint32_t packages = 0;
  std::uint32_t numaNodes = 0;
  std::uint32_t cores = 0;
  std::uint32_t pus = 0;
  std::string binding;               // PU OS indices as an hwloc list, e.g. "0-3,8"
  std::int32_t bindingPackage = -1;  // logical index of the package / NUMA node that holds the
  std::int32_t bindingNuma = -1;     // whole binding; -1 when it spans several
  std::vector<Nic> nics;             // ordered by PCI bus id
  // The NIC this rank should use: verbs devices before plain Ethernet, then the nearest (same
  // NUMA node as the binding, then same package, then any), then the lowest PCI bus id.
  std::optional<std::size_t> nearestNic;
};

class LocalTopology {
 public:
  static LocalTopology discover();                               // this machine
  static LocalTopology synthetic(std::string_view description);  // "pack:2 numa:1 core:4 pu:2"
  static LocalTopology xmlFile(const std::string& path);
  static LocalTopology xmlBuffer(std::string_view xml);

  LocalTopology(LocalTopology&& o) noexcept;
  LocalTopology& operator=(LocalTopology&& o) noexcept;
  LocalTopology(const LocalTopology&) = delete;
  LocalTopology& operator=(const LocalTopology&) = delete;
  ~LocalTopology();

  // With the binding of the calling process (discover()) or the whole machine (loaded topologies).
  LocalSummary summarize() const;
  // With an explicit binding, as an hwloc list of PU OS indices ("4-7"); throws TopologyError
  // when the list is malformed or names no PU of this topology.
  LocalSummary summarize(std::string_view cpuList) const;

 private:
  explicit LocalTopology(hwloc_topology* t, bool thisSystem) : topo_(t), thisSystem_(thisSystem) {}
  hwloc_topology* topo_ = nullptr;
  bool thisSystem_ = false;
};

RankRecord makeRecord(const HostIdentity& host, const LocalSummary& local,
                      std::string_view supernodeHint = {});
// makeRecord(localHostIdentity(), LocalTopology::discover().summarize(), hint): what the adapter
// contributes to the all-gather.
RankRecord localRecord(std::string_view supernodeHint = {});

}  // namespace hccl::topo
