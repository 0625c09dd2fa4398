#include "bench/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/size_text.hpp"

namespace bench {

namespace {

constexpr int kSideWidth = 54;  // time, min, max (11 each), algbw, busbw (7 each), #wrong (7)
constexpr int kLeadWidth = 37;  // size, count, type, redop

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

std::string banner(const std::string& label, int width) {
  std::string text = " " + label + " ";
  if (static_cast<int>(text.size()) > width - 4)
    text = text.substr(0, static_cast<std::size_t>(width - 4));
  const auto fill = static_cast<std::size_t>(width) - text.size();
  return std::string(fill / 2, '-') + text + std::string(fill - fill / 2, '-');
}

std::string infoText(const std::vector<std::pair<std::string, std::string>>& keys) {
  std::vector<std::string> items;
  for (const auto& [k, v] : keys) items.push_back(k + "=" + v);
  return fmt::format("{{{}}}", fmt::join(items, ", "));
}

std::string redopText(Coll c, const Options& o) {
  return reduces(c) ? std::string(o.op->name) : "none";
}

// C, D, ... for Options::also[k].
std::string sideLetter(std::size_t k) {
  return std::string(1, static_cast<char>('C' + k));
}

constexpr int kOtherWidth = 33;  // time, busbw, ratio of a further side

std::string sideText(const SideSummary& s, std::size_t wrong, bool checked) {
  return fmt::format("{:11.2f}{:11.2f}{:11.2f}{:7.2f}{:7.2f}{:>7}", s.timeUs, s.minUs, s.maxUs,
                     s.algbw, s.busbw, checked ? fmt::format("{}", wrong) : "-");
}

nlohmann::json sideJson(const SideResult& side, const Shape& shape, const std::string& label,
                        bool checked) {
  const SideSummary s = summarize(side, shape);
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : side.pairs) {
    pairs.push_back({{"min_us", p.min}, {"avg_us", p.avg}, {"max_us", p.max}});
  }
  nlohmann::json j{{"label", label},    {"time_us", s.timeUs},   {"min_us", s.minUs},
                   {"max_us", s.maxUs}, {"algbw_GBps", s.algbw}, {"busbw_GBps", s.busbw},
                   {"pairs", pairs}};
  j["wrong"] = checked ? nlohmann::json(side.wrong) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json othersJson(const Row& row, const Options& o) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t k = 0; k < row.others.size(); ++k) {
    nlohmann::json j = sideJson(row.others[k], row.shape, o.alsoLabels[k], o.check);
    const Ratio r = ratioOf(row.a, row.others[k]);
    j["ratio_over_a"] = {{"median", r.median}, {"min", r.lo}, {"max", r.hi}};
    out.push_back(j);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> keysOfA(const Options& o) {
  std::vector<std::pair<std::string, std::string>> keys;
  if (!o.preferA.empty()) keys.emplace_back("ompi_comm_coll_preference", o.preferA);
  if (!o.hcclAlgo.empty()) keys.emplace_back("hccl_algo", o.hcclAlgo);
  return keys;
}

std::vector<std::pair<std::string, std::string>> keysOfB(const Options& o) {
  std::vector<std::pair<std::string, std::string>> keys;
  if (!o.compare.empty()) keys.emplace_back("ompi_comm_coll_preference", o.compare);
  return keys;
}

}  // namespace

SideSummary summarize(const SideResult& side, const Shape& shape) {
  std::vector<double> avg;
  std::vector<double> lo;
  std::vector<double> hi;
  for (const auto& p : side.pairs) {
    avg.push_back(p.avg);
    lo.push_back(p.min);
    hi.push_back(p.max);
  }
  SideSummary s;
  s.timeUs = median(avg);
  s.minUs = median(lo);
  s.maxUs = median(hi);
  if (s.timeUs > 0.0) {
    s.algbw = static_cast<double>(shape.bytes) / (s.timeUs * 1e-6) / 1e9;
    s.busbw = s.algbw * shape.busFactor;
  }
  return s;
}

Ratio ratioOf(const Row& row) {
  return ratioOf(row.a, row.b);
}

Ratio ratioOf(const SideResult& a, const SideResult& x) {
  std::vector<double> ratios;
  for (std::size_t k = 0; k < a.pairs.size() && k < x.pairs.size(); ++k) {
    if (a.pairs[k].avg > 0.0) ratios.push_back(x.pairs[k].avg / a.pairs[k].avg);
  }
  Ratio r;
  if (ratios.empty()) return r;
  r.median = median(ratios);
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  r.lo = *lo;
  r.hi = *hi;
  return r;
}

namespace {

// Where this run's method differs from the OSU micro-benchmarks 7.2 (osu_allreduce &c.), so
// that numbers set side by side are read right. The per-call timing is the same: each call
// timed alone by MPI_Wtime with a barrier after it (warm-up calls too), the mean over the timed
// calls per rank, then over ranks.
std::vector<std::string> osuDifferences(const Options& o) {
  auto has = [&](std::string_view c) {
    return std::any_of(o.collectives.begin(), o.collectives.end(),
                       [&](Coll x) { return name(x) == c; });
  };
  std::vector<std::string> out;
  if (has("allgather")) {
    out.emplace_back(
        "allgather size is the whole output; osu_allgather labels the per-rank block (its row S "
        "is this row n x S)");
  }
  if (has("reduce_scatter")) {
    out.emplace_back(
        "reduce_scatter calls MPI_Reduce_scatter_block; osu_reduce_scatter calls "
        "MPI_Reduce_scatter (-C reduce_scatter_v)");
  }
  const bool anyReduces =
      std::any_of(o.collectives.begin(), o.collectives.end(), [](Coll c) { return reduces(c); });
  if (anyReduces && o.type->name != "char") {
    out.push_back(fmt::format("type {}; OSU reduces MPI_CHAR unless -T says otherwise (-d char)",
                              o.type->name));
  }
  if (o.iters == 0 && o.maxBytes > (std::size_t{1} << 20)) {
    out.emplace_back(
        "beyond 1 MiB fewer calls per block (>= 10, warm-up a tenth); OSU times 100 after 10 at "
        "every size above 8 KiB (-n 100 -w 10)");
  }
  if (o.iters > 0 || o.warmup >= 0) {
    out.emplace_back("iterations/warm-up set by hand; OSU: 1000/100 up to 8 KiB, 100/10 above");
  }
  out.push_back(fmt::format(
      "each number is the median over {} blocks per side, alternating sides, inputs refilled "
      "before each block; one OSU run is one block per size, inputs written once",
      o.pairs));
  return out;
}

}  // namespace

void printHeader(const RunInfo& run, const Options& o) {
  std::vector<std::string> colls;
  for (Coll c : o.collectives) colls.emplace_back(name(c));
  const std::string iters =
      o.iters > 0
          ? fmt::format("{} per block at every size", o.iters)
          : std::string("1000 per block up to 8 KiB, 100 above, fewer beyond 1 MiB (>= 10)");
  const std::string warmup = o.warmup >= 0 ? fmt::format("{}", o.warmup) : "iters/10 (>= 2)";
  fmt::print(
      "# hccl_bench: OSU-style timing, nccl-tests columns, A and B alternating in one run\n");
  fmt::print("# np {} on {} host(s), {}..{} ranks per host; {}; started {}\n", run.nranks,
             run.hosts.hosts, run.hosts.minRanksPerHost, run.hosts.maxRanksPerHost, run.library,
             run.started);
  fmt::print("# collectives {}; sizes {} .. {}, x{}; {}, op {}, {}{}\n", fmt::join(colls, ","),
             examples::formatSize(o.minBytes), examples::formatSize(o.maxBytes), o.factor,
             o.type->name, o.op->name, o.inPlace ? "in place" : "out of place",
             o.check ? ", results checked" : ", results NOT checked");
  fmt::print("# iterations {}; warm-up {}; {} A/B pair(s) per size, {}\n", iters, warmup, o.pairs,
             o.counterbalance ? "order A B, B A, A B, ... (abba)" : "A first (abab)");
  if (o.injectWrong) {
    fmt::print(
        "# SELF-TEST (--inject-wrong): rank 0 spoils one output element before each check\n");
  }
  fmt::print("# A \"{}\": dup of MPI_COMM_WORLD, info {}\n", o.labelA, infoText(keysOfA(o)));
  if (!o.preferA.empty()) {
    fmt::print("#   A's preference, as Open MPI 4.1.4 reads it: {}\n",
               examples::describe(examples::parseCollPreference(o.preferA)));
  }
  fmt::print("# B \"{}\": dup of MPI_COMM_WORLD, info {}\n", o.labelB, infoText(keysOfB(o)));
  if (!o.compare.empty()) {
    fmt::print("#   B's preference, as Open MPI 4.1.4 reads it: {}\n",
               examples::describe(examples::parseCollPreference(o.compare)));
  }
  for (std::size_t k = 0; k < o.also.size(); ++k) {
    fmt::print("# {} \"{}\": dup of MPI_COMM_WORLD, info {{ompi_comm_coll_preference={}}}: {}\n",
               sideLetter(k), o.alsoLabels[k], o.also[k],
               examples::describe(examples::parseCollPreference(o.also[k])));
  }
  fmt::print(
      "# time: mean us per call over the timed calls, then over ranks (OSU Avg); min/max: "
      "fastest/slowest rank; each the median over the pairs\n");
  fmt::print(
      "# size = bytes of the full per-rank buffer (allreduce, allgather: output; "
      "reduce_scatter: input), count = elements per rank block\n");
  fmt::print(
      "# algbw = size/time; busbw = algbw x 2(n-1)/n (allreduce), x (n-1)/n (allgather, "
      "reduce_scatter); GB/s = 1e9 B/s\n");
  fmt::print(
      "# ratio = time B / time A, median over pairs and [lowest-highest pair]; > 1 means A "
      "is faster\n");
  fmt::print(
      "# vs OSU 7.2: the same per-call timing (each call alone, barrier after each, mean per "
      "rank then over ranks); differences in this run:\n");
  for (const auto& d : osuDifferences(o)) fmt::print("#   - {}\n", d);
  std::fflush(stdout);
}

void printTableHead(Coll c, const Options& o) {
  fmt::print("#\n# {}\n", name(c));
  fmt::print("#{:{}} {} {}", "", kLeadWidth - 1, banner("A: " + o.labelA, kSideWidth - 1),
             banner("B: " + o.labelB, kSideWidth - 1));
  fmt::print("{:19}", "");
  for (std::size_t k = 0; k < o.also.size(); ++k) {
    fmt::print(" {}", banner(sideLetter(k) + ": " + o.alsoLabels[k], kOtherWidth - 1));
  }
  fmt::print("\n#{:>11}{:>11}{:>8}{:>7}", "size", "count", "type", "redop");
  for (int side = 0; side < 2; ++side) {
    fmt::print("{:>11}{:>11}{:>11}{:>7}{:>7}{:>7}", "time(us)", "min(us)", "max(us)", "algbw",
               "busbw", "#wrong");
  }
  fmt::print("{:>8}  {:>9}", "ratio", "[pairs]");
  for (std::size_t k = 0; k < o.also.size(); ++k) {
    fmt::print("{:>11}{:>7}{:>7}{:>8}", "time(us)", "busbw", "#wrong", "ratio");
  }
  fmt::print("\n");
  std::fflush(stdout);
}

void printRow(const Row& row, const Options& o) {
  const Ratio r = ratioOf(row);
  fmt::print("{:>12}{:>11}{:>8}{:>7}{}{}{:8.3f}  [{:.3f}-{:.3f}]", row.shape.bytes, row.shape.block,
             o.type->name, redopText(row.coll, o),
             sideText(summarize(row.a, row.shape), row.a.wrong, o.check),
             sideText(summarize(row.b, row.shape), row.b.wrong, o.check), r.median, r.lo, r.hi);
  for (const auto& other : row.others) {
    const SideSummary s = summarize(other, row.shape);
    fmt::print("{:11.2f}{:7.2f}{:>7}{:8.3f}", s.timeUs, s.busbw,
               o.check ? fmt::format("{}", other.wrong) : "-", ratioOf(row.a, other).median);
  }
  fmt::print("\n");
  if (!row.memcpySeconds.empty()) {
    const double us = median(row.memcpySeconds) * 1e6;
    const double gbps = static_cast<double>(row.shape.bytes) / us * 1e-3;
    const auto share = [&](const SideResult& s) {
      return 100.0 * summarize(s, row.shape).busbw / gbps;
    };
    fmt::print(
        "#   memcpy of {} B on one core: {:.2f} us, {:.2f} GB/s; busbw A {:.1f}%, B {:.1f}% of "
        "it\n",
        row.shape.bytes, us, gbps, share(row.a), share(row.b));
  }
  std::fflush(stdout);
}

void printTableFoot(Coll c, const std::vector<Row>& rows, const Options& o) {
  std::size_t wrongA = 0;
  std::size_t wrongB = 0;
  double busA = 0.0;
  double busB = 0.0;
  double logRatio = 0.0;
  std::size_t n = 0;
  for (const auto& row : rows) {
    if (row.coll != c) continue;
    wrongA += row.a.wrong;
    wrongB += row.b.wrong;
    busA += summarize(row.a, row.shape).busbw;
    busB += summarize(row.b, row.shape).busbw;
    logRatio += std::log(ratioOf(row).median);
    ++n;
  }
  if (n == 0) {
    fmt::print("# {}: no size holds one element per rank\n", name(c));
    return;
  }
  const double count = static_cast<double>(n);
  fmt::print(
      "# {}: avg busbw A {:.3f} GB/s, B {:.3f} GB/s; ratio B/A geometric mean over {} sizes "
      "{:.3f}; #wrong A {}, B {}\n",
      name(c), busA / count, busB / count, n, std::exp(logRatio / count),
      o.check ? fmt::format("{}", wrongA) : "-", o.check ? fmt::format("{}", wrongB) : "-");
  for (std::size_t k = 0; k < o.also.size(); ++k) {
    double bus = 0.0;
    double log = 0.0;
    std::size_t wrong = 0;
    for (const auto& row : rows) {
      if (row.coll != c || row.others.size() <= k) continue;
      bus += summarize(row.others[k], row.shape).busbw;
      log += std::log(ratioOf(row.a, row.others[k]).median);
      wrong += row.others[k].wrong;
    }
    fmt::print("# {}: avg busbw {} {:.3f} GB/s; ratio {}/A geometric mean {:.3f}; #wrong {}\n",
               name(c), sideLetter(k), bus / count, sideLetter(k), std::exp(log / count),
               o.check ? fmt::format("{}", wrong) : "-");
  }
  std::fflush(stdout);
}

void printVerdict(std::size_t wrongA, std::size_t wrongB, const Options& o) {
  if (!o.check) {
    fmt::print("#\n# Results not checked (--no-check)\n");
  } else if (wrongA + wrongB == 0) {
    fmt::print("#\n# Wrong values: 0 OK\n");
  } else {
    fmt::print("#\n# Wrong values: A {}, B {} FAILED\n", wrongA, wrongB);
  }
  std::fflush(stdout);
}

namespace {

nlohmann::json othersInfo(const Options& o) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t k = 0; k < o.also.size(); ++k) {
    out.push_back(
        {{"label", o.alsoLabels[k]}, {"info", {{"ompi_comm_coll_preference", o.also[k]}}}});
  }
  return out;
}

}  // namespace

nlohmann::json toJson(const RunInfo& run, const Options& o, const std::vector<Row>& rows) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& row : rows) {
    const Ratio r = ratioOf(row);
    std::vector<double> perPair;
    for (std::size_t k = 0; k < row.a.pairs.size() && k < row.b.pairs.size(); ++k) {
      perPair.push_back(row.a.pairs[k].avg > 0.0 ? row.b.pairs[k].avg / row.a.pairs[k].avg : 0.0);
    }
    results.push_back({
        {"collective", name(row.coll)},
        {"bytes", row.shape.bytes},
        {"count", row.shape.block},
        {"type", o.type->name},
        {"op", redopText(row.coll, o)},
        {"in_place", o.inPlace},
        {"iters", row.iters},
        {"warmup", row.warmup},
        {"bus_factor", row.shape.busFactor},
        {"a", sideJson(row.a, row.shape, o.labelA, o.check)},
        {"b", sideJson(row.b, row.shape, o.labelB, o.check)},
        {"others", othersJson(row, o)},
        {"memcpy_us", row.memcpySeconds.empty() ? nlohmann::json(nullptr)
                                                : nlohmann::json(median(row.memcpySeconds) * 1e6)},
        {"ratio_b_over_a",
         {{"median", r.median}, {"min", r.lo}, {"max", r.hi}, {"per_pair", perPair}}},
    });
  }
  nlohmann::json infoA = nlohmann::json::object();
  for (const auto& [k, v] : keysOfA(o)) infoA[k] = v;
  nlohmann::json infoB = nlohmann::json::object();
  for (const auto& [k, v] : keysOfB(o)) infoB[k] = v;
  std::vector<std::string> colls;
  for (Coll c : o.collectives) colls.emplace_back(name(c));
  return {
      {"benchmark", "hccl_bench"},
      {"np", run.nranks},
      {"hosts", run.hosts.hosts},
      {"ranks_per_host", {run.hosts.minRanksPerHost, run.hosts.maxRanksPerHost}},
      {"library", run.library},
      {"started", run.started},
      {"settings",
       {{"collectives", colls},
        {"min_bytes", o.minBytes},
        {"max_bytes", o.maxBytes},
        {"step_factor", o.factor},
        {"iters", o.iters > 0 ? nlohmann::json(o.iters) : nlohmann::json("scaled")},
        {"warmup", o.warmup >= 0 ? nlohmann::json(o.warmup) : nlohmann::json("iters/10")},
        {"pairs", o.pairs},
        {"order", o.counterbalance ? "abba" : "abab"},
        {"datatype", o.type->name},
        {"op", o.op->name},
        {"in_place", o.inPlace},
        {"checked", o.check},
        {"vs_osu", osuDifferences(o)}}},
      {"a", {{"label", o.labelA}, {"info", infoA}}},
      {"b", {{"label", o.labelB}, {"info", infoB}}},
      {"others", othersInfo(o)},
      {"results", results},
  };
}

}  // namespace bench
