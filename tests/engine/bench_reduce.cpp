// Reduction kernel throughput on 16 MiB buffers, in the form MPI_Reduce_local uses
// (inout = in (+) inout). Prints GB/s of one buffer (16 MiB / time), so the number compares
// with Open MPI's own figure. Not a test: speed is never asserted.
//
// Part 1: every listed kernel, best of several runs. Part 2: the fp16 and bf16 sums against the
// fp32 sum, alternating call by call (fp32, fp16, bf16, fp32, ...) for `rounds` rounds, so a
// shared machine's load hits all alike: medians, and the median of the per-round ratios.
//   bench_reduce [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll_hccl/engine/reduce_kernels.hpp"

namespace {

using namespace hccl;
constexpr std::size_t kBytes = std::size_t{16} << 20;

double seconds(engine::ReduceFn fn, DataType t, unsigned char* inout, const unsigned char* in) {
  const auto t0 = std::chrono::steady_clock::now();
  fn(inout, in, inout, kBytes / sizeOf(t));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double gbps(double s) {
  return static_cast<double>(kBytes) / s / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 40;
  std::vector<unsigned char> in(kBytes), inout(kBytes);
  // Byte 0x3c makes normal numbers of moderate size in every floating format (0x3c3c is about
  // 1.06 in fp16, 0.0115 in bf16): no subnormal or overflow slow paths.
  auto refill = [&] {
    std::memset(in.data(), 0x3c, kBytes);
    std::memset(inout.data(), 0x3c, kBytes);
  };
  const struct {
    DataType t;
    ReduceOp op;
  } cases[] = {{DataType::Float32, ReduceOp::Sum},  {DataType::Float64, ReduceOp::Sum},
               {DataType::Int32, ReduceOp::Sum},    {DataType::Float32, ReduceOp::Max},
               {DataType::Int8, ReduceOp::Sum},     {DataType::BFloat16, ReduceOp::Sum},
               {DataType::Float16, ReduceOp::Sum},  {DataType::BFloat16, ReduceOp::Max},
               {DataType::Float16, ReduceOp::Prod}, {DataType::Float64, ReduceOp::Prod},
               {DataType::Float32, ReduceOp::Sum}};
  std::printf("kernels: %s\n", engine::name(engine::KernelVariant::Best));
  for (const auto& c : cases) {
    const engine::ReduceFn fn = engine::kernel(c.t, c.op);
    refill();
    double best = 1e30;
    for (int rep = 0; rep < 10; ++rep)
      best = std::min(best, seconds(fn, c.t, inout.data(), in.data()));
    std::printf("%-5s %-6s 16 MiB: %6.2f GB/s (%.3f ms)\n", std::string(name(c.op)).c_str(),
                std::string(name(c.t)).c_str(), gbps(best), best * 1e3);
  }

  // Part 2: alternating, call by call.
  struct Contender {
    const char* label;
    DataType t;
    engine::KernelVariant v;
    std::vector<double> s;
  };
  std::vector<Contender> cs = {
      {"fp32 sum", DataType::Float32, engine::KernelVariant::Best, {}},
      {"fp32 sum, baseline (SSE2)", DataType::Float32, engine::KernelVariant::Baseline, {}},
      {"fp16 sum", DataType::Float16, engine::KernelVariant::Best, {}},
      {"bf16 sum", DataType::BFloat16, engine::KernelVariant::Best, {}},
      {"fp16 sum, scalar (baseline)", DataType::Float16, engine::KernelVariant::Baseline, {}},
      {"bf16 sum, scalar (baseline)", DataType::BFloat16, engine::KernelVariant::Baseline, {}},
  };
  refill();
  for (int r = 0; r < rounds + 2; ++r) {  // two rounds of warm-up
    for (auto& c : cs) {
      const double s =
          seconds(engine::kernel(c.t, ReduceOp::Sum, c.v), c.t, inout.data(), in.data());
      if (r >= 2) c.s.push_back(s);
    }
    if (r % 8 == 7) refill();  // keep the sums far from overflow
  }
  std::printf(
      "\nalternating, %d rounds, 16 MiB each call (median GB/s, best, median ratio to fp32 "
      "of the same round):\n",
      rounds);
  for (auto& c : cs) {
    std::vector<double> ratio;
    for (std::size_t i = 0; i < c.s.size(); ++i) ratio.push_back(cs[0].s[i] / c.s[i]);
    std::printf("  %-28s %6.2f GB/s (best %6.2f)  x%.2f of fp32\n", c.label, gbps(median(c.s)),
                gbps(*std::min_element(c.s.begin(), c.s.end())), median(ratio));
  }
  return 0;
}
