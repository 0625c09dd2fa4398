// HCCL's documented fallback order for a forced algorithm that cannot serve an op or shape.
//
// The selector tries the forced algorithm, then each entry of fallbackChain() in order, keeping the
// first one whose capabilities fit; when none fits it selects automatically, and it reports the
// fallback at a verbose level. The chain never contains the forced algorithm itself.
//
//   ring                -> NHR, H-D_R
//   H-D_R               -> NHR, ring
//   NHR                 -> H-D_R, ring
//   pipeline, alltoall  -> pairwise   (AlltoAll, AlltoAllV and AlltoAllVC)
//   any other           -> NHR, H-D_R, ring
#pragma once

#include <span>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_algo.hpp"
#include "algorithms/types.hpp"

namespace hccl::algo {

std::span<const Algorithm> fallbackChain(Algorithm forced, OpType op);
std::span<const Algorithm> fallbackChain(Algorithm forced, Collective c);

}  // namespace hccl::algo
