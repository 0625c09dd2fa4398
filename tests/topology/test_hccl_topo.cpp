// Runs the installed-to-be hccl_topo binary the way a user would and reads its output.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support.hpp"

using nlohmann::json;
using topo_test::fixture;

namespace {

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr together
};

Result runTool(const std::string& args) {
  const char* exe = std::getenv("HCCL_TOPO");
  const std::string cmd = std::string(exe ? exe : "hccl_topo") + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool hasLine(const std::vector<std::string>& ls, const std::string& l) {
  return std::find(ls.begin(), ls.end(), l) != ls.end();
}

std::string quote(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace

TEST(HcclTopo, SampleRankTablePrintsThreeLevelsAndSameIndexGroups) {
  const Result r = runTool("--rank-table " + quote(fixture("rank_table_2x2x8_v1.2.json")));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto ls = lines(r.out);
  EXPECT_TRUE(
      hasLine(ls, "shape: 2 supernodes x 2 servers x 8 ranks (32 ranks, 3 levels, symmetric)"))
      << r.out;
  EXPECT_TRUE(hasLine(ls, "level0 (ranks of one server): 4 groups of 8")) << r.out;
  EXPECT_TRUE(
      hasLine(ls, "level1 (same local index across the servers of a supernode): 16 groups of 2"))
      << r.out;
  EXPECT_TRUE(hasLine(ls, "level2 (same position across supernodes): 16 groups of 2")) << r.out;
  // The fixture lists servers 10.0.p.(s+1) with ranks 16p+8s .. 16p+8s+7.
  for (int p = 0; p < 2; ++p) {
    EXPECT_TRUE(hasLine(ls, "  supernode " + std::to_string(p) + " \"" + std::to_string(p) +
                                "\": servers " + std::to_string(2 * p) + "," +
                                std::to_string(2 * p + 1)));
    for (int s = 0; s < 2; ++s) {
      const int first = 16 * p + 8 * s;
      EXPECT_TRUE(hasLine(ls, "  server " + std::to_string(2 * p + s) + " \"10.0." +
                                  std::to_string(p) + "." + std::to_string(s + 1) +
                                  "\" supernode " + std::to_string(p) + ": " +
                                  std::to_string(first) + "-" + std::to_string(first + 7)))
          << r.out;
    }
    for (int l = 0; l < 8; ++l) {
      // level1: local l of both servers of supernode p.
      EXPECT_TRUE(hasLine(ls, "  supernode " + std::to_string(p) + " local " + std::to_string(l) +
                                  ": " + std::to_string(16 * p + l) + "," +
                                  std::to_string(16 * p + 8 + l)))
          << r.out;
    }
  }
  for (int s = 0; s < 2; ++s)
    for (int l = 0; l < 8; ++l)  // level2: the same (server, local) in both supernodes
      EXPECT_TRUE(hasLine(ls, "  server-in-supernode " + std::to_string(s) + " local " +
                                  std::to_string(l) + ": " + std::to_string(8 * s + l) + "," +
                                  std::to_string(16 + 8 * s + l)))
          << r.out;
}

TEST(HcclTopo, RankViewAndJson) {
  const Result r =
      runTool("--rank-table " + quote(fixture("rank_table_2x2x8_v1.2.json")) + " --rank 21 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["hierarchy"]["levels"], 3);
  EXPECT_EQ(j["rank"]["server"], 2);
  EXPECT_EQ(j["rank"]["local"], 5);
  EXPECT_EQ(j["rank"]["levels"][0]["group"], json::parse("[16,17,18,19,20,21,22,23]"));
  EXPECT_EQ(j["rank"]["levels"][1]["group"], json::parse("[21,29]"));
  EXPECT_EQ(j["rank"]["levels"][2]["group"], json::parse("[5,21]"));
  EXPECT_FALSE(j.contains("local"));
}

TEST(HcclTopo, JsonOutputRoundTrips) {
  for (const std::string& source :
       {"--rank-table " + quote(fixture("rank_table_2x2x8_v1.2.json")),
        std::string("--emulate 'rr:(3+5),(2)'"), std::string("--emulate 1+4+2")}) {
    SCOPED_TRACE(source);
    const Result text = runTool(source);
    const Result js = runTool(source + " --json");
    ASSERT_EQ(text.status, 0) << text.out;
    ASSERT_EQ(js.status, 0) << js.out;
    const std::string path = testing::TempDir() + "/hccl_topo_roundtrip.json";
    { std::ofstream(path) << js.out; }
    const Result back = runTool("--from-json " + quote(path));
    ASSERT_EQ(back.status, 0) << back.out;
    // Same text after the source line.
    auto a = lines(text.out), b = lines(back.out);
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty());
    a.erase(a.begin());
    b.erase(b.begin());
    EXPECT_EQ(a, b);
    const Result backJson = runTool("--from-json " + quote(path) + " --json");
    json x = json::parse(js.out), y = json::parse(backJson.out);
    EXPECT_EQ(x["hierarchy"], y["hierarchy"]);
    std::remove(path.c_str());
  }
}

TEST(HcclTopo, LocalSummaryFromXml) {
  const Result r = runTool("--local --hwloc-xml " + quote(fixture("two_socket_verbs.xml")) +
                           " --cpuset 4-7 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["local"]["packages"], 2);
  EXPECT_EQ(j["local"]["binding_package"], 1);
  EXPECT_EQ(j["local"]["nics"].size(), 4u);
  EXPECT_EQ(j["local"]["nearest_nic"], 2);
  EXPECT_EQ(j["record"]["nic_verbs"], "mlx5_0");
  const Result text =
      runTool("--local --hwloc-xml " + quote(fixture("two_socket_verbs.xml")) + " --cpuset 0-1");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_TRUE(hasLine(lines(text.out),
                      "  NIC 1 mlx5_2/ib0 (verbs, PCI 0000:02:00.0, package 0, NUMA 0) <- nearest"))
      << text.out;
}

TEST(HcclTopo, LocalOnThisMachine) {
  const Result r = runTool("--local");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("local: ", 0), 0u) << r.out;
  const Result js = runTool("--local --json");
  ASSERT_EQ(js.status, 0) << js.out;
  EXPECT_EQ(json::parse(js.out)["record"]["bytes"], 212);
}

TEST(HcclTopo, ErrorsExitNonZeroWithTheReason) {
  Result r = runTool("--emulate '2x0'");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("hccl_topo: error: emulation spec \"2x0\" has count '0' at column 3"),
            std::string::npos)
      << r.out;
  r = runTool("--rank-table " + quote(fixture("rank_table_2x2x8_v1.2.json")) + " --size 16");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("32 ranks but the communicator has 16"), std::string::npos) << r.out;
  r = runTool("--emulate 2x4 --rank 8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--rank 8 is outside 0..7"), std::string::npos) << r.out;
  r = runTool("--emulate 2x4 --rank-table " + quote(fixture("rank_table_2x4_v1.0.json")));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("excludes"), std::string::npos) << r.out;
  r = runTool("--rank-table /nonexistent.json");
  EXPECT_NE(r.status, 0);
}

TEST(HcclTopo, HelpDocumentsTheSpecGrammar) {
  const Result r = runTool("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* part :
       {"--rank-table", "--emulate", "--local", "--json", "SPEC    := [ORDER \":\"] LAYOUT",
        "(4+4),(4)", "round-robin", "RANK_TABLE_FILE"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part;
}

TEST(HcclTopo, EnvironmentSourcesWhenNoOptionIsGiven) {
  ::unsetenv("RANK_TABLE_FILE");
  ::unsetenv("HCCL_TOPO_EMULATE");
  Result r = runTool("--brief");  // nothing set: the local summary
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("local: ", 0), 0u) << r.out;
  ::setenv("HCCL_TOPO_EMULATE", "3+5", 1);
  r = runTool("--brief");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("shape: servers of 3+5 ranks (8 ranks, 2 levels, asymmetric)"),
            std::string::npos)
      << r.out;
  ::setenv("RANK_TABLE_FILE", fixture("rank_table_2x4_v1.0.json").c_str(), 1);  // takes precedence
  r = runTool("--brief");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("shape: 2 servers x 4 ranks"), std::string::npos) << r.out;
  ::unsetenv("RANK_TABLE_FILE");
  ::unsetenv("HCCL_TOPO_EMULATE");
}
