// What every parser fuzz target checks besides "no crash, no hang, no sanitizer report": a
// rejection is a message that a terminal shows as one line and whole characters (valid UTF-8, no
// control bytes: every user byte was quoted), and an acceptance survives a round trip through
// the parser's canonical text. A broken property aborts, which both fuzz drivers report with
// the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common/utf8.hpp"

namespace hccl::fuzz {

[[noreturn]] inline void broken(const char* what, std::string_view detail) {
  std::fprintf(stderr, "fuzz property broken: %s: %.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

inline void check(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) broken(what, detail);
}

// A message about a rejected input: non-empty, UTF-8, one line.
inline void checkMessage(std::string_view message) {
  check(!message.empty(), "empty error message");
  check(text::firstInvalid(message) == std::string_view::npos,
        "error message is not UTF-8 (half a character?)", message);
  for (char c : message)
    check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f,
          "error message holds a control byte (an unquoted input byte)", message);
}

}  // namespace hccl::fuzz
