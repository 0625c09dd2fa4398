// hccl_bench's picture: time per call and bus bandwidth against size, one line per side (A, B
// and every --also), one row of two panels per collective, drawn by gnuplot into a PNG.
// gnuplot is optional: without it the run says so and writes the script (data inline) only.
#pragma once

#include <string>
#include <vector>

#include "bench/options.hpp"
#include "bench/report.hpp"

namespace bench {

// The gnuplot script for the rows (data inline), drawing into o.plotPath.
std::string plotScript(const RunInfo& run, const Options& o, const std::vector<Row>& rows);

// Writes the script beside the PNG (NAME.png -> NAME.gp) and runs gnuplot on it if found in
// PATH. Returns what happened, for one line of output.
std::string renderPlot(const std::string& script, const std::string& pngPath);

}  // namespace bench
