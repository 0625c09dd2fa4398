// hccl_sim: every algorithm x collective, fully in process, as a table.
//
//   hccl_sim                              every generator at 8 ranks
//   hccl_sim --ranks 4,8,13 --dtype fp16  several rank counts, another element type
//   hccl_sim --shape 2x4                  hierarchical over 2 servers of 4 ranks, per-level columns
//   hccl_sim --shape 2x4 -a fullmesh/NHR  one composition: fullmesh inside servers, NHR between
//   hccl_sim -a ring -c allreduce --print-schedule   and rank 0's schedule
//
// Each row builds the schedule of every rank, measures its critical path (steps, bytes, reduced
// bytes), runs the symbolic verifier over it, and runs it on real buffers, one thread per rank over
// the in-process transport, checked two ways (coll_hccl/reference/check.hpp): bit for bit against
// a sequential interpreter of the same schedule, and against the rank-order reduction of the
// inputs (within a stated tolerance for float sums and products). The exit status is 1 if any
// row fails, 2 on bad options.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/hierarchical.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/verifier.hpp"
#include "coll_hccl/engine/hierarchy_layout.hpp"
#include "coll_hccl/reference/check.hpp"
#include "topology/emulation.hpp"
#include "topology/error.hpp"
#include "topology/hierarchy.hpp"

namespace {

using namespace hccl;
using namespace hccl::algo;

constexpr std::uint32_t kMaxRanks = 1024;  // one thread each
constexpr std::uint64_t kSeed = 1;         // inputs are a function of (seed, rank, index)

struct Options {
  std::vector<std::uint32_t> ranks{8};
  std::uint64_t count = 1024;
  std::string dtype = "fp32", op = "sum", algorithm, collective, shape;
  bool inPlace = false, corrupt = false;
  std::uint32_t root = 0;
  int scheduleRank = -1;  // print this rank's schedule under each row
};

// ---- rows -------------------------------------------------------------------------------------

struct Row {
  std::string algorithm;
  std::string collective;
  std::uint32_t p = 0;
  Metrics metrics;
  std::vector<VerifyIssue> issues;
  std::string dataError;
  std::string schedule;  // --print-schedule
  bool failed() const { return !issues.empty() || !dataError.empty(); }
};

Row evaluate(std::string algorithm, std::string collective, const Schedule& s, bool rankOrdered,
             DataType t, ReduceOp op, const Options& o) {
  Row row{std::move(algorithm), std::move(collective), s.problem.ranks, {}, {}, {}, {}};
  row.metrics = criticalPath(s, sizeOf(t));
  row.issues = verify(s, {.requireRankOrder = rankOrdered});
  try {
    row.dataError = reference::checkRealData(s, t, op, kSeed, o.corrupt);
  } catch (const std::exception& e) {
    row.dataError = e.what();
  }
  if (o.scheduleRank >= 0) {
    const auto r = static_cast<std::uint32_t>(o.scheduleRank) % s.problem.ranks;
    row.schedule =
        fmt::format("  rank {} of {}:\n{}", r, toString(s.problem), toString(s.ranks[r]));
  }
  return row;
}

bool matches(const std::string& filter, std::string_view value) {
  return filter.empty() || filter == value;
}

std::vector<Row> flatRows(const Options& o, DataType t, ReduceOp op) {
  std::vector<Row> rows;
  for (std::uint32_t p : o.ranks)
    for (const GeneratorSpec& g : generatorSpecs()) {
      if (!matches(o.algorithm, hcclName(g.algorithm)) || !matches(o.collective, name(g.coll)))
        continue;
      const Problem pb = Problem::fromMpiCount(g.coll, p, o.count, o.inPlace, o.root % p);
      rows.push_back(evaluate(std::string(hcclName(g.algorithm)), std::string(name(g.coll)),
                              buildSchedule(g.generate, pb), g.rankOrdered, t, op, o));
    }
  return rows;
}

// The level algorithms of a composition row: "ring" (everywhere) or "fullmesh/ring[/NB]" (per
// level, inner first).
std::optional<LevelAlgorithms> parseLevels(const std::string& text) {
  LevelAlgorithms algs{};
  std::size_t level = 0, start = 0;
  while (true) {
    const std::size_t end = text.find('/', start);
    const auto a = parseAlgorithm(text.substr(start, end - start));
    if (!a || level >= algs.size()) return std::nullopt;
    algs[level++] = *a;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  for (; level < algs.size(); ++level) algs[level] = algs[level - 1];
  return algs;
}

std::vector<Row> shapeRows(const Options& o, const Layout& lay, DataType t, ReduceOp op) {
  std::vector<std::string> labels;
  if (o.algorithm.find('/') != std::string::npos) {
    labels.push_back(o.algorithm);
  } else {
    for (const char* a : {"ring", "H-D_R", "fullmesh", "NHR", "NB", "pairwise"})
      if (matches(o.algorithm, a)) labels.emplace_back(a);
  }
  const CommShape shape = lay.shape();
  // The Pipeline spans levels 0 and 1 of one supernode (a level0 group may be a single rank).
  bool level1 = false, level2 = false;
  for (const LevelGroup& g : shape.levels) {
    level1 = level1 || g.level == 1;
    level2 = level2 || g.level == 2;
  }
  if (o.algorithm.find('/') == std::string::npos && matches(o.algorithm, "pipeline") && level1 &&
      !level2 && lay.symmetric())
    labels.emplace_back("fullmesh/pipeline/ring");
  const int top = shape.levels.empty() ? 0 : shape.levels.back().level;
  std::vector<Row> rows;
  for (const std::string& label : labels) {
    const std::optional<LevelAlgorithms> algs = parseLevels(label);
    if (!algs) throw CLI::ValidationError("--algorithm", "cannot read \"" + label + "\"");
    for (int ci = 0; ci < kNumCollectives; ++ci) {
      const auto c = static_cast<Collective>(ci);
      if (!matches(o.collective, name(c))) continue;
      const Problem pb =
          Problem::fromMpiCount(c, lay.ranks(), o.count, o.inPlace, o.root % lay.ranks());
      const bool composed = c == Collective::AllReduce || c == Collective::ReduceScatter ||
                            c == Collective::AllGather;
      // Other collectives run flat over every rank with the outermost level's algorithm, as the
      // engine does; rows whose algorithms have no generator for a phase are left out.
      const Algorithm flatAlg = (*algs)[static_cast<std::size_t>(top)];
      if (!composed && !findGenerator(flatAlg, c)) continue;
      Schedule s{pb, {}};
      try {
        for (std::uint32_t r = 0; r < lay.ranks(); ++r)
          s.ranks.push_back(composed ? composeHierarchical(lay, *algs, pb, r)
                                     : composeFlat(lay, flatAlg, top, pb, r));
      } catch (const std::invalid_argument&) {
        continue;
      }
      const bool ordered = composed
                               ? c != Collective::AllGather && composedRankOrdered(lay, *algs, c)
                               : findGenerator(flatAlg, c)->rankOrdered;
      rows.push_back(evaluate(composed ? label : std::string(hcclName(flatAlg)),
                              std::string(name(c)) + (composed ? "" : " (flat)"), s, ordered, t, op,
                              o));
    }
  }
  return rows;
}

// ---- output -----------------------------------------------------------------------------------

void printTable(const std::vector<Row>& rows, const std::vector<int>& levels) {
  std::size_t algW = 9;
  for (const Row& r : rows) algW = std::max(algW, r.algorithm.size());
  fmt::print("{:<{}}  {:<20} {:>5} {:>7} {:>12}", "algorithm", algW, "collective", "p", "steps",
             "bytes/rank");
  for (int l : levels)
    fmt::print(" {:>9} {:>12}", fmt::format("L{} steps", l), fmt::format("L{} bytes", l));
  fmt::print(" {:>12}  {:<9} {}\n", "reduced", "verifier", "data");
  for (const Row& r : rows) {
    fmt::print("{:<{}}  {:<20} {:>5} {:>7} {:>12}", r.algorithm, algW, r.collective, r.p,
               r.metrics.steps(), r.metrics.bytes());
    for (int l : levels) {
      const LevelCost& lc = r.metrics.level[static_cast<std::size_t>(l)];
      fmt::print(" {:>9} {:>12}", lc.steps, lc.bytes);
    }
    fmt::print(" {:>12}  {:<9} {}\n", r.metrics.reducedBytes,
               r.issues.empty() ? "ok" : fmt::format("issues={}", r.issues.size()),
               r.dataError.empty() ? "verified" : "failed");
    if (!r.schedule.empty()) fmt::print("{}", r.schedule);
  }
  fmt::print(
      "\nsteps, bytes/rank, reduced: the critical path's sequential steps, bytes sent over one "
      "link and bytes reduced{}\nverifier: the symbolic verifier (rank order required where "
      "claimed); data: real buffers through the in-process executor, bit for bit against a "
      "sequential interpreter of the same schedule and against the rank-order reduction\n",
      levels.empty() ? "" : " (Ln: on the links of level n)");
  bool header = false;
  for (const Row& r : rows) {
    if (!r.failed()) continue;
    if (!header) fmt::print("\nFailures:\n");
    header = true;
    fmt::print("{} {} p={}:\n", r.algorithm, r.collective, r.p);
    if (!r.issues.empty()) fmt::print("{}", describe(r.issues));
    if (!r.dataError.empty()) {
      // The check's report spans lines: keep them under "data".
      std::string indented = r.dataError.substr(0, r.dataError.find_last_not_of('\n') + 1);
      for (std::size_t at = indented.find('\n'); at != std::string::npos;
           at = indented.find('\n', at + 1))
        indented.insert(at + 1, "    ");
      fmt::print("  data: {}\n", indented);
    }
  }
}

std::vector<std::uint32_t> parseRanks(const std::string& text) {
  std::vector<std::uint32_t> v;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    std::size_t used = 0;
    unsigned long n = 0;
    try {
      n = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || n < 1 || n > kMaxRanks)
      throw CLI::ValidationError("--ranks",
                                 fmt::format("\"{}\" is not a rank count in 1..{} "
                                             "(give a comma-separated list, e.g. 4,8,13)",
                                             item, kMaxRanks));
    v.push_back(static_cast<std::uint32_t>(n));
    start = end + 1;
  }
  return v;
}

std::string validNames(auto count, auto nameOf) {
  std::string s;
  for (int i = 0; i < count; ++i) s += (i ? ", " : "") + std::string(nameOf(i));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hccl_sim: every algorithm x collective in one process (a thread per rank): critical-path "
      "steps and bytes, the symbolic verifier's verdict, and a real-data check"};
  Options o;
  std::string ranks = "8";
  app.add_option("-r,--ranks", ranks, "Rank counts, comma-separated (1..1024)")
      ->capture_default_str();
  app.add_option("-n,--count", o.count,
                 "Elements per call as MPI counts them: per rank for reducescatter, allgather and "
                 "scatter, per pair for alltoall, in all otherwise")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 24));
  app.add_option(
         "--dtype", o.dtype,
         "Element type: " +
             validNames(kNumDataTypes, [](int i) { return name(static_cast<DataType>(i)); }))
      ->capture_default_str();
  app.add_option(
         "--op", o.op,
         "Reduction op: " +
             validNames(kNumReduceOps, [](int i) { return name(static_cast<ReduceOp>(i)); }))
      ->capture_default_str();
  app.add_option("-a,--algorithm", o.algorithm,
                 "Only this algorithm (ring, H-D_R, fullmesh, NHR, NB, pairwise; with --shape also "
                 "pipeline, or per level inner first, e.g. fullmesh/NHR)");
  app.add_option("-c,--collective", o.collective,
                 "Only this collective (allreduce, reducescatter, allgather, broadcast, reduce, "
                 "scatter, alltoall)");
  app.add_option("--shape", o.shape,
                 "Hierarchical over a layout instead of flat: \"2x4\" (servers x ranks), \"2x2x2\" "
                 "(pods), \"3+5\", \"rr:2x3\" (ranks interleaved)");
  app.add_flag("--in-place", o.inPlace, "Run the in-place variants");
  app.add_option("--root", o.root, "Root of broadcast, reduce and scatter (modulo p)")
      ->capture_default_str();
  bool printSchedule = false;
  std::uint32_t scheduleRank = 0;
  app.add_flag("--print-schedule", printSchedule, "Print one rank's schedule under each row");
  app.add_option("--schedule-rank", scheduleRank, "The rank --print-schedule shows (modulo p)")
      ->capture_default_str();
  app.add_flag("--corrupt", o.corrupt,
               "Flip a bit of one result before checking, to show what a failed row looks like");
  CLI11_PARSE(app, argc, argv);
  if (printSchedule) o.scheduleRank = static_cast<int>(std::min(scheduleRank, kMaxRanks));

  try {
    const auto type = parseDataType(o.dtype);
    if (!type)
      throw CLI::ValidationError("--dtype", fmt::format("unknown type \"{}\" (valid: {})", o.dtype,
                                                        validNames(kNumDataTypes, [](int i) {
                                                          return name(static_cast<DataType>(i));
                                                        })));
    const auto op = parseReduceOp(o.op);
    if (!op)
      throw CLI::ValidationError("--op", fmt::format("unknown op \"{}\" (valid: {})", o.op,
                                                     validNames(kNumReduceOps, [](int i) {
                                                       return name(static_cast<ReduceOp>(i));
                                                     })));
    if (!defined(*op, *type)) {
      std::string valid;
      for (int i = 0; i < kNumReduceOps; ++i)
        if (defined(static_cast<ReduceOp>(i), *type))
          valid += (valid.empty() ? "" : ", ") + std::string(name(static_cast<ReduceOp>(i)));
      throw CLI::ValidationError("--op",
                                 fmt::format("{} is not defined on {} (valid: {})", o.op, o.dtype,
                                             valid.empty() ? "none: copies only" : valid));
    }
    if (!o.collective.empty() && !parseCollective(o.collective))
      throw CLI::ValidationError("--collective",
                                 fmt::format("unknown collective \"{}\"", o.collective));
    o.ranks = parseRanks(ranks);

    std::vector<Row> rows;
    std::vector<int> levels;
    if (!o.shape.empty()) {
      if (app.count("--ranks"))
        throw CLI::ValidationError("--ranks", "give either --ranks or --shape (it sets p)");
      const Layout lay =
          engine::layoutOf(topo::Hierarchy::fromSpec(topo::parseEmulationSpec(o.shape)));
      if (lay.ranks() > kMaxRanks)
        throw CLI::ValidationError("--shape",
                                   fmt::format("{} ranks, at most {}", lay.ranks(), kMaxRanks));
      for (const LevelGroup& g : lay.shape().levels) levels.push_back(g.level);
      fmt::print(
          "{} ({}), count {} of {}{}, op {}; algorithm \"a\" runs a at every level, "
          "\"a/b\" a at level0 and b above\n\n",
          o.shape, lay.shape().describe(), o.count, o.dtype, o.inPlace ? ", in place" : "", o.op);
      rows = shapeRows(o, lay, *type, *op);
    } else {
      if (!o.algorithm.empty() && !parseAlgorithm(o.algorithm))
        throw CLI::ValidationError("--algorithm",
                                   fmt::format("unknown algorithm \"{}\"", o.algorithm));
      fmt::print("flat over p ranks, count {} of {}{}, op {}\n\n", o.count, o.dtype,
                 o.inPlace ? ", in place" : "", o.op);
      rows = flatRows(o, *type, *op);
    }
    if (rows.empty()) {
      fmt::print(stderr, "hccl_sim: no algorithm x collective matches the filters\n");
      return 2;
    }
    printTable(rows, levels);
    std::size_t failed = 0;
    for (const Row& r : rows) failed += r.failed();
    fmt::print("\nrows: {}, failed: {} ({}, {}, count {}{})\n", rows.size(), failed, o.dtype, o.op,
               o.count, o.inPlace ? ", in place" : "");
    return failed ? 1 : 0;
  } catch (const CLI::ValidationError& e) {
    fmt::print(stderr, "hccl_sim: {}\n", e.what());
    return 2;
  } catch (const topo::TopologyError& e) {
    fmt::print(stderr, "hccl_sim: --shape: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hccl_sim: error: {}\n", e.what());
    return 2;
  }
}
