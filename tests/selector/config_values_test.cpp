// HCCL_BUFFSIZE, HCCL_DETERMINISTIC, the selection mode, the tuning file path, and the engine's
// timeout, intra-RoCE switch, verbosity, shared-memory slot size and transport lists: accepted
// values and every kind of rejected value with its exact message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/config_values.hpp"

namespace hccl::algo {
namespace {

const std::string kBuffValid = "valid: an integer number of MB from 1 to 4294967295 (default 200)";

TEST(BuffSize, AcceptsPositiveIntegers) {
  const std::vector<std::pair<std::string, std::uint32_t>> good = {
      {"1", 1},     {"200", 200},  {" 512 ", 512},
      {"\t64", 64}, {"0200", 200}, {"4294967295", 4294967295u},
  };
  for (const auto& [text, mb] : good) {
    const auto r = parseBuffSize(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_EQ(r.value(), mb) << text;
  }
}

struct Bad {
  std::string input;
  std::string token;
  std::size_t position;
  std::string message;
};

class BuffSizeRejects : public testing::TestWithParam<Bad> {};

TEST_P(BuffSizeRejects, WithMessage) {
  const Bad& want = GetParam();
  const auto r = parseBuffSize(want.input);
  ASSERT_FALSE(r.ok()) << want.input << " gave " << r.value();
  EXPECT_EQ(r.error().setting, "HCCL_BUFFSIZE");
  EXPECT_EQ(r.error().token, want.token);
  EXPECT_EQ(r.error().position, want.position);
  EXPECT_EQ(r.error().message, "HCCL_BUFFSIZE: " + want.message + "; " + kBuffValid);
}

INSTANTIATE_TEST_SUITE_P(
    Values, BuffSizeRejects,
    testing::Values(Bad{"", "", 0, "empty value"}, Bad{"  ", "", 0, "empty value"},
                    Bad{"0", "0", 1, "value \"0\" at position 1 is too small"},
                    Bad{" 000", "000", 2, "value \"000\" at position 2 is too small"},
                    Bad{"-5", "-5", 1, "negative value \"-5\" at position 1"},
                    Bad{"abc", "abc", 1, "not a number: \"abc\" at position 1"},
                    Bad{"+5", "+5", 1, "not a number: \"+5\" at position 1"},
                    Bad{"12MB", "MB", 3, "unexpected \"MB\" after the number at position 3"},
                    Bad{"1.5", ".5", 2, "unexpected \".5\" after the number at position 2"},
                    Bad{"  7x ", "x", 4, "unexpected \"x\" after the number at position 4"},
                    Bad{"1 2", " 2", 2, "unexpected \" 2\" after the number at position 2"},
                    Bad{"4294967296", "4294967296", 1,
                        "value \"4294967296\" at position 1 is out of range"},
                    Bad{"99999999999999999999999", "99999999999999999999999", 1,
                        "value \"99999999999999999999999\" at position 1 is out of range"}));

TEST(Deterministic, AcceptsFalseTrueStrictInAnyCase) {
  const std::vector<std::pair<std::string, Determinism>> good = {
      {"false", Determinism::Off}, {"FALSE", Determinism::Off},     {"true", Determinism::On},
      {" True ", Determinism::On}, {"strict", Determinism::Strict}, {"STRICT", Determinism::Strict},
  };
  for (const auto& [text, d] : good) {
    const auto r = parseDeterministic(text);
    ASSERT_TRUE(r.ok()) << text;
    EXPECT_EQ(r.value(), d) << text;
  }
  EXPECT_EQ(name(Determinism::Off), "false");
  EXPECT_EQ(name(Determinism::On), "true");
  EXPECT_EQ(name(Determinism::Strict), "strict");
}

TEST(Deterministic, RejectsOtherWords) {
  const std::string valid = "valid: false, true, strict (case-insensitive)";
  const std::vector<Bad> bad = {
      {"yes", "yes", 1, "unknown value \"yes\" at position 1"},
      {"  1", "1", 3, "unknown value \"1\" at position 3"},
      {"truee", "truee", 1, "unknown value \"truee\" at position 1"},
      {"", "", 0, "empty value"},
  };
  for (const Bad& b : bad) {
    const auto r = parseDeterministic(b.input);
    ASSERT_FALSE(r.ok()) << b.input;
    EXPECT_EQ(r.error().token, b.token);
    EXPECT_EQ(r.error().position, b.position);
    EXPECT_EQ(r.error().message, "HCCL_DETERMINISTIC: " + b.message + "; " + valid);
  }
}

TEST(SelectionModeValue, ParsesAndRejects) {
  EXPECT_EQ(parseSelectionMode("model").value(), SelectionMode::Model);
  EXPECT_EQ(parseSelectionMode(" HCCL_RULES").value(), SelectionMode::HcclRules);
  EXPECT_EQ(name(SelectionMode::Model), "model");
  EXPECT_EQ(name(SelectionMode::HcclRules), "hccl_rules");
  const auto r = parseSelectionMode("rules");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "selection mode: unknown value \"rules\" at position 1; valid: model, hccl_rules "
            "(case-insensitive)");
}

TEST(TuningFileValue, KeepsThePathAsWritten) {
  EXPECT_EQ(parseTuningFile("/tmp/my tuning.json").value(), "/tmp/my tuning.json");
  const auto r = parseTuningFile(" ");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tuning file: empty value; valid: a path to a JSON tuning file");
}

TEST(BuffSize, NamesWholeCharacters) {
  const auto r = parseBuffSize("\uff12\uff10\uff10");  // full-width "200"
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "HCCL_BUFFSIZE: not a number: \"\uff12\uff10\uff10\" at position 1; " + kBuffValid +
                "; position 1 holds '\uff12' (U+FF12 full-width form): did you mean '2'?");
  const auto m = parseBuffSize("64\u00a0");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().position, 3u);
  EXPECT_EQ(m.error().message,
            "HCCL_BUFFSIZE: unexpected \"\\u{00A0}\" after the number at position 3; " +
                kBuffValid +
                "; position 3 holds U+00A0 (invisible no-break space): did you mean a plain "
                "space?");
}

TEST(ByteSize, UnitsAndOverflow) {
  const std::vector<std::pair<std::string, std::uint64_t>> good = {
      {"0", 0},
      {"4096", 4096},
      {" 64K ", 65536},
      {"64KiB", 65536},
      {"16M", 16 << 20},
      {"1G", 1u << 30},
      {"3GiB", 3ull << 30},
      {"7B", 7},
      {"18446744073709551615", UINT64_MAX},
      {"17179869183G", 17179869183ull << 30},
  };
  for (const auto& [text, bytes] : good) {
    const auto r = parseByteSize("--max", text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_EQ(r.value(), bytes) << text;
  }
  const std::string valid =
      "valid: a whole number of bytes with an optional unit (B, K, M, G, or KiB, MiB, GiB), e.g. "
      "4096, 64K, 16M";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty value; " + valid},
      {"-1", "\"-1\" at position 1 is not a size; " + valid},
      {"+4K", "\"+4K\" at position 1 is not a size; " + valid},
      {"k", "\"k\" at position 1 is not a size; " + valid},
      {"4k", "unknown unit \"k\" in \"4k\" at position 2; " + valid},
      {"4 K", "unknown unit \" K\" in \"4 K\" at position 2; " + valid},
      {"1.5M", "unknown unit \".5M\" in \"1.5M\" at position 2; " + valid},
      {"4\uff2b", "unknown unit \"\uff2b\" in \"4\uff2b\" at position 2; " + valid +
                      "; position 2 holds '\uff2b' (U+FF2B full-width form): did you mean 'K'?"},
      {"18446744073709551616", "\"18446744073709551616\" at position 1 is out of range; " + valid +
                                   ", at most 18446744073709551615 bytes"},
      {"17179869184G", "\"17179869184G\" at position 1 is out of range; " + valid +
                           ", at most 18446744073709551615 bytes"},
  };
  for (const auto& [text, message] : bad) {
    const auto r = parseByteSize("--max", text);
    ASSERT_FALSE(r.ok()) << text << " gave " << r.value();
    EXPECT_EQ(r.error().message, "--max: " + message) << text;
  }
}

// ---- the engine's own settings ----------------------------------------------------------------

const std::string kSlotValid =
    "valid: a multiple of 64 bytes from 1024 to 1048576 (1K to 1M; units B, K, KiB, M, MiB)";

TEST(ShmSlotBytes, MultiplesOf64FromOneKiBToOneMiB) {
  const std::vector<std::pair<std::string, std::uint64_t>> good = {
      {"1024", 1024},   {"1088", 1088},       {" 16384 ", 16384}, {"16K", 16384},
      {"64KiB", 65536}, {"1M", 1u << 20},     {"1MiB", 1u << 20}, {"1048576", 1u << 20},
      {"2K", 2048},     {"1048512", 1048512},
  };
  for (const auto& [text, bytes] : good) {
    const auto r = parseShmSlotBytes(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_EQ(r.value(), bytes) << text;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty value; " + kSlotValid},
      {"1000", "value \"1000\" (1000 bytes) at position 1 is too small; " + kSlotValid},
      {"0", "value \"0\" (0 bytes) at position 1 is too small; " + kSlotValid},
      {"1025", "value \"1025\" (1025 bytes) at position 1 is not a multiple of 64; " + kSlotValid},
      {" 16400",
       "value \"16400\" (16400 bytes) at position 2 is not a multiple of 64; " + kSlotValid},
      {"1048640", "value \"1048640\" (1048640 bytes) at position 1 is too large; " + kSlotValid},
      {"2M", "value \"2M\" (2097152 bytes) at position 1 is too large; " + kSlotValid},
      {"1G", "value \"1G\" (1073741824 bytes) at position 1 is too large; " + kSlotValid},
      {"16k", "unknown unit \"k\" in \"16k\" at position 3; " + kSlotValid},
      {"-16384", "\"-16384\" at position 1 is not a size; " + kSlotValid},
      {"lots", "\"lots\" at position 1 is not a size; " + kSlotValid},
      {"99999999999999999999",
       "\"99999999999999999999\" at position 1 is out of range; " + kSlotValid},
  };
  for (const auto& [text, message] : bad) {
    const auto r = parseShmSlotBytes(text);
    ASSERT_FALSE(r.ok()) << text << " gave " << r.value();
    EXPECT_EQ(r.error().setting, "shm_slot_bytes");
    EXPECT_EQ(r.error().message, "shm_slot_bytes: " + message) << text;
  }
}

const std::string kTimeoutValid =
    "valid: 0 (no timeout) or 0.001 to 604800 seconds (1 ms to a week)";

TEST(Timeout, AcceptsZeroAndOneMillisecondUpward) {
  const std::vector<std::pair<std::string, std::int64_t>> good = {
      {"0", 0},
      {"0.0", 0},
      {"000", 0},
      {" 30 ", 30000},
      {"0.001", 1},
      {"0.0015", 1},
      {"1e-3", 1},
      {"0.5", 500},
      {"1836", 1836000},
      {"2E3", 2000000},
      {".25", 250},
      {"5.", 5000},
      {"604800", 604800000},
      {"6.048e5", 604800000},
      {"0e-400", 0},
  };
  for (const auto& [text, ms] : good) {
    const auto r = parseTimeout(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_EQ(r.value().count(), ms) << text;
  }
}

TEST(Timeout, RejectsWhatWouldMisleadWithTheValidRange) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0.0004", "value \"0.0004\" at position 1 is below 1 ms (it would disable the timeout)"},
      {"1e-9", "value \"1e-9\" at position 1 is below 1 ms (it would disable the timeout)"},
      {"1e-400", "value \"1e-400\" at position 1 is below 1 ms (it would disable the timeout)"},
      {"0.0009999",
       "value \"0.0009999\" at position 1 is below 1 ms (it would disable the timeout)"},
      {"-1", "value \"-1\" at position 1 is negative"},
      {" -0", "value \"-0\" at position 2 is negative"},
      {"+5", "value \"+5\" at position 1 has a sign"},
      {"nan", "value \"nan\" at position 1 is not a finite number (\"0\" disables the timeout)"},
      {"inf", "value \"inf\" at position 1 is not a finite number (\"0\" disables the timeout)"},
      {"Infinity",
       "value \"Infinity\" at position 1 is not a finite number (\"0\" disables the "
       "timeout)"},
      {"604800.001", "value \"604800.001\" at position 1 is above the maximum"},
      {"1e300", "value \"1e300\" at position 1 is above the maximum"},
      {"1e400", "value \"1e400\" at position 1 is above the maximum"},
      {"9999999999999999999999",
       "value \"9999999999999999999999\" at position 1 is above the "
       "maximum"},
      {"", "empty value"},
      {"abc", "not a number: \"abc\" at position 1"},
      {".", "not a number: \".\" at position 1"},
      {"0x10", "unexpected \"x10\" after the number at position 2"},
      {"30s", "unexpected \"s\" after the number at position 3"},
      {"1e", "unexpected \"e\" after the number at position 2"},
      {"1.2.3", "unexpected \".3\" after the number at position 4"},
      {"5 000", "unexpected \" 000\" after the number at position 2"},
  };
  for (const auto& [text, message] : bad) {
    const auto r = parseTimeout(text);
    ASSERT_FALSE(r.ok()) << text << " gave " << r.value().count() << " ms";
    EXPECT_EQ(r.error().setting, "HCCL_EXEC_TIMEOUT");
    const std::string tail = message.starts_with("unexpected") ? ", no unit" : std::string();
    EXPECT_EQ(r.error().message, "HCCL_EXEC_TIMEOUT: " + message + "; " + kTimeoutValid + tail)
        << text;
  }
  const auto wide = parseTimeout("\uff15");  // full-width 5
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.error().message, "HCCL_EXEC_TIMEOUT: not a number: \"\uff15\" at position 1; " +
                                      kTimeoutValid +
                                      "; position 1 holds '\uff15' (U+FF15 full-width form): did "
                                      "you mean '5'?");
}

TEST(IntraRoce, ZeroOrOne) {
  EXPECT_FALSE(parseIntraRoce("0").value());
  EXPECT_TRUE(parseIntraRoce(" 1 ").value());
  for (const char* bad : {"2", "yes", "true", "01", "-1"}) {
    const auto r = parseIntraRoce(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message,
              "HCCL_INTRA_ROCE_ENABLE: unknown value \"" + std::string(bad) +
                  "\" at position 1; valid: 0 (same-server traffic over HCCS, the default) or 1 "
                  "(over the RoCE class)");
  }
}

TEST(Verbose, IntegerInRange) {
  EXPECT_EQ(parseVerbose("0").value(), 0);
  EXPECT_EQ(parseVerbose(" 2").value(), 2);
  EXPECT_EQ(parseVerbose("100").value(), 100);
  for (const char* bad : {"-1", "101", "2.5", "x", "99999999999999999999"}) {
    const auto r = parseVerbose(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message, "verbose: invalid value \"" + std::string(bad) +
                                     "\" at position 1; valid: an integer from 0 to 100");
  }
}

const std::string kTlsValid =
    "valid: UCX_TLS syntax, names separated by \",\" (e.g. \"sm,self\", \"rc_verbs,ud:aux\"), "
    "\"^\" first for all but these";

TEST(TransportList, KeepsNamesDropsSpaces) {
  EXPECT_EQ(parseTransportList("roce_tls", "tcp").value(), "tcp");
  EXPECT_EQ(parseTransportList("roce_tls", " rc_verbs , ud:aux ").value(), "rc_verbs,ud:aux");
  EXPECT_EQ(parseTransportList("hccs_tls", "^tcp,cma").value(), "^tcp,cma");
  EXPECT_EQ(parseTransportList("hccs_tls", "self,sm,cma").value(), "self,sm,cma");
}

TEST(TransportList, RejectsWithPositionAndCharacter) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty value"},
      {"sm,,tcp", "empty transport name at position 4"},
      {"sm,", "empty transport name at position 4"},
      {"^", "empty transport name at position 2"},
      {"sm tcp", "transport name \"sm tcp\" at position 1 holds ' ' at position 3"},
      {"sm;tcp", "transport name \"sm;tcp\" at position 1 holds ';' at position 3"},
      {"sm^tcp", "transport name \"sm^tcp\" at position 1 holds '^' at position 3"},
      {"sm\uff0ctcp",
       "transport name \"sm\uff0ctcp\" at position 1 holds '\uff0c' (U+FF0C "
       "full-width form) at position 3"},
      {"\u00e9,tcp,s\xffm",
       "transport name \"\u00e9\" at position 1 holds '\u00e9' (U+00E9) at "
       "position 1"},
      {"tcp,s\xffm",
       "transport name \"s\\xffm\" at position 5 holds byte 0xFF (not UTF-8) at "
       "position 6"},
  };
  for (const auto& [text, message] : bad) {
    const auto r = parseTransportList("roce_tls", text);
    ASSERT_FALSE(r.ok()) << text << " gave " << r.value();
    EXPECT_EQ(r.error().message, "roce_tls: " + message + "; " + kTlsValid) << text;
  }
}

}  // namespace
}  // namespace hccl::algo
