// Data whose every byte the receiver can predict from the message's identity alone, so a
// transfer is checked against an independent expectation rather than against the sender's copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>

namespace hccl::test {

inline std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline std::uint64_t seedOf(std::initializer_list<std::uint64_t> parts) {
  std::uint64_t h = 0x1234567;
  for (std::uint64_t p : parts) h = mix(h ^ p);
  return h;
}

inline void fillPattern(std::span<std::byte> buf, std::uint64_t seed) {
  const std::size_t words = buf.size() / 8;
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint64_t w = mix(seed + i);
    std::memcpy(buf.data() + 8 * i, &w, 8);
  }
  const std::uint64_t tail = mix(seed + words);
  std::memcpy(buf.data() + 8 * words, &tail, buf.size() - 8 * words);
}

// The first byte that differs from the pattern, if any.
inline std::optional<std::size_t> firstMismatch(std::span<const std::byte> buf,
                                                std::uint64_t seed) {
  const std::size_t words = buf.size() / 8;
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint64_t w = mix(seed + i);
    if (std::memcmp(buf.data() + 8 * i, &w, 8) != 0) return 8 * i;
  }
  const std::uint64_t tail = mix(seed + words);
  if (std::memcmp(buf.data() + 8 * words, &tail, buf.size() - 8 * words) != 0) return 8 * words;
  return std::nullopt;
}

}  // namespace hccl::test
