#include "algorithms/algorithm.hpp"

#include <array>

namespace hccl::algo {
namespace {
constexpr std::array<std::string_view, kNumAlgorithms> kNames = {
    "ring",     "H-D_R",     "fullmesh", "NHR",      "NHR_V1",           "NB",
    "AHC",      "AHC_BROKE", "pipeline", "pairwise", "fullmesh_oneshot", "fullmesh_push",
    "gathered",
};
constexpr std::array<std::string_view, kNumAlgorithms> kInternalNames = {
    "ring",      "rhd",      "mesh",     "nhr",          "nhr_v1",    "nb",       "ahc",
    "ahc_broke", "pipeline", "pairwise", "mesh_oneshot", "mesh_push", "gathered",
};
}  // namespace

std::string_view hcclName(Algorithm a) {
  return kNames[static_cast<std::size_t>(a)];
}

std::string_view internalName(Algorithm a) {
  return kInternalNames[static_cast<std::size_t>(a)];
}

std::optional<Algorithm> parseAlgorithm(std::string_view s) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<Algorithm>(i);
  return std::nullopt;
}

}  // namespace hccl::algo
