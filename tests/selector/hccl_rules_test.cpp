// HCCL's default rules as a document: every row of the built-in document checked against what
// HCCL documents (../shared/reference/hccl-algorithms.md, section 3), written out here from that
// text rather than from the code; the selector's hccl_rules mode reads the document; a tuning file
// replaces it; unknown names are skipped with a warning (bad rows are errors naming the member:
// cost_model_test's table of bad tuning documents).
#include "algorithms/hccl_rules.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "algorithms/cost_model.hpp"
#include "algorithms/defaults.hpp"
#include "algorithms/selector.hpp"

namespace hccl::algo {
namespace {

struct Communicator {
  std::uint32_t servers = 1, ranksPerServer = 1;
  bool deterministic = false;
};

// The built-in document's answer for a level of a call on `comm`, every row considered (a whole
// plan's word included).
std::optional<Algorithm> answer(int level, RuleScope scope, std::uint32_t groupSize, Collective c,
                                std::uint64_t bytes, const Communicator& comm) {
  RuleQuery q;
  q.level = level;
  q.within = scope;
  q.coll = c;
  q.bytes = bytes;
  q.groupSize = groupSize;
  q.servers = comm.servers;
  q.ranksPerServer = comm.ranksPerServer;
  q.ranks = comm.servers * comm.ranksPerServer;
  q.deterministic = comm.deterministic;
  const HcclRule* row = firstMatch(defaultCostModel().hcclRules, q, [](Algorithm) { return true; });
  if (!row) return std::nullopt;
  return row->algorithm;
}

constexpr Algorithm kRing = Algorithm::Ring, kHd = Algorithm::Rhd, kPipeline = Algorithm::Pipeline;

TEST(HcclRules, BuiltInDocumentsParseCleanly) {
  for (std::string_view doc : {builtinCostModelJson(), builtinHcclRulesJson()}) {
    std::vector<std::string> warnings;
    auto r = applyTuning(CostModel{}, std::string(doc), "built-in defaults", warnings);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(warnings.empty()) << warnings.front();
  }
  EXPECT_FALSE(defaultCostModel().hcclRules.empty());
  for (const HcclRule& row : defaultCostModel().hcclRules)
    EXPECT_FALSE(row.source.empty()) << hcclName(row.algorithm) << ": where HCCL documents it";
}

// "level0 is always automatic": chosen from the hardware; on shared memory every pair is
// connected, which is HCCL's Mesh.
TEST(HcclRules, Level0IsMesh) {
  for (std::uint32_t perServer = 2; perServer <= 16; ++perServer)
    EXPECT_EQ(
        answer(0, RuleScope::Level, perServer, Collective::AllReduce, 1 << 20, {4, perServer}),
        Algorithm::Mesh)
        << perServer;
}

// 910, level1 not set: "ring if the server count is not a power of two, otherwise H-D_R".
TEST(HcclRules, Level1RingUnlessThePowerOfTwoServerCount) {
  const std::vector<std::pair<std::uint32_t, Algorithm>> want = {
      {2, kHd},    {3, kRing}, {4, kHd},    {5, kRing},  {6, kRing},  {7, kRing},
      {8, kHd},    {9, kRing}, {10, kRing}, {12, kRing}, {15, kRing}, {16, kHd},
      {31, kRing}, {32, kHd},  {48, kRing}, {64, kHd}};
  for (const auto& [servers, algorithm] : want)
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                         Collective::Broadcast})
      EXPECT_EQ(answer(1, RuleScope::Level, servers, c, 64, {servers, 1}), algorithm)
          << servers << " servers, " << name(c);
}

// level2 not set: "ring if there are fewer than 8 supernodes and the count is not a power of two,
// otherwise H-D_R".
TEST(HcclRules, Level2RingBelowEightPodsThatAreNotAPowerOfTwo) {
  const std::vector<std::pair<std::uint32_t, Algorithm>> want = {
      {2, kHd}, {3, kRing}, {4, kHd},  {5, kRing}, {6, kRing}, {7, kRing},
      {8, kHd}, {9, kHd},   {10, kHd}, {12, kHd},  {13, kHd},  {16, kHd}};
  for (const auto& [pods, algorithm] : want)
    EXPECT_EQ(answer(2, RuleScope::Level, pods, Collective::AllReduce, 64, {pods * 2, 1}),
              algorithm)
        << pods << " pods";
}

// A2/A3 GetDefaultAlgoLevel1V2: pipeline first, with more than one device per server, for
// AG at >= 32 KB (PIPELINE_MIN_SIZE), RS (non-deterministic) likewise, RS deterministic with more
// than one server and >= 256 KB, AR when size / (servers x devices per server) >= 1 MB
// (PIPELINE_ALLREDUCE_MIN_SIZE).
TEST(HcclRules, PipelineThresholds) {
  const Communicator c4x4{4, 4};
  auto level1 = [](Collective c, std::uint64_t bytes, const Communicator& comm) {
    return answer(1, RuleScope::Level, comm.servers, c, bytes, comm);
  };
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
    EXPECT_EQ(level1(c, 32 * 1024, c4x4), kPipeline) << name(c);
    EXPECT_NE(level1(c, 32 * 1024 - 1, c4x4), kPipeline) << name(c);
    EXPECT_NE(level1(c, 64 << 20, {4, 1}), kPipeline) << name(c) << ": one device per server";
  }
  const Communicator det{4, 4, true};
  EXPECT_EQ(level1(Collective::AllGather, 32 * 1024, det), kPipeline);
  EXPECT_NE(level1(Collective::ReduceScatter, 32 * 1024, det), kPipeline);
  EXPECT_NE(level1(Collective::ReduceScatter, 256 * 1024 - 1, det), kPipeline);
  EXPECT_EQ(level1(Collective::ReduceScatter, 256 * 1024, det), kPipeline);
  EXPECT_NE(level1(Collective::ReduceScatter, 64 << 20, {1, 8, true}), kPipeline)
      << "deterministic: more than one server";
  // AllReduce: 16 ranks, so 16 MB in all.
  EXPECT_EQ(level1(Collective::AllReduce, 16 << 20, c4x4), kPipeline);
  EXPECT_NE(level1(Collective::AllReduce, (16 << 20) - 16, c4x4), kPipeline);
  EXPECT_EQ(level1(Collective::AllReduce, 2 << 20, {1, 2}), kPipeline);
  EXPECT_NE(level1(Collective::AllReduce, 64 << 20, {4, 1}), kPipeline);
  EXPECT_NE(level1(Collective::Broadcast, 64 << 20, c4x4), kPipeline);
}

// AHC between its groups: "Ring is used when there are <= 3 groups
// (AHC_LEVEL0_GROUP_SIZE_THRESHOLD = 3), otherwise NHR".
TEST(HcclRules, AhcBetweenGroups) {
  for (std::uint32_t groups = 2; groups <= 9; ++groups)
    EXPECT_EQ(answer(1, RuleScope::AhcInter, groups, Collective::AllReduce, 1 << 20, {groups, 3}),
              groups <= 3 ? kRing : Algorithm::NHR)
        << groups << " groups";
}

Settings hcclRulesSettings() {
  auto r = resolveSettings({{}, {}, mapLookup({{"COLL_HCCL_SELECTION", "hccl_rules"}})});
  EXPECT_TRUE(r.ok());
  return r.value();
}

// The selector's hccl_rules mode follows the model's rows, so a tuning file's rows replace HCCL's.
TEST(HcclRules, TuningFileReplacesTheRows) {
  std::vector<std::string> warnings;
  auto tuned = applyTuning(defaultCostModel(),
                           R"({"hccl_rules": [{"level": 0, "algorithm": "ring"},
                         {"level": 1, "algorithm": "NB", "group_size": {"min": 3}}]})",
                           "t.json", warnings);
  ASSERT_TRUE(tuned.ok()) << tuned.error().message;
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(tuned.value().hcclRules.size(), 2u);
  CallInfo call;
  call.count = 1 << 20;
  call.elemSize = 4;
  call.type = DataType::Float32;
  call.op = ReduceOp::Sum;
  Selector sel(CommShape::servers(4, 4), hcclRulesSettings(), tuned.value());
  const Decision& d = sel.decide(call);
  ASSERT_TRUE(d.ok()) << d.error;
  ASSERT_EQ(d.levels.size(), 2u);
  EXPECT_EQ(d.levels[0].algorithm, Algorithm::Ring);
  EXPECT_EQ(d.levels[1].algorithm, Algorithm::NB) << d.summary();
  EXPECT_EQ(d.levels[1].reason, Reason::HcclRules);
  // Two servers: no row answers, so the model decides.
  Selector two(CommShape::servers(2, 4), hcclRulesSettings(), tuned.value());
  EXPECT_EQ(two.decide(call).levels[1].reason, Reason::Model) << two.decide(call).summary();
  // The rows go out with the rest of the model and come back the same.
  std::vector<std::string> again;
  auto back = applyTuning(CostModel{}, tuned.value().toJson(), "round trip", again);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back.value().hcclRules, tuned.value().hcclRules);
  EXPECT_EQ(nlohmann::json::parse(tuned.value().toJson())["hccl_rules"].size(), 2u);
}

TEST(HcclRules, UnknownNamesSkipTheRowWithAWarning) {
  std::vector<std::string> warnings;
  auto r = applyTuning(defaultCostModel(),
                       R"({"hccl_rules": [{"level": 1, "algorithm": "SuperRing"},
                                          {"level": 1, "algorithm": "ring",
                                           "collectives": ["gather"]},
                                          {"level": 1, "algorithm": "NHR", "colour": "blue"}]})",
                       "t.json", warnings);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value().hcclRules.size(), 1u);
  EXPECT_EQ(r.value().hcclRules[0].algorithm, Algorithm::NHR);
  std::string all;
  for (const auto& w : warnings) all += w + "\n";
  for (const char* needle : {"SuperRing", "gather", "colour"})
    EXPECT_NE(all.find(needle), std::string::npos) << needle << " not in:\n" << all;
}

}  // namespace
}  // namespace hccl::algo
