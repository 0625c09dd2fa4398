#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.hpp"
#include "topology/rank_table.hpp"

using hccl::topo::Hierarchy;
using hccl::topo::hierarchyFromRankTable;
using hccl::topo::loadRankTable;
using hccl::topo::parseRankTable;
using hccl::topo::RankLabel;
using hccl::topo::RankTable;
using nlohmann::json;
using topo_test::expectError;
using topo_test::expectMatchesReference;
using topo_test::fixture;

using Ranks = std::vector<std::uint32_t>;

namespace {

// A well-formed table: pods x servers x ranks, ranks in block order, HCCL's string values.
json makeTable(const std::string& version, int pods, int servers, int ranks) {
  json serverList = json::array(), podList = json::array();
  int rank = 0;
  for (int p = 0; p < pods; ++p) {
    json members = json::array();
    for (int s = 0; s < servers; ++s) {
      const std::string id = "host-" + std::to_string(p) + "-" + std::to_string(s);
      json devices = json::array();
      for (int d = 0; d < ranks; ++d) {
        json dev = {{"device_id", std::to_string(d)},
                    {"device_ip", "10." + std::to_string(p) + "." + std::to_string(s) + "." +
                                      std::to_string(d + 1)},
                    {"rank_id", std::to_string(rank++)}};
        if (version == "1.2") dev["super_device_id"] = std::to_string(s * ranks + d);
        devices.push_back(dev);
      }
      serverList.push_back({{"server_id", id}, {"device", devices}});
      members.push_back({{"server_id", id}});
    }
    podList.push_back({{"super_pod_id", std::to_string(p)}, {"server_list", members}});
  }
  json t = {{"status", "completed"},
            {"version", version},
            {"server_count", std::to_string(serverList.size())},
            {"server_list", serverList}};
  if (version == "1.2") t["super_pod_list"] = podList;
  return t;
}

RankTable parse(const json& t, std::optional<std::uint32_t> expected = std::nullopt) {
  return parseRankTable(t.dump(), "t.json", expected);
}

void bad(const json& t, const std::vector<std::string>& parts,
         std::optional<std::uint32_t> expected = std::nullopt) {
  expectError([&] { parse(t, expected); }, parts, "rank table t.json");
}

}  // namespace

TEST(RankTable, Version10TwoServers) {
  const RankTable t = loadRankTable(fixture("rank_table_2x4_v1.0.json"), 8);
  EXPECT_EQ(t.version, "1.0");
  EXPECT_EQ(t.ranks, 8u);
  ASSERT_EQ(t.servers.size(), 2u);
  EXPECT_EQ(t.servers[1].id, "10.0.0.2");
  EXPECT_EQ(t.servers[1].hostIp, "10.0.0.2");
  EXPECT_EQ(t.servers[1].devices[2].deviceIp, "192.168.1.3");
  EXPECT_EQ(t.servers[1].devices[2].rank, 6u);
  EXPECT_TRUE(t.supernodes.empty());
  const Hierarchy h = hierarchyFromRankTable(t);
  EXPECT_EQ(h.levels(), 2u);
  EXPECT_EQ(h.describe(), "2 servers x 4 ranks");
  EXPECT_EQ(h.level1Group(6), (Ranks{2, 6}));
  EXPECT_EQ(h.supernodeName(0), "0");
}

TEST(RankTable, Version12SampleHasThreeLevels) {
  const RankTable t = loadRankTable(fixture("rank_table_2x2x8_v1.2.json"), 32);
  EXPECT_EQ(t.version, "1.2");
  ASSERT_EQ(t.supernodes.size(), 2u);
  EXPECT_EQ(t.supernodes[1].servers, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(t.servers[3].devices[7].superDeviceId, 15u);
  const Hierarchy h = hierarchyFromRankTable(t);
  EXPECT_EQ(h.levels(), 3u);
  EXPECT_TRUE(h.symmetric());
  EXPECT_EQ(h.describe(), "2 supernodes x 2 servers x 8 ranks");
  std::vector<RankLabel> labels;
  for (int r = 0; r < 32; ++r) {
    const int server = r / 8, pod = server / 2;
    labels.push_back({"10.0." + std::to_string(pod) + "." + std::to_string(server % 2 + 1),
                      std::to_string(pod)});
  }
  expectMatchesReference(h, labels);
}

TEST(RankTable, ServerListOrderNeedNotFollowRanks) {
  // Servers listed out of rank order, devices listed out of rank order: legal, ranks decide.
  json t = makeTable("1.0", 1, 2, 2);
  std::swap(t["server_list"][0], t["server_list"][1]);
  std::swap(t["server_list"][0]["device"][0], t["server_list"][0]["device"][1]);
  const Hierarchy h = hierarchyFromRankTable(parse(t));
  EXPECT_EQ(h.serverName(0), "host-0-0");
  EXPECT_EQ(h.level0Group(3), (Ranks{2, 3}));
}

TEST(RankTable, SingleServerMayOmitDeviceIp) {
  json t = makeTable("1.0", 1, 1, 4);
  for (auto& d : t["server_list"][0]["device"]) d.erase("device_ip");
  EXPECT_EQ(parse(t).ranks, 4u);
}

TEST(RankTable, FileErrors) {
  expectError([] { loadRankTable("/nonexistent/table.json"); },
              {"rank table /nonexistent/table.json: cannot be opened: No such file or directory"});
  const std::string path = testing::TempDir() + "/truncated_rank_table.json";
  {
    std::ofstream out(path);
    out << makeTable("1.0", 1, 2, 2).dump().substr(0, 40);
  }
  expectError([&] { loadRankTable(path); }, {"rank table " + path, "invalid JSON"});
  std::remove(path.c_str());
}

// RANK_TABLE_FILE is read in MPI_Init: nothing there may block, and a path that is not a table is
// named as what it is.
TEST(RankTable, OnlyABoundedRegularFileIsRead) {
  const std::string dir = testing::TempDir() + "/rank_table_inputs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  expectError([&] { loadRankTable(dir); },
              {"rank table " + dir + ": is a directory; expected a regular file"});
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  expectError([&] { loadRankTable(fifo); },
              {"rank table " + fifo + ": is a FIFO (named pipe); expected a regular file"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  expectError([] { loadRankTable("/dev/zero"); },
              {"rank table /dev/zero: is a character device; expected a regular file"});
  const std::string big = dir + "/big.json";
  {
    std::ofstream out(big);
    out << std::string(hccl::topo::kMaxRankTableBytes + 1, ' ');
  }
  expectError([&] { loadRankTable(big); },
              {"rank table " + big +
               ": is 33554433 bytes, more than 32 MiB (the limit for this "
               "file)"});
  const std::string empty = dir + "/empty.json";
  std::ofstream(empty).close();
  expectError([&] { loadRankTable(empty); },
              {"rank table " + empty + ": invalid JSON: the text is empty"});
  expectError([] { loadRankTable(std::string("/nonexistent/t\nable")); },
              {"rank table \"/nonexistent/t\\x0aable\": cannot be opened"});
  std::filesystem::remove_all(dir);
}

TEST(RankTable, JsonErrorsPointAtACharacter) {
  // Columns count characters: 'x' is the 8th character but the 9th byte.
  expectError([] { parseRankTable("{\"\u00e9\u00e9\": x}", "t.json"); },
              {"rank table t.json: invalid JSON at line 1, column 8 ('x'): syntax error while "
               "parsing value - invalid literal"});
  expectError([] { parseRankTable("{\n  \"status\": \u00e9\n}", "t.json"); },
              {"invalid JSON at line 2, column 13 ('\u00e9' (U+00E9)): syntax error while parsing "
               "value - invalid literal"});
  // Not UTF-8: the first offending byte, whole, never half of a character.
  expectError([] { parseRankTable("{\"status\": \"ok\xc3(\"}", "t.json"); },
              {"invalid JSON at line 1, column 15 (byte 0xC3 (not UTF-8))", "ill-formed UTF-8"});
  expectError([] { parseRankTable("{\"status\": ", "t.json"); },
              {"invalid JSON at line 1, column 12 (the end of the text): syntax error while "
               "parsing value - unexpected end of input"});
  expectError([] { parseRankTable(std::string(100, '[') + std::string(100, ']'), "t.json"); },
              {"invalid JSON: nested deeper than 64 levels"});
  // nlohmann quotes the bytes it last read; they may hold "'; expected" themselves (found by the
  // long fuzz tier): none of them may reach the message.
  try {
    parseRankTable("{\"status\":\"c'''; expected '}''-''\xd4\xd8'''\"}", "t.json");
    ADD_FAILURE() << "accepted";
  } catch (const hccl::topo::TopologyError& e) {
    EXPECT_EQ(std::string(e.what()),
              "rank table t.json: invalid JSON at line 1, column 34 (byte 0xD4 (not UTF-8)): "
              "syntax error while parsing value - invalid string: ill-formed UTF-8 byte");
  }
}

TEST(RankTable, ValuesAreShownWhole) {
  json t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["device"][1]["rank_id"] = "\uff11";  // full-width 1
  bad(t, {"server_list[0].device[1].rank_id is \"\uff11\"; expected a decimal integer from 0 to "
          "2147483647; position 1 holds '\uff11' (U+FF11 full-width form): did you mean '1'?"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][1]["server_id"] = "node\tB";
  bad(t, {"server_list[1].server_id \"node\\x09B\" holds U+0009 (a control character) at position "
          "5; expected a name without control characters"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["server_id"] =
      std::string(30, 'h') +
      "\u670d\u52a1\u5668\u670d\u52a1\u5668\u670d\u52a1\u5668\u670d\u52a1\u5668";
  bad(t, {"server_list[0].server_id", "is 66 bytes (42 characters); expected 1 to 64 bytes"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["device"][0]["device_ip"] = "10.0.0.1\u200b";
  bad(t, {"device_ip is \"10.0.0.1\\u{200B}\"; expected an IPv4 or IPv6 address; position 9 holds "
          "U+200B (invisible zero width space): delete it?"});
  t = makeTable("1.0", 1, 2, 2);
  t["status"] = "complet\u00e9";
  bad(t,
      {"status is \"complet\u00e9\"; expected \"completed\"; position 8 holds '\u00e9' (U+00E9)"});
  t = makeTable("1.0", 1, 1, 2);
  t["server_list"][0]["server_id"] = "\u30b5\u30fc\u30d0";  // a Japanese name is a valid name
  EXPECT_EQ(parse(t).servers[0].id, "\u30b5\u30fc\u30d0");
}

TEST(RankTable, InvalidJson) {
  expectError([] { parseRankTable("{\"status\": ", "t.json"); },
              {"rank table t.json", "invalid JSON"});
  expectError([] { parseRankTable("", "t.json"); }, {"invalid JSON"});
  bad(json::array(), {"top level is an array", "expected an object"});
}

TEST(RankTable, MissingFields) {
  const json good = makeTable("1.2", 2, 2, 2);
  struct Case {
    std::vector<std::string> path;  // object keys / array indices as strings
    std::string key;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {{}, "status", {"top level has no field \"status\"", "\"completed\""}},
      {{}, "version", {"no field \"version\"", "\"1.0\" or \"1.2\""}},
      {{}, "server_count", {"no field \"server_count\"", "decimal integer"}},
      {{}, "server_list", {"no field \"server_list\"", "array of servers"}},
      {{}, "super_pod_list", {"no field \"super_pod_list\"", "array of super pods"}},
      {{"server_list", "1"}, "server_id", {"server_list[1] has no field \"server_id\""}},
      {{"server_list", "1"},
       "device",
       {"server_list[1] has no field \"device\"", "array of devices"}},
      {{"server_list", "2", "device", "1"},
       "device_id",
       {"server_list[2].device[1] has no field \"device_id\""}},
      {{"server_list", "2", "device", "1"},
       "rank_id",
       {"server_list[2].device[1] has no field \"rank_id\""}},
      {{"server_list", "0", "device", "0"},
       "device_ip",
       {"server_list[0].device[0] has no field \"device_ip\"", "IPv4 or IPv6"}},
      {{"server_list", "3", "device", "0"},
       "super_device_id",
       {"server_list[3].device[0] has no field \"super_device_id\""}},
      {{"super_pod_list", "1"},
       "super_pod_id",
       {"super_pod_list[1] has no field \"super_pod_id\""}},
      {{"super_pod_list", "1"}, "server_list", {"super_pod_list[1] has no field \"server_list\""}},
      {{"super_pod_list", "0", "server_list", "1"},
       "server_id",
       {"super_pod_list[0].server_list[1] has no field \"server_id\""}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    json t = good;
    json* at = &t;
    for (const auto& step : c.path) at = at->is_array() ? &(*at)[std::stoul(step)] : &(*at)[step];
    at->erase(c.key);
    bad(t, c.parts);
  }
}

TEST(RankTable, WrongTypes) {
  json t = makeTable("1.0", 1, 2, 2);
  t["server_list"][1]["device"][0]["rank_id"] = 2;
  bad(t, {"server_list[1].device[0].rank_id is a number (2)",
          "expected a string holding a decimal integer"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_count"] = 2;
  bad(t, {"server_count is a number", "string"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"] = json::object();
  bad(t, {"server_list is an object", "non-empty array of servers"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["device"] = "0";
  bad(t, {"server_list[0].device is a string", "array of devices"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][1] = "host";
  bad(t, {"server_list[1] is a string", "expected an object"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["device"][1]["device_id"] = "one";
  bad(t, {"server_list[0].device[1].device_id is \"one\"", "decimal integer"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["device"][1]["rank_id"] = "-1";
  bad(t, {"rank_id is \"-1\"", "decimal integer"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["device"][1]["device_ip"] = "10.0.0.300";
  bad(t, {"server_list[0].device[1].device_ip is \"10.0.0.300\"", "IPv4 or IPv6"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["host_ip"] = "fe80::1";  // IPv6 is fine
  EXPECT_NO_THROW(parse(t));
  t["server_list"][0]["host_ip"] = "host";
  bad(t, {"server_list[0].host_ip is \"host\"", "IPv4 or IPv6"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][0]["device"][0]["device_port"] = "70000";
  bad(t, {"device_port is \"70000\"", "0 to 65535"});
}

TEST(RankTable, BadHeaderValues) {
  json t = makeTable("1.0", 1, 2, 2);
  t["status"] = "initializing";
  bad(t, {"status is \"initializing\"", "expected \"completed\""});
  t = makeTable("1.0", 1, 2, 2);
  t["version"] = "2.0";
  bad(t, {"version is \"2.0\"", "\"1.0\"", "\"1.2\""});
  t = makeTable("1.0", 1, 2, 2);
  t["server_count"] = "3";
  bad(t, {"server_count is \"3\" but server_list has 2 servers"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"] = json::array();
  t["server_count"] = "0";
  bad(t, {"server_list is empty", "non-empty array"});
  t = makeTable("1.0", 1, 2, 2);
  t["server_list"][1]["device"] = json::array();
  bad(t, {"server_list[1].device is empty"});
  t = makeTable("1.0", 1, 2, 2);
  t["super_pod_list"] = makeTable("1.2", 1, 2, 2)["super_pod_list"];
  bad(t, {"super_pod_list is present but version is \"1.0\"", "\"1.2\""});
}

TEST(RankTable, DuplicateIds) {
  json t = makeTable("1.0", 1, 3, 2);
  t["server_list"][2]["server_id"] = "host-0-0";
  bad(t, {"server_list[2].server_id \"host-0-0\" repeats server_list[0]", "unique server ids"});
  t = makeTable("1.0", 1, 3, 2);
  t["server_list"][1]["device"][1]["device_id"] = "0";
  bad(t, {"server_list[1].device[1].device_id \"0\" repeats server_list[1].device[0]"});
  t = makeTable("1.0", 1, 3, 2);
  t["server_list"][0]["server_id"] = std::string(65, 'h');
  bad(t, {"server_list[0].server_id", "is 65 bytes; expected 1 to 64 bytes"});
}

TEST(RankTable, DuplicateRankId) {
  json t = makeTable("1.0", 1, 2, 4);
  t["server_list"][1]["device"][3]["rank_id"] = "5";
  bad(t, {"rank_id \"5\" appears at server_list[1].device[1] and at server_list[1].device[3]",
          "exactly once"});
}

TEST(RankTable, MissingRankId) {
  json t = makeTable("1.0", 1, 2, 4);
  t["server_list"][1]["device"][3]["rank_id"] = "9";  // 7 never appears
  bad(t, {"server_list[1].device[3].rank_id is \"9\", outside 0..7", "rank 7 is missing"});
}

TEST(RankTable, InterleavedServers) {
  json t = makeTable("1.0", 1, 2, 2);  // ranks 0,1 | 2,3
  t["server_list"][0]["device"][1]["rank_id"] = "2";
  t["server_list"][1]["device"][0]["rank_id"] = "1";  // now 0,2 | 1,3
  bad(t, {"server_list[0] (\"host-0-0\") holds ranks 0 and 2 but rank 1",
          "server_list[1] (\"host-0-1\")", "contiguous range", "must not interleave"});
}

TEST(RankTable, SupernodeErrors) {
  json t = makeTable("1.2", 2, 2, 2);
  // Pod 0 = servers 0 and 2, pod 1 = servers 1 and 3: listed contiguously nowhere.
  t["super_pod_list"][0]["server_list"][1]["server_id"] = "host-1-0";
  t["super_pod_list"][1]["server_list"][0]["server_id"] = "host-0-1";
  bad(t, {"super pod \"0\" (super_pod_list[0]) has servers at server_list[0] and server_list[2]",
          "server_list[1] (\"host-0-1\") between them belongs to super pod \"1\"",
          "listed contiguously"});

  t = makeTable("1.2", 2, 2, 2);
  t["super_pod_list"][1]["server_list"][0]["server_id"] = "host-9-9";
  bad(t, {"super_pod_list[1].server_list[0].server_id \"host-9-9\" is not in server_list"});

  t = makeTable("1.2", 2, 2, 2);
  t["super_pod_list"][1]["server_list"][0]["server_id"] = "host-0-0";
  bad(t, {"server \"host-0-0\" appears in super_pod_list[0] and in super_pod_list[1]",
          "exactly one super pod"});

  t = makeTable("1.2", 2, 2, 2);
  t["super_pod_list"][1]["server_list"].erase(1);
  bad(t, {"server_list[3] (\"host-1-1\") is in no super pod"});

  t = makeTable("1.2", 2, 2, 2);
  t["super_pod_list"][1]["super_pod_id"] = "0";
  bad(t, {"super_pod_list[1].super_pod_id \"0\" repeats super_pod_list[0]"});

  t = makeTable("1.2", 2, 2, 2);
  t["super_pod_list"] = json::array();
  bad(t, {"super_pod_list is empty"});
}

TEST(RankTable, SizeDiffersFromCommunicator) {
  const json t = makeTable("1.2", 2, 2, 2);
  bad(t, {"describes 8 ranks but the communicator has 6"}, 6);
  EXPECT_EQ(parse(t, 8).ranks, 8u);
  expectError([] { loadRankTable(fixture("rank_table_2x2x8_v1.2.json"), 16); },
              {"rank_table_2x2x8_v1.2.json", "32 ranks", "communicator has 16"});
}
