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

RankSchedule rhdScan(const Problem& pb, std::uint32_t r) {
  return prefix(pb, r, false);
}

RankSchedule rhdExscan(const Problem& pb, std::uint32_t r) {
  return prefix(pb, r, true);
}

}  // namespace hccl::algo
