// Reduction kernel throughput on 16 MiB buffers, in the form MPI_Reduce_local uses
// (inout = in (+) inout). Prints GB/s of one buffer (16 MiB / time), best of several runs, so the
// number compares with Open MPI's own figure. Not a test: speed is never asserted.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "coll_hccl/engine/reduce_kernels.hpp"

int main() {
  using namespace hccl;
  constexpr std::size_t kBytes = std::size_t{16} << 20;
  std::vector<unsigned char> in(kBytes, 1), inout(kBytes, 2);
  const struct {
    DataType t;
    ReduceOp op;
  } cases[] = {{DataType::Float32, ReduceOp::Sum}, {DataType::Float64, ReduceOp::Sum},
               {DataType::Int32, ReduceOp::Sum},   {DataType::Float32, ReduceOp::Max},
               {DataType::Int8, ReduceOp::Sum},    {DataType::BFloat16, ReduceOp::Sum},
               {DataType::Float16, ReduceOp::Sum}, {DataType::Float64, ReduceOp::Prod},
               {DataType::Float32, ReduceOp::Sum}};
  std::printf("kernels: %s\n", engine::name(engine::KernelVariant::Best));
  for (const auto& c : cases) {
    const engine::ReduceFn fn = engine::kernel(c.t, c.op);
    const std::size_t n = kBytes / sizeOf(c.t);
    // Byte 0x3c makes normal numbers of moderate size in every floating format (0x3c3c is about
    // 1.06 in fp16, 0.0115 in bf16): no subnormal or overflow slow paths.
    std::memset(in.data(), 0x3c, kBytes);
    std::memset(inout.data(), 0x3c, kBytes);
    double best = 1e30;
    for (int rep = 0; rep < 10; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      fn(inout.data(), in.data(), inout.data(), n);
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      best = std::min(best, dt.count());
    }
    std::printf("%-5s %-6s 16 MiB: %6.2f GB/s (%.3f ms)\n", std::string(name(c.op)).c_str(),
                std::string(name(c.t)).c_str(), static_cast<double>(kBytes) / best / 1e9,
                best * 1e3);
  }
  // The fp32 sum in every instruction-set variant this CPU runs.
  for (engine::KernelVariant v : {engine::KernelVariant::Baseline, engine::KernelVariant::Avx2}) {
    const engine::ReduceFn fn = engine::kernel(DataType::Float32, ReduceOp::Sum, v);
    if (fn == nullptr) continue;
    double best = 1e30;
    for (int rep = 0; rep < 10; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      fn(inout.data(), in.data(), inout.data(), kBytes / 4);
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      best = std::min(best, dt.count());
    }
    std::printf("sum   fp32   16 MiB, %-8s: %6.2f GB/s\n", engine::name(v),
                static_cast<double>(kBytes) / best / 1e9);
  }
  return 0;
}
