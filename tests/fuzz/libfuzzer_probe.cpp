// Configure-time check that clang++ can link -fsanitize=fuzzer (Debian: libclang-rt-14-dev).
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) {
  return 0;
}
