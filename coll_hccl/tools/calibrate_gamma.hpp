// Reduction throughput for hccl_calibrate: engine::kernel(type, op) over a large buffer, in the
// form the executor mostly uses (dst = a (+) dst), as GB/s of output. The buffers hold ones of the
// type (1, 1.0, 1+0i, true), so no subnormal or NaN slow path distorts the figure.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/types.hpp"

namespace hccl::calib {

struct GammaTiming {
  DataType type;
  ReduceOp op;
  double gbps = 0;              // bytes of output per second / 1e9, from the median
  std::vector<double> seconds;  // per repetition
};

// Every (type, op) pair MPI defines, or when `common` only the pairs collectives mostly reduce.
std::vector<GammaTiming> measureGamma(std::size_t bytes, int repeat, bool common);

}  // namespace hccl::calib
