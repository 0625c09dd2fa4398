#include "coll_hccl/reference/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <map>
#include <stdexcept>

#include "coll_hccl/engine/local_cluster.hpp"
#include "coll_hccl/reference/inputs.hpp"
#include "coll_hccl/reference/interpreter.hpp"

namespace hccl::reference {
namespace {

using algo::Buf;
using algo::Problem;

// Out-of-place outputs start as this byte: a result the schedule never writes shows up.
constexpr std::byte kFiller{0xC3};

std::vector<RankMemory> place(const Problem& pb, std::size_t es,
                              const std::vector<Bytes>& contributions) {
  std::vector<RankMemory> mem(pb.ranks);
  for (std::uint32_t r = 0; r < pb.ranks; ++r) {
    const Bytes& mine = contributions[r];
    RankMemory& m = mem[r];
    m.input.assign(pb.bufferCount(Buf::Input, r) * es, std::byte{0});
    m.output.assign(pb.bufferCount(Buf::Output, r) * es, kFiller);
    if (mine.empty()) continue;
    if (!m.input.empty()) {
      m.input = mine;
      continue;
    }
    // In place (and Broadcast): the data starts in Output, at the rank's block for AllGather
    // and Gather.
    const bool atBlock = pb.coll == Collective::AllGather || pb.coll == Collective::Gather;
    const std::uint64_t at = atBlock ? pb.blocks.offset(r) : 0;
    std::copy(mine.begin(), mine.end(), m.output.begin() + static_cast<std::ptrdiff_t>(at * es));
  }
  return mem;
}

// Where rank r's result elements come from: a copy of element `from` of rank `src`'s
// contribution, or (src < 0) the rank-order reduction of element `from` of the contributions of
// ranks [0, upTo) (every rank unless a prefix: Scan, Exscan).
struct Segment {
  std::uint64_t out;
  std::uint64_t count;
  int src;
  std::uint64_t from;
  std::uint32_t upTo = 0xffffffffu;
};

std::vector<Segment> expected(const Problem& pb, std::uint32_t r) {
  const algo::Blocks& bl = pb.blocks;
  const int root = static_cast<int>(pb.root);
  std::vector<Segment> v;
  switch (pb.coll) {
    case Collective::AllReduce:
      v.push_back({0, pb.total(), -1, 0});
      break;
    case Collective::ReduceScatter:
      v.push_back({pb.resultSlice(r).offset, bl.count(r), -1, bl.offset(r)});
      break;
    case Collective::AllGather:
      for (std::uint32_t i = 0; i < pb.ranks; ++i)
        v.push_back({bl.offset(i), bl.count(i), static_cast<int>(i), 0});
      break;
    case Collective::Broadcast:
      v.push_back({0, pb.total(), root, 0});
      break;
    case Collective::Reduce:
      if (r == pb.root) v.push_back({0, pb.total(), -1, 0});
      break;
    case Collective::Scatter:
      if (r == pb.root && pb.inPlace)
        v.push_back({0, pb.total(), root, 0});  // the root's data stays as it was
      else
        v.push_back({0, bl.count(r), root, bl.offset(r)});
      break;
    case Collective::AllToAll:
      for (std::uint32_t i = 0; i < pb.ranks; ++i)
        v.push_back({bl.offset(i), bl.count(i), static_cast<int>(i), bl.offset(r)});
      break;
    case Collective::Gather:
      if (r == pb.root)
        for (std::uint32_t i = 0; i < pb.ranks; ++i)
          v.push_back({bl.offset(i), bl.count(i), static_cast<int>(i), 0});
      break;
    case Collective::AllToAllV: {
      const algo::Blocks col = pb.pairs.recvBlocks(r);
      for (std::uint32_t i = 0; i < pb.ranks; ++i)
        v.push_back(
            {col.offset(i), col.count(i), static_cast<int>(i), pb.pairs.sendBlocks(i).offset(r)});
      break;
    }
    case Collective::Barrier:
      break;
    case Collective::Scan:
      v.push_back({0, pb.total(), -1, 0, r + 1});
      break;
    case Collective::Exscan:
      if (r > 0) v.push_back({0, pb.total(), -1, 0, r});
      break;
  }
  return v;
}

std::string hex(const std::byte* p, std::size_t n) {
  std::string s;
  for (std::size_t i = n; i-- > 0;) s += fmt::format("{:02x}", std::to_integer<unsigned>(p[i]));
  return s;
}

// Collects mismatch reports, keeping the first few in full.
struct Report {
  std::size_t count = 0;
  std::string text;
  void add(const std::string& line) {
    if (++count <= 4) text += "  " + line + "\n";
  }
  std::string str(const std::string& what) const {
    if (count == 0) return {};
    return fmt::format("{}: {} mismatching elements\n{}", what, count, text);
  }
};

// Check 1: the engine's bits against the interpreter's, whole buffers.
std::string compareWithInterpreter(const std::vector<Bytes>& engine,
                                   const std::vector<Bytes>& reference, std::size_t es,
                                   std::size_t significant) {
  Report rep;
  for (std::size_t r = 0; r < reference.size(); ++r) {
    if (engine[r].size() != reference[r].size()) {
      rep.add(fmt::format("rank {}: output of {} bytes, the interpreter's has {}", r,
                          engine[r].size(), reference[r].size()));
      continue;
    }
    for (std::size_t i = 0; i * es < reference[r].size(); ++i) {
      const std::byte* a = engine[r].data() + i * es;
      const std::byte* b = reference[r].data() + i * es;
      if (std::memcmp(a, b, significant) != 0)
        rep.add(fmt::format("rank {} out[{}]: engine {} interpreter {}", r, i, hex(a, significant),
                            hex(b, significant)));
    }
  }
  return rep.str("engine differs from the same-order reference");
}

bool isComplex(DataType t) {
  return t == DataType::ComplexFloat || t == DataType::ComplexDouble;
}

// Float sums and products are checked against tolerance; everything else exactly.
bool tolerant(DataType t, ReduceOp op) {
  return (isFloating(t) || isComplex(t)) && (op == ReduceOp::Sum || op == ReduceOp::Prod);
}

// Why this tolerance. Every schedule reduces each element along a binary tree over the p
// operands, so an operand passes through at most p-1 roundings. With fl(a op b) = (a op b)(1+d),
// |d| <= u = 2^-digits (round to nearest; the kernels round once per operation), Higham,
// "Accuracy and Stability of Numerical Algorithms" (2nd ed., Lemma 3.1 and section 4.2), bounds
//   sum:      |computed - exact| <= gamma_{p-1} * sum |x_r|
//   product:  |computed - exact| <= gamma_{p-1} * prod |x_r|   (no overflow or underflow: the
//                                                             factors lie in [0.9, 1.1])
// whatever the tree, with gamma_n = n u / (1 - n u). A complex product errs by at most
// sqrt(5) u |z1||z2| (Brent, Percival and Zimmermann, Math. Comp. 76, 2007), so complex products
// use 3u per step, normwise; complex sums are real sums per component. The reference is itself a
// rank-order fold in long double, off by the same bound with u = 2^-64; the test allows both.
// For fp32 at p = 64 that is 63 * 2^-24 ~ 3.8e-6 of sum |x_r|; for fp16, 63 * 2^-11 ~ 3.2%.
long double toleranceFactor(std::uint32_t p, DataType t, ReduceOp op) {
  const long double perStep = op == ReduceOp::Prod && isComplex(t) ? 3.0L : 1.0L;
  const long double u = std::ldexp(1.0L, -significandBits(t));
  return gammaBound(p - 1, perStep * u) + gammaBound(p - 1, perStep * std::ldexp(1.0L, -64));
}

// The rank-order value of a float reduction and the magnitudes its tolerance scales with.
struct FloatRef {
  std::complex<long double> value;
  long double magRe = 0, magIm = 0;  // sums: sum |re|, sum |im|; products: prod |z| in magRe
};

std::complex<long double> valueAt(DataType t, const std::byte* at) {
  if (!isComplex(t)) return {realValue(t, at), 0};
  const DataType part = t == DataType::ComplexFloat ? DataType::Float32 : DataType::Float64;
  return {realValue(part, at), realValue(part, at + sizeOf(part))};
}

// What every reduced element should be, computed once per element index from the inputs alone:
// bits of the rank-order fold with the reference op (exact checks), or the rank-order value in
// long double (tolerance checks).
struct RankOrder {
  Bytes bits;
  std::vector<FloatRef> floats;

  RankOrder(const std::vector<Bytes>& in, std::uint64_t total, std::size_t es, const ElementOp& op,
            bool tolerant, DataType t, ReduceOp rop) {
    if (!tolerant) {
      bits.assign(total * es, std::byte{0});
      for (std::uint64_t j = 0; j < total; ++j) {
        std::byte* acc = bits.data() + j * es;
        std::memcpy(acc, in[0].data() + j * es, es);
        for (std::size_t q = 1; q < in.size(); ++q) op(acc, acc, in[q].data() + j * es);
      }
      return;
    }
    const bool sum = rop == ReduceOp::Sum;
    floats.resize(total);
    for (std::uint64_t j = 0; j < total; ++j) {
      FloatRef& f = floats[j];
      for (std::size_t q = 0; q < in.size(); ++q) {
        const std::complex<long double> x = valueAt(t, in[q].data() + j * es);
        if (q == 0) {
          f = {x, sum ? std::fabs(x.real()) : std::abs(x), std::fabs(x.imag())};
          continue;
        }
        f.value = sum ? f.value + x : f.value * x;
        f.magRe = sum ? f.magRe + std::fabs(x.real()) : f.magRe * std::abs(x);
        f.magIm += std::fabs(x.imag());
      }
    }
  }
};

// Check 2 for one float element: |result - rank-order value| <= factor * magnitude.
std::string toleranceCheck(DataType t, ReduceOp op, long double factor, const FloatRef& ref,
                           const std::byte* got) {
  const std::complex<long double> res = valueAt(t, got);
  const bool finite = std::isfinite(res.real()) && std::isfinite(res.imag());
  const bool ok = op == ReduceOp::Prod
                      ? std::abs(res - ref.value) <= factor * ref.magRe
                      : std::fabs(res.real() - ref.value.real()) <= factor * ref.magRe &&
                            std::fabs(res.imag() - ref.value.imag()) <= factor * ref.magIm;
  if (finite && ok) return {};
  if (!isComplex(t))
    return fmt::format("{} but the rank-order value is {} (tolerance {})", res.real(),
                       ref.value.real(), factor * ref.magRe);
  return fmt::format("({}, {}) but the rank-order value is ({}, {})", res.real(), res.imag(),
                     ref.value.real(), ref.value.imag());
}

struct SemanticsOptions {
  std::size_t es;
  std::size_t significant;
  ElementOp op;
  bool tolerant = false;  // float sum/prod: tolerance, not bits, for reduced elements
  DataType type = DataType::Byte;
  ReduceOp rop = ReduceOp::Sum;
};

// Check 2: the output against the collective's meaning, computed from the inputs alone.
Report checkSemantics(const Problem& pb, const std::vector<Bytes>& outputs,
                      const std::vector<Bytes>& contributions, const SemanticsOptions& o) {
  Report rep;
  const std::uint64_t reducedCount = reduces(pb.coll) ? pb.total() : 0;
  // The rank-order folds, one per prefix length a segment asks for (all ranks: one).
  std::map<std::uint32_t, RankOrder> folds;
  const auto foldOf = [&](std::uint32_t upTo) -> const RankOrder& {
    const std::uint32_t k = std::min(upTo, pb.ranks);
    auto it = folds.find(k);
    if (it == folds.end()) {
      const std::vector<Bytes> first(contributions.begin(),
                                     contributions.begin() + static_cast<std::ptrdiff_t>(k));
      it = folds.emplace(k, RankOrder(first, reducedCount, o.es, o.op, o.tolerant, o.type, o.rop))
               .first;
    }
    return it->second;
  };
  const long double factor = toleranceFactor(pb.ranks, o.type, o.rop);
  for (std::uint32_t r = 0; r < pb.ranks; ++r) {
    for (const Segment& seg : expected(pb, r)) {
      const RankOrder* ro = seg.src < 0 ? &foldOf(seg.upTo) : nullptr;
      for (std::uint64_t j = 0; j < seg.count; ++j) {
        const std::uint64_t at = seg.out + j, from = seg.from + j;
        if ((at + 1) * o.es > outputs[r].size()) {
          rep.add(fmt::format("rank {}: out[{}] is outside its output", r, at));
          break;
        }
        const std::byte* got = outputs[r].data() + at * o.es;
        if (seg.src < 0 && o.tolerant) {
          const std::string bad = toleranceCheck(o.type, o.rop, factor, ro->floats[from], got);
          if (!bad.empty()) rep.add(fmt::format("rank {} out[{}] = {}", r, at, bad));
          continue;
        }
        const std::byte* want =
            seg.src < 0 ? ro->bits.data() + from * o.es
                        : contributions[static_cast<std::size_t>(seg.src)].data() + from * o.es;
        if (std::memcmp(got, want, o.significant) != 0)
          rep.add(fmt::format("rank {} out[{}] = {}, {} {}", r, at, hex(got, o.significant),
                              seg.src < 0 ? "rank-order reduction" : "expected copy",
                              hex(want, o.significant)));
      }
    }
  }
  return rep;
}

std::vector<engine::RankBuffers> engineBuffers(const std::vector<RankMemory>& mem) {
  std::vector<engine::RankBuffers> b(mem.size());
  for (std::size_t r = 0; r < mem.size(); ++r) b[r] = {mem[r].input, mem[r].output};
  return b;
}

std::vector<Bytes> contributionsOf(const Problem& pb, DataType t, ReduceOp op, std::uint64_t seed) {
  std::vector<Bytes> c(pb.ranks);
  for (std::uint32_t r = 0; r < pb.ranks; ++r)
    c[r] = contribution(t, op, seed, pb.ranks, r, contributionCount(pb, r));
  return c;
}

void unusedOp(std::byte*, const std::byte*, const std::byte*, const void*) {
  throw std::logic_error("a copy-only collective reduced");
}

}  // namespace

long double gammaBound(std::uint32_t n, long double u) {
  const long double nu = static_cast<long double>(n) * u;
  return nu / (1 - nu);
}

std::uint64_t contributionCount(const Problem& pb, std::uint32_t r) {
  switch (pb.coll) {
    case Collective::AllGather:
      return pb.blocks.count(r);
    case Collective::Broadcast:
    case Collective::Scatter:
      return r == pb.root ? pb.total() : 0;
    case Collective::Gather:
      return pb.blocks.count(r);
    case Collective::AllToAllV:
      return pb.pairs.sendBlocks(r).total();
    case Collective::Barrier:
      return 0;
    default:
      return pb.total();
  }
}

std::string checkRealData(const algo::Schedule& s, DataType type, ReduceOp op, std::uint64_t seed,
                          bool corruptOne) {
  const Problem& pb = s.problem;
  const std::string what =
      fmt::format("{} {} {} seed {}", algo::toString(pb), name(type), name(op), seed);
  const std::size_t es = sizeOf(type);
  const std::vector<Bytes> contributions = contributionsOf(pb, type, op, seed);
  const std::vector<RankMemory> mem = place(pb, es, contributions);

  const ElementOp ref = defined(op, type) ? scalarOp(type, op) : ElementOp{unusedOp, nullptr};
  const InterpretResult same = interpret(s, es, ref, mem);
  if (!same.error.empty()) return what + ": the reference interpreter failed: " + same.error;

  engine::LocalRunResult run = engine::runLocal(s, type, op, engineBuffers(mem));
  if (!run.ok) return what + ": the engine failed: " + run.error;
  if (corruptOne)
    for (auto& o : run.outputs)
      if (!o.empty()) {
        o[0] ^= std::byte{0x40};
        break;
      }

  const std::size_t significant = significantBytes(type);
  std::string err = compareWithInterpreter(run.outputs, same.outputs, es, significant);
  const Report sem =
      checkSemantics(pb, run.outputs, contributions,
                     {es, significant, ref, tolerant(type, op) && reduces(pb.coll), type, op});
  err += sem.str(tolerant(type, op) ? "outside the tolerance of the rank-order value"
                                    : "differs from the rank-order reference");
  return err.empty() ? err : what + ":\n" + err;
}

UserOpOutcome runUserOp(const algo::Schedule& s, const engine::Reduction& engineOp,
                        const ElementOp& referenceOp, std::size_t elemSize,
                        const std::vector<Bytes>& contributions) {
  const Problem& pb = s.problem;
  const std::string what = fmt::format("{} user op", algo::toString(pb));
  UserOpOutcome out;
  const std::vector<RankMemory> mem = place(pb, elemSize, contributions);
  const InterpretResult same = interpret(s, elemSize, referenceOp, mem);
  if (!same.error.empty()) {
    out.error = what + ": the reference interpreter failed: " + same.error;
    return out;
  }
  const engine::LocalRunResult run = engine::runLocal(s, engineOp, engineBuffers(mem));
  if (!run.ok) {
    out.error = what + ": the engine failed: " + run.error;
    return out;
  }
  out.error = compareWithInterpreter(run.outputs, same.outputs, elemSize, elemSize);
  if (!out.error.empty()) out.error = what + ":\n" + out.error;
  const Report sem =
      checkSemantics(pb, run.outputs, contributions,
                     {elemSize, elemSize, referenceOp, false, DataType::Byte, ReduceOp::Sum});
  out.rankOrderMismatches = sem.count;
  out.firstMismatch = sem.text;
  return out;
}

}  // namespace hccl::reference
