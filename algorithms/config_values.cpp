#include "algorithms/config_values.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <array>
#include <cctype>

#include "algorithms/config_text.hpp"

namespace hccl::algo {
namespace {

ConfigError error(std::string_view setting, std::string_view token, std::size_t position,
                  std::string message) {
  return ConfigError{.setting = std::string(setting),
                     .token = std::string(token),
                     .position = position,
                     .message = fmt::format("{}: {}", setting, message),
                     .source = {}};
}

// Looks a word up case-insensitively among `names`; the enum is the index.
template <typename E, std::size_t N>
ConfigResult<E> parseWord(std::string_view setting, const std::array<std::string_view, N>& names,
                          std::string_view value) {
  std::size_t offset = 0;
  const std::string_view word = trimmed(value, offset);
  for (std::size_t i = 0; i < N; ++i)
    if (equalsIgnoringCase(word, names[i])) return static_cast<E>(i);
  const std::string valid = fmt::format("{} (case-insensitive)", fmt::join(names, ", "));
  if (word.empty()) return error(setting, word, 0, fmt::format("empty value; valid: {}", valid));
  return error(
      setting, word, offset + 1,
      fmt::format("unknown value {} at position {}; valid: {}", quote(word), offset + 1, valid));
}

constexpr std::array<std::string_view, 3> kDeterminismNames = {"false", "true", "strict"};
constexpr std::array<std::string_view, 2> kSelectionNames = {"model", "hccl_rules"};

}  // namespace

ConfigResult<std::uint32_t> parseBuffSize(std::string_view value) {
  constexpr std::string_view kSetting = "HCCL_BUFFSIZE";
  const std::string valid = fmt::format("an integer number of MB from 1 to {} (default {})",
                                        kMaxBuffSizeMB, kDefaultBuffSizeMB);
  std::size_t offset = 0;
  const std::string_view text = trimmed(value, offset);
  if (text.empty()) return error(kSetting, text, 0, fmt::format("empty value; valid: {}", valid));
  const std::size_t pos = offset + 1;
  if (text.front() == '-') {
    return error(
        kSetting, text, pos,
        fmt::format("negative value {} at position {}; valid: {}", quote(text), pos, valid));
  }
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) {
    return error(
        kSetting, text, pos,
        fmt::format("not a number: {} at position {}; valid: {}", quote(text), pos, valid));
  }
  if (digits < text.size()) {
    const std::string_view junk = text.substr(digits);
    const std::size_t junkPos = pos + digits;
    return error(kSetting, junk, junkPos,
                 fmt::format("unexpected {} after the number at position {}; valid: {}",
                             quote(junk), junkPos, valid));
  }
  std::uint64_t mb = 0;
  for (char c : text) {
    mb = mb * 10 + static_cast<std::uint64_t>(c - '0');
    if (mb > kMaxBuffSizeMB) {
      return error(kSetting, text, pos,
                   fmt::format("value {} at position {} is out of range; valid: {}", quote(text),
                               pos, valid));
    }
  }
  if (mb == 0) {
    return error(
        kSetting, text, pos,
        fmt::format("value {} at position {} is too small; valid: {}", quote(text), pos, valid));
  }
  return static_cast<std::uint32_t>(mb);
}

std::string_view name(Determinism d) {
  return kDeterminismNames[static_cast<std::size_t>(d)];
}

ConfigResult<Determinism> parseDeterministic(std::string_view value) {
  return parseWord<Determinism>("HCCL_DETERMINISTIC", kDeterminismNames, value);
}

std::string_view name(SelectionMode m) {
  return kSelectionNames[static_cast<std::size_t>(m)];
}

ConfigResult<SelectionMode> parseSelectionMode(std::string_view value) {
  return parseWord<SelectionMode>("selection mode", kSelectionNames, value);
}

ConfigResult<std::string> parseTuningFile(std::string_view value) {
  if (isBlank(value)) {
    return error("tuning file", value, 0, "empty value; valid: a path to a JSON tuning file");
  }
  return std::string(value);
}

}  // namespace hccl::algo
