#include "algorithms/config_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace hccl::algo {
namespace {
bool isSpace(char c) {
  return c == ' ' || c == '\t';
}
}  // namespace

StrippedText stripSpaces(std::string_view value) {
  StrippedText t;
  t.originalLength = value.size();
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (isSpace(value[i])) continue;
    t.s.push_back(value[i]);
    t.origin.push_back(i + 1);
  }
  return t;
}

std::string_view trimmed(std::string_view value, std::size_t& offset) {
  offset = 0;
  while (offset < value.size() && isSpace(value[offset])) ++offset;
  std::size_t end = value.size();
  while (end > offset && isSpace(value[end - 1])) --end;
  return value.substr(offset, end - offset);
}

bool isBlank(std::string_view value) {
  std::size_t offset = 0;
  return trimmed(value, offset).empty();
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f || c == '"' || c == '\\') {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace hccl::algo
