// The critical path of NHR's and NB's tree schedules from per-(rank, step) element counts
// (slice_trees.hpp, tree::phasesPath), for blocks that lockstep costing cannot describe (empty
// ones: a rank whose step carries nothing skips it and runs ahead, so ranks stop meeting their
// partners at the same point). tests/algorithms/rank_cost_test.cpp checks it against the replay.
//
// What a rank moves at a step, with o the tree's orientation, h = 2^k, w(s) the count of logical
// slice s and P_k(x) = sum over j < sharesAt(p, k) of w(x - o*2h*j):
//   ReduceScatter step k: sends P_k(r - o*h) to r - o*h, receives P_k(r) from r + o*h and
//     reduces it;
//   AllGather step k (k from K-1 down to 0): sends P_k(r) to r + o*h, receives P_k(r - o*h);
//   Bruck AllGather step k, m = min(h, p-h), W(x) = w(x) + w(x-1) + .. + w(x-m+1): sends W(r)
//     to r + h, receives W(r - h) from r - h.
//   Scatter step k from root t, e the rank's scatter position (rank t - o*e), S_k(e) = sum over
//     f = e, e+2h, .. < p of w(t - o*f): position e < h with e+h < p sends S_k(e+h) to r - o*h,
//     position e in [h, 2h) receives S_k(e) from r + o*h;
//   Gather: the Scatter reversed (steps K-1 down to 0, each transfer's direction swapped);
//   with a root given, an AllGather sends nothing to it and it receives nothing (a Broadcast's
//     root already holds every slice).
// P_k along a cycle of stride 2h slides by one term a rank (P_k(x + o*2h) = P_k(x) + w(x + o*2h)
// - w(x - o*2h*(J-1))), so a step costs O(p) for all ranks; S_k's terms are the positions f >= h
// whose f mod 2h >= h, each counted once, O(p) a step too.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "algorithms/rank_cost.hpp"
#include "algorithms/slice_trees.hpp"

namespace hccl::algo::tree {
namespace {

// Moves on the ring of p ranks by precomputed offsets, without a division a move (the sweeps
// below make p of them a step).
struct Moves {
  std::uint32_t p;
  int orient;
  // inward(x, d) = add(x, inwardBy(d)), outward(x, d) = add(x, outwardBy(d)).
  std::uint32_t inwardBy(std::uint64_t d) const {
    const auto m = static_cast<std::uint32_t>(d % p);
    return orient > 0 ? (p - m) % p : m;
  }
  std::uint32_t outwardBy(std::uint64_t d) const { return (p - inwardBy(d)) % p; }
  std::uint32_t add(std::uint32_t x, std::uint32_t by) const {
    const std::uint64_t y = std::uint64_t{x} + by;
    return static_cast<std::uint32_t>(y >= p ? y - p : y);
  }
};

// P[x] = sum over j < terms of w[x - o*stride*j], every x, into `out` (p entries).
void strided(const Moves& mv, const std::vector<std::uint64_t>& w, std::uint64_t stride,
             std::uint64_t terms, std::vector<std::uint64_t>& out) {
  const std::uint32_t p = mv.p;
  if (terms == 0) {
    out.assign(p, 0);
    return;
  }
  out.resize(p);  // the cycles below write every entry
  const std::uint64_t s = stride % p;
  const std::uint64_t cycles = s == 0 ? p : std::gcd(s, std::uint64_t{p});
  const std::uint32_t in = mv.inwardBy(stride), fwd = mv.outwardBy(stride);
  for (std::uint32_t c = 0; c < cycles; ++c) {
    std::uint64_t sum = 0;
    std::uint32_t tail = c;
    for (std::uint64_t j = 0; j < terms; ++j) {
      sum += w[tail];
      if (j + 1 < terms) tail = mv.add(tail, in);
    }
    std::uint32_t x = c;
    for (std::uint64_t i = 0; i < p / cycles; ++i) {
      out[x] = sum;
      x = mv.add(x, fwd);
      sum = sum + w[x] - w[tail];
      tail = mv.add(tail, fwd);
    }
  }
}

// W[x] = w[x] + w[x-1] + .. + w[x-m+1] (mod p), every x, into `out`.
void window(const std::vector<std::uint64_t>& w, std::uint64_t m, std::vector<std::uint64_t>& out) {
  const std::size_t p = w.size();
  out.resize(p);
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < m; ++i) sum += w[(p - i % p) % p];
  std::size_t head = p == 1 ? 0 : 1, tail = (1 + p - m % p) % p;
  for (std::size_t x = 0; x < p; ++x) {
    out[x] = sum;
    sum = sum + w[head] - w[tail];
    head = head + 1 == p ? 0 : head + 1;
    tail = tail + 1 == p ? 0 : tail + 1;
  }
}

// S[e - h] = S_k(e) for the receiving positions e in [h, min(2h, p)) of scatter step k, into
// `out`.
void subtrees(const SliceTree& t, const std::vector<std::uint64_t>& w, std::uint32_t root,
              std::uint64_t h, std::vector<std::uint64_t>& out) {
  const std::uint32_t p = t.ranks();
  out.assign(std::min<std::uint64_t>(h, p - h), 0);
  for (std::uint64_t e = h; e < p && e < 2 * h; ++e)
    for (std::uint64_t f = e; f < p; f += 2 * h) out[e - h] += w[t.inward(root, f)];
}

// phasesPath's arrays: one set for the whole costing, where a new per-step array of p counts
// (allocated and zeroed each step) was a tenth of its instructions at 4096 ranks. Every use
// overwrites what it reads. (Kept per thread from one costing to the next, they faulted more
// pages in a first decision, 101 -> 116: the heap no longer reused the pages freed before.)
struct Workspace {
  std::vector<std::uint64_t> w, wBlock, sums;
  std::vector<std::uint32_t> position;
  std::vector<Clock> clock, next;
};

}  // namespace

namespace {

// What one step adds to a clock (advanceStep()), computed once for a step's counts: the ranks of
// a step mostly move the same counts, and adding the same terms in the same order keeps the bits.
struct StepCost {
  double link = 0, reduce = 0;
  std::uint64_t busiest = 0, reducedBytes = 0;
};

StepCost stepCost(std::uint64_t tx, std::uint64_t rx, std::size_t elemSize,
                  const CostParams& params) {
  const std::uint64_t largest = std::max(tx, rx) * elemSize;
  std::uint64_t busiest = largest;
  // A tree step sends to one peer and receives from one: per direction its largest, on a
  // half-duplex link both (metrics.hpp).
  const std::uint64_t load = params.halfDuplex[0] ? (tx + rx) * elemSize : largest;
  const double shared = static_cast<double>(load) / params.links[0];
  if (shared > static_cast<double>(busiest)) busiest = static_cast<std::uint64_t>(shared + 0.5);
  return {params.linkTime(0, largest, busiest), params.gamma * static_cast<double>(rx * elemSize),
          busiest, rx * elemSize};
}

void apply(Clock& c, const StepCost& s, bool reduced) {
  c.t += s.link;
  c.steps += 1;
  c.bytes += s.busiest;
  if (reduced) {
    c.reduced += s.reducedBytes;
    c.t += s.reduce;
  }
}

}  // namespace

void advanceStep(Clock& c, std::uint64_t tx, std::uint64_t rx, bool reduced, std::size_t elemSize,
                 const CostParams& params) {
  apply(c, stepCost(tx, rx, elemSize, params), reduced);
}

Metrics Clock::metrics() const {
  Metrics m;
  m.level[0] = {steps, bytes};
  m.reducedBytes = reduced;
  m.time = t;
  return m;
}

Metrics phasesPath(const SliceTree& t, const Blocks& bl, std::span<const CostPhase> phases,
                   std::size_t elemSize, const CostParams& params, std::uint32_t root) {
  const std::uint32_t p = t.ranks();
  if (p <= 1) return {};
  for (CostPhase ph : phases)
    if ((ph == CostPhase::Scatter || ph == CostPhase::Gather) && root >= p)
      throw std::invalid_argument(fmt::format(
          "phasesPath: a Scatter or Gather phase needs a root in [0, {}), not {}", p, root));
  Workspace ws;
  std::vector<std::uint64_t>& w = ws.w;  // per logical slice
  w.resize(p);
  for (std::uint32_t s = 0; s < p; ++s) w[s] = bl.count(t.block(s));
  std::vector<std::uint64_t>& wBlock = ws.wBlock;  // per block (Bruck: identity order)
  if (std::find(phases.begin(), phases.end(), CostPhase::BruckAllGather) != phases.end()) {
    wBlock.resize(p);
    for (std::uint32_t b = 0; b < p; ++b) wBlock[b] = bl.count(b);
  }

  const Moves mv{p, t.orient()};
  // Scatter positions (rank root - o*e), for the Scatter and Gather phases.
  std::vector<std::uint32_t>& position = ws.position;
  if (root < p) {
    position.resize(p);
    for (std::uint32_t r = 0; r < p; ++r) position[r] = t.span(r, root);
  }

  std::vector<Clock>&clock = ws.clock, &next = ws.next;
  clock.assign(p, Clock{});
  next.resize(p);
  std::vector<std::uint64_t>& sums = ws.sums;  // a step's S, W or P
  // One step of every rank: r sends sent[r] elements to `to(r)` and receives got[r] from
  // `from(r)`; reduced: whether it reduces what it receives; skipRoot: nothing goes to `root`
  // (an AllGather's, when it already holds every slice).
  const auto step = [&](const auto& sent, const auto& got, const auto& to, const auto& from,
                        bool reduced, bool skipRoot = false) {
    std::uint64_t lastTx = 0, lastRx = 0;
    StepCost last;
    for (std::uint32_t r = 0; r < p; ++r) {
      const bool toRoot = skipRoot && to(r) == root, isRoot = skipRoot && r == root;
      const std::uint64_t tx = toRoot ? 0 : sent(r), rx = isRoot ? 0 : got(r);
      if (tx == 0 && rx == 0) {
        next[r] = clock[r];
        continue;
      }
      const Clock* start = &clock[r];
      if (tx > 0 && clock[to(r)].t > start->t) start = &clock[to(r)];
      if (rx > 0 && clock[from(r)].t > start->t) start = &clock[from(r)];
      if (tx != lastTx || rx != lastRx || (lastTx == 0 && lastRx == 0)) {
        last = stepCost(tx, rx, elemSize, params);
        lastTx = tx;
        lastRx = rx;
      }
      Clock c = *start;
      apply(c, last, reduced);
      next[r] = c;
    }
    clock.swap(next);
  };

  const std::uint32_t steps = t.steps();
  for (CostPhase ph : phases) {
    for (std::uint32_t i = 0; i < steps; ++i) {
      if (ph == CostPhase::Scatter || ph == CostPhase::Gather) {
        const std::uint32_t k = ph == CostPhase::Scatter ? i : steps - 1 - i;
        const std::uint64_t h = std::uint64_t{1} << k;
        subtrees(t, w, root, h, sums);
        const std::vector<std::uint64_t>& S = sums;
        // What position e's rank hands on (e < h) and takes in (h <= e < 2h) in the Scatter.
        const auto handsOn = [&](std::uint32_t r) -> std::uint64_t {
          const std::uint64_t e = position[r];
          return e < h && e + h < p ? S[e] : 0;
        };
        const auto takesIn = [&](std::uint32_t r) -> std::uint64_t {
          const std::uint64_t e = position[r];
          return e >= h && e < 2 * h ? S[e - h] : 0;
        };
        const std::uint32_t inBy = mv.inwardBy(h), outBy = mv.outwardBy(h);
        const auto in = [&](std::uint32_t r) { return mv.add(r, inBy); };
        const auto out = [&](std::uint32_t r) { return mv.add(r, outBy); };
        if (ph == CostPhase::Scatter)
          step(handsOn, takesIn, in, out, false);
        else
          step(takesIn, handsOn, out, in, false);
        continue;
      }
      if (ph == CostPhase::BruckAllGather) {
        const std::uint64_t h = std::uint64_t{1} << i, m = std::min<std::uint64_t>(h, p - h);
        window(wBlock, m, sums);
        const std::vector<std::uint64_t>& W = sums;
        const auto up = static_cast<std::uint32_t>(h % p), down = (p - up) % p;
        const auto plus = [&](std::uint32_t r) { return mv.add(r, up); };
        const auto minus = [&](std::uint32_t r) { return mv.add(r, down); };
        step([&](std::uint32_t r) { return W[r]; }, [&](std::uint32_t r) { return W[minus(r)]; },
             plus, minus, false, true);
        continue;
      }
      const std::uint32_t k = ph == CostPhase::ReduceScatter ? i : steps - 1 - i;
      const std::uint64_t h = std::uint64_t{1} << k;
      strided(mv, w, 2 * h, sharesAt(p, k), sums);
      const std::vector<std::uint64_t>& P = sums;
      const std::uint32_t inBy = mv.inwardBy(h), outBy = mv.outwardBy(h);
      const auto in = [&](std::uint32_t r) { return mv.add(r, inBy); };
      const auto out = [&](std::uint32_t r) { return mv.add(r, outBy); };
      if (ph == CostPhase::ReduceScatter)
        step([&](std::uint32_t r) { return P[in(r)]; }, [&](std::uint32_t r) { return P[r]; }, in,
             out, true);
      else
        step([&](std::uint32_t r) { return P[r]; }, [&](std::uint32_t r) { return P[in(r)]; }, out,
             in, false, true);
    }
  }
  const Clock* last = &clock.front();
  for (const Clock& c : clock)
    if (c.t > last->t) last = &c;
  return last->metrics();
}

namespace {

// Sums of slice counts along a tree's strides, walking rank numbers without a division a term.
class Counts {
 public:
  Counts(const SliceTree& t, const Blocks& bl) : t_(t), bl_(bl), p_(t.ranks()) {}

  // The count of logical slice s.
  std::uint64_t w(std::uint32_t s) const { return bl_.count(t_.block(s)); }
  // P_k(x): sharesAt(p, k) slices x, x - o*2h, x - o*4h, ...
  std::uint64_t strided(std::uint32_t x, std::uint32_t k) const {
    const std::uint64_t h = std::uint64_t{1} << k;
    const std::uint32_t step = inwardStep(2 * h);
    std::uint64_t sum = 0;
    for (std::uint64_t j = sharesAt(p_, k); j > 0; --j) {
      sum += w(x);
      x = advance(x, step);
    }
    return sum;
  }
  // W(x): blocks x, x-1, .., x-m+1 (Bruck, identity order).
  std::uint64_t window(std::uint32_t x, std::uint64_t m) const {
    std::uint64_t sum = 0;
    for (; m > 0; --m) {
      sum += bl_.count(x);
      x = x == 0 ? p_ - 1 : x - 1;
    }
    return sum;
  }
  // S_k(e): the slices of scatter positions e, e+2h, .. < p from `root`.
  std::uint64_t subtree(std::uint32_t root, std::uint64_t e, std::uint64_t h) const {
    std::uint64_t sum = 0;
    std::uint32_t x = t_.inward(root, e);
    const std::uint32_t step = inwardStep(2 * h);
    for (std::uint64_t f = e; f < p_; f += 2 * h) {
      sum += w(x);
      x = advance(x, step);
    }
    return sum;
  }

 private:
  // inward(x, d) = x + inwardStep(d) mod p.
  std::uint32_t inwardStep(std::uint64_t d) const {
    const auto m = static_cast<std::uint32_t>(d % p_);
    return t_.orient() > 0 ? (p_ - m) % p_ : m;
  }
  std::uint32_t advance(std::uint32_t x, std::uint32_t step) const {
    const std::uint64_t y = std::uint64_t{x} + step;
    return static_cast<std::uint32_t>(y >= p_ ? y - p_ : y);
  }

  const SliceTree& t_;
  const Blocks& bl_;
  std::uint32_t p_;
};

}  // namespace

Metrics rankPhasesPath(const SliceTree& t, const Blocks& bl, std::span<const CostPhase> phases,
                       std::uint32_t r, std::size_t elemSize, const CostParams& params,
                       std::uint32_t root) {
  const std::uint32_t p = t.ranks();
  PairPath path(elemSize, params);
  if (p <= 1) return path.path();
  const Counts c(t, bl);
  const std::uint32_t steps = t.steps();
  const std::uint64_t e = root < p ? t.span(r, root) : 0;  // r's scatter position
  for (CostPhase ph : phases) {
    if ((ph == CostPhase::Scatter || ph == CostPhase::Gather) && root >= p)
      throw std::invalid_argument(fmt::format(
          "rankPhasesPath: a Scatter or Gather phase needs a root in [0, {}), not {}", p, root));
    for (std::uint32_t i = 0; i < steps; ++i) {
      std::uint64_t sent = 0, got = 0, reduced = 0;
      switch (ph) {
        case CostPhase::ReduceScatter: {
          const std::uint64_t h = std::uint64_t{1} << i;
          sent = c.strided(t.inward(r, h), i);
          got = reduced = c.strided(r, i);
          break;
        }
        case CostPhase::AllGather: {
          const std::uint32_t k = steps - 1 - i;
          const std::uint64_t h = std::uint64_t{1} << k;
          if (t.outward(r, h) != root) sent = c.strided(r, k);
          if (r != root) got = c.strided(t.inward(r, h), k);
          break;
        }
        case CostPhase::BruckAllGather: {
          const std::uint64_t h = std::uint64_t{1} << i, m = std::min<std::uint64_t>(h, p - h);
          const auto from = static_cast<std::uint32_t>((r + p - h % p) % p);
          if ((r + h) % p != root) sent = c.window(r, m);
          if (r != root) got = c.window(from, m);
          break;
        }
        case CostPhase::Scatter:
        case CostPhase::Gather: {
          const std::uint32_t k = ph == CostPhase::Scatter ? i : steps - 1 - i;
          const std::uint64_t h = std::uint64_t{1} << k;
          std::uint64_t handsOn = 0, takesIn = 0;
          if (e < h && e + h < p) handsOn = c.subtree(root, e + h, h);
          if (e >= h && e < 2 * h) takesIn = c.subtree(root, e, h);
          sent = ph == CostPhase::Scatter ? handsOn : takesIn;
          got = ph == CostPhase::Scatter ? takesIn : handsOn;
          break;
        }
      }
      path.step(sent, got, reduced);
    }
  }
  return path.path();
}

}  // namespace hccl::algo::tree
