// Text helpers shared by the configuration parsers: space removal that remembers where every
// character came from (error positions refer to the value as the user wrote it), and quoting of
// tokens for messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hccl::algo {

// Positions are characters, not bytes (UTF-8; a byte that is not UTF-8 counts as one), so that
// "position 12" is the twelfth character the user sees. Byte indices into s stay byte indices.
struct StrippedText {
  std::string s;                    // the value without spaces and tabs
  std::vector<std::size_t> origin;  // per byte of s: 1-based position of its character
  std::size_t originalLength = 0;   // in characters

  // Position of s[i] in the original value; one past its end for i == s.size().
  std::size_t posOf(std::size_t i) const {
    return i < origin.size() ? origin[i] : originalLength + 1;
  }
  // Position just after s[i - 1] (the end of a character): where a missing one was expected.
  std::size_t posAfter(std::size_t i) const { return i == 0 ? 1 : origin[i - 1] + 1; }
  std::string_view view(std::size_t begin, std::size_t end) const {
    return std::string_view(s).substr(begin, end - begin);
  }
};

StrippedText stripSpaces(std::string_view value);

// `value` without leading and trailing spaces and tabs; `offset` receives how many were dropped
// at the front.
std::string_view trimmed(std::string_view value, std::size_t& offset);
// True when `value` is empty or only spaces and tabs: such a value counts as "not set".
bool isBlank(std::string_view value);

// ASCII case-insensitive equality, for the settings whose words are case-insensitive and for
// "did you mean" hints.
bool equalsIgnoringCase(std::string_view a, std::string_view b);

// "text" in double quotes on one line: printable characters (UTF-8 included) as they are, control
// bytes and bytes that are not UTF-8 as \xNN, invisible characters as \u{XXXX} (text::quoted).
std::string quote(std::string_view text);

// For a message rejecting s[r.begin, r.end): the first character in it that is not ASCII, named
// with its position in the original value ("; position 9 holds '：' (U+FF1A full-width form):
// did you mean ':'?"); empty when the range is ASCII.
std::string nonAsciiHint(const StrippedText& t, std::size_t begin, std::size_t end);

}  // namespace hccl::algo
