#include "common/utf8.hpp"

#include <fmt/format.h>

#include <array>
#include <optional>

namespace hccl::text {
namespace {

std::uint8_t byteAt(std::string_view text, std::size_t i) {
  return static_cast<std::uint8_t>(text[i]);
}

bool continuation(std::uint8_t b) {
  return (b & 0xc0) == 0x80;
}

// Characters a user may type by accident (an input method's full-width punctuation, a word
// processor's dashes and spaces) and the ASCII they stand in for; name is for messages.
struct Lookalike {
  char32_t code;
  std::string_view name;
  char ascii;  // 0: none (an invisible character)
};
constexpr std::array<Lookalike, 32> kLookalikes = {{
    {0x00a0, "no-break space", ' '},
    {0x00ad, "soft hyphen", 0},
    {0x00d7, "multiplication sign", 'x'},
    {0x0430, "Cyrillic small letter a", 'a'},
    {0x0435, "Cyrillic small letter ie", 'e'},
    {0x043e, "Cyrillic small letter o", 'o'},
    {0x0440, "Cyrillic small letter er", 'p'},
    {0x0441, "Cyrillic small letter es", 'c'},
    {0x0445, "Cyrillic small letter ha", 'x'},
    {0x0425, "Cyrillic capital letter ha", 'X'},
    {0x200b, "zero width space", 0},
    {0x200c, "zero width non-joiner", 0},
    {0x200d, "zero width joiner", 0},
    {0x2010, "hyphen", '-'},
    {0x2011, "non-breaking hyphen", '-'},
    {0x2012, "figure dash", '-'},
    {0x2013, "en dash", '-'},
    {0x2014, "em dash", '-'},
    {0x2018, "left single quotation mark", '\''},
    {0x2019, "right single quotation mark", '\''},
    {0x201c, "left double quotation mark", '"'},
    {0x201d, "right double quotation mark", '"'},
    {0x202f, "narrow no-break space", ' '},
    {0x2060, "word joiner", 0},
    {0x2212, "minus sign", '-'},
    {0x2217, "asterisk operator", '*'},
    {0x2236, "ratio", ':'},
    {0x2715, "multiplication x", 'x'},
    {0x3000, "ideographic space", ' '},
    {0x3001, "ideographic comma", ','},
    {0xfe55, "small colon", ':'},
    {0xfeff, "zero width no-break space (byte order mark)", 0},
}};

std::optional<Lookalike> lookalike(char32_t c) {
  for (const Lookalike& l : kLookalikes)
    if (l.code == c) return l;
  // The full-width forms of ASCII '!'..'~' (an East Asian input method's punctuation and digits).
  if (c >= 0xff01 && c <= 0xff5e) {
    const auto ascii = static_cast<char>(c - 0xff01 + 0x21);
    return Lookalike{c, "full-width form", ascii};
  }
  return std::nullopt;
}

// Characters that would hide or rearrange text in a terminal: C1 controls, spaces other than
// ' ', zero-width and bidirectional formatting characters, variation selectors, tags.
bool invisible(char32_t c) {
  return (c >= 0x80 && c <= 0xa0) || c == 0xad || c == 0x34f || c == 0x61c || c == 0x115f ||
         c == 0x1160 || c == 0x1680 || c == 0x17b4 || c == 0x17b5 || (c >= 0x180b && c <= 0x180f) ||
         (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) ||
         (c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0x3164 ||
         (c >= 0xfe00 && c <= 0xfe0f) || c == 0xfeff || c == 0xffa0 ||
         (c >= 0xfff0 && c <= 0xfffb) || c == 0xfffe || c == 0xffff ||
         (c >= 0xe0000 && c <= 0xe0fff);
}

std::string codeName(char32_t c) {
  return fmt::format("U+{:04X}", static_cast<std::uint32_t>(c));
}

}  // namespace

Char decodeAt(std::string_view text, std::size_t offset) {
  const std::uint8_t b0 = byteAt(text, offset);
  if (b0 < 0x80) return {b0, 1, true};
  const Char invalid{b0, 1, false};
  std::size_t length = 0;
  char32_t code = 0;
  std::uint8_t lo = 0x80, hi = 0xbf;  // allowed range of the second byte (table 3-7)
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
    code = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    code = b0 & 0x0f;
    if (b0 == 0xe0) lo = 0xa0;  // no overlong forms
    if (b0 == 0xed) hi = 0x9f;  // no surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    code = b0 & 0x07;
    if (b0 == 0xf0) lo = 0x90;  // no overlong forms
    if (b0 == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
  } else {
    return invalid;
  }
  if (offset + length > text.size()) return invalid;
  for (std::size_t i = 1; i < length; ++i) {
    const std::uint8_t b = byteAt(text, offset + i);
    if (i == 1 ? (b < lo || b > hi) : !continuation(b)) return invalid;
    code = (code << 6) | (b & 0x3f);
  }
  return {code, length, true};
}

std::size_t charCount(std::string_view text) {
  return charPosition(text, text.size()) - 1;
}

std::size_t charPosition(std::string_view text, std::size_t offset) {
  std::size_t position = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); i += decodeAt(text, i).bytes) ++position;
  return position;
}

std::size_t firstInvalid(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const Char c = decodeAt(text, i);
    if (!c.valid) return i;
    i += c.bytes;
  }
  return std::string_view::npos;
}

std::string_view prefix(std::string_view text, std::size_t maxChars) {
  std::size_t i = 0;
  for (std::size_t n = 0; i < text.size() && n < maxChars; ++n) i += decodeAt(text, i).bytes;
  return text.substr(0, i);
}

std::string truncated(std::string_view text, std::size_t maxChars) {
  const std::string_view head = prefix(text, maxChars);
  return head.size() == text.size() ? std::string(text) : std::string(head) + "...";
}

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    const Char c = decodeAt(text, i);
    if (!c.valid || (c.code < 0x80 && (c.code < 0x20 || c.code == 0x7f || c.code == '"'))) {
      out += fmt::format("\\x{:02x}", byteAt(text, i));
    } else if (invisible(c.code)) {
      out += fmt::format("\\u{{{:04X}}}", static_cast<std::uint32_t>(c.code));
    } else {
      out.append(text.substr(i, c.bytes));
    }
    i += c.bytes;
  }
  out.push_back('"');
  return out;
}

std::string shown(std::string_view text) {
  std::string q = quoted(text);
  if (q.size() == text.size() + 2) return std::string(text);
  return q;
}

std::string describe(std::string_view text, std::size_t offset) {
  const Char c = decodeAt(text, offset);
  if (!c.valid) return fmt::format("byte 0x{:02X} (not UTF-8)", static_cast<std::uint32_t>(c.code));
  if (c.code < 0x20 || c.code == 0x7f)
    return fmt::format("{} (a control character)", codeName(c.code));
  if (c.code < 0x80) return fmt::format("'{}'", static_cast<char>(c.code));
  const std::optional<Lookalike> l = lookalike(c.code);
  const std::string name = l ? " " + std::string(l->name) : std::string();
  if (invisible(c.code)) return fmt::format("{} ({}{})", codeName(c.code), "invisible", name);
  return fmt::format("'{}' ({}{})", text.substr(offset, c.bytes), codeName(c.code), name);
}

std::string didYouMean(std::string_view text, std::size_t offset) {
  const Char c = decodeAt(text, offset);
  if (!c.valid) return {};
  const std::optional<Lookalike> l = lookalike(c.code);
  if (l && l->ascii == ' ') return "did you mean a plain space?";
  if (l && l->ascii) return fmt::format("did you mean '{}'?", l->ascii);
  if (invisible(c.code)) return "delete it?";
  return {};
}

std::string nonAsciiHint(std::string_view token, std::size_t tokenPosition) {
  std::size_t position = tokenPosition;
  for (std::size_t i = 0; i < token.size(); ++position) {
    const Char c = decodeAt(token, i);
    if (!c.valid || c.code >= 0x80) {
      const std::string meant = didYouMean(token, i);
      return fmt::format("; position {} holds {}{}{}", position, describe(token, i),
                         meant.empty() ? "" : ": ", meant);
    }
    i += c.bytes;
  }
  return {};
}

}  // namespace hccl::text
