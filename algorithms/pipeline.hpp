// Pipeline: inter-server ring steps overlapped with intra-server transfers (see pipeline.cpp).
// Unlike the flat generators it spans two levels, so it takes the layout.
#pragma once

#include <cstdint>

#include "algorithms/layout.hpp"
#include "algorithms/schedule.hpp"

namespace hccl::algo {

// Rank `rank`'s schedule for an AllGather, ReduceScatter or AllReduce over `lay`. Throws
// std::invalid_argument for other collectives, asymmetric layouts or several supernodes.
RankSchedule pipelineSchedule(const Layout& lay, const Problem& pb, std::uint32_t rank);

}  // namespace hccl::algo
