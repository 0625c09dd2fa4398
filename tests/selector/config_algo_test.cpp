// HCCL_ALGO: every valid form against hand-written expectations, every rejected form with its exact
// message, canonical printing, and a seeded random sweep checked against an independent model.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/config_algo.hpp"

namespace hccl::algo {
namespace {

using Levels = std::array<std::optional<Algorithm>, 4>;

constexpr std::array<OpType, 18> kAllOps = {
    OpType::AllReduce, OpType::AllGather,  OpType::ReduceScatter, OpType::Broadcast,
    OpType::Reduce,    OpType::Scatter,    OpType::AllToAll,      OpType::Gather,
    OpType::Send,      OpType::Receive,    OpType::SendRecv,      OpType::Barrier,
    OpType::Scan,      OpType::Exscan,     OpType::AllGatherV,    OpType::ReduceScatterV,
    OpType::AllToAllV, OpType::AllToAllVC,
};

// The grammar's op keys and every op type each one configures, as HCCL documents them.
const std::vector<std::pair<std::string, std::vector<OpType>>> kKeys = {
    {"allreduce", {OpType::AllReduce}},
    {"allgather", {OpType::AllGather, OpType::AllGatherV}},
    {"reducescatter", {OpType::ReduceScatter, OpType::ReduceScatterV}},
    {"broadcast", {OpType::Broadcast}},
    {"reduce", {OpType::Reduce}},
    {"scatter", {OpType::Scatter}},
    {"alltoall", {OpType::AllToAll, OpType::AllToAllV, OpType::AllToAllVC}},
    {"gather", {OpType::Gather}},
    {"send", {OpType::Send}},
    {"receive", {OpType::Receive}},
    {"sendrecv", {OpType::SendRecv}},
    {"barrier", {OpType::Barrier}},
    {"scan", {OpType::Scan}},
    {"exscan", {OpType::Exscan}},
};

const std::vector<std::pair<std::string, std::optional<Algorithm>>> kWords = {
    {"ring", Algorithm::Ring},
    {"H-D_R", Algorithm::Rhd},
    {"NHR", Algorithm::NHR},
    {"NHR_V1", Algorithm::NHR_V1},
    {"NB", Algorithm::NB},
    {"AHC", Algorithm::AHC},
    {"AHC_BROKE", Algorithm::AHC_Broke},
    {"pipeline", Algorithm::Pipeline},
    {"pairwise", Algorithm::Pairwise},
    {"fullmesh", Algorithm::Mesh},
    {"NA", std::nullopt},
    {"null", std::nullopt},
};

AlgoConfig parsed(std::string_view text) {
  auto r = parseHcclAlgo(text);
  EXPECT_TRUE(r.ok()) << "\"" << text << "\": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : AlgoConfig{};
}

Levels levelsOf(const AlgoConfig& c, OpType op) {
  Levels l;
  for (int level = 0; level < 4; ++level) l[static_cast<std::size_t>(level)] = c.forced(op, level);
  return l;
}

void expectEveryOp(const AlgoConfig& c, const Levels& expected, std::string_view what) {
  for (OpType op : kAllOps) EXPECT_EQ(levelsOf(c, op), expected) << what << " op " << name(op);
}

TEST(HcclAlgo, EmptyAndBlankAreAutomatic) {
  for (std::string_view text : {"", "   ", " \t "}) {
    const AlgoConfig c = parsed(text);
    EXPECT_EQ(c.form(), AlgoConfig::Form::Automatic);
    EXPECT_FALSE(c.forcesAnything());
    EXPECT_EQ(c.str(), "");
    expectEveryOp(c, Levels{}, text);
  }
}

TEST(HcclAlgo, GlobalForms) {
  const std::vector<std::pair<std::string, Levels>> cases = {
      {"level0:NA;level1:NHR", {std::nullopt, Algorithm::NHR, std::nullopt, std::nullopt}},
      {"level0:NA;level1:ring;level2:H-D_R",
       {std::nullopt, Algorithm::Ring, Algorithm::Rhd, std::nullopt}},
      {"level1:H-D_R", {std::nullopt, Algorithm::Rhd, std::nullopt, std::nullopt}},
      {"  level0 : NA ;\tlevel1 : ring  ",
       {std::nullopt, Algorithm::Ring, std::nullopt, std::nullopt}},
      {"lev el1:ri ng", {std::nullopt, Algorithm::Ring, std::nullopt, std::nullopt}},
      {"level2:NB;level1:NHR_V1;level0:NA",
       {std::nullopt, Algorithm::NHR_V1, Algorithm::NB, std::nullopt}},
      {"level0:NA;level1:ring;level2:ring;level3:NHR",
       {std::nullopt, Algorithm::Ring, Algorithm::Ring, Algorithm::NHR}},
      {"level0:null;level1:ring", {std::nullopt, Algorithm::Ring, std::nullopt, std::nullopt}},
      {"level0:NA;level1:null;level2:NA", Levels{}},
      {"level0:fullmesh", {Algorithm::Mesh, std::nullopt, std::nullopt, std::nullopt}},
      {"level0:NA;level1:pipeline;level2:pipeline",
       {std::nullopt, Algorithm::Pipeline, Algorithm::Pipeline, std::nullopt}},
  };
  for (const auto& [text, expected] : cases) {
    const AlgoConfig c = parsed(text);
    EXPECT_EQ(c.form(), AlgoConfig::Form::Global) << text;
    expectEveryOp(c, expected, text);
  }
}

TEST(HcclAlgo, EveryAlgorithmNameAtLevel1) {
  for (const auto& [word, algo] : kWords) {
    const AlgoConfig c = parsed("level0:NA;level1:" + word);
    const bool ahc = algo == Algorithm::AHC || algo == Algorithm::AHC_Broke;
    expectEveryOp(c, {std::nullopt, algo, ahc ? algo : std::nullopt, std::nullopt}, word);
  }
}

TEST(HcclAlgo, PerOpForEveryKey) {
  for (const auto& [key, configured] : kKeys) {
    const AlgoConfig c = parsed(key + "=level0:NA;level1:NB;level2:ring");
    EXPECT_EQ(c.form(), AlgoConfig::Form::PerOp) << key;
    for (OpType op : kAllOps) {
      const bool mine = std::find(configured.begin(), configured.end(), op) != configured.end();
      const Levels expected =
          mine ? Levels{std::nullopt, Algorithm::NB, Algorithm::Ring, std::nullopt} : Levels{};
      EXPECT_EQ(levelsOf(c, op), expected) << key << " op " << name(op);
    }
  }
}

TEST(HcclAlgo, PerOpDocumentationExample) {
  const AlgoConfig c = parsed("allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R");
  EXPECT_EQ(c.forced(OpType::AllReduce, 1), Algorithm::Ring);
  EXPECT_EQ(c.forced(OpType::AllGather, 1), Algorithm::Rhd);
  EXPECT_EQ(c.forced(OpType::AllGatherV, 1), Algorithm::Rhd);
  for (OpType op : {OpType::ReduceScatter, OpType::Broadcast, OpType::AllToAll, OpType::SendRecv})
    EXPECT_EQ(levelsOf(c, op), Levels{}) << name(op);
}

TEST(HcclAlgo, OthersFillsOpsWithoutTheirOwnEntry) {
  for (std::string text : {"alltoall=level0:NA;level1:pairwise/others=level0:NA;level1:NHR",
                           "others=level0:NA;level1:NHR/alltoall=level0:NA;level1:pairwise",
                           " others = level1 : NHR / alltoall = level1 : pairwise "}) {
    const AlgoConfig c = parsed(text);
    for (OpType op : kAllOps) {
      const bool a2a =
          op == OpType::AllToAll || op == OpType::AllToAllV || op == OpType::AllToAllVC;
      EXPECT_EQ(c.forced(op, 1), a2a ? Algorithm::Pairwise : Algorithm::NHR) << text << name(op);
      EXPECT_EQ(c.forced(op, 0), std::nullopt);
      EXPECT_EQ(c.forced(op, 2), std::nullopt);
    }
  }
  // An entry of its own wins even when it forces nothing.
  const AlgoConfig c = parsed("allreduce=level0:NA/others=level0:NA;level1:ring");
  EXPECT_EQ(levelsOf(c, OpType::AllReduce), Levels{});
  EXPECT_EQ(c.forced(OpType::Broadcast, 1), Algorithm::Ring);
}

TEST(HcclAlgo, VariantsFollowTheirBaseOp) {
  const AlgoConfig c =
      parsed("alltoall=level1:pairwise/allgather=level1:NHR/reducescatter=level1:ring");
  EXPECT_EQ(c.forced(OpType::AllToAllV, 1), Algorithm::Pairwise);
  EXPECT_EQ(c.forced(OpType::AllToAllVC, 1), Algorithm::Pairwise);
  EXPECT_EQ(c.forced(OpType::AllGatherV, 1), Algorithm::NHR);
  EXPECT_EQ(c.forced(OpType::ReduceScatterV, 1), Algorithm::Ring);
}

TEST(HcclAlgo, AhcAtLevel1RunsLevel2) {
  const AlgoConfig a = parsed("level0:NA;level1:AHC");
  expectEveryOp(a, {std::nullopt, Algorithm::AHC, Algorithm::AHC, std::nullopt}, "AHC");
  EXPECT_TRUE(a.notes().empty());

  const AlgoConfig b = parsed("level0:NA;level1:AHC_BROKE;level2:NA");
  expectEveryOp(b, {std::nullopt, Algorithm::AHC_Broke, Algorithm::AHC_Broke, std::nullopt}, "B");
  EXPECT_TRUE(b.notes().empty());

  // HCCL documents that an explicit level2 has no effect next to level1:AHC.
  const AlgoConfig c = parsed("level0:NA;level1:AHC;level2:ring");
  expectEveryOp(c, {std::nullopt, Algorithm::AHC, Algorithm::AHC, std::nullopt}, "AHC+ring");
  ASSERT_EQ(c.notes().size(), 1u);
  EXPECT_EQ(c.notes()[0],
            "HCCL_ALGO: level2:ring at position 22 has no effect: level1:AHC also runs level2");

  const AlgoConfig d = parsed("allreduce=level2:NHR;level1:AHC");
  EXPECT_EQ(d.forced(OpType::AllReduce, 2), Algorithm::AHC);
  ASSERT_EQ(d.notes().size(), 1u);
  EXPECT_EQ(d.notes()[0],
            "HCCL_ALGO: level2:NHR at position 11 has no effect: level1:AHC also runs level2 "
            "(op allreduce)");
}

TEST(HcclAlgo, CollectiveQueriesMatchTheirOpType) {
  const std::vector<std::pair<Collective, OpType>> pairs = {
      {Collective::AllReduce, OpType::AllReduce},
      {Collective::ReduceScatter, OpType::ReduceScatter},
      {Collective::AllGather, OpType::AllGather},
      {Collective::Broadcast, OpType::Broadcast},
      {Collective::Reduce, OpType::Reduce},
      {Collective::Scatter, OpType::Scatter},
      {Collective::AllToAll, OpType::AllToAll},
      {Collective::Gather, OpType::Gather},
      {Collective::AllToAllV, OpType::AllToAllV},
      {Collective::Barrier, OpType::Barrier},
      {Collective::Scan, OpType::Scan},
      {Collective::Exscan, OpType::Exscan},
  };
  ASSERT_EQ(pairs.size(), static_cast<std::size_t>(kNumCollectives));
  const AlgoConfig c = parsed(
      "allreduce=level1:ring/reducescatter=level1:NHR/allgather=level1:NB/broadcast=level1:H-D_R/"
      "reduce=level1:NHR_V1/scatter=level1:fullmesh/alltoall=level1:pairwise/gather=level1:ring/"
      "barrier=level1:NHR/scan=level1:H-D_R/exscan=level1:ring");
  for (const auto& [coll, op] : pairs) {
    EXPECT_EQ(opType(coll), op);
    EXPECT_EQ(name(op), name(coll));  // the grammar's keys are the Collective names
    for (int level = 0; level < 4; ++level) EXPECT_EQ(c.forced(coll, level), c.forced(op, level));
    EXPECT_TRUE(c.forced(coll, 1).has_value()) << name(coll);
  }
}

TEST(HcclAlgo, LevelsOutsideTheGrammarAreAutomatic) {
  const AlgoConfig c = parsed("level0:ring;level1:ring;level2:ring;level3:ring");
  EXPECT_EQ(c.forced(OpType::AllReduce, -1), std::nullopt);
  EXPECT_EQ(c.forced(OpType::AllReduce, 4), std::nullopt);
  EXPECT_EQ(c.forced(OpType::AllReduce, 3), Algorithm::Ring);
}

TEST(HcclAlgo, LengthLimit) {
  std::string atLimit = "level0:NA;level1:ring";
  atLimit.resize(kMaxHcclAlgoLength, ' ');
  EXPECT_EQ(parsed(atLimit).forced(OpType::AllReduce, 1), Algorithm::Ring);

  const std::string tooLong = atLimit + "x";
  const auto r = parseHcclAlgo(tooLong);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().position, 1601u);
  EXPECT_EQ(r.error().token, "x");
  EXPECT_EQ(r.error().message,
            "HCCL_ALGO: value too long: 1601 bytes, the excess starts with \"x\" at position "
            "1601; valid: at most 1600 bytes");

  // The limit counts bytes (HcclCommConfig's array); the excess starts at a whole character and
  // its position counts characters.
  std::string straddling = atLimit.substr(0, kMaxHcclAlgoLength - 1) + "\u00e9tc";
  const auto s = parseHcclAlgo(straddling);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().token, "\u00e9tc");
  EXPECT_EQ(s.error().position, 1600u);
  EXPECT_EQ(s.error().message,
            "HCCL_ALGO: value too long: 1603 bytes (1602 characters), the excess starts with "
            "\"\u00e9tc\" at position 1600; valid: at most 1600 bytes");
}

TEST(HcclAlgo, NotesWhatHasNoEffect) {
  // HCCL's grammar accepts level3 and the code-only op keys; they are accepted here too, and the
  // notes say they change nothing.
  const AlgoConfig level3 = parsed("level0:NA;level1:ring;level3:ring");
  EXPECT_EQ(level3.forced(OpType::AllReduce, 1), Algorithm::Ring);
  ASSERT_EQ(level3.notes().size(), 1u);
  EXPECT_EQ(level3.notes()[0],
            "HCCL_ALGO: level3:ring at position 23 has no effect: level3 is reserved (no hierarchy "
            "has a fourth level; level0 is inside a server, level1 between servers, level2 "
            "between supernodes)");
  EXPECT_TRUE(parsed("level0:NA;level3:NA").notes().empty());
  EXPECT_TRUE(parsed("level0:NA;level3:null").notes().empty());

  const AlgoConfig perOp = parsed("allreduce=level1:NHR;level3:NB/send=level1:ring");
  ASSERT_EQ(perOp.notes().size(), 2u);
  EXPECT_EQ(perOp.notes()[0],
            "HCCL_ALGO: level3:NB at position 22 has no effect: level3 is reserved (no hierarchy "
            "has a fourth level; level0 is inside a server, level1 between servers, level2 "
            "between supernodes) (op allreduce)");
  EXPECT_EQ(perOp.notes()[1],
            "HCCL_ALGO: the entry for op \"send\" at position 32 has no effect: coll_hccl has "
            "no send collective (HCCL accepts the key; it configures nothing here)");
  for (const char* key : {"send", "receive", "sendrecv"}) {
    const AlgoConfig c = parsed(std::string(key) + "=level1:ring");
    ASSERT_EQ(c.notes().size(), 1u) << key;
    EXPECT_NE(c.notes()[0].find("no " + std::string(key) + " collective"), std::string::npos);
  }
  // Ops this library has schedules for are not noted here (the engine says which ones MPI
  // reaches); neither is others=.
  EXPECT_TRUE(parsed("broadcast=level1:ring/others=level1:NHR").notes().empty());
  EXPECT_TRUE(parsed("broadcast=level1:ring").hasOwnEntry(OpType::Broadcast));
  EXPECT_FALSE(parsed("broadcast=level1:ring").hasOwnEntry(OpType::AllReduce));
  EXPECT_TRUE(parsed("allgather=level1:ring").hasOwnEntry(OpType::AllGatherV));
  EXPECT_FALSE(parsed("level1:ring").hasOwnEntry(OpType::AllReduce));
}

TEST(HcclAlgo, CollectiveOfEachOpType) {
  EXPECT_EQ(collective(OpType::AllReduce), Collective::AllReduce);
  EXPECT_EQ(collective(OpType::AllGatherV), Collective::AllGather);
  EXPECT_EQ(collective(OpType::ReduceScatterV), Collective::ReduceScatter);
  EXPECT_EQ(collective(OpType::AllToAllVC), Collective::AllToAllV);
  EXPECT_EQ(collective(OpType::AllToAll), Collective::AllToAll);
  EXPECT_EQ(collective(OpType::AllToAllV), Collective::AllToAllV);
  EXPECT_EQ(collective(OpType::Gather), Collective::Gather);
  for (OpType op : {OpType::Send, OpType::Receive, OpType::SendRecv})
    EXPECT_EQ(collective(op), std::nullopt) << name(op);
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                       Collective::Broadcast, Collective::Reduce, Collective::Scatter,
                       Collective::AllToAll, Collective::Gather, Collective::AllToAllV,
                       Collective::Barrier, Collective::Scan, Collective::Exscan})
    EXPECT_EQ(collective(opType(c)), c);
}

// ---- rejected values -----------------------------------------------------------------------

const std::string kAlgos =
    "ring, H-D_R, NHR, NHR_V1, NB, AHC, AHC_BROKE, pipeline, pairwise, fullmesh, fullmesh_push, "
    "NA, null";
const std::string kOps =
    "allreduce, allgather, reducescatter, broadcast, reduce, scatter, alltoall, gather, send, "
    "receive, sendrecv, barrier, scan, exscan, others";
const std::string kLevelsList = "level0, level1, level2, level3";
const std::string kLevelShape = "levelN:<algo> entries separated by \";\"";
const std::string kOpShape = "<op>=levelN:<algo>;... entries separated by \"/\"";
const std::string kEither =
    "either one global entry levelN:<algo>;... or per-op entries <op>=levelN:<algo>;... separated "
    "by \"/\"";

struct Rejected {
  std::string input;
  std::string token;
  std::size_t position;
  std::string message;
};

class HcclAlgoRejects : public testing::TestWithParam<Rejected> {};

TEST_P(HcclAlgoRejects, WithTokenPositionAndValidValues) {
  const Rejected& want = GetParam();
  const auto r = parseHcclAlgo(want.input);
  ASSERT_FALSE(r.ok()) << want.input << " parsed as " << r.value().str();
  EXPECT_EQ(r.error().setting, "HCCL_ALGO");
  EXPECT_EQ(r.error().token, want.token) << want.input;
  EXPECT_EQ(r.error().position, want.position) << want.input;
  EXPECT_EQ(r.error().message, "HCCL_ALGO: " + want.message) << want.input;
  EXPECT_TRUE(r.error().source.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, HcclAlgoRejects,
    testing::Values(
        // unknown algorithm, global and per-op, with spaces, case and control characters
        Rejected{"level0:NA;level1:rng", "rng", 18,
                 "unknown algorithm \"rng\" at position 18 (level1); valid: " + kAlgos},
        Rejected{"level0:NA; level1 : rng", "rng", 21,
                 "unknown algorithm \"rng\" at position 21 (level1); valid: " + kAlgos},
        Rejected{"level0:NA;level1:Ring", "Ring", 18,
                 "unknown algorithm \"Ring\" at position 18 (level1); valid: " + kAlgos +
                     "; names are case-sensitive: did you mean \"ring\"?"},
        Rejected{
            "allreduce=level0:NA;level1:rign", "rign", 28,
            "unknown algorithm \"rign\" at position 28 (level1 of allreduce); valid: " + kAlgos},
        Rejected{"level1:ring\n", "ring\n", 8,
                 "unknown algorithm \"ring\\x0a\" at position 8 (level1); valid: " + kAlgos},
        // Unicode: whole characters, positions in characters, look-alikes named
        Rejected{"level0:NA;level1:r\u00efng", "r\u00efng", 18,
                 "unknown algorithm \"r\u00efng\" at position 18 (level1); valid: " + kAlgos +
                     "; position 19 holds '\u00ef' (U+00EF)"},
        Rejected{"level0\uff1aNA", "level0\uff1aNA", 1,
                 "missing \":\" in \"level0\uff1aNA\" at position 1; valid: levelN:<algo> with "
                 "levelN one of " +
                     kLevelsList +
                     "; position 7 holds '\uff1a' (U+FF1A full-width form): did "
                     "you mean ':'?"},
        Rejected{"level0:NA;\u00a0level1:ring", "\u00a0level1", 11,
                 "unknown level \"\\u{00A0}level1\" at position 11; valid: " + kLevelsList +
                     "; position 11 holds U+00A0 (invisible no-break space): did you mean a "
                     "plain space?"},
        Rejected{"level1:ring\xff", "ring\xff", 8,
                 "unknown algorithm \"ring\\xff\" at position 8 (level1); valid: " + kAlgos +
                     "; position 12 holds byte 0xFF (not UTF-8)"},
        Rejected{"level1:\u200bring", "\u200bring", 8,
                 "unknown algorithm \"\\u{200B}ring\" at position 8 (level1); valid: " + kAlgos +
                     "; position 8 holds U+200B (invisible zero width space): delete it?"},
        // 45 characters in (46 bytes): the position counts the two-byte '\u00e4' once
        Rejected{"allreduce=level1:ring/\u00e4=level1:NHR/allgather", "allgather", 45,
                 "missing \"=\" after op \"allgather\" at position 45; valid: "
                 "<op>=levelN:<algo>;..."},
        Rejected{"level0:star", "star", 8,
                 "unknown algorithm \"star\" at position 8 (level0); valid: " + kAlgos},
        // unknown op
        Rejected{"allredce=level0:NA;level1:ring", "allredce", 1,
                 "unknown op \"allredce\" at position 1; valid: " + kOps},
        Rejected{"AllReduce=level1:ring", "AllReduce", 1,
                 "unknown op \"AllReduce\" at position 1; valid: " + kOps +
                     "; names are case-sensitive: did you mean \"allreduce\"?"},
        Rejected{"alltoallv=level1:pairwise", "alltoallv", 1,
                 "unknown op \"alltoallv\" at position 1; valid: " + kOps +
                     "; alltoallv has no key of its own and follows \"alltoall\""},
        Rejected{"allgather=level1:ring/ allgatherv=level1:NHR", "allgatherv", 24,
                 "unknown op \"allgatherv\" at position 24; valid: " + kOps +
                     "; allgatherv has no key of its own and follows \"allgather\""},
        // unknown level
        Rejected{"level0:NA;level4:ring", "level4", 11,
                 "unknown level \"level4\" at position 11; valid: " + kLevelsList},
        Rejected{"Level1:ring", "Level1", 1,
                 "unknown level \"Level1\" at position 1; valid: " + kLevelsList +
                     "; names are case-sensitive: did you mean \"level1\"?"},
        // duplicated level and op
        Rejected{"level0:NA;level1:ring;level1:NHR", "level1", 23,
                 "duplicated level \"level1\" at position 23 (first at position 11); valid: each "
                 "of " +
                     kLevelsList + " at most once"},
        Rejected{"allreduce=level1:ring;level1:NHR", "level1", 23,
                 "duplicated level \"level1\" at position 23 (first at position 11); valid: each "
                 "of " +
                     kLevelsList + " at most once"},
        Rejected{"allreduce=level1:ring/allreduce=level1:NHR", "allreduce", 23,
                 "duplicated op \"allreduce\" at position 23 (first at position 1); valid: each op "
                 "at most once"},
        Rejected{"others=level1:ring/allgather=level1:NB/others=level1:NHR", "others", 40,
                 "duplicated op \"others\" at position 40 (first at position 1); valid: each op at "
                 "most once"},
        // global and per-op forms mixed, and more than one global entry
        Rejected{"allreduce=level1:ring/level0:NA;level1:NHR", "level0:NA;level1:NHR", 23,
                 "global entry \"level0:NA;level1:NHR\" at position 23 mixed with per-op "
                 "entries; valid: " +
                     kEither},
        Rejected{"level1:NHR/allreduce=level1:ring", "allreduce=level1:ring", 12,
                 "per-op entry \"allreduce=level1:ring\" at position 12 mixed with a global "
                 "entry; valid: " +
                     kEither},
        Rejected{"level1:ring/level1:NHR", "level1:NHR", 13,
                 "second global entry \"level1:NHR\" at position 13; valid: " + kEither},
        // more than 4 levels
        Rejected{"level0:NA;level1:ring;level2:ring;level3:ring;level0:NA", "level0:NA", 47,
                 "more than 4 levels: entry 5 \"level0:NA\" at position 47; valid: at most 4 "
                 "entries, level0..level3 each once"},
        // empty segments, leading and trailing separators
        Rejected{"level0:NA;;level1:ring", ";;", 10,
                 "empty segment \";;\" at position 10; valid: " + kLevelShape},
        Rejected{"allreduce=level1:ring//allgather=level1:NHR", "//", 22,
                 "empty segment \"//\" at position 22; valid: " + kOpShape},
        Rejected{";level1:ring", ";", 1,
                 "leading separator \";\" at position 1; valid: " + kLevelShape},
        Rejected{"  ;level1:ring", ";", 3,
                 "leading separator \";\" at position 3; valid: " + kLevelShape},
        Rejected{"/allreduce=level1:ring", "/", 1,
                 "leading separator \"/\" at position 1; valid: " + kOpShape},
        Rejected{"allreduce=;level1:ring", ";", 11,
                 "leading separator \";\" at position 11; valid: " + kLevelShape},
        Rejected{"level0:NA;level1:ring;", ";", 22,
                 "trailing separator \";\" at position 22; valid: " + kLevelShape},
        Rejected{"allreduce=level1:ring/", "/", 22,
                 "trailing separator \"/\" at position 22; valid: " + kOpShape},
        Rejected{"allreduce=level1:ring;/allgather=level1:NHR", ";", 22,
                 "trailing separator \";\" at position 22; valid: " + kLevelShape},
        // missing ':' or '=' and missing parts around them
        Rejected{"level0:NA;level1ring", "level1ring", 11,
                 "missing \":\" in \"level1ring\" at position 11; valid: levelN:<algo> with levelN "
                 "one of " +
                     kLevelsList},
        Rejected{"allreduce", "allreduce", 10,
                 "missing \"=\" after op \"allreduce\" at position 10; valid: "
                 "<op>=levelN:<algo>;..."},
        Rejected{"allgather=level1:ring/allreducelevel1:NHR", "allreducelevel1:NHR", 32,
                 "missing \"=\" after op \"allreduce\" at position 32; valid: "
                 "<op>=levelN:<algo>;..."},
        Rejected{"reducescatterlevel1:ring", "reducescatterlevel1:ring", 14,
                 "missing \"=\" after op \"reducescatter\" at position 14; valid: "
                 "<op>=levelN:<algo>;..."},
        Rejected{"=level1:ring", "=level1:ring", 1,
                 "missing op before \"=\" at position 1; valid: " + kOps},
        Rejected{"allreduce=", "allreduce=", 11,
                 "missing levels after \"allreduce=\" at position 11; valid: " + kLevelShape},
        Rejected{":ring", ":ring", 1,
                 "missing level before \":\" in \":ring\" at position 1; valid: " + kLevelsList},
        Rejected{"level0:NA;level1:", "level1:", 18,
                 "missing algorithm after \"level1:\" at position 18 (level1); valid: " + kAlgos},
        Rejected{"allreduce=level1:ring;allgather=level1:NHR", "allgather=level1:NHR", 32,
                 "unexpected \"=\" in \"allgather=level1:NHR\" at position 32; valid: per-op "
                 "entries separated by \"/\", as in "
                 "allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:NHR"},
        // per-op level0 may not be null
        Rejected{"allreduce=level0:null;level1:ring", "null", 18,
                 "\"null\" at position 18 is not allowed for level0 of allreduce; valid for a "
                 "per-op level0: ring, H-D_R, NHR, NHR_V1, NB, AHC, AHC_BROKE, pipeline, "
                 "pairwise, fullmesh, fullmesh_push, NA"},
        Rejected{"others=level1:ring;level0:null", "null", 27,
                 "\"null\" at position 27 is not allowed for level0 of others; valid for a "
                 "per-op level0: ring, H-D_R, NHR, NHR_V1, NB, AHC, AHC_BROKE, pipeline, "
                 "pairwise, fullmesh, fullmesh_push, NA"}));

// ---- canonical printing ----------------------------------------------------------------------

TEST(HcclAlgo, CanonicalText) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"level1:ring", "level0:NA;level1:ring"},
      {" level2 : NB ; level1:NHR ", "level0:NA;level1:NHR;level2:NB"},
      {"level0:null;level1:ring;level2:NA", "level0:NA;level1:ring"},
      {"level0:NA", "level0:NA"},
      {"level0:fullmesh;level3:NHR", "level0:fullmesh;level3:NHR"},
      {"level1:AHC;level2:ring", "level0:NA;level1:AHC;level2:AHC"},
      {"others=level1:ring/allgather=level0:NA;level1:H-D_R/allreduce=level1:NB",
       "allreduce=level0:NA;level1:NB/allgather=level0:NA;level1:H-D_R/"
       "others=level0:NA;level1:ring"},
      {"sendrecv=level0:NA", "sendrecv=level0:NA"},
      {"alltoall=level1:pairwise;level0:NA/gather=level2:NHR",
       "alltoall=level0:NA;level1:pairwise/gather=level0:NA;level2:NHR"},
  };
  for (const auto& [input, canonical] : cases) {
    const AlgoConfig c = parsed(input);
    EXPECT_EQ(c.str(), canonical) << input;
    const AlgoConfig again = parsed(c.str());
    EXPECT_EQ(again, c) << input;
    EXPECT_EQ(again.str(), canonical) << input;
  }
}

// ---- seeded random sweep against an independent model -----------------------------------------

struct Model {
  bool global = true;
  Levels globalLevels{};
  std::map<std::string, Levels> perKey;  // includes "others"
};

Levels expectedFor(const Model& m, OpType op) {
  if (m.global) return m.globalLevels;
  for (const auto& [key, ops] : kKeys) {
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) continue;
    if (auto it = m.perKey.find(key); it != m.perKey.end()) return it->second;
  }
  if (auto it = m.perKey.find("others"); it != m.perKey.end()) return it->second;
  return Levels{};
}

// Writes a random level list and fills `levels` with what it means.
std::string randomLevels(std::mt19937& rng, bool perOp, Levels& levels) {
  std::vector<int> order = {0, 1, 2, 3};
  std::shuffle(order.begin(), order.end(), rng);
  order.resize(1 + rng() % 4);
  std::string out;
  levels = Levels{};
  for (int level : order) {
    std::size_t pick = rng() % kWords.size();
    if (perOp && level == 0 && kWords[pick].first == "null") pick = 0;
    if (!out.empty()) out += ";";
    out += "level" + std::to_string(level) + ":" + kWords[pick].first;
    levels[static_cast<std::size_t>(level)] = kWords[pick].second;
  }
  if (levels[1] == Algorithm::AHC || levels[1] == Algorithm::AHC_Broke) levels[2] = levels[1];
  return out;
}

std::string sprinkleSpaces(std::mt19937& rng, const std::string& s) {
  std::string out;
  for (char c : s) {
    if (rng() % 5 == 0) out += (rng() % 2) ? " " : "\t";
    out += c;
  }
  if (rng() % 3 == 0) out += "  ";
  return out;
}

TEST(HcclAlgo, RandomConfigurationsMatchTheModel) {
  std::mt19937 rng(20261130);
  std::vector<std::string> keys;
  for (const auto& [key, ops] : kKeys) keys.push_back(key);
  keys.push_back("others");
  for (int round = 0; round < 2000; ++round) {
    Model m;
    std::string text;
    m.global = rng() % 3 == 0;
    if (m.global) {
      text = randomLevels(rng, false, m.globalLevels);
    } else {
      std::shuffle(keys.begin(), keys.end(), rng);
      const std::size_t n = 1 + rng() % 5;
      for (std::size_t i = 0; i < n; ++i) {
        Levels l;
        const std::string entry = keys[i] + "=" + randomLevels(rng, true, l);
        m.perKey[keys[i]] = l;
        text += (text.empty() ? "" : "/") + entry;
      }
    }
    const std::string written = sprinkleSpaces(rng, text);
    const auto r = parseHcclAlgo(written);
    ASSERT_TRUE(r.ok()) << written << ": " << r.error().message;
    const AlgoConfig& c = r.value();
    for (OpType op : kAllOps) ASSERT_EQ(levelsOf(c, op), expectedFor(m, op)) << written;
    const auto again = parseHcclAlgo(c.str());
    ASSERT_TRUE(again.ok()) << c.str();
    ASSERT_EQ(again.value(), c) << written << " -> " << c.str();
  }
}

}  // namespace
}  // namespace hccl::algo
