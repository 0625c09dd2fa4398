// Replaces the test program's global operator new and delete to count what is allocated (calls
// and bytes, any thread), so a test can check that a path allocates nothing or a bounded amount
// by reading the counters around it. Include it from exactly one source file of an executable.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace hccl::test {
inline std::atomic<std::uint64_t> gAllocCalls{0};
inline std::atomic<std::uint64_t> gAllocBytes{0};
}  // namespace hccl::test

// GCC 12 inlines these into std::allocator, pairs operator new's malloc with the free below and
// warns of a mismatch that is not one: the pairing is exactly what a replacement allocator does.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  hccl::test::gAllocCalls.fetch_add(1, std::memory_order_relaxed);
  hccl::test::gAllocBytes.fetch_add(n, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop
