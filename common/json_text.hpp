// Parsing JSON a user wrote (rank tables, tuning files, hierarchy JSON) with errors that point at
// a character: nlohmann counts bytes and quotes the bytes it last read, which may be half of a
// multi-byte character; here the line and column count characters and the offending character
// is named whole. Nesting is bounded, so a file of a million '[' is refused rather than built.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace hccl::text {

inline constexpr int kMaxJsonDepth = 64;

// The document, or nullopt with `error` set to a sentence such as "invalid JSON at line 3,
// column 8 ('x'): syntax error while parsing value - invalid literal", "invalid JSON: the text
// is empty" or "invalid JSON: nested deeper than 64 levels".
std::optional<nlohmann::json> parseJson(std::string_view text, std::string& error,
                                        int maxDepth = kMaxJsonDepth);

// "line L, column C" of byte `offset` in `text`, both 1-based, the column in characters.
std::string lineColumn(std::string_view text, std::size_t offset);

}  // namespace hccl::text
