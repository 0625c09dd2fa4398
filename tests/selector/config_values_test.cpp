// HCCL_BUFFSIZE, HCCL_DETERMINISTIC, the selection mode and the tuning file path: accepted values
// and every kind of rejected value with its exact message.
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

}  // namespace
}  // namespace hccl::algo
