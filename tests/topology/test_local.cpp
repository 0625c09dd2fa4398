#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "support.hpp"
#include "topology/local.hpp"

using hccl::topo::LocalSummary;
using hccl::topo::LocalTopology;
using hccl::topo::makeRecord;
using hccl::topo::NicKind;
using hccl::topo::RankRecord;
using topo_test::expectError;
using topo_test::fixture;

namespace {

// "0-3,8" -> {0,1,2,3,8}: parsed here rather than with hwloc, to check hwloc's list.
std::set<unsigned> parseList(const std::string& text) {
  std::set<unsigned> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto dash = part.find('-');
    const unsigned lo = static_cast<unsigned>(std::stoul(part.substr(0, dash)));
    const unsigned hi =
        dash == std::string::npos ? lo : static_cast<unsigned>(std::stoul(part.substr(dash + 1)));
    for (unsigned c = lo; c <= hi; ++c) out.insert(c);
  }
  return out;
}

std::string nearestName(const LocalSummary& s) {
  if (!s.nearestNic) return "";
  const auto& n = s.nics.at(*s.nearestNic);
  return n.verbs.empty() ? n.netdev : n.verbs;
}

}  // namespace

TEST(Synthetic, CountsAndBindingPlacement) {
  const LocalTopology t = LocalTopology::synthetic("pack:2 numa:2 core:4 pu:2");
  const LocalSummary all = t.summarize();
  EXPECT_EQ(all.packages, 2u);
  EXPECT_EQ(all.numaNodes, 4u);
  EXPECT_EQ(all.cores, 16u);
  EXPECT_EQ(all.pus, 32u);
  EXPECT_EQ(all.binding, "0-31");
  EXPECT_EQ(all.bindingPackage, -1);  // the whole machine spans both packages
  EXPECT_EQ(all.bindingNuma, -1);
  EXPECT_TRUE(all.nics.empty());
  EXPECT_FALSE(all.nearestNic);
  // PUs are numbered in order: package p holds PUs 16p..16p+15, NUMA node n holds 8n..8n+7.
  struct Case {
    const char* binding;
    int package, numa;
  };
  for (const Case c :
       {Case{"0", 0, 0}, Case{"0-7", 0, 0}, Case{"8-15", 0, 1}, Case{"0-15", 0, -1},
        Case{"16-17", 1, 2}, Case{"31", 1, 3}, Case{"15-16", -1, -1}, Case{"1,30", -1, -1}}) {
    SCOPED_TRACE(c.binding);
    const LocalSummary s = t.summarize(c.binding);
    EXPECT_EQ(s.bindingPackage, c.package);
    EXPECT_EQ(s.bindingNuma, c.numa);
    EXPECT_EQ(parseList(s.binding), parseList(c.binding));
  }
}

TEST(Synthetic, NoPackageLevel) {
  const LocalSummary s = LocalTopology::synthetic("core:3 pu:1").summarize("1");
  EXPECT_EQ(s.packages, 0u);
  EXPECT_EQ(s.cores, 3u);
  EXPECT_EQ(s.bindingPackage, -1);
  EXPECT_EQ(s.bindingNuma, 0);  // hwloc always has at least one NUMA node
}

TEST(Synthetic, BadInput) {
  expectError([] { LocalTopology::synthetic("pack:two"); }, {"synthetic topology \"pack:two\""});
  const LocalTopology t = LocalTopology::synthetic("pack:1 core:2 pu:1");
  expectError([&] { t.summarize("4"); }, {"binding \"4\" names PUs outside this topology", "0-1"});
  expectError([&] { t.summarize("abc"); }, {"binding \"abc\" is not a list"});
  expectError([&] { t.summarize(""); }, {"binding \"\""});
}

TEST(Xml, VerbsAndEthernetNicsWithTheirLocality) {
  const LocalTopology t = LocalTopology::xmlFile(fixture("two_socket_verbs.xml"));
  const LocalSummary s = t.summarize();
  EXPECT_EQ(s.packages, 2u);
  EXPECT_EQ(s.numaNodes, 2u);
  EXPECT_EQ(s.cores, 4u);
  EXPECT_EQ(s.pus, 8u);
  ASSERT_EQ(s.nics.size(), 4u);
  // Sorted by PCI bus id; the fixture puts eno1 and an InfiniBand HCA on package 0, a two-port
  // RoCE NIC on package 1.
  EXPECT_EQ(s.nics[0].pciBusId, "0000:01:00.0");
  EXPECT_EQ(s.nics[0].netdev, "eno1");
  EXPECT_EQ(s.nics[0].verbs, "");
  EXPECT_EQ(s.nics[0].kind, NicKind::Ethernet);
  EXPECT_EQ(s.nics[0].pciClass, 0x0200);
  EXPECT_EQ(s.nics[0].package, 0);
  EXPECT_EQ(s.nics[0].numa, 0);
  EXPECT_EQ(s.nics[1].pciBusId, "0000:02:00.0");
  EXPECT_EQ(s.nics[1].verbs, "mlx5_2");
  EXPECT_EQ(s.nics[1].netdev, "ib0");
  EXPECT_EQ(s.nics[1].kind, NicKind::Verbs);
  EXPECT_EQ(s.nics[1].pciClass, 0x0207);
  EXPECT_EQ(s.nics[2].pciBusId, "0000:81:00.0");
  EXPECT_EQ(s.nics[2].verbs, "mlx5_0");
  EXPECT_EQ(s.nics[2].netdev, "ens2f0");
  EXPECT_EQ(s.nics[2].package, 1);
  EXPECT_EQ(s.nics[2].numa, 1);
  EXPECT_EQ(s.nics[3].verbs, "mlx5_1");
  // Verbs first, then locality, then bus id.
  EXPECT_EQ(nearestName(t.summarize("0-3")), "mlx5_2");
  EXPECT_EQ(nearestName(t.summarize("5")), "mlx5_0");
  EXPECT_EQ(nearestName(t.summarize("3-4")), "mlx5_2");  // spans packages: lowest bus id
  EXPECT_EQ(nearestName(s), "mlx5_2");
}

TEST(Xml, RemoteVerbsDeviceBeatsLocalEthernet) {
  // The verbs fixture without package 0's InfiniBand HCA: package 0 keeps only eno1.
  std::ifstream in(fixture("two_socket_verbs.xml"));
  std::stringstream text;
  text << in.rdbuf();
  const std::regex hca(R"(<object type="Bridge"[^>]*\[02-02\]">[\s\S]*?</object>\s*</object>)");
  const std::string xml = std::regex_replace(text.str(), hca, "");
  ASSERT_NE(xml, text.str());
  const LocalTopology t = LocalTopology::xmlBuffer(xml);
  const LocalSummary s = t.summarize("0-3");
  ASSERT_EQ(s.nics.size(), 3u);
  EXPECT_EQ(nearestName(s), "mlx5_0");
}

TEST(Xml, NicOnTheMachineHasNoSingleNumaNode) {
  const LocalTopology t = LocalTopology::xmlFile(fixture("two_socket_machine_eth.xml"));
  const LocalSummary s = t.summarize("4-7");
  ASSERT_EQ(s.nics.size(), 1u);
  EXPECT_EQ(s.nics[0].netdev, "eth0");
  EXPECT_EQ(s.nics[0].pciBusId, "0000:00:03.0");
  EXPECT_EQ(s.nics[0].package, -1);
  EXPECT_EQ(s.nics[0].numa, -1);
  EXPECT_EQ(s.bindingPackage, 1);
  EXPECT_EQ(s.bindingNuma, 1);
  EXPECT_EQ(s.nearestNic, 0u);  // far away, but the only one
}

TEST(Xml, RecordCarriesTheNearestNic) {
  const LocalTopology t = LocalTopology::xmlFile(fixture("two_socket_verbs.xml"));
  hccl::topo::HostIdentity host{"xmlhost", std::nullopt};
  const RankRecord r = makeRecord(host, t.summarize("6-7"), "sp1");
  EXPECT_EQ(r.hostname, "xmlhost");
  EXPECT_EQ(r.package, 1);
  EXPECT_EQ(r.numa, 1);
  EXPECT_EQ(r.nicKind, NicKind::Verbs);
  EXPECT_EQ(r.nicVerbs, "mlx5_0");
  EXPECT_EQ(r.nicNetdev, "ens2f0");
  EXPECT_EQ(r.nicPciBusId, "0000:81:00.0");
  EXPECT_EQ(r.nicNuma, 1);
  EXPECT_EQ(r.supernodeHint, "sp1");
  EXPECT_EQ(RankRecord::deserialize(r.serialize()), r);
}

TEST(Xml, BadInput) {
  expectError([] { LocalTopology::xmlFile("/nonexistent.xml"); }, {"/nonexistent.xml"});
  expectError([] { LocalTopology::xmlBuffer("<topology><object type="); }, {"XML topology buffer"});
  std::ifstream in(fixture("two_socket_machine_eth.xml"));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(LocalTopology::xmlBuffer(text.str()).summarize().pus, 8u);
}

TEST(ThisMachine, DiscoveryMatchesTheKernelsView) {
  const LocalTopology t = LocalTopology::discover();
  const LocalSummary s = t.summarize();
  EXPECT_GE(s.pus, s.cores);
  EXPECT_GE(s.cores, 1u);
  EXPECT_GE(s.numaNodes, 1u);
  // The binding is this process's affinity mask.
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  std::set<unsigned> affinity;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) affinity.insert(c);
  EXPECT_EQ(parseList(s.binding), affinity);
  // Every network interface that sysfs places under a PCI device is among the NICs, with that
  // device's bus id. Virtual interfaces (lo, bridges, veths) are not. A VM may have none.
  namespace fs = std::filesystem;
  const std::regex busId("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]");
  for (const auto& entry : fs::directory_iterator("/sys/class/net")) {
    const std::string path = fs::canonical(entry.path()).string();
    if (path.find("/devices/pci") == std::string::npos) continue;
    std::string bus;
    for (auto it = std::sregex_iterator(path.begin(), path.end(), busId);
         it != std::sregex_iterator(); ++it)
      bus = it->str();
    const std::string ifname = entry.path().filename().string();
    SCOPED_TRACE(ifname + " at " + path);
    const auto nic = std::find_if(s.nics.begin(), s.nics.end(),
                                  [&](const auto& n) { return n.netdev == ifname; });
    ASSERT_NE(nic, s.nics.end());
    EXPECT_EQ(nic->pciBusId, bus);
  }
  EXPECT_EQ(s.nearestNic.has_value(), !s.nics.empty());
  const RankRecord r = hccl::topo::localRecord("hint");
  EXPECT_EQ(RankRecord::deserialize(r.serialize()), r);
  EXPECT_EQ(r.supernodeHint, "hint");
  EXPECT_EQ(r.nicKind == NicKind::None, s.nics.empty());
}

TEST(ThisMachine, BindingFollowsTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  unsigned last = 0;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) last = c;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(last, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const LocalSummary s = LocalTopology::discover().summarize();
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(s.binding, std::to_string(last));
  EXPECT_GE(s.bindingNuma, 0);  // a single PU is inside one NUMA node
}
