#include "algorithms/config_fallback.hpp"

#include <array>

namespace hccl::algo {
namespace {
using enum Algorithm;
constexpr std::array<Algorithm, 2> kFromRing = {NHR, Rhd};
constexpr std::array<Algorithm, 2> kFromRhd = {NHR, Ring};
constexpr std::array<Algorithm, 2> kFromNHR = {Rhd, Ring};
constexpr std::array<Algorithm, 1> kFromAllToAllPipeline = {Pairwise};
constexpr std::array<Algorithm, 3> kFromOthers = {NHR, Rhd, Ring};
}  // namespace

std::span<const Algorithm> fallbackChain(Algorithm forced, OpType op) {
  switch (forced) {
    case Ring:
      return kFromRing;
    case Rhd:
      return kFromRhd;
    case NHR:
      return kFromNHR;
    case Pipeline:
      if (configuredBy(op) == OpType::AllToAll) return kFromAllToAllPipeline;
      return kFromOthers;
    default:
      return kFromOthers;
  }
}

std::span<const Algorithm> fallbackChain(Algorithm forced, Collective c) {
  return fallbackChain(forced, opType(c));
}

}  // namespace hccl::algo
