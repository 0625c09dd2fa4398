#include "algorithms/config_values.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "algorithms/config_text.hpp"
#include "common/utf8.hpp"

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
  return error(setting, word, offset + 1,
               fmt::format("unknown value {} at position {}; valid: {}{}", quote(word), offset + 1,
                           valid, text::nonAsciiHint(word, offset + 1)));
}

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

std::size_t digitsAt(std::string_view text, std::size_t i) {
  std::size_t n = 0;
  while (i + n < text.size() && isDigit(text[i + n])) ++n;
  return n;
}

constexpr std::array<std::string_view, 3> kDeterminismNames = {"false", "true", "strict"};
constexpr std::array<std::string_view, 2> kSelectionNames = {"model", "hccl_rules"};
constexpr std::array<std::string_view, 3> kLevel0LinkNames = {"auto", "shm", "tagged"};

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
    return error(kSetting, text, pos,
                 fmt::format("not a number: {} at position {}; valid: {}{}", quote(text), pos,
                             valid, text::nonAsciiHint(text, pos)));
  }
  if (digits < text.size()) {
    const std::string_view junk = text.substr(digits);
    const std::size_t junkPos = pos + digits;
    return error(kSetting, junk, junkPos,
                 fmt::format("unexpected {} after the number at position {}; valid: {}{}",
                             quote(junk), junkPos, valid, text::nonAsciiHint(junk, junkPos)));
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

std::string_view name(Level0Link l) {
  return kLevel0LinkNames[static_cast<std::size_t>(l)];
}

ConfigResult<Level0Link> parseLevel0Link(std::string_view value) {
  return parseWord<Level0Link>("level0_link", kLevel0LinkNames, value);
}

ConfigResult<std::string> parseTuningFile(std::string_view value) {
  if (isBlank(value)) {
    return error("tuning file", value, 0, "empty value; valid: a path to a JSON tuning file");
  }
  return std::string(value);
}

namespace {

// parseByteSize with what is valid said as `valid`, and `beyond` after it when the number
// overflows.
ConfigResult<std::uint64_t> byteSize(std::string_view setting, std::string_view value,
                                     std::string_view valid, std::string_view beyond) {
  constexpr std::array<std::pair<std::string_view, unsigned>, 7> kUnits = {
      {{"B", 0}, {"K", 10}, {"KiB", 10}, {"M", 20}, {"MiB", 20}, {"G", 30}, {"GiB", 30}}};
  std::size_t offset = 0;
  const std::string_view text = trimmed(value, offset);
  if (text.empty()) return error(setting, text, 0, fmt::format("empty value; valid: {}", valid));
  const std::size_t pos = offset + 1;
  const std::size_t digits = digitsAt(text, 0);
  if (digits == 0) {
    return error(setting, text, pos,
                 fmt::format("{} at position {} is not a size; valid: {}{}", quote(text), pos,
                             valid, text::nonAsciiHint(text, pos)));
  }
  const std::string_view unit = text.substr(digits);
  unsigned shift = 0;
  if (!unit.empty()) {
    const auto it =
        std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& u) { return u.first == unit; });
    if (it == kUnits.end()) {
      const std::size_t unitPos = pos + digits;  // digits are ASCII: bytes are characters
      return error(setting, unit, unitPos,
                   fmt::format("unknown unit {} in {} at position {}; valid: {}{}", quote(unit),
                               quote(text), unitPos, valid, text::nonAsciiHint(unit, unitPos)));
    }
    shift = it->second;
  }
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc() || (shift > 0 && number > (UINT64_MAX >> shift))) {
    return error(setting, text, pos,
                 fmt::format("{} at position {} is out of range; valid: {}{}", quote(text), pos,
                             valid, beyond));
  }
  return number << shift;
}

}  // namespace

ConfigResult<std::uint64_t> parseByteSize(std::string_view setting, std::string_view value) {
  return byteSize(setting, value,
                  "a whole number of bytes with an optional unit (B, K, M, G, or KiB, MiB, GiB), "
                  "e.g. 4096, 64K, 16M",
                  fmt::format(", at most {} bytes", UINT64_MAX));
}

ConfigResult<std::uint64_t> parseShmSlotBytes(std::string_view value) {
  constexpr std::string_view kSetting = "shm_slot_bytes";
  const std::string valid =
      fmt::format("a multiple of {} bytes from {} to {} (1K to 1M; units B, K, KiB, M, MiB)",
                  kShmSlotAlign, kMinShmSlotBytes, kMaxShmSlotBytes);
  auto bytes = byteSize(kSetting, value, valid, "");
  if (!bytes.ok()) return bytes;
  const std::uint64_t b = bytes.value();
  if (b >= kMinShmSlotBytes && b <= kMaxShmSlotBytes && b % kShmSlotAlign == 0) return b;
  std::size_t offset = 0;
  const std::string_view text = trimmed(value, offset);
  const std::string problem = b < kMinShmSlotBytes ? std::string("is too small")
                              : b > kMaxShmSlotBytes
                                  ? std::string("is too large")
                                  : fmt::format("is not a multiple of {}", kShmSlotAlign);
  return error(kSetting, text, offset + 1,
               fmt::format("value {} ({} bytes) at position {} {}; valid: {}", quote(text), b,
                           offset + 1, problem, valid));
}

ConfigResult<std::chrono::milliseconds> parseTimeout(std::string_view value) {
  constexpr std::string_view kSetting = "HCCL_EXEC_TIMEOUT";
  // Short enough, with the longest source appended, for the 255 bytes a set-up error gets when
  // the ranks share it (communicator.cpp's Hello::error).
  const std::string valid = fmt::format("0 (no timeout) or {} to {} seconds (1 ms to a week)",
                                        kMinTimeoutSeconds, kMaxTimeoutSeconds);
  std::size_t offset = 0;
  const std::string_view text = trimmed(value, offset);
  if (text.empty()) return error(kSetting, text, 0, fmt::format("empty value; valid: {}", valid));
  const std::size_t pos = offset + 1;
  const auto reject = [&](std::string_view problem) {
    return error(
        kSetting, text, pos,
        fmt::format("value {} at position {} {}; valid: {}", quote(text), pos, problem, valid));
  };
  if (text.front() == '-') return reject("is negative");
  if (text.front() == '+') return reject("has a sign");
  // digits ["." digits] [("e" | "E") ["+" | "-"] digits], with a digit before or after the point.
  std::size_t i = digitsAt(text, 0);
  std::size_t mantissa = i;
  if (i < text.size() && text[i] == '.') {
    const std::size_t fraction = digitsAt(text, i + 1);
    mantissa += fraction;
    i += 1 + fraction;
  }
  if (mantissa == 0) {
    if (equalsIgnoringCase(text, "inf") || equalsIgnoringCase(text, "infinity") ||
        equalsIgnoringCase(text, "nan"))
      return reject("is not a finite number (\"0\" disables the timeout)");
    return error(kSetting, text, pos,
                 fmt::format("not a number: {} at position {}; valid: {}{}", quote(text), pos,
                             valid, text::nonAsciiHint(text, pos)));
  }
  bool negativeExponent = false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    const std::size_t exponent = digitsAt(text, j);
    if (exponent > 0) {
      negativeExponent = text[i + 1] == '-';
      i = j + exponent;
    }
  }
  if (i < text.size()) {
    const std::string_view junk = text.substr(i);
    const std::size_t junkPos = pos + i;  // ASCII so far: bytes are characters
    return error(kSetting, junk, junkPos,
                 fmt::format("unexpected {} after the number at position {}; valid: {}, no "
                             "unit{}",
                             quote(junk), junkPos, valid, text::nonAsciiHint(junk, junkPos)));
  }
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  // Out of range with a negative exponent is an underflow: a tiny number, not a huge one.
  const bool underflow = ec == std::errc::result_out_of_range && negativeExponent;
  if (underflow || (ec == std::errc() && seconds > 0 && seconds < kMinTimeoutSeconds))
    return reject("is below 1 ms (it would disable the timeout)");
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
      seconds > kMaxTimeoutSeconds)
    return reject("is above the maximum");
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::floor(seconds * 1000)));
}

ConfigResult<bool> parseIntraRoce(std::string_view value) {
  constexpr std::string_view kSetting = "HCCL_INTRA_ROCE_ENABLE";
  constexpr std::string_view kValid =
      "0 (same-server traffic over HCCS, the default) or 1 (over the RoCE class)";
  std::size_t offset = 0;
  const std::string_view text = trimmed(value, offset);
  if (text == "0" || text == "1") return text == "1";
  if (text.empty()) return error(kSetting, text, 0, fmt::format("empty value; valid: {}", kValid));
  return error(kSetting, text, offset + 1,
               fmt::format("unknown value {} at position {}; valid: {}{}", quote(text), offset + 1,
                           kValid, text::nonAsciiHint(text, offset + 1)));
}

ConfigResult<int> parseVerbose(std::string_view value) {
  constexpr std::string_view kSetting = "verbose";
  const std::string valid = fmt::format("an integer from 0 to {}", kMaxVerbose);
  std::size_t offset = 0;
  const std::string_view text = trimmed(value, offset);
  if (text.empty()) return error(kSetting, text, 0, fmt::format("empty value; valid: {}", valid));
  const std::size_t digits = digitsAt(text, 0);
  int level = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, level);
  if (digits == 0 || digits < text.size() || ec != std::errc() || level > kMaxVerbose) {
    return error(kSetting, text, offset + 1,
                 fmt::format("invalid value {} at position {}; valid: {}{}", quote(text),
                             offset + 1, valid, text::nonAsciiHint(text, offset + 1)));
  }
  return level;
}

ConfigResult<std::string> parseTransportList(std::string_view setting, std::string_view value) {
  constexpr std::string_view kValid =
      "UCX_TLS syntax, names separated by \",\" (e.g. \"sm,self\", \"rc_verbs,ud:aux\"), \"^\" "
      "first for all but these";
  std::size_t offset = 0;
  std::string_view text = trimmed(value, offset);
  if (text.empty()) return error(setting, text, 0, fmt::format("empty value; valid: {}", kValid));
  std::string out;
  std::size_t at = offset;  // byte offset of `text` in `value`
  if (text.front() == '^') {
    out = "^";
    text.remove_prefix(1);
    ++at;
  }
  const auto nameChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
  };
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view raw = text.substr(0, comma);
    std::size_t lead = 0;
    const std::string_view name = trimmed(raw, lead);
    const std::size_t namePos = text::charPosition(value, at + lead);
    if (name.empty()) {
      return error(setting, raw, namePos,
                   fmt::format("empty transport name at position {}; valid: {}", namePos, kValid));
    }
    for (std::size_t k = 0; k < name.size(); ++k) {
      if (nameChar(name[k])) continue;
      const std::size_t badPos = text::charPosition(value, at + lead + k);
      return error(setting, name, badPos,
                   fmt::format("transport name {} at position {} holds {} at position {}; valid: "
                               "{}",
                               quote(name), namePos, text::describe(name, k), badPos, kValid));
    }
    out.append(out.empty() || out == "^" ? "" : ",").append(name);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    at += comma + 1;
  }
  return out;
}

}  // namespace hccl::algo
