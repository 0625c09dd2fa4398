// Text helpers shared by the configuration parsers: space removal that remembers where every
// character came from (error positions refer to the value as the user wrote it), and quoting of
// tokens for messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hccl::algo {

struct StrippedText {
  std::string s;                    // the value without spaces and tabs
  std::vector<std::size_t> origin;  // 1-based position in the original value of each char of s
  std::size_t originalLength = 0;

  // Position of s[i] in the original value; one past its end for i == s.size().
  std::size_t posOf(std::size_t i) const {
    return i < origin.size() ? origin[i] : originalLength + 1;
  }
  // Position just after s[i - 1]: where a missing character was expected.
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

// "text" in double quotes, with control and non-ASCII bytes as \xNN so that messages stay one line.
std::string quote(std::string_view text);

}  // namespace hccl::algo
