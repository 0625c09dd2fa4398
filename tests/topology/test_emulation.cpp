#include <gtest/gtest.h>

#include "support.hpp"
#include "topology/emulation.hpp"

using hccl::topo::EmulationSpec;
using hccl::topo::formatEmulationSpec;
using hccl::topo::parseEmulationSpec;
using hccl::topo::RankOrder;
using hccl::topo::serverOfRank;
using topo_test::expectError;

using Pods = std::vector<std::vector<std::uint32_t>>;

TEST(EmulationSpec, SymmetricForms) {
  EXPECT_EQ(parseEmulationSpec("8").supernodes, (Pods{{8}}));
  EXPECT_EQ(parseEmulationSpec("2x4").supernodes, (Pods{{4, 4}}));
  EXPECT_EQ(parseEmulationSpec("2 X 4").supernodes, (Pods{{4, 4}}));
  EXPECT_EQ(parseEmulationSpec(" 2 * 4 ").supernodes, (Pods{{4, 4}}));
  EXPECT_EQ(parseEmulationSpec("2x3x4").supernodes, (Pods{{4, 4, 4}, {4, 4, 4}}));
  EXPECT_EQ(parseEmulationSpec("2 supernodes x 2 servers x 4 ranks").supernodes,
            (Pods{{4, 4}, {4, 4}}));
  EXPECT_EQ(parseEmulationSpec("1 pod x 1 server x 1 rank").supernodes, (Pods{{1}}));
  EXPECT_EQ(parseEmulationSpec("4 nodes x 2 Ranks").supernodes, (Pods{{2, 2, 2, 2}}));
}

TEST(EmulationSpec, AsymmetricForms) {
  EXPECT_EQ(parseEmulationSpec("3+5").supernodes, (Pods{{3, 5}}));
  EXPECT_EQ(parseEmulationSpec("1 + 4 + 2").supernodes, (Pods{{1, 4, 2}}));
  EXPECT_EQ(parseEmulationSpec("(4+4),(4)").supernodes, (Pods{{4, 4}, {4}}));
  EXPECT_EQ(parseEmulationSpec("(2x8),(8)").supernodes, (Pods{{8, 8}, {8}}));
  EXPECT_EQ(parseEmulationSpec("2x4+1x2").supernodes, (Pods{{4, 4, 2}}));
  EXPECT_EQ(parseEmulationSpec("4+4, 4").supernodes, (Pods{{4, 4}, {4}}));
  EXPECT_EQ(parseEmulationSpec("(3)").supernodes, (Pods{{3}}));
}

TEST(EmulationSpec, RankOrder) {
  EXPECT_EQ(parseEmulationSpec("2x4").order, RankOrder::Block);
  EXPECT_EQ(parseEmulationSpec("block:2x4").order, RankOrder::Block);
  for (const char* s : {"rr:2x4", "RR : 2x4", "round-robin: 2x4", "interleaved:2x4"})
    EXPECT_EQ(parseEmulationSpec(s).order, RankOrder::RoundRobin) << s;
}

TEST(EmulationSpec, BlockPlacementFillsServersInOrder) {
  EXPECT_EQ(serverOfRank(parseEmulationSpec("3+5")),
            (std::vector<std::uint32_t>{0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(serverOfRank(parseEmulationSpec("(2+1),(1)")),
            (std::vector<std::uint32_t>{0, 0, 1, 2}));
}

TEST(EmulationSpec, RoundRobinDealsRanksAndSkipsFullServers) {
  // Worked by hand: servers of 3 and 5 take turns until server 0 is full.
  EXPECT_EQ(serverOfRank(parseEmulationSpec("rr:3+5")),
            (std::vector<std::uint32_t>{0, 1, 0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(serverOfRank(parseEmulationSpec("rr:1+4+2")),
            (std::vector<std::uint32_t>{0, 1, 2, 1, 2, 1, 1}));
  EXPECT_EQ(serverOfRank(parseEmulationSpec("rr:2x2x2")),
            (std::vector<std::uint32_t>{0, 1, 2, 3, 0, 1, 2, 3}));
}

TEST(EmulationSpec, FormatParsesBack) {
  for (const char* s : {"8", "2x4", "2x3x4", "3+5", "1+4+2", "(4+4),(4)", "rr:(2x8),(8)", "rr:3+5",
                        "6x2+1", "(1),(2),(3)", "16x8", "2x1x1"}) {
    const EmulationSpec spec = parseEmulationSpec(s);
    const std::string text = formatEmulationSpec(spec);
    EXPECT_EQ(parseEmulationSpec(text), spec) << s << " -> " << text;
  }
  EXPECT_EQ(formatEmulationSpec(parseEmulationSpec("2 supernodes x 2 servers x 4 ranks")), "2x2x4");
  EXPECT_EQ(formatEmulationSpec(parseEmulationSpec("(4+4),(4)")), "(4+4),(4)");
  EXPECT_EQ(formatEmulationSpec(parseEmulationSpec("rr:3+5")), "rr:3+5");
  EXPECT_EQ(formatEmulationSpec(parseEmulationSpec("5x2+1")), "5x2+1");
}

TEST(EmulationSpec, UnicodeIsNamedWholeWithItsColumn) {
  expectError(
      [] { parseEmulationSpec("2\u00d74"); },
      {"emulation spec \"2\u00d74\" has an unexpected character '\u00d7' (U+00D7 "
       "multiplication sign) at column 2: valid are digits, unit words, 'x' 'X' '*' '+' ',' "
       "'(' ')' ':' and spaces; did you mean 'x'?"});
  expectError([] { parseEmulationSpec("3\uff0b5"); },
              {"'\uff0b' (U+FF0B full-width form) at column 2", "did you mean '+'?"});
  expectError([] { parseEmulationSpec("2x4\u00a0"); },
              {"\"2x4\\u{00A0}\"", "U+00A0 (invisible no-break space) at column 4",
               "did you mean a plain space?"});
  expectError([] { parseEmulationSpec("2x\xff"); },
              {"\"2x\\xff\"", "byte 0xFF (not UTF-8) at column 3"});
  expectError(
      [] { parseEmulationSpec("2x4\x01"); },
      {"\"2x4\\x01\" has an unexpected character U+0001 (a control character) at column 4"});
}

TEST(EmulationSpec, CountsAndTotals) {
  const EmulationSpec s = parseEmulationSpec("(2x3),(5)");
  EXPECT_EQ(s.ranks(), 11u);
  EXPECT_EQ(s.servers(), 3u);
}

TEST(EmulationSpec, BadSpecsNameTheTokenAndWhatIsValid) {
  auto bad = [](const char* spec, const std::vector<std::string>& parts) {
    SCOPED_TRACE(spec);
    expectError([&] { parseEmulationSpec(spec); }, parts, std::string("\"") + spec + "\"");
  };
  bad("", {"empty", "2x4"});
  bad("   ", {"empty"});
  bad("2x0", {"'0' at column 3", "1 to 65536"});
  bad("0", {"'0' at column 1"});
  bad("2x99999999999999999999", {"column 3", "1 to 65536"});
  bad("2x65537", {"'65537'", "1 to 65536"});
  bad("1024x1024x2", {"more than 1048576 ranks"});
  bad("2y4", {"unknown unit 'y'", "server(s)"});
  bad("2x", {"end of the spec", "count"});
  bad("x4", {"'x' at column 1", "count"});
  bad("2x4x2x1", {"fourth factor", "at most three"});
  bad("(4+4", {"')'", "column 1"});
  bad("4+4)", {"')' at column 4"});
  bad("(2x2x2),(4)", {"three counts", "whole spec"});
  bad("3+", {"end of the spec"});
  bad("3,,4", {"',' at column 3"});
  bad("2x4#", {"'#' at column 4", "valid are"});
  bad("fast:2x4", {"rank order 'fast'", "rr"});
  bad("2 ranks x 4 servers", {"unit 'ranks' at column 3", "server(s), node(s)"});
  bad("2 servers x 2 pods x 4", {"unit 'servers' at column 3", "supernode(s)"});
  bad("4 servers", {"unit 'servers'", "rank(s)"});
  bad("rr", {"'rr' at column 1", "count"});
  bad("2x4:rr", {"':' at column 4"});
}
