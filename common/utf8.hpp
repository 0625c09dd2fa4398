// UTF-8 for messages about what a user wrote (HCCL_ALGO, emulation specs, rank-table values,
// sizes). Positions count characters, not bytes; a character is always shown whole, never half of
// its encoding; bytes that are not UTF-8 are shown as \xNN and count as one character each, so a
// position still points at the right place in an editor or a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hccl::text {

struct Char {
  char32_t code = 0;      // the code point; for a byte that is not UTF-8, the byte's value
  std::size_t bytes = 1;  // length of its encoding (1 for a byte that is not UTF-8)
  bool valid = true;      // false: the byte does not start a well-formed UTF-8 sequence
};

// The character starting at byte `offset` (offset < text.size()). Well-formed means Unicode's
// table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF; anything else is one
// invalid byte.
Char decodeAt(std::string_view text, std::size_t offset);

// Number of characters in `text`.
std::size_t charCount(std::string_view text);
// 1-based character position of the character that starts at byte `offset`; offset ==
// text.size() gives one past the last character.
std::size_t charPosition(std::string_view text, std::size_t offset);
// Byte offset of the first byte that is not UTF-8, or npos.
std::size_t firstInvalid(std::string_view text);

// The first `maxChars` characters of `text`; never cuts a character.
std::string_view prefix(std::string_view text, std::size_t maxChars);
// prefix() followed by "..." when `text` is longer.
std::string truncated(std::string_view text, std::size_t maxChars);

// `text` in double quotes on one line, hiding nothing: printable characters as they are (UTF-8
// included, and '\', which regexes and paths use); ASCII control bytes and '"' as \xNN; other
// control, invisible, bidirectional and space-like characters as \u{XXXX}; bytes that are not
// UTF-8 as \xNN.
std::string quoted(std::string_view text);

// `text` as it is when quoted() would change nothing but add the quotes (a plain path or
// name), quoted() otherwise.
std::string shown(std::string_view text);

// One character for a message: "'x'", "'×' (U+00D7)", "U+00A0 (a no-break space)",
// "byte 0xFF (not UTF-8)". `c` comes from decodeAt(text, offset).
std::string describe(std::string_view text, std::size_t offset);

// For the character at `offset` that a user may have typed by accident: "did you mean ':'?" for
// a look-alike of ASCII (full-width forms, dashes, the multiplication sign), "did you mean a plain
// space?", "delete it?" for an invisible character; empty otherwise.
std::string didYouMean(std::string_view text, std::size_t offset);

// When `token` holds a character that is not ASCII: "; <describe()> at position N[, which looks
// like ':']" for the first such character, N counted from `tokenPosition` (the token's own
// 1-based character position). Empty when the token is ASCII. For messages that reject a token,
// so a full-width colon or a no-break space is named rather than left to the eye.
std::string nonAsciiHint(std::string_view token, std::size_t tokenPosition);

}  // namespace hccl::text
