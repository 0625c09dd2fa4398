#include "coll_hccl/tools/calibrate_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hccl::calib {

LineFit fitLine(std::span<const double> bytes, std::span<const double> seconds) {
  if (bytes.size() != seconds.size())
    throw std::invalid_argument(
        fmt::format("fit: {} sizes but {} times", bytes.size(), seconds.size()));
  const auto [lo, hi] = std::ranges::minmax(bytes);
  if (bytes.size() < 2 || lo == hi)
    throw std::invalid_argument("fit: needs at least two distinct message sizes");
  for (double t : seconds)
    if (!(t > 0)) throw std::invalid_argument(fmt::format("fit: a step time of {} s", t));

  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double w = 1.0 / (seconds[i] * seconds[i]);
    s += w;
    sx += w * bytes[i];
    sy += w * seconds[i];
    sxx += w * bytes[i] * bytes[i];
    sxy += w * bytes[i] * seconds[i];
  }
  LineFit f;
  f.beta = (s * sxy - sx * sy) / (s * sxx - sx * sx);
  f.alpha = (sy - f.beta * sx) / s;
  if (f.alpha < 0) {
    f.alphaClamped = true;
    f.alpha = 0;
    f.beta = sxy / sxx;
  }
  if (!(f.beta > 0)) {
    // Times that do not grow with size: the network is not the bottleneck at these sizes. Keep
    // the model usable with the slope from the largest message alone.
    const auto k = static_cast<std::size_t>(std::ranges::max_element(bytes) - bytes.begin());
    f.beta = std::max(seconds[k] - f.alpha, seconds[k] * 1e-3) / bytes[k];
  }
  double sum2 = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double r = (f.alpha + f.beta * bytes[i]) / seconds[i] - 1;
    f.residuals.push_back(r);
    sum2 += r * r;
    f.worst = std::max(f.worst, std::fabs(r));
  }
  f.rms = std::sqrt(sum2 / static_cast<double>(bytes.size()));
  return f;
}

SizeRange longestWinningRun(std::span<const std::uint64_t> sizes, std::span<const double> a,
                            std::span<const double> b, std::uint64_t end) {
  if (a.size() != sizes.size() || b.size() != sizes.size())
    throw std::invalid_argument("longestWinningRun: sizes and times differ in length");
  std::size_t first = 0, length = 0;
  for (std::size_t i = 0, run = 0; i < sizes.size(); ++i) {
    run = a[i] <= b[i] ? run + 1 : 0;
    if (run > length) {
      length = run;
      first = i + 1 - run;
    }
  }
  if (length == 0) return {};
  const std::size_t next = first + length;
  return {sizes[first], next < sizes.size() ? sizes[next] : end};
}

}  // namespace hccl::calib
