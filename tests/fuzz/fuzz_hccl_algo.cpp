// HCCL_ALGO: parseHcclAlgo on arbitrary bytes. Accepted values round-trip through str() and
// answer forced() for every op and level; rejected ones carry a well-formed message whose
// position lies inside the value (or one past its end).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "algorithms/config_algo.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hccl;
  const std::string_view value(reinterpret_cast<const char*>(data), size);
  const auto r = algo::parseHcclAlgo(value);
  if (!r.ok()) {
    fuzz::checkMessage(r.error().message);
    fuzz::check(r.error().position <= text::charCount(value) + 1, "position past the value",
                r.error().message);
    return 0;
  }
  const algo::AlgoConfig& c = r.value();
  const std::string canonical = c.str();
  const auto again = algo::parseHcclAlgo(canonical);
  fuzz::check(again.ok(), "canonical text does not parse", canonical);
  fuzz::check(again.value() == c, "canonical text parses to something else", canonical);
  fuzz::check(again.value().str() == canonical, "canonical text is not a fixed point", canonical);
  for (int op = 0; op < algo::kNumOpTypes; ++op)
    for (int level = -1; level <= algo::kNumAlgoLevels; ++level)
      static_cast<void>(c.forced(static_cast<algo::OpType>(op), level));
  for (const std::string& note : c.notes()) fuzz::checkMessage(note);
  return 0;
}
