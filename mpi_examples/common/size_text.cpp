#include "common/size_text.hpp"

#include <fmt/format.h>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <utility>

namespace examples {

namespace {

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

std::optional<std::size_t> multiplierFor(std::string_view suffix) {
  static const std::array<std::pair<std::string_view, std::size_t>, 10> kSuffixes{{
      {"", 1},
      {"b", 1},
      {"k", std::size_t{1} << 10},
      {"kib", std::size_t{1} << 10},
      {"kb", std::size_t{1} << 10},
      {"m", std::size_t{1} << 20},
      {"mib", std::size_t{1} << 20},
      {"mb", std::size_t{1} << 20},
      {"g", std::size_t{1} << 30},
      {"gib", std::size_t{1} << 30},
  }};
  const std::string key = lower(suffix);
  for (const auto& [name, factor] : kSuffixes) {
    if (name == key) return factor;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::size_t> parseSize(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  std::size_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc{} || end == text.data()) return std::nullopt;
  std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  const auto factor = multiplierFor(suffix);
  if (!factor) return std::nullopt;
  if (number > std::numeric_limits<std::size_t>::max() / *factor) return std::nullopt;
  return number * *factor;
}

std::string formatSize(std::size_t bytes) {
  static constexpr std::array<std::string_view, 4> kUnits{"B", "KiB", "MiB", "GiB"};
  std::size_t unit = 0;
  std::size_t scale = 1;
  while (unit + 1 < kUnits.size() && bytes >= scale * 1024) {
    scale *= 1024;
    ++unit;
  }
  if (bytes % scale == 0) return fmt::format("{} {}", bytes / scale, kUnits[unit]);
  return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(scale),
                     kUnits[unit]);
}

}  // namespace examples
