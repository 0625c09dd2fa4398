#include <gtest/gtest.h>

#include <random>

#include "support.hpp"
#include "topology/emulation.hpp"
#include "topology/json.hpp"
#include "topology/rank_table.hpp"

using hccl::topo::Hierarchy;
using hccl::topo::hierarchyFromJson;
using hccl::topo::parseEmulationSpec;
using hccl::topo::RankLabel;
using hccl::topo::toJson;
using nlohmann::json;
using topo_test::expectError;

TEST(HierarchyJson, RoundTripsThroughText) {
  for (const char* spec :
       {"1", "8", "2x4", "2x2x8", "3+5", "1+4+2", "(4+4),(4)", "rr:3+5", "rr:2x2x2", "3x1x2"}) {
    SCOPED_TRACE(spec);
    const Hierarchy h = Hierarchy::fromSpec(parseEmulationSpec(spec));
    const std::string text = toJson(h).dump(2);
    const Hierarchy back = hierarchyFromJson(json::parse(text), "test");
    EXPECT_EQ(back, h);
  }
}

TEST(HierarchyJson, RoundTripsIrregularOrdersAndNames) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<RankLabel> labels;
    const int n = 1 + static_cast<int>(rng() % 20);
    for (int r = 0; r < n; ++r) {
      const int server = static_cast<int>(rng() % 5);
      labels.push_back(
          {"srv \"" + std::to_string(server) + "\"", "pod/" + std::to_string(server % 2)});
    }
    const Hierarchy h = Hierarchy::fromLabels(labels);
    EXPECT_EQ(hierarchyFromJson(json::parse(toJson(h).dump()), "test"), h);
  }
}

TEST(HierarchyJson, ContentIsTheHierarchy) {
  const Hierarchy h = Hierarchy::fromSpec(parseEmulationSpec("(2+1),(2)"));
  const json j = toJson(h);
  EXPECT_EQ(j["ranks"], 5);
  EXPECT_EQ(j["levels"], 3);
  EXPECT_EQ(j["symmetric"], false);
  EXPECT_EQ(j["servers"][1]["ranks"], json::array({2}));
  EXPECT_EQ(j["servers"][2]["supernode"], 1);
  EXPECT_EQ(j["supernodes"][0]["servers"], json::array({0, 1}));
  EXPECT_EQ(j["level1_groups"], json::parse("[[0,2],[1],[3],[4]]"));
  EXPECT_EQ(j["level2_groups"], json::parse("[[0,3],[1,4],[2]]"));
}

TEST(HierarchyJson, RejectsContradictionsAndBadShapes) {
  const json good = toJson(Hierarchy::fromSpec(parseEmulationSpec("2x2x2")));
  auto bad = [&](const std::function<void(json&)>& edit, const std::vector<std::string>& parts) {
    json j = good;
    edit(j);
    expectError([&] { hierarchyFromJson(j, "f.json"); }, parts, "hierarchy JSON f.json");
  };
  bad([](json& j) { j["format"] = "other/1"; }, {"format is \"other/1\""});
  bad([](json& j) { j.erase("ranks"); }, {"no field \"ranks\""});
  bad([](json& j) { j["ranks"] = 9; }, {"rank 8 is on no server"});
  bad([](json& j) { j["ranks"] = -1; }, {"ranks is -1", "non-negative"});
  bad([](json& j) { j["servers"][1]["ranks"][0] = 0; }, {"rank 0 is listed on two servers"});
  bad([](json& j) { j["servers"][1]["ranks"][0] = 17; }, {"servers[1].ranks[0] is 17", "0..7"});
  bad([](json& j) { j["servers"][1]["supernode"] = 5; }, {"servers[1].supernode is 5", "0..1"});
  bad([](json& j) { j["servers"][1]["name"] = "node0"; }, {"servers[1].name \"node0\" repeats"});
  bad([](json& j) { j["servers"][1]["ranks"] = "2-3"; }, {"servers[1].ranks is a string", "array"});
  bad([](json& j) { j["levels"] = 2; }, {"levels is 2 but the servers imply 3"});
  bad([](json& j) { j["symmetric"] = false; }, {"symmetric is false"});
  bad([](json& j) { j["level1_groups"][0] = json::array({0, 3}); }, {"level1_groups is"});
  bad([](json& j) { j["level2_groups"].erase(0); }, {"level2_groups is"});
  bad([](json& j) { j["supernodes"][0]["servers"] = json::array({0}); },
      {"supernodes[0].servers is [0] but the servers naming it are [0,1]"});
  bad(
      [](json& j) {
        j["supernodes"].push_back({{"name", "pod9"}});
      },
      {"supernodes[2] (\"pod9\") has no server"});
  bad([](json& j) { j["supernodes"][1]["name"] = "pod0"; },
      {"supernodes[1].name \"pod0\" repeats"});
  bad([](json& j) { j = json::array(); }, {"top level is an array"});
  bad([](json& j) { j["servers"][0] = 3; }, {"servers[0] is a number", "object"});
  // Derived fields are optional on input.
  json minimal = good;
  for (const char* k : {"levels", "symmetric", "shape", "level1_groups", "level2_groups"})
    minimal.erase(k);
  EXPECT_EQ(hierarchyFromJson(minimal, "m"), Hierarchy::fromSpec(parseEmulationSpec("2x2x2")));
}
