// How configuration parsers report failure: a value or a structured error, never an exception.
// The engine API is extern "C" and the Open MPI adapter is C11, so configuration errors must travel
// as data up to the point where they are printed.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <variant>

namespace hccl::algo {

struct ConfigError {
  std::string setting;       // which grammar rejected it: "HCCL_ALGO", "HCCL_BUFFSIZE", ...
  std::string token;         // the offending text as read (HCCL_ALGO: with spaces removed)
  std::size_t position = 0;  // 1-based character position in the original value; 0: none
  std::string message;       // complete sentence: token, position and what is valid
  std::string source;        // where the value came from ("env HCCL_ALGO"); empty from parsers
};

template <typename T>
class ConfigResult {
 public:
  ConfigResult(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  ConfigResult(ConfigError error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // Precondition: ok() (value) or !ok() (error); std::bad_variant_access otherwise.
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const ConfigError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ConfigError> v_;
};

}  // namespace hccl::algo
