// HCCL's algorithm names, as HCCL_ALGO spells them, and the hierarchy levels they run on.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hccl::algo {

enum class Algorithm : std::uint8_t {
  Ring,         // "ring"
  Rhd,          // "H-D_R": recursive halving-doubling (RHD)
  Mesh,         // "fullmesh": one step, every pair
  NHR,          // "NHR": nonuniform hierarchical ring
  NHR_V1,       // "NHR_V1": legacy NHR
  NB,           // "NB": nonuniform Bruck
  AHC,          // "AHC": asymmetric hierarchical concatenate
  AHC_Broke,    // "AHC_BROKE": AHC when all groups are equal
  Pipeline,     // "pipeline": inter-server ring overlapped with intra-server transfers
  Pairwise,     // "pairwise": AlltoAll one peer per step
  MeshOneShot,  // "fullmesh_oneshot": AllReduce in one step, every rank reduces all inputs
  MeshPush,     // "fullmesh_push": Mesh AllReduce whose AllGather the reducing rank pushes
  Gathered,     // "gathered": Barrier gathered at a root, which leaves first (a sequence rule's)
};
inline constexpr int kNumAlgorithms = 13;
// HCCL's Star (level0 rooted operations in one step) has no value: HCCL picks it from the
// hardware and HCCL_ALGO's documented words do not include it, so "star" is rejected as an
// unknown algorithm; coll_hccl has no one-step rooted schedule to run for it.

// The HCCL_ALGO spelling ("ring", "H-D_R", "fullmesh", ...); case-sensitive. The one users see.
std::string_view hcclName(Algorithm a);
std::optional<Algorithm> parseAlgorithm(std::string_view s);
// The name inside coll_hccl, the same for the enum value, the file, its functions and the test
// names: "ring", "rhd" (rhd.cpp, rhdAllReduce, Algorithm::Rhd), "mesh", "nhr", "mesh_oneshot", ...
std::string_view internalName(Algorithm a);

// level0 = inside a server, level1 = between servers, level2 = between supernodes.
inline constexpr int kNumLevels = 3;

// One algorithm per level, indexed by level.
using LevelAlgorithms = std::array<Algorithm, kNumLevels>;

}  // namespace hccl::algo
