#include "coll_hccl/tools/calibrate_gamma.hpp"

#include <chrono>
#include <complex>
#include <cstdint>
#include <cstring>

#include "coll_hccl/engine/reduce_kernels.hpp"
#include "coll_hccl/tools/calibrate_links.hpp"

namespace hccl::calib {
namespace {

// The byte image of one element equal to one.
std::vector<std::byte> one(DataType t) {
  std::vector<std::byte> e(sizeOf(t), std::byte{0});
  auto put = [&e](const auto& v) { std::memcpy(e.data(), &v, sizeof v); };
  switch (t) {
    case DataType::Float16:
      put(std::uint16_t{0x3C00});
      break;
    case DataType::BFloat16:
      put(std::uint16_t{0x3F80});
      break;
    case DataType::Float32:
      put(1.0f);
      break;
    case DataType::Float64:
      put(1.0);
      break;
    case DataType::LongDouble:
      put(1.0L);
      break;
    case DataType::ComplexFloat:
      put(std::complex<float>(1, 0));
      break;
    case DataType::ComplexDouble:
      put(std::complex<double>(1, 0));
      break;
    default:
      e[0] = std::byte{1};  // integers (little-endian), bool, byte
      break;
  }
  return e;
}

void fillWith(std::vector<std::byte>& buf, const std::vector<std::byte>& elem) {
  for (std::size_t i = 0; i + elem.size() <= buf.size(); i += elem.size())
    std::memcpy(buf.data() + i, elem.data(), elem.size());
}

bool common(DataType t, ReduceOp op) {
  switch (t) {
    case DataType::Float32:
    case DataType::Float64:
      return op == ReduceOp::Sum || op == ReduceOp::Max || op == ReduceOp::Min ||
             op == ReduceOp::Prod;
    case DataType::Float16:
    case DataType::BFloat16:
    case DataType::Int32:
    case DataType::Int64:
      return op == ReduceOp::Sum || op == ReduceOp::Max;
    case DataType::Int8:
    case DataType::UInt8:
      return op == ReduceOp::Sum;
    default:
      return false;
  }
}

}  // namespace

std::vector<GammaTiming> measureGamma(std::size_t bytes, int repeat, bool commonOnly) {
  using Clock = std::chrono::steady_clock;
  std::vector<GammaTiming> out;
  std::vector<std::byte> a(bytes), dst(bytes);
  for (int ti = 0; ti < kNumDataTypes; ++ti) {
    const auto t = static_cast<DataType>(ti);
    const std::size_t count = bytes / sizeOf(t);
    if (count == 0) continue;
    for (int oi = 0; oi < kNumReduceOps; ++oi) {
      const auto op = static_cast<ReduceOp>(oi);
      const engine::ReduceFn fn = engine::kernel(t, op);
      if (fn == nullptr || (commonOnly && !common(t, op))) continue;
      const std::vector<std::byte> elem = one(t);
      fillWith(a, elem);
      fillWith(dst, elem);
      GammaTiming g{t, op, 0, {}};
      fn(dst.data(), a.data(), dst.data(), count);  // warm-up
      for (int k = 0; k < repeat; ++k) {
        const auto t0 = Clock::now();
        fn(dst.data(), a.data(), dst.data(), count);
        g.seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      g.gbps = static_cast<double>(count * sizeOf(t)) / median(g.seconds) / 1e9;
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace hccl::calib
