// g++ 12 reports a false "potential null pointer dereference" inside libstdc++'s std::string move
// when it inlines CLI11's CLI::detail::split here. The pragma must precede every include: GCC
// looks the warning up at libstdc++'s own source line.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "bench/options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "common/size_text.hpp"

namespace bench {

namespace {

constexpr std::size_t kOsuLargeMessage = 8192;
constexpr std::size_t kBytesPerLargeBlock = std::size_t{100} << 20;

struct UsageError {
  std::string message;
};

std::size_t sizeArg(const std::string& text, const char* option) {
  const auto bytes = examples::parseSize(text);
  if (!bytes || *bytes == 0) {
    throw UsageError{fmt::format(
        "{} '{}' is not a size: give a positive number of bytes, optionally with a K, M or G "
        "suffix (binary: 64K = 65536)",
        option, text)};
  }
  return *bytes;
}

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}

std::vector<std::string> integerTypeNames() {
  std::vector<std::string> names;
  for (const auto& t : allTypes()) {
    if (t.isInteger) names.emplace_back(t.name);
  }
  return names;
}

void validate(Options& o) {
  if (o.minBytes > o.maxBytes) {
    throw UsageError{
        fmt::format("--minbytes ({}) is larger than --maxbytes ({})", o.minBytes, o.maxBytes)};
  }
  if (o.factor < 2) {
    throw UsageError{fmt::format("--stepfactor {} is invalid: it must be 2 or more", o.factor)};
  }
  if (o.maxBytes / o.type->size > static_cast<std::size_t>(INT_MAX)) {
    throw UsageError{fmt::format(
        "--maxbytes {} needs {} elements of {}, more than an MPI count (int) holds ({})",
        o.maxBytes, o.maxBytes / o.type->size, o.type->name, INT_MAX)};
  }
  if (o.op->integerOnly && !o.type->isInteger) {
    throw UsageError{
        fmt::format("--op {} is defined for integer types only, not {} (use one of: {})",
                    o.op->name, o.type->name, fmt::join(integerTypeNames(), ", "))};
  }
  if (!o.jsonPath.empty() && o.jsonPath.front() == '-') {
    throw UsageError{fmt::format("--json '{}' looks like an option, not a file name", o.jsonPath)};
  }
  if (!o.plotPath.empty() && (o.plotPath.front() == '-' || !o.plotPath.ends_with(".png"))) {
    throw UsageError{fmt::format("--plot '{}' must name a .png file", o.plotPath)};
  }
}

// "basic,^hccl" -> "basic"; "^hccl" -> "^hccl"; "" -> "dup".
std::string sideLabel(const std::string& preference) {
  if (preference.empty()) return "dup";
  const std::string first = preference.substr(0, preference.find(','));
  return first.empty() || first.front() == '^' ? preference : first;
}

std::string defaultLabelA(const Options& o) {
  if (!o.hcclAlgo.empty()) return "hccl_algo=" + o.hcclAlgo;
  if (!o.preferA.empty()) return o.preferA;
  return "auto";
}

}  // namespace

int Options::itersFor(std::size_t bytes) const {
  if (iters > 0) return iters;
  if (bytes <= kOsuLargeMessage) return 1000;
  return static_cast<int>(std::clamp<std::size_t>(kBytesPerLargeBlock / bytes, 10, 100));
}

int Options::warmupFor(int iterations) const {
  if (warmup >= 0) return warmup;
  return std::max(2, iterations / 10);
}

std::variant<Options, int> parseOptions(int argc, char** argv, bool print) {
  CLI::App app{
      "hccl_bench: collective benchmark with OSU methodology and nccl-tests columns.\n"
      "Times every size on two communicators in the same run, alternating A B A B:\n"
      "  A = a dup of MPI_COMM_WORLD (whatever component Open MPI picks, coll_hccl when "
      "installed),\n"
      "  B = a dup with info ompi_comm_coll_preference=<--compare> (default ^hccl: Open MPI's "
      "own).\n"
      "Reports medians over the pairs, algbw/busbw (nccl-tests definitions), wrong elements per\n"
      "size, and ratio = time B / time A (> 1: A is faster).",
      "hccl_bench"};
  Options o;
  std::vector<std::string> colls{"allreduce", "allgather", "reduce_scatter"};
  std::string minText = "4";
  std::string maxText = "64M";
  std::string typeName = "float";
  std::string opName = "sum";
  o.compare = "^hccl";
  bool noCheck = false;
  std::string order = "abab";

  app.add_option("-C,--collectives", colls, "Collectives to measure, comma separated")
      ->delimiter(',')
      ->check(CLI::IsMember(collNames()))
      ->capture_default_str();
  app.add_option("-b,--minbytes", minText, "Smallest size (bytes; K, M, G suffixes)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", maxText, "Largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", o.factor, "Multiply the size by this between rows")
      ->capture_default_str();
  app.add_option("-n,--iters", o.iters,
                 "Timed calls per block at every size (default 0: 1000 up to 8 KiB, 100 above, "
                 "fewer beyond 1 MiB, at least 10)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-w,--warmup", o.warmup,
                 "Untimed calls before each block (default: iters/10, >= 2)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-p,--pairs", o.pairs, "A/B pairs per size (medians are taken over them)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--order", order,
                 "Block order within pairs: abab (A first in every pair) or abba (A first in "
                 "even pairs, B first in odd ones, cancelling any bias of the position)")
      ->check(CLI::IsMember({"abab", "abba"}))
      ->capture_default_str();
  app.add_option("-d,--datatype", typeName, "Element type")
      ->check(CLI::IsMember(typeNames()))
      ->capture_default_str();
  app.add_option("-o,--op", opName, "Reduction op (allreduce, reduce_scatter)")
      ->check(CLI::IsMember(opNames()))
      ->capture_default_str();
  app.add_flag("--in-place", o.inPlace, "Use MPI_IN_PLACE");
  app.add_flag("--no-check", noCheck, "Skip the correctness check (the #wrong column shows -)");
  app.add_option("--compare", o.compare,
                 "ompi_comm_coll_preference on B: '^hccl' excludes coll_hccl, 'han,^hccl' also "
                 "puts HAN first, '' gives B a plain dup (A/A run)")
      ->capture_default_str();
  app.add_option("--a-preference", o.preferA, "ompi_comm_coll_preference on A (default: none)");
  app.add_option("--hccl-algo", o.hcclAlgo,
                 "Info key hccl_algo on A (HCCL_ALGO syntax), e.g. 'level0:NA;level1:NHR'");
  app.add_option("--label-a", o.labelA, "Column label for A (env HCCL_BENCH_LABEL_A)");
  app.add_option("--label-b", o.labelB, "Column label for B (env HCCL_BENCH_LABEL_B)");
  app.add_option("--also", o.also,
                 "One more side per use (C, D, ...): ompi_comm_coll_preference of a further dup, "
                 "timed in the same rotation, e.g. --also 'basic,^hccl'");
  app.add_option("--plot", o.plotPath,
                 "Write a PNG of time and busbw against size, one line per side (needs gnuplot; "
                 "skipped with a note when it is absent)");
  app.add_option("-J,--json", o.jsonPath, "Also write every measurement to this JSON file");
  app.add_flag("--memcpy", o.memcpyRef,
               "Also time, once per pair, a memcpy of each size on one core of rank 0 (the other "
               "ranks wait): each row then says what busbw is as a share of that copy's bandwidth");
  app.add_flag("--inject-wrong", o.injectWrong,
               "Self-test of the check: spoil one output element on rank 0 before each check, so "
               "the run must report wrong values and exit 1");

  std::ostringstream silent;
  try {
    app.parse(argc, argv);
    o.minBytes = sizeArg(minText, "--minbytes");
    o.maxBytes = sizeArg(maxText, "--maxbytes");
    o.type = findType(typeName);
    o.op = findOp(opName);
    o.check = !noCheck;
    o.counterbalance = order == "abba";
    o.collectives.clear();
    for (const auto& c : colls) {
      const Coll parsed = parseColl(c);  // IsMember has vetted the name
      if (std::find(o.collectives.begin(), o.collectives.end(), parsed) == o.collectives.end()) {
        o.collectives.push_back(parsed);
      }
    }
    if (o.labelA.empty()) o.labelA = envOr("HCCL_BENCH_LABEL_A", defaultLabelA(o));
    if (o.labelB.empty())
      o.labelB = envOr("HCCL_BENCH_LABEL_B", o.compare.empty() ? "dup" : o.compare);
    for (const auto& pref : o.also) o.alsoLabels.push_back(sideLabel(pref));
    validate(o);
  } catch (const CLI::ParseError& e) {
    const int code = print ? app.exit(e) : app.exit(e, silent, silent);
    return code == 0 ? 0 : 2;  // --help, or a usage error
  } catch (const UsageError& e) {
    if (print) std::cerr << "hccl_bench: " << e.message << "\n";
    return 2;
  }
  return o;
}

}  // namespace bench
