#include "algorithms/config_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "common/utf8.hpp"

namespace hccl::algo {
namespace {
bool isSpace(char c) {
  return c == ' ' || c == '\t';
}
}  // namespace

StrippedText stripSpaces(std::string_view value) {
  StrippedText t;
  std::size_t position = 1;
  for (std::size_t i = 0; i < value.size(); ++position) {
    const std::size_t bytes = text::decodeAt(value, i).bytes;
    if (!isSpace(value[i])) {
      t.s.append(value.substr(i, bytes));
      t.origin.insert(t.origin.end(), bytes, position);
    }
    i += bytes;
  }
  t.originalLength = position - 1;
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
  return text::quoted(text);
}

std::string nonAsciiHint(const StrippedText& t, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end;) {
    const text::Char c = text::decodeAt(t.s, i);
    if (!c.valid || c.code >= 0x80) {
      // The hint's own position counting starts at this character.
      return text::nonAsciiHint(t.view(i, i + c.bytes), t.posOf(i));
    }
    i += c.bytes;
  }
  return {};
}

}  // namespace hccl::algo
