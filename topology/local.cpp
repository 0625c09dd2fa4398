#include "topology/local.hpp"

#include <fmt/format.h>
#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <tuple>
#include <utility>

#include "topology/error.hpp"

namespace hccl::topo {
namespace {

class Bitmap {
 public:
  Bitmap() : b_(hwloc_bitmap_alloc()) {
    if (!b_) throw std::bad_alloc();
  }
  ~Bitmap() { hwloc_bitmap_free(b_); }
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  hwloc_bitmap_t get() const { return b_; }

 private:
  hwloc_bitmap_t b_;
};

std::string listString(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) throw std::bad_alloc();
  std::string out(text);
  std::free(text);
  return out;
}

template <typename Configure>
hwloc_topology_t load(Configure&& configure, const std::string& what) {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0)
    throw TopologyError(
        fmt::format("hwloc: cannot initialise a topology: {}", std::strerror(errno)));
  // hwloc drops I/O objects unless asked; "important" keeps network and OpenFabrics devices and
  // their PCI parents, which is all that the NIC locality needs.
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!configure(t)) {
    const int err = errno;
    hwloc_topology_destroy(t);
    throw TopologyError(fmt::format("hwloc: {} is not usable: {}", what, std::strerror(err)));
  }
  if (hwloc_topology_load(t) != 0) {
    const int err = errno;
    hwloc_topology_destroy(t);
    throw TopologyError(fmt::format("hwloc: loading {} failed: {}", what, std::strerror(err)));
  }
  return t;
}

// Logical index of the object of `type` whose cpuset contains all of `set`; -1 if none does.
std::int32_t containing(hwloc_topology_t t, hwloc_obj_type_t type, hwloc_const_cpuset_t set) {
  if (!set || hwloc_bitmap_iszero(set)) return -1;
  const int n = hwloc_get_nbobjs_by_type(t, type);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, static_cast<unsigned>(i));
    if (o && o->cpuset && !hwloc_bitmap_iszero(o->cpuset) &&
        hwloc_bitmap_isincluded(set, o->cpuset))
      return static_cast<std::int32_t>(o->logical_index);
  }
  return -1;
}

std::uint32_t count(hwloc_topology_t t, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(t, type);
  return n > 0 ? static_cast<std::uint32_t>(n) : 0;
}

std::vector<Nic> findNics(hwloc_topology_t t) {
  std::map<std::string, Nic> byKey;
  for (hwloc_obj_t dev = hwloc_get_next_osdev(t, nullptr); dev;
       dev = hwloc_get_next_osdev(t, dev)) {
    const auto type = dev->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    const std::string devName = dev->name ? dev->name : "";
    hwloc_obj_t pci =
        dev->parent && dev->parent->type == HWLOC_OBJ_PCI_DEVICE ? dev->parent : nullptr;
    std::string key = devName;
    std::string busId;
    if (pci) {
      const auto& a = pci->attr->pcidev;
      busId = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", a.domain, a.bus, a.dev, a.func);
      key = busId;
    }
    auto [it, fresh] = byKey.try_emplace(key);
    Nic& nic = it->second;
    if (fresh) {
      nic.pciBusId = busId;
      if (pci) nic.pciClass = pci->attr->pcidev.class_id;
      hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(t, dev);
      if (anchor) {
        nic.package = containing(t, HWLOC_OBJ_PACKAGE, anchor->cpuset);
        nic.numa = containing(t, HWLOC_OBJ_NUMANODE, anchor->cpuset);
      }
    }
    std::string& slot = type == HWLOC_OBJ_OSDEV_OPENFABRICS ? nic.verbs : nic.netdev;
    if (slot.empty() || devName < slot) slot = devName;  // several ports: keep a stable choice
  }
  std::vector<Nic> out;
  for (auto& [key, nic] : byKey) {
    nic.kind = nic.verbs.empty() ? NicKind::Ethernet : NicKind::Verbs;
    out.push_back(std::move(nic));
  }
  return out;
}

std::optional<std::size_t> pickNearest(const LocalSummary& s) {
  std::optional<std::size_t> best;
  std::tuple<int, int> bestScore{};
  for (std::size_t i = 0; i < s.nics.size(); ++i) {
    const Nic& n = s.nics[i];
    const int kind = n.kind == NicKind::Verbs ? 0 : 1;
    int distance = 2;
    if (s.bindingNuma >= 0 && n.numa == s.bindingNuma)
      distance = 0;
    else if (s.bindingPackage >= 0 && n.package == s.bindingPackage)
      distance = 1;
    const std::tuple<int, int> score{kind, distance};
    if (!best || score < bestScore) {  // nics are sorted by bus id: ties keep the lowest
      best = i;
      bestScore = score;
    }
  }
  return best;
}

LocalSummary summarizeWith(hwloc_topology_t t, hwloc_const_cpuset_t binding) {
  LocalSummary s;
  s.packages = count(t, HWLOC_OBJ_PACKAGE);
  s.numaNodes = count(t, HWLOC_OBJ_NUMANODE);
  s.cores = count(t, HWLOC_OBJ_CORE);
  s.pus = count(t, HWLOC_OBJ_PU);
  s.binding = listString(binding);
  s.bindingPackage = containing(t, HWLOC_OBJ_PACKAGE, binding);
  s.bindingNuma = containing(t, HWLOC_OBJ_NUMANODE, binding);
  s.nics = findNics(t);
  s.nearestNic = pickNearest(s);
  return s;
}

}  // namespace

LocalTopology LocalTopology::discover() {
  // hwloc's "pci" component goes through libpciaccess, whose device-name lookup (pci_get_strings)
  // leaks about 1 KB on every load (valgrind: definitely lost under hwloc_pci.so, even though the
  // topology is destroyed). The Linux component finds the same PCI devices, bus ids and classes
  // in sysfs, so the libpciaccess one is left out. If hwloc does not know the name (a build
  // without plugins), nothing is excluded and discovery is unchanged: the result is not checked.
  const auto configure = [](hwloc_topology_t t) {
    static_cast<void>(
        hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci"));
    return true;
  };
  return LocalTopology(load(configure, "this machine's topology"), true);
}

LocalTopology LocalTopology::synthetic(std::string_view description) {
  const std::string d(description);
  return LocalTopology(
      load([&](hwloc_topology_t t) { return hwloc_topology_set_synthetic(t, d.c_str()) == 0; },
           fmt::format("synthetic topology \"{}\"", d)),
      false);
}

LocalTopology LocalTopology::xmlFile(const std::string& path) {
  return LocalTopology(
      load([&](hwloc_topology_t t) { return hwloc_topology_set_xml(t, path.c_str()) == 0; },
           fmt::format("XML topology file {}", path)),
      false);
}

LocalTopology LocalTopology::xmlBuffer(std::string_view xml) {
  const std::string text(xml);
  return LocalTopology(load(
                           [&](hwloc_topology_t t) {
                             // hwloc wants the length including the terminating NUL.
                             return hwloc_topology_set_xmlbuffer(
                                        t, text.c_str(), static_cast<int>(text.size() + 1)) == 0;
                           },
                           "XML topology buffer"),
                       false);
}

LocalTopology::LocalTopology(LocalTopology&& o) noexcept
    : topo_(std::exchange(o.topo_, nullptr)), thisSystem_(o.thisSystem_) {}

LocalTopology& LocalTopology::operator=(LocalTopology&& o) noexcept {
  if (this != &o) {
    if (topo_) hwloc_topology_destroy(topo_);
    topo_ = std::exchange(o.topo_, nullptr);
    thisSystem_ = o.thisSystem_;
  }
  return *this;
}

LocalTopology::~LocalTopology() {
  if (topo_) hwloc_topology_destroy(topo_);
}

LocalSummary LocalTopology::summarize() const {
  Bitmap set;
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo_);
  bool bound = false;
  if (thisSystem_) {
    bound = hwloc_get_cpubind(topo_, set.get(), HWLOC_CPUBIND_PROCESS) == 0 ||
            hwloc_get_cpubind(topo_, set.get(), HWLOC_CPUBIND_THREAD) == 0;
    // A binding may name PUs that a cgroup hides from the topology: keep the visible part.
    if (bound) hwloc_bitmap_and(set.get(), set.get(), all);
  }
  if (!bound || hwloc_bitmap_iszero(set.get())) hwloc_bitmap_copy(set.get(), all);
  return summarizeWith(topo_, set.get());
}

LocalSummary LocalTopology::summarize(std::string_view cpuList) const {
  Bitmap set;
  const std::string text(cpuList);
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo_);
  if (text.empty() || hwloc_bitmap_list_sscanf(set.get(), text.c_str()) != 0 ||
      hwloc_bitmap_iszero(set.get()))
    throw TopologyError(fmt::format(
        "binding \"{}\" is not a list of PU OS indices (expected e.g. \"0-3,8\")", text));
  if (!hwloc_bitmap_isincluded(set.get(), all))
    throw TopologyError(fmt::format("binding \"{}\" names PUs outside this topology (PUs {})", text,
                                    listString(all)));
  return summarizeWith(topo_, set.get());
}

RankRecord makeRecord(const HostIdentity& host, const LocalSummary& local,
                      std::string_view supernodeHint) {
  RankRecord r;
  r.hostname = host.hostname;
  r.bootId = host.bootId;
  r.package = local.bindingPackage;
  r.numa = local.bindingNuma;
  if (local.nearestNic) {
    const Nic& n = local.nics.at(*local.nearestNic);
    r.nicKind = n.kind;
    r.nicVerbs = n.verbs;
    r.nicNetdev = n.netdev;
    r.nicPciBusId = n.pciBusId;
    r.nicNuma = n.numa;
    r.nicPackage = n.package;
  }
  r.supernodeHint = std::string(supernodeHint);
  return r;
}

RankRecord localRecord(std::string_view supernodeHint) {
  return makeRecord(localHostIdentity(), LocalTopology::discover().summarize(), supernodeHint);
}

}  // namespace hccl::topo
