// Pipeline: inter-server ring steps overlapped with intra-server transfers (see pipeline.cpp).
// Unlike the flat generators it spans two levels, so it takes the layout.
#pragma once

#include <cstdint>
#include <limits>

#include "algorithms/layout.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/schedule.hpp"

namespace hccl::algo {

// Rank `rank`'s schedule for an AllGather, ReduceScatter or AllReduce over `lay`. Throws
// std::invalid_argument for other collectives, asymmetric layouts or several supernodes.
// `segments` > 1 cuts every block into that many segments whose stages overlap (pipeline.cpp).
RankSchedule pipelineSchedule(const Layout& lay, const Problem& pb, std::uint32_t rank,
                              std::uint32_t segments = 1);

// scratchCount(pipelineSchedule(lay, pb, rank, segments)) without building the schedule:
// O(segments x servers) time, no memory (chunk sizing; tests/algorithms/scratch_formula_test.cpp
// holds it to the schedules).
std::uint64_t pipelineScratch(const Layout& lay, const Problem& pb, std::uint32_t rank,
                              std::uint32_t segments = 1);

// rankPath(pipelineSchedule(Layout::servers(servers, perServer), pb, rank, segments), elemSize,
// params),
// bit for bit, from the block counts alone (pipeline_cost.cpp): time O(servers x perServer) and
// no memory, where building the schedule allocates servers (perServer + 1) transfers and the
// layout a vector per server. Throws std::invalid_argument for the collectives the pipeline has
// not. With `stopAt` finite, it may stop once the path's time has reached it and return that
// partial path: a path's time only grows step by step, so the whole one is no faster (the model
// asks only whether the pipeline beats a time; at 4096 servers its ring is 300 times slower than
// a tree and was a third of the first decision).
Metrics pipelineRankPath(std::uint32_t servers, std::uint32_t perServer, const Problem& pb,
                         std::uint32_t rank, std::size_t elemSize, const CostParams& params,
                         std::uint32_t segments = 1,
                         double stopAt = std::numeric_limits<double>::infinity());

}  // namespace hccl::algo
