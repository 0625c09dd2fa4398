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
// the in-process transport, against a rank-order reference computed here from the inputs. The
// exit status is 1 if any row fails, 2 on bad options.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/hierarchical.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/verifier.hpp"
#include "coll_hccl/engine/hierarchy_layout.hpp"
#include "coll_hccl/engine/local_cluster.hpp"
#include "topology/emulation.hpp"
#include "topology/error.hpp"
#include "topology/hierarchy.hpp"

namespace {

using namespace hccl;
using namespace hccl::algo;
using Bytes = std::vector<std::byte>;

constexpr std::uint32_t kMaxRanks = 1024;  // one thread each

struct Options {
  std::vector<std::uint32_t> ranks{8};
  std::uint64_t count = 1024;
  std::string dtype = "fp32", op = "sum", algorithm, collective, shape;
  bool inPlace = false, corrupt = false;
  std::uint32_t root = 0;
  int scheduleRank = -1;  // print this rank's schedule under each row
};

// ---- the problem of a row ---------------------------------------------------------------------

// `count` as MPI counts it: per rank for ReduceScatter, AllGather and Scatter, per pair for
// AllToAll, the whole vector otherwise.
Problem problemFor(Collective c, std::uint32_t p, std::uint64_t count, bool inPlace,
                   std::uint32_t root) {
  switch (c) {
    case Collective::AllReduce:
      return Problem::allReduce(p, count, inPlace);
    case Collective::ReduceScatter:
      return Problem::reduceScatter(p, count, inPlace);
    case Collective::AllGather:
      return Problem::allGather(p, count, inPlace);
    case Collective::Broadcast:
      return Problem::broadcast(p, count, root);
    case Collective::Reduce:
      return Problem::reduce(p, count, root, inPlace);
    case Collective::Scatter:
      return Problem::scatter(p, count, root, inPlace);
    case Collective::AllToAll:
      return Problem::allToAll(p, count, inPlace);
  }
  throw std::logic_error("unknown collective");
}

// ---- inputs and the rank-order reference --------------------------------------------------------

std::uint64_t hash(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a * 0x9e3779b97f4a7c15ull + b + 0x632be59bd9b4e019ull;
  for (int i = 0; i < 2; ++i) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
  }
  return x;
}

enum class Kind { Integer, Real, Complex };

Kind kindOf(DataType t) {
  if (t == DataType::ComplexFloat || t == DataType::ComplexDouble) return Kind::Complex;
  return isFloating(t) ? Kind::Real : Kind::Integer;
}

int digits(DataType t) {
  switch (t) {
    case DataType::Float16:
      return 11;
    case DataType::BFloat16:
      return 8;
    case DataType::Float32:
    case DataType::ComplexFloat:
      return 24;
    case DataType::Float64:
    case DataType::ComplexDouble:
      return 53;
    default:
      return 64;
  }
}

DataType partOf(DataType t) {
  return t == DataType::ComplexFloat ? DataType::Float32 : DataType::Float64;
}

long double readReal(DataType t, const std::byte* p) {
  switch (t) {
    case DataType::Float16: {
      _Float16 h;
      std::memcpy(&h, p, 2);
      return static_cast<long double>(h);
    }
    case DataType::BFloat16: {
      std::uint16_t b;
      std::memcpy(&b, p, 2);
      return static_cast<long double>(std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16));
    }
    case DataType::Float32: {
      float f;
      std::memcpy(&f, p, 4);
      return static_cast<long double>(f);
    }
    case DataType::Float64: {
      double d;
      std::memcpy(&d, p, 8);
      return static_cast<long double>(d);
    }
    default: {
      long double v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
  }
}

// Values the inputs use are small integers (or their products with 2), exact in every type.
void writeReal(DataType t, std::byte* p, long double v) {
  switch (t) {
    case DataType::Float16: {
      const auto h = static_cast<_Float16>(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case DataType::BFloat16: {
      const auto b =
          static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(v)) >> 16);
      std::memcpy(p, &b, 2);
      break;
    }
    case DataType::Float32: {
      const auto f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DataType::Float64: {
      const auto d = static_cast<double>(v);
      std::memcpy(p, &d, 8);
      break;
    }
    default:
      std::memcpy(p, &v, 10);  // the x87 value; the padding stays zero
      break;
  }
}

// Operands chosen so that every reduction order gives the exact result where the type allows it:
// sums of integers no larger than 2^(digits-1)/p, products of +-1 with one factor 2 per element,
// so the check below is exact for floats too (its tolerance only matters when p > 2^(digits-1)).
// Integers use all their bits (sums and products wrap; product factors are odd, else the product
// is 0 modulo 2^bits); logical and bitwise operands are set so reductions come out either way.
struct Inputs {
  DataType type;
  ReduceOp op;
  std::uint32_t ranks;

  long double small(std::uint64_t h) const {
    const auto bound = static_cast<std::int64_t>(
        std::clamp<long double>(std::ldexp(1.0L, digits(type) - 1) / ranks, 1, 1 << 20));
    return static_cast<long double>(
        static_cast<std::int64_t>(h % static_cast<std::uint64_t>(2 * bound + 1)) - bound);
  }
  long double factor(std::uint64_t h, std::uint32_t r, std::uint64_t i) const {
    return (h & 1 ? -1.0L : 1.0L) * (i % ranks == r ? 2.0L : 1.0L);
  }

  void element(std::byte* p, std::uint32_t r, std::uint64_t i) const {
    const std::uint64_t h = hash(r, i);
    const bool prod = op == ReduceOp::Prod;
    switch (kindOf(type)) {
      case Kind::Real:
        return writeReal(type, p, prod ? factor(h, r, i) : small(h));
      case Kind::Complex: {
        const DataType part = partOf(type);
        long double re = small(h), im = small(hash(h, 1));
        if (prod) {  // one of 1, -1, i, -i, doubled on one rank per element
          const long double f = factor(h, r, i);
          re = h & 2 ? f : 0;
          im = h & 2 ? 0 : f;
        }
        writeReal(part, p, re);
        writeReal(part, p + sizeOf(part), im);
        return;
      }
      case Kind::Integer: {
        const unsigned bits = static_cast<unsigned>(8 * sizeOf(type));
        const std::uint64_t bit = std::uint64_t{1} << (hash(h, 2) % bits);
        const bool rare = hash(h, 3) % (ranks + 2) == 0;
        std::uint64_t v = h;
        switch (op) {
          case ReduceOp::Prod:
            v = h | 1;
            break;
          case ReduceOp::LAnd:
            v = rare ? 0 : h | bit;
            break;
          case ReduceOp::LOr:
            v = rare ? h | bit : 0;
            break;
          case ReduceOp::LXor:
            v = hash(h, 4) & 1 ? h | bit : 0;
            break;
          case ReduceOp::BAnd:
            v = rare ? ~bit : ~std::uint64_t{0};
            break;
          case ReduceOp::BOr:
            v = rare ? bit : 0;
            break;
          default:
            break;
        }
        std::memcpy(p, &v, sizeOf(type));  // little endian: the low bytes
        return;
      }
    }
  }
};

// Reference reduction of one element over every rank, in rank order.
struct Expected {
  std::uint64_t bits = 0;       // integers: the result, masked to the type's width
  std::complex<long double> v;  // reals and complex: the rank-order value (exact here)
  long double re = 0, im = 0;   // their magnitudes (sum of |x| or product of |x|), for tolerance
};

std::uint64_t readInt(DataType t, const std::byte* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeOf(t));
  return v;
}

std::int64_t signExtend(DataType t, std::uint64_t v) {
  const unsigned bits = static_cast<unsigned>(8 * sizeOf(t));
  if (bits == 64) return static_cast<std::int64_t>(v);
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  return static_cast<std::int64_t>((v ^ sign) - sign);
}

bool isSigned(DataType t) {
  return t == DataType::Int8 || t == DataType::Int16 || t == DataType::Int32 ||
         t == DataType::Int64;
}

std::uint64_t combineInt(DataType t, ReduceOp op, std::uint64_t a, std::uint64_t b) {
  const unsigned bits = static_cast<unsigned>(8 * sizeOf(t));
  const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  const bool less = isSigned(t) ? signExtend(t, a) < signExtend(t, b) : a < b;
  switch (op) {
    case ReduceOp::Sum:
      return (a + b) & mask;
    case ReduceOp::Prod:
      return (a * b) & mask;
    case ReduceOp::Max:
      return less ? b : a;
    case ReduceOp::Min:
      return less ? a : b;
    case ReduceOp::LAnd:
      return a != 0 && b != 0;
    case ReduceOp::LOr:
      return a != 0 || b != 0;
    case ReduceOp::LXor:
      return (a != 0) != (b != 0);
    case ReduceOp::BAnd:
      return a & b;
    case ReduceOp::BOr:
      return a | b;
    case ReduceOp::BXor:
      return a ^ b;
  }
  return 0;
}

std::complex<long double> readValue(DataType t, const std::byte* p) {
  if (kindOf(t) == Kind::Complex) {
    const DataType part = partOf(t);
    return {readReal(part, p), readReal(part, p + sizeOf(part))};
  }
  return {readReal(t, p), 0};
}

Expected reduceAll(DataType t, ReduceOp op, const std::vector<Bytes>& in, std::uint64_t j) {
  const std::size_t es = sizeOf(t);
  Expected e;
  for (std::size_t r = 0; r < in.size(); ++r) {
    const std::byte* p = in[r].data() + j * es;
    if (kindOf(t) == Kind::Integer) {
      const std::uint64_t x = readInt(t, p);
      e.bits = r == 0 ? x : combineInt(t, op, e.bits, x);  // p = 1 copies, even logical ops
      continue;
    }
    const std::complex<long double> x = readValue(t, p);
    const bool sum = op == ReduceOp::Sum;
    if (r == 0) {
      e.v = x;
      e.re = sum ? std::fabs(x.real()) : std::abs(x);
      e.im = std::fabs(x.imag());
    } else if (op == ReduceOp::Max || op == ReduceOp::Min) {
      const bool left = op == ReduceOp::Max ? e.v.real() >= x.real() : e.v.real() <= x.real();
      e.v = left ? e.v : x;
    } else {
      e.v = sum ? e.v + x : e.v * x;
      e.re = sum ? e.re + std::fabs(x.real()) : e.re * std::abs(x);
      e.im += std::fabs(x.imag());
    }
  }
  return e;
}

// A reduction tree of p operands rounds each at most p-1 times: |error| <= gamma(p-1) * magnitude
// (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1), gamma(n) = nu/(1-nu), with
// 3u per complex product (Brent, Percival, Zimmermann 2007). Max and min are exact.
bool withinTolerance(DataType t, ReduceOp op, std::uint32_t p, const Expected& e,
                     std::complex<long double> got) {
  if (op == ReduceOp::Max || op == ReduceOp::Min) return got == e.v;
  const bool complexProd = kindOf(t) == Kind::Complex && op == ReduceOp::Prod;
  const long double u = std::ldexp(complexProd ? 3.0L : 1.0L, -digits(t));
  const long double nu = static_cast<long double>(p - 1) * u, gamma = nu / (1 - nu);
  if (op == ReduceOp::Prod) return std::abs(got - e.v) <= gamma * e.re;
  return std::fabs(got.real() - e.v.real()) <= gamma * e.re &&
         std::fabs(got.imag() - e.v.imag()) <= gamma * e.im;
}

// What rank r contributes, as its out-of-place Input would hold it.
std::uint64_t contributionCount(const Problem& pb, std::uint32_t r) {
  switch (pb.coll) {
    case Collective::AllGather:
      return pb.blocks.count(r);
    case Collective::Broadcast:
    case Collective::Scatter:
      return r == pb.root ? pb.total() : 0;
    default:
      return pb.total();
  }
}

// Output elements of rank r: copies of element `from` of rank `src`'s contribution, or (src < 0)
// the reduction of element `from` over every rank.
struct Segment {
  std::uint64_t out, count;
  int src;
  std::uint64_t from;
};

std::vector<Segment> segments(const Problem& pb, std::uint32_t r) {
  const Blocks& bl = pb.blocks;
  const int root = static_cast<int>(pb.root);
  std::vector<Segment> v;
  switch (pb.coll) {
    case Collective::AllReduce:
      return {{0, pb.total(), -1, 0}};
    case Collective::ReduceScatter:
      return {{pb.resultSlice(r).offset, bl.count(r), -1, bl.offset(r)}};
    case Collective::AllGather:
      for (std::uint32_t i = 0; i < pb.ranks; ++i)
        v.push_back({bl.offset(i), bl.count(i), static_cast<int>(i), 0});
      return v;
    case Collective::Broadcast:
      return {{0, pb.total(), root, 0}};
    case Collective::Reduce:
      if (r == pb.root) v.push_back({0, pb.total(), -1, 0});
      return v;
    case Collective::Scatter:
      if (r == pb.root && pb.inPlace) return {{0, pb.total(), root, 0}};
      return {{0, bl.count(r), root, bl.offset(r)}};
    case Collective::AllToAll:
      for (std::uint32_t i = 0; i < pb.ranks; ++i)
        v.push_back({bl.offset(i), bl.count(i), static_cast<int>(i), bl.offset(r)});
      return v;
  }
  return v;
}

// Runs the schedule on every rank's thread with real buffers and checks every result element.
// Returns "" when all match, else the first mismatch.
std::string checkData(const Schedule& s, DataType t, ReduceOp op, bool corrupt) {
  const Problem& pb = s.problem;
  const std::size_t es = sizeOf(t);
  const Inputs gen{t, op, pb.ranks};
  std::vector<Bytes> in(pb.ranks);
  std::vector<engine::RankBuffers> bufs(pb.ranks);
  for (std::uint32_t r = 0; r < pb.ranks; ++r) {
    in[r].assign(contributionCount(pb, r) * es, std::byte{0});
    for (std::uint64_t i = 0; i * es < in[r].size(); ++i) gen.element(in[r].data() + i * es, r, i);
    engine::RankBuffers& b = bufs[r];
    b.input.assign(pb.bufferCount(Buf::Input, r) * es, std::byte{0});
    b.output.assign(pb.bufferCount(Buf::Output, r) * es, std::byte{0xC3});
    if (in[r].empty()) continue;
    if (!b.input.empty()) {
      b.input = in[r];
    } else {  // in place: the data starts in Output (at the rank's block for AllGather)
      const std::uint64_t at = pb.coll == Collective::AllGather ? pb.blocks.offset(r) : 0;
      std::copy(in[r].begin(), in[r].end(),
                b.output.begin() + static_cast<std::ptrdiff_t>(at * es));
    }
  }
  engine::LocalRunResult run = engine::runLocal(s, t, op, std::move(bufs));
  if (!run.ok) return run.error;
  if (corrupt)
    for (auto& o : run.outputs)
      if (!o.empty()) {
        o[0] ^= std::byte{0x40};
        break;
      }
  const std::size_t significant = t == DataType::LongDouble ? 10 : es;
  for (std::uint32_t r = 0; r < pb.ranks; ++r) {
    for (const Segment& seg : segments(pb, r)) {
      for (std::uint64_t j = 0; j < seg.count; ++j) {
        const std::byte* got = run.outputs[r].data() + (seg.out + j) * es;
        bool ok = true;
        if (seg.src >= 0) {
          ok = std::memcmp(got, in[static_cast<std::size_t>(seg.src)].data() + (seg.from + j) * es,
                           significant) == 0;
        } else {
          const Expected e = reduceAll(t, op, in, seg.from + j);
          ok = kindOf(t) == Kind::Integer ? readInt(t, got) == e.bits
                                          : withinTolerance(t, op, pb.ranks, e, readValue(t, got));
        }
        if (!ok)
          return fmt::format("rank {} element {} differs from the {}", r, seg.out + j,
                             seg.src < 0 ? "rank-order reduction" : "expected copy");
      }
    }
  }
  return {};
}

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
    row.dataError = checkData(s, t, op, o.corrupt);
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
      const Problem pb = problemFor(g.coll, p, o.count, o.inPlace, o.root % p);
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
      const Problem pb = problemFor(c, lay.ranks(), o.count, o.inPlace, o.root % lay.ranks());
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
      "claimed); data: real buffers through the in-process executor against a rank-order "
      "reference\n",
      levels.empty() ? "" : " (Ln: on the links of level n)");
  bool header = false;
  for (const Row& r : rows) {
    if (!r.failed()) continue;
    if (!header) fmt::print("\nFailures:\n");
    header = true;
    fmt::print("{} {} p={}:\n", r.algorithm, r.collective, r.p);
    if (!r.issues.empty()) fmt::print("{}", describe(r.issues));
    if (!r.dataError.empty()) fmt::print("  data: {}\n", r.dataError);
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
