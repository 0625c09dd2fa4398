// Byte counts as people type and read them: "64K", "1MiB", "65536" in; "64 KiB" out.
// Binary multiples throughout, as the OSU benchmarks and nccl-tests use them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace examples {

// Accepts a decimal number with an optional suffix K, M, G (or KiB, MiB, GiB, any case).
// Returns nullopt for anything else, including overflow.
std::optional<std::size_t> parseSize(std::string_view text);

// "4 B", "64 KiB", "1.5 MiB": exact multiples print without a fraction.
std::string formatSize(std::size_t bytes);

}  // namespace examples
