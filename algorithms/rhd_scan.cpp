// Scan and Exscan by recursive doubling (HCCL "H-D_R"'s distance doubling applied to prefixes;
// HCCL itself has no scan). With K = ceil(log2 p), h = 2^k:
//
// Scan, K steps: rank r holds x_r, the reduction of ranks max(0, r-h+1)..r (its input at first).
//   At step k it sends x_r to r+h (if r+h < p) and receives x_{r-h} from r-h (if r >= h), then
//   sets x_r = x_{r-h} (+) x_r; after step k x_r covers max(0, r-2h+1)..r, after the last step
//   0..r. The received part covers lower ranks and sits on the left: rank order holds for any
//   associative op, commutative or not. x_r lives in Output; receives land in Scratch[0, n).
//   cost ceil(log2 p)(a + n b + n g)
// Exscan, K steps: the same exchanges of x_r, plus the result e_r (Output), the reduction of
//   ranks max(0, r-h+1)..r-1: the first receipt is copied into it, later ones reduced on its
//   left, e_r = x_{r-h} (+) e_r. x_r moves to Scratch[0, n) at its first update (it cannot stay
//   in Output, which becomes e_r) and is updated only while a later step still sends it;
//   receives land in Scratch[n, 2n). Rank 0 receives nothing and writes no output (MPI leaves it
//   undefined).
//   cost ceil(log2 p)(a + n b) + up to 2 ceil(log2 p) n g
//
// Rank order: yes, by construction (the verifier always checks it for Scan and Exscan).
#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "algorithms/generators.hpp"

namespace hccl::algo {
namespace {

std::uint32_t stepCount(std::uint32_t p) {
  std::uint32_t k = 0;
  while ((std::uint64_t{1} << k) < p) ++k;
  return k;
}

RankSchedule prefix(const Problem& pb, std::uint32_t r, bool exclusive) {
  RankSchedule out;
  const std::uint64_t n = pb.total();
  const std::uint32_t p = pb.ranks;
  const Slice output{Buf::Output, 0, n};
  Slice x = pb.inPlace ? output : Slice{Buf::Input, 0, n};  // where x_r lives now
  const Slice landing{Buf::Scratch, exclusive ? n : 0, n};
  const Slice xScratch{Buf::Scratch, 0, n};
  bool received = false;
  if (!exclusive && !pb.inPlace) {
    // Rank 0 never receives; the others overwrite Output at their first receipt.
    if (r == 0) copy(out.firstStep(), output, x);
  }
  for (std::uint32_t k = 0; k < stepCount(p); ++k) {
    const std::uint64_t h = std::uint64_t{1} << k;
    Step& s = out.newStep();
    if (r + h < p) send(s, static_cast<std::uint32_t>(r + h), x);
    if (r < h) continue;
    recv(s, static_cast<std::uint32_t>(r - h), landing);
    if (!exclusive) {
      reduce(s, output, landing, x);
      x = output;
      continue;
    }
    // x_r is needed again only if a later step sends it (r + 2h < p).
    if (r + 2 * h < p) {
      reduce(s, xScratch, landing, x);
    }
    if (received)
      reduce(s, output, landing, output);
    else
      copy(s, output, landing);
    received = true;
    if (r + 2 * h < p) x = xScratch;
  }
  prune(out);
  return out;
}

}  // namespace

std::uint64_t rhdScanScratch(const Problem& pb, std::uint32_t r) {
  return r == 0 ? 0 : pb.total();
}

std::uint64_t rhdExscanScratch(const Problem& pb, std::uint32_t r) {
  return r == 0 ? 0 : 2 * pb.total();
}

RankSchedule rhdScan(const Problem& pb, std::uint32_t r) {
  return prefix(pb, r, false);
}

RankSchedule rhdExscan(const Problem& pb, std::uint32_t r) {
  return prefix(pb, r, true);
}

// The replay of rhdExscan's schedule (metrics.hpp's rules) from every rank's per-step counts.
// Lockstep does not describe it: where p is not a power of two, the ranks near the top send less
// and so finish steps earlier than the ranks they wait on. At step k (h = 2^k) rank r sends its
// whole vector to r+h (if r+h < p) and receives one from r-h (if r >= h); it reduces x_r when a
// later step still sends it (r+2h < p) and e_r after its first receipt (at step 0 for every
// r >= 1, so at every later step it receives in). The step starts when r and both partners have
// posted it, i.e. finished their previous (non-empty) steps: every pair meets once. Each step is
// costed by addStepLoad(), so the times are the replay's to the last bit; where partners tie in
// time the path kept may be another of the same length. O(p log p) time, O(p) memory.
Metrics rhdExscanCost(const GeneratorSpec&, const Problem& pb, std::size_t elemSize,
                      const CostParams& params) {
  const std::uint32_t p = pb.ranks;
  const std::uint64_t n = pb.total();
  if (p <= 1 || n == 0) return {};
  struct Timed {
    double t = 0;
    Metrics path;
  };
  std::vector<Timed> clock(p), next(p);
  const std::uint64_t bytes = n * elemSize;
  // A step's load is one of twelve (sends or not, receives or not, 0-2 vectors reduced): each is
  // costed once and added per rank and step, the bits addStepLoad() would give (4096 ranks: 49,152
  // steps, 2.6-5.1 ms of a first Exscan call's decision when each was costed anew).
  std::array<std::optional<Metrics>, 12> deltas;
  const auto delta = [&](bool sends, bool receives,
                         std::uint64_t reducedVectors) -> const Metrics& {
    std::optional<Metrics>& d = deltas[(sends ? 6u : 0u) + (receives ? 3u : 0u) + reducedVectors];
    if (!d) {
      StepLoad sl;
      if (sends) sl.add(0, Dir::Send, bytes);
      if (receives) sl.add(0, Dir::Recv, bytes);
      sl.reduced = reducedVectors * bytes;
      d = stepDelta(sl, params);
    }
    return *d;
  };
  for (std::uint32_t k = 0; k < stepCount(p); ++k) {
    const std::uint64_t h = std::uint64_t{1} << k;
    for (std::uint32_t r = 0; r < p; ++r) {
      const bool sends = r + h < p, receives = r >= h;
      if (!sends && !receives) {  // an empty step, pruned
        next[r] = clock[r];
        continue;
      }
      const Timed* start = &clock[r];
      if (receives && clock[r - h].t > start->t) start = &clock[r - h];
      if (sends && clock[r + h].t > start->t) start = &clock[r + h];
      const Metrics& d =
          delta(sends, receives,
                receives ? std::uint64_t{r + 2 * h < p} + std::uint64_t{k > 0} : std::uint64_t{0});
      Timed now = *start;
      now.t += d.time;
      addStepDelta(d, now.path);
      next[r] = now;
    }
    std::swap(clock, next);
  }
  const Timed* last = &clock.front();
  for (const Timed& c : clock)
    if (c.t > last->t) last = &c;
  Metrics m = last->path;
  m.time = last->t;
  return m;
}

}  // namespace hccl::algo
