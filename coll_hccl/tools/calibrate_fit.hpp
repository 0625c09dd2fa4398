// The straight line t = alpha + beta * bytes through measured step times, for hccl_calibrate.
//
// Least squares of the relative error: minimise sum(((alpha + beta * x_i) - t_i) / t_i)^2, i.e.
// weighted least squares with weights 1 / t_i^2. Plain least squares on time would let the
// largest messages (milliseconds) decide everything, and alpha would come out as their noise,
// often negative; relative errors give every size an equal say, so alpha follows the small
// messages and beta the large ones. It also shrugs off the outliers a shared machine produces:
// a time inflated by an interruption has a residual near -1 however large it is, so it pulls
// the line hardly at all, where in plain least squares it would pull in proportion to its size.
// alpha is kept >= 0 (refitting beta alone through the origin when the free fit goes negative),
// beta > 0.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hccl::calib {

struct LineFit {
  double alpha = 0;               // seconds
  double beta = 0;                // seconds per byte
  std::vector<double> residuals;  // per point: fitted / measured - 1
  double rms = 0;                 // root mean square of the residuals
  double worst = 0;               // largest |residual|
  bool alphaClamped = false;      // the free fit wanted alpha < 0
};

// bytes and seconds of equal length, at least two distinct byte counts, every time > 0.
// Throws std::invalid_argument otherwise.
LineFit fitLine(std::span<const double> bytes, std::span<const double> seconds);

// Where one path beats another (single_copy): at sizes[i] (ascending) the path took `a[i]`
// seconds and the other `b[i]`; the longest run of consecutive sizes where a <= b, as [its first
// size, the size after its last) or [first, `end`) when it runs to the largest; [0, 0] when a
// never wins. The earliest of equally long runs.
struct SizeRange {
  std::uint64_t from = 0, below = 0;
};
SizeRange longestWinningRun(std::span<const std::uint64_t> sizes, std::span<const double> a,
                            std::span<const double> b, std::uint64_t end);

}  // namespace hccl::calib
