#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "support.hpp"
#include "topology/emulation.hpp"
#include "topology/records.hpp"
#include "topology/resolve.hpp"

using hccl::topo::BootId;
using hccl::topo::deserializeRecords;
using hccl::topo::formatBootId;
using hccl::topo::Hierarchy;
using hccl::topo::hierarchyFromRecords;
using hccl::topo::NicKind;
using hccl::topo::parseBootId;
using hccl::topo::parseEmulationSpec;
using hccl::topo::RankLabel;
using hccl::topo::RankRecord;
using hccl::topo::resolveHierarchy;
using hccl::topo::SourceKind;
using hccl::topo::SupernodeGrouping;
using hccl::topo::TopologySource;
using topo_test::expectError;
using topo_test::expectMatchesReference;
using topo_test::fixture;

using Ranks = std::vector<std::uint32_t>;

namespace {

BootId bootId(std::uint8_t seed) {
  BootId id{};
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::uint8_t>(seed * 17 + i);
  return id;
}

RankRecord full() {
  RankRecord r;
  r.hostname = "node-017.cluster.example";
  r.bootId = bootId(3);
  r.package = 1;
  r.numa = 3;
  r.nicKind = NicKind::Verbs;
  r.nicVerbs = "mlx5_1";
  r.nicNetdev = "ens2f1";
  r.nicPciBusId = "0000:81:00.1";
  r.nicNuma = 3;
  r.nicPackage = 1;
  r.supernodeHint = "pod-7";
  return r;
}

RankRecord onHost(const std::string& host, std::uint8_t boot, const std::string& hint = "") {
  RankRecord r;
  r.hostname = host;
  r.bootId = bootId(boot);
  r.supernodeHint = hint;
  return r;
}

using Bytes = std::array<std::byte, RankRecord::kSize>;

// Rewrites the checksum so that a deliberate corruption reaches the field checks behind it.
void reseal(Bytes& b) {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i + 4 < b.size(); ++i) {
    h ^= std::to_integer<std::uint32_t>(b[i]);
    h *= 16777619u;
  }
  for (std::size_t i = 0; i < 4; ++i)
    b[RankRecord::kSize - 4 + i] = static_cast<std::byte>((h >> (8 * i)) & 0xff);
}

}  // namespace

TEST(BootIdText, ParsesAndFormats) {
  const auto id = parseBootId(" e9cbfa1e-cf03-42e2-9dfb-2aad613aa361\n");
  ASSERT_TRUE(id);
  EXPECT_EQ((*id)[0], 0xe9);
  EXPECT_EQ((*id)[15], 0x61);
  EXPECT_EQ(formatBootId(*id), "e9cbfa1e-cf03-42e2-9dfb-2aad613aa361");
  EXPECT_FALSE(parseBootId("e9cbfa1e-cf03-42e2-9dfb-2aad613aa36"));
  EXPECT_FALSE(parseBootId("e9cbfa1ecf03-42e2-9dfb-2aad613aa361-"));
  EXPECT_FALSE(parseBootId("g9cbfa1e-cf03-42e2-9dfb-2aad613aa361"));
  EXPECT_FALSE(parseBootId(""));
}

TEST(HostIdentity, ReadsThisMachine) {
  const auto id = hccl::topo::localHostIdentity();
  EXPECT_FALSE(id.hostname.empty());
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string text;
  if (in && std::getline(in, text)) {
    ASSERT_TRUE(id.bootId);
    EXPECT_EQ(formatBootId(*id.bootId), text);
  }
}

TEST(RankRecord, RoundTripsEveryField) {
  const RankRecord r = full();
  const Bytes b = r.serialize();
  EXPECT_EQ(RankRecord::deserialize(b), r);
  RankRecord empty;
  empty.hostname = "h";
  EXPECT_EQ(RankRecord::deserialize(empty.serialize()), empty);
  // Longest values that fit.
  RankRecord big = full();
  big.hostname = std::string(RankRecord::kHostnameMax, 'a');
  big.nicVerbs = std::string(RankRecord::kNicNameMax, 'b');
  big.nicNetdev = std::string(RankRecord::kNetdevMax, 'c');
  big.nicPciBusId = std::string(RankRecord::kPciBusIdMax, 'd');
  big.supernodeHint = std::string(RankRecord::kHintMax, 'e');
  EXPECT_EQ(RankRecord::deserialize(big.serialize()), big);
}

TEST(RankRecord, WireFormatIsLittleEndianWithMagicFirst) {
  const Bytes b = full().serialize();
  EXPECT_EQ(static_cast<char>(b[0]), 'H');
  EXPECT_EQ(static_cast<char>(b[1]), 'C');
  EXPECT_EQ(static_cast<char>(b[2]), 'T');
  EXPECT_EQ(static_cast<char>(b[3]), 'P');
  EXPECT_EQ(std::to_integer<int>(b[4]), RankRecord::kVersion);
  EXPECT_EQ(std::to_integer<int>(b[24]), 1);  // package
}

TEST(RankRecord, SerializeRejectsValuesThatDoNotFit) {
  RankRecord r = full();
  r.hostname = std::string(RankRecord::kHostnameMax + 1, 'a');
  expectError([&] { r.serialize(); }, {"hostname", "65 bytes", "at most 64"});
  r = full();
  r.supernodeHint = "tab\there";
  expectError([&] { r.serialize(); }, {"supernode hint", "printable ASCII"});
  std::array<std::byte, 8> small{};
  expectError([&] { full().serializeTo(small); }, {"holds 8 bytes", "needs 212"});
}

TEST(RankRecord, DeserializeRejectsGarbage) {
  const Bytes good = full().serialize();
  expectError([&] { RankRecord::deserialize(std::span(good).first(100)); },
              {"got 100 bytes", "exactly 212"});
  Bytes b{};
  expectError([&] { RankRecord::deserialize(b); },
              {"magic 0x00000000", "not a coll_hccl topology record"});
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>(i * 37 + 11);
  expectError([&] { RankRecord::deserialize(b); }, {"magic", "not a coll_hccl topology record"});
  b = good;
  b[4] = std::byte{2};
  expectError([&] { RankRecord::deserialize(b); }, {"version 2 is not supported", "version 1"});
  // Every single-byte flip after the header is caught by the checksum.
  for (std::size_t i = 6; i < RankRecord::kSize; ++i) {
    b = good;
    b[i] ^= std::byte{0x10};
    expectError([&] { RankRecord::deserialize(b); }, {"checksum"});
  }
}

TEST(RankRecord, DeserializeChecksFieldsBehindAValidChecksum) {
  const Bytes good = full().serialize();
  Bytes b = good;
  b[41] = std::byte{65};  // hostname length
  reseal(b);
  expectError([&] { RankRecord::deserialize(b); }, {"hostname length 65", "64-byte field"});
  b = good;
  b[48 + 40] = std::byte{'x'};  // a byte after the hostname's end
  reseal(b);
  expectError([&] { RankRecord::deserialize(b); }, {"hostname padding is not zero"});
  b = good;
  b[40] = std::byte{7};
  reseal(b);
  expectError([&] { RankRecord::deserialize(b); }, {"NIC kind 7", "0 none, 1 ethernet, 2 verbs"});
  b = good;
  b[24] = std::byte{0xfe};
  b[25] = b[26] = b[27] = std::byte{0xff};  // package -2
  reseal(b);
  expectError([&] { RankRecord::deserialize(b); }, {"package index -2"});
  b = good;
  b[6] = std::byte{0x80};
  reseal(b);
  expectError([&] { RankRecord::deserialize(b); }, {"unknown flags 0x0080"});
  b = good;
  b[48] = std::byte{0x01};
  reseal(b);
  expectError([&] { RankRecord::deserialize(b); },
              {"hostname holds a byte outside printable ASCII"});
}

TEST(RankRecord, GatheredBuffersNameTheBadRank) {
  std::vector<std::byte> all;
  for (int r = 0; r < 3; ++r) {
    RankRecord rec = onHost("h" + std::to_string(r), 1);
    const Bytes b = rec.serialize();
    all.insert(all.end(), b.begin(), b.end());
  }
  const auto records = deserializeRecords(all);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2].hostname, "h2");
  all[RankRecord::kSize * 1 + 3] = std::byte{0};
  expectError([&] { deserializeRecords(all); }, {"rank 1: rank record: magic"});
  all.pop_back();
  expectError([&] { deserializeRecords(all); }, {"635 bytes", "multiple of the 212-byte"});
}

TEST(RecordsHierarchy, ServersAreHostnamePlusBootId) {
  // Ranks interleaved over three hosts; "b" twice with different boot ids (two machines with the
  // same name) and "c" on two network namespaces of one machine (same boot id, other hostname).
  const std::vector<RankRecord> records = {onHost("a", 1), onHost("b", 2), onHost("c", 1),
                                           onHost("a", 1), onHost("b", 3), onHost("b", 2)};
  const Hierarchy h = hierarchyFromRecords(records);
  EXPECT_EQ(h.numServers(), 4u);
  EXPECT_EQ(h.numSupernodes(), 1u);
  EXPECT_EQ(h.serverName(0), "a");
  EXPECT_EQ(h.serverName(1), "b@" + formatBootId(bootId(2)));
  EXPECT_EQ(h.serverName(3), "b@" + formatBootId(bootId(3)));
  std::vector<RankLabel> labels;
  for (const auto& r : records) labels.push_back({r.hostname + formatBootId(*r.bootId), "0"});
  const Hierarchy expected = Hierarchy::fromLabels(labels);
  EXPECT_TRUE(h.sameLayout(expected));
  EXPECT_EQ(h.level0Group(3), (Ranks{0, 3}));
  EXPECT_EQ(h.level1Group(5), (Ranks{3, 5}));
}

TEST(RecordsHierarchy, HintsDefineSupernodes) {
  const std::vector<RankRecord> records = {onHost("a", 1, "x"), onHost("c", 1, "y"),
                                           onHost("b", 1, "x"), onHost("d", 1, "y")};
  const Hierarchy h = hierarchyFromRecords(records, SupernodeGrouping::parse("1"));  // hints win
  EXPECT_EQ(h.levels(), 3u);
  EXPECT_EQ(h.supernodeName(0), "x");
  EXPECT_EQ(h.level2Group(2), (Ranks{2, 3}));
  std::vector<RankLabel> labels;
  for (const auto& r : records) labels.push_back({r.hostname, r.supernodeHint});
  expectMatchesReference(h, labels);
}

TEST(RecordsHierarchy, InconsistentHintsAreRejected) {
  expectError(
      [] {
        hierarchyFromRecords(std::vector{onHost("a", 1, "x"), onHost("b", 1)});
      },
      {"rank 1 gives no supernode hint but rank 0 gives \"x\"", "HCCL_LOGIC_SUPERPOD_ID"});
  expectError(
      [] {
        hierarchyFromRecords(std::vector{onHost("a", 1, "x"), onHost("a", 1, "y")});
      },
      {"ranks 0 and 1 share server a", "\"x\" and \"y\"", "one supernode per server"});
  expectError([] { hierarchyFromRecords(std::vector<RankRecord>{}); }, {"no rank records"});
}

TEST(RecordsHierarchy, GroupingByServerCount) {
  std::vector<RankRecord> records;
  for (int r = 0; r < 10; ++r) records.push_back(onHost("n" + std::to_string(r % 5), 1));
  const Hierarchy h = hierarchyFromRecords(records, SupernodeGrouping::parse("2"));
  // 5 servers, 2 per supernode: (n0,n1), (n2,n3), (n4).
  EXPECT_EQ(h.numSupernodes(), 3u);
  EXPECT_EQ(h.levels(), 3u);
  EXPECT_FALSE(h.symmetric());
  std::vector<RankLabel> labels;
  for (int r = 0; r < 10; ++r)
    labels.push_back({"n" + std::to_string(r % 5), std::to_string((r % 5) / 2)});
  expectMatchesReference(h, labels);
}

TEST(RecordsHierarchy, GroupingByHostnamePattern) {
  const std::vector<RankRecord> records = {onHost("rack1-n1", 1), onHost("rack2-n1", 1),
                                           onHost("rack1-n2", 1), onHost("rack2-n2", 1)};
  const Hierarchy h = hierarchyFromRecords(records, SupernodeGrouping::parse("regex:^(rack\\d+)-"));
  EXPECT_EQ(h.numSupernodes(), 2u);
  EXPECT_EQ(h.supernodeName(1), "rack2");
  EXPECT_EQ(h.level1Group(0), (Ranks{0, 2}));
  EXPECT_EQ(h.level2Group(0), (Ranks{0, 1}));
  // No capture group: the whole match names the supernode.
  const Hierarchy whole = hierarchyFromRecords(records, SupernodeGrouping::parse("regex:rack\\d"));
  EXPECT_EQ(whole.supernodeName(0), "rack1");
  expectError([&] { hierarchyFromRecords(records, SupernodeGrouping::parse("regex:^node")); },
              {"hostname \"rack1-n1\" (rank 0) does not match", "\"^node\""});
}

TEST(SupernodeGroupingText, ParsesAndRejects) {
  EXPECT_EQ(SupernodeGrouping::parse("").kind, SupernodeGrouping::Kind::Single);
  EXPECT_EQ(SupernodeGrouping::parse("single").kind, SupernodeGrouping::Kind::Single);
  EXPECT_EQ(SupernodeGrouping::parse("16").serversPerSupernode, 16u);
  EXPECT_EQ(SupernodeGrouping::parse("regex:(a)").hostnamePattern, "(a)");
  expectError([] { SupernodeGrouping::parse("0"); },
              {"\"0\" is not valid", "servers per supernode"});
  expectError([] { SupernodeGrouping::parse("four"); }, {"\"four\"", "regex:<pattern>"});
  expectError([] { SupernodeGrouping::parse("regex:(a"); },
              {"regex:(a", "not a valid ECMAScript regex"});
  expectError([] { SupernodeGrouping::parse("regex:"); }, {"pattern is empty"});
  expectError([] { SupernodeGrouping::parse("regex:(a)\\1"); },
              {"not a valid ECMAScript regex without back-references"});
  expectError([] { SupernodeGrouping::parse("regex:" + std::string(300, '(')); },
              {"the pattern is 300 bytes; expected at most 256"});
  expectError([] { SupernodeGrouping::parse("\uff14"); },
              {"\"\uff14\" is not valid",
               "position 1 holds '\uff14' (U+FF14 full-width form): "
               "did you mean '4'?"});
}

TEST(RecordsHierarchy, HostnamePatternsMatchInLinearTime) {
  // Backtracking would take hours on "(a+)+$" against 63 a's and a '!'.
  const std::vector<RankRecord> records = {onHost(std::string(63, 'a') + "!", 1)};
  const auto start = std::chrono::steady_clock::now();
  expectError([&] { hierarchyFromRecords(records, SupernodeGrouping::parse("regex:(a+)+$")); },
              {"does not match the supernode pattern \"(a+)+$\""});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Resolve, PrecedenceRankTableThenSpecThenDiscovery) {
  TopologySource src;
  src.rankTableFile = fixture("rank_table_2x2x8_v1.2.json");
  src.emulationSpec = "32";
  std::vector<RankRecord> none;
  auto r = resolveHierarchy(src, 32, {}, none);
  EXPECT_EQ(r.kind, SourceKind::RankTable);
  EXPECT_EQ(r.hierarchy.levels(), 3u);
  EXPECT_EQ(r.origin, src.rankTableFile);

  src.rankTableFile.clear();
  r = resolveHierarchy(src, 32, {}, none);
  EXPECT_EQ(r.kind, SourceKind::Emulation);
  EXPECT_EQ(r.hierarchy.levels(), 1u);

  src.emulationSpec.clear();
  const std::vector<RankRecord> records = {onHost("a", 1), onHost("b", 1), onHost("a", 1)};
  r = resolveHierarchy(src, 3, {}, records);
  EXPECT_EQ(r.kind, SourceKind::Discovery);
  EXPECT_EQ(r.hierarchy.numServers(), 2u);
  expectError([&] { resolveHierarchy(src, 4, {}, records); }, {"3 rank records", "4 ranks"});
}

TEST(Resolve, SubCommunicatorOfTheWorldTable) {
  TopologySource src;
  src.emulationSpec = "2x2x4";
  const Ranks worldRanks = {8, 0, 12};  // communicator ranks 0, 1, 2
  const auto r = resolveHierarchy(src, 16, worldRanks, {});
  EXPECT_EQ(r.hierarchy.size(), 3u);
  EXPECT_EQ(r.hierarchy.numSupernodes(), 2u);
  EXPECT_EQ(r.hierarchy.supernodeName(0), "pod1");  // communicator rank 0 is world rank 8
  EXPECT_EQ(r.hierarchy.level2Group(1), (Ranks{0, 1}));
  // Supernode 0 holds two one-rank servers (ranks 0 and 2), supernode 1 one server (rank 1).
  EXPECT_TRUE(r.hierarchy.sameLayout(
      Hierarchy::fromSpec(parseEmulationSpec("(1+1),(1)")).subset(Ranks{0, 2, 1})));
}

TEST(Resolve, ErrorsNameTheSource) {
  TopologySource src;
  src.emulationSpec = "2x4";
  expectError([&] { resolveHierarchy(src, 6, {}, {}); },
              {"\"2x4\" describes 8 ranks but the job has 6"});
  src.emulationSpec = "2x";
  expectError([&] { resolveHierarchy(src, 6, {}, {}); }, {"emulation spec \"2x\""});
  src = {};
  src.rankTableFile = fixture("rank_table_2x4_v1.0.json");
  expectError([&] { resolveHierarchy(src, 6, {}, {}); },
              {"rank_table_2x4_v1.0.json", "communicator has 6"});
}

TEST(Resolve, FromEnvironment) {
  ::setenv("RANK_TABLE_FILE", "/x/table.json", 1);
  ::setenv("HCCL_TOPO_EMULATE", "2x4", 1);
  ::setenv("HCCL_TOPO_SUPERNODES", "4", 1);
  ::setenv("HCCL_LOGIC_SUPERPOD_ID", "sp3", 1);
  const TopologySource s = TopologySource::fromEnvironment();
  EXPECT_EQ(s.rankTableFile, "/x/table.json");
  EXPECT_EQ(s.emulationSpec, "2x4");
  EXPECT_EQ(s.grouping.serversPerSupernode, 4u);
  EXPECT_EQ(s.supernodeHint, "sp3");
  ::setenv("HCCL_TOPO_SUPERNODES", "x", 1);
  expectError([] { TopologySource::fromEnvironment(); },
              {"HCCL_TOPO_SUPERNODES", "\"x\" is not valid"});
  ::unsetenv("HCCL_TOPO_SUPERNODES");
  // The hint travels in every rank's record: printable ASCII, at most 32 bytes.
  ::setenv("HCCL_LOGIC_SUPERPOD_ID", "pod\u00e9", 1);
  expectError([] { TopologySource::fromEnvironment(); },
              {"HCCL_LOGIC_SUPERPOD_ID: \"pod\u00e9\" holds '\u00e9' (U+00E9) at position 4; "
               "expected printable ASCII"});
  ::setenv("HCCL_LOGIC_SUPERPOD_ID", std::string(33, 'p').c_str(), 1);
  expectError([] { TopologySource::fromEnvironment(); },
              {"HCCL_LOGIC_SUPERPOD_ID: ", "is 33 bytes; expected at most 32"});
  for (const char* v :
       {"RANK_TABLE_FILE", "HCCL_TOPO_EMULATE", "HCCL_TOPO_SUPERNODES", "HCCL_LOGIC_SUPERPOD_ID"})
    ::unsetenv(v);
}
