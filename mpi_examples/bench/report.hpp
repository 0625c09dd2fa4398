// What hccl_bench prints (nccl-tests-like table, one per collective) and writes as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "bench/collective.hpp"
#include "bench/measure.hpp"
#include "bench/options.hpp"
#include "common/mpi_env.hpp"

namespace bench {

struct RunInfo {
  int nranks = 0;
  examples::HostLayout hosts;
  std::string library;
  std::string started;  // local time, ISO 8601
};

struct SideResult {
  std::vector<RankSpread> pairs;  // one per A/B pair, in run order
  std::size_t wrong = 0;
};

struct Row {
  Coll coll;
  Shape shape;
  int iters = 0;
  int warmup = 0;
  SideResult a;
  SideResult b;
  std::vector<SideResult> others;     // Options::also, in order
  std::vector<double> memcpySeconds;  // --memcpy: one single-core copy of the size per pair
};

// Medians over the pairs, and bandwidths from the median mean time.
struct SideSummary {
  double timeUs = 0.0;
  double minUs = 0.0;
  double maxUs = 0.0;
  double algbw = 0.0;  // GB/s (1e9 bytes per second), as nccl-tests
  double busbw = 0.0;
};
SideSummary summarize(const SideResult& side, const Shape& shape);

// time X / time A per pair: median and range.
struct Ratio {
  double median = 0.0;
  double lo = 0.0;
  double hi = 0.0;
};
Ratio ratioOf(const SideResult& a, const SideResult& x);
Ratio ratioOf(const Row& row);  // B against A

void printHeader(const RunInfo& run, const Options& o);
void printTableHead(Coll c, const Options& o);
void printRow(const Row& row, const Options& o);
void printTableFoot(Coll c, const std::vector<Row>& rows, const Options& o);
void printVerdict(std::size_t wrongA, std::size_t wrongB, const Options& o);

nlohmann::json toJson(const RunInfo& run, const Options& o, const std::vector<Row>& rows);

}  // namespace bench
