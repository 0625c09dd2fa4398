#include "common/json_text.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/utf8.hpp"

namespace hccl::text {
namespace {

struct TooDeep {};

// nlohmann's what(): "[json.exception.parse_error.101] parse error at line 1, column 8: <reason>;
// last read: '<bytes>'[; expected <token>]". Keeps <reason> and the expected token, not the
// bytes: they may end inside a character (the caller names the character itself), and they may
// contain anything, "'; expected" included (found by fuzzing), so the expected token is
// recognised from nlohmann's fixed list of token names at the very end.
std::string reasonOf(const nlohmann::json::parse_error& e) {
  std::string_view what = e.what();
  if (const std::size_t colon = what.find(": "); colon != std::string_view::npos)
    what.remove_prefix(colon + 2);
  const std::size_t lastRead = what.find("; last read: '");
  std::string reason(what.substr(0, lastRead));
  if (lastRead == std::string_view::npos) return reason;
  static constexpr std::string_view kTokens[] = {"true literal",
                                                 "false literal",
                                                 "null literal",
                                                 "string literal",
                                                 "number literal",
                                                 "'['",
                                                 "'{'",
                                                 "']'",
                                                 "'}'",
                                                 "':'",
                                                 "','",
                                                 "end of input",
                                                 "'[', '{', or a literal"};
  for (std::string_view token : kTokens) {
    const std::string tail = "'; expected " + std::string(token);
    if (what.size() >= lastRead + tail.size() && what.ends_with(tail))
      return reason + "; expected " + std::string(token);
  }
  return reason;
}

}  // namespace

std::string lineColumn(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const std::size_t line =
      1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t lineStart =
      before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  const std::size_t column = charPosition(text.substr(lineStart), offset - lineStart);
  return fmt::format("line {}, column {}", line, column);
}

std::optional<nlohmann::json> parseJson(std::string_view text, std::string& error, int maxDepth) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    error = "invalid JSON: the text is empty";
    return std::nullopt;
  }
  const nlohmann::json::parser_callback_t depthLimit =
      [maxDepth](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > maxDepth) throw TooDeep{};
        return true;
      };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), depthLimit);
  } catch (const TooDeep&) {
    error = fmt::format("invalid JSON: nested deeper than {} levels", maxDepth);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond double's range ("1e999"): nlohmann reports it as out_of_range.406, not as
    // a parse error (found by fuzzing; it escaped as an uncaught exception).
    std::string_view what = e.what();  // "[json.exception.out_of_range.406] number overflow ..."
    if (const std::size_t end = what.find("] "); end != std::string_view::npos)
      what.remove_prefix(end + 2);
    error = fmt::format("invalid JSON: {} (a number beyond the range of a double)",
                        truncated(what, 120));
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based index of the byte that failed; past the end means the input ended.
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    // JSON is UTF-8: a byte that is not, up to the failure, is the culprit (nlohmann may stop a
    // byte or two later). Otherwise the failing byte, moved back to the start of its character.
    std::size_t start = std::min(at, text.size());
    if (const std::size_t bad = firstInvalid(text); bad != std::string_view::npos && bad <= start) {
      start = bad;
    } else if (start < text.size()) {
      std::size_t lead = start;
      while (lead > 0 && start - lead < 3 &&
             (static_cast<unsigned char>(text[lead]) & 0xc0) == 0x80)
        --lead;
      if (lead + decodeAt(text, lead).bytes > start) start = lead;
    }
    const std::string what = start < text.size() ? describe(text, start) : "the end of the text";
    error = fmt::format("invalid JSON at {} ({}): {}", lineColumn(text, start), what, reasonOf(e));
  }
  return std::nullopt;
}

}  // namespace hccl::text
