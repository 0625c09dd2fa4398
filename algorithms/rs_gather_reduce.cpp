// Reduce as ReduceScatter + Gather, for the algorithms HCCL lists for Reduce that have no Reduce
// of their own (NHR, NB and Mesh; reference section 1: "Reduce (ReduceScatter + Gather)", Mesh's
// row "2a + (2/p)n b + ((p-1)/p)n g"): the vector's p blocks are reduce-scattered with the
// algorithm's ReduceScatter, then gathered to the root with its Gather (its Scatter reversed).
//
// Steps and peers (p ranks, root t, n elements split evenly over p as n_i = ceil or floor of
// n/p, 0 allowed; any root, any n):
//   0. in place at the root only: copy Output[0, n) (its data) to Scratch[0, n), the
//      ReduceScatter's input, since the ReduceScatter writes into Output (one local copy, as
//      hier_reduce.cpp and an in-place ReduceScatter make).
//   1. the algorithm's ReduceScatter over all p ranks (its own steps and peers: NHR's binomial
//      slice trees towards r-2^k, NB's towards r+2^k, Mesh's one step with every peer, which
//      reduces the p contributions in rank order): rank i ends with block i summed over
//      every rank, at its natural offset of the working vector W (the root's Output, a
//      non-root's Scratch[0, n): a non-root's Output is not result, the write contract).
//   2. the algorithm's Gather of the blocks to the root, in place in W (block i read where
//      step 1 left it): the root ends with the whole sum in Output; the others hold nothing.
// Each generator's own scratch starts at Scratch[n].
//
// Cost (alpha-beta-gamma), K = ceil(log2 p), both NHR and NB:
//   RS: K a + ((p-1)/p) n b + ((p-1)/p) n c, Gather: K a + ((p-1)/p) n b, so
//   2K a + 2((p-1)/p) n b + ((p-1)/p) n c   (HCCL's ReduceScatter + Gather form),
// against a ring Reduce's (p-1)(a + n b + n c): fewer steps and 1/p of the reduction work per
// rank, at twice the vector over the busiest link. Mesh, every link at once (mesh.cpp):
//   RS: a + (1/p) n b + ((p-1)/p) n c, Gather: a + (1/p) n b, so 2a + (2/p) n b + ((p-1)/p) n c.
// At p = 2 on one server (shared memory) this is what makes Reduce cheaper than the ring's
// chain: each rank reduces half the vector, at the same time, reading its peer's half in place
// (the executor's direct reads), and the root then copies the other rank's half once, where the
// chain has the root reduce the whole vector alone while the other rank waits.
//
// Rank order: no for NHR and NB (the ReduceScatter's slice trees wrap around rank 0, see nhr.cpp
// and nb.cpp); yes for Mesh (its ReduceScatter folds x_0 (+) ... (+) x_{p-1}; the Gather copies).
// Uneven blocks: yes (n not divisible by p, blocks of 0 included).
#include <algorithm>
#include <array>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/slice_trees.hpp"

namespace hccl::algo {
namespace {

RankSchedule reduceByScatterGather(const Problem& pb, std::uint32_t r, Generator reduceScatter,
                                   Generator gather) {
  RankSchedule out;
  const std::uint64_t n = pb.total();
  const bool root = r == pb.root;
  Buf src = pb.inPlace && root ? Buf::Output : Buf::Input;
  if (pb.ranks == 1) {
    if (src == Buf::Input && n > 0)
      copy(out.newStep(), Slice{Buf::Output, 0, n}, Slice{Buf::Input, 0, n});
    return out;
  }
  if (n == 0) return out;
  if (src == Buf::Output) {
    copy(out.newStep(), Slice{Buf::Scratch, 0, n}, Slice{Buf::Output, 0, n});
    src = Buf::Scratch;
  }
  const Blocks& bl = pb.blocks;
  const Buf w = root ? Buf::Output : Buf::Scratch;
  const BufferRegion tmp{Buf::Scratch, n};
  Embedding e;
  e.members.resize(pb.ranks);
  for (std::uint32_t q = 0; q < pb.ranks; ++q) e.members[q] = q;
  e.to = {BufferRegion{src, 0}, BufferRegion{w, bl.offset(r)}, tmp};
  embed(out, reduceScatter(Problem{Collective::ReduceScatter, pb.ranks, 0, false, bl}, r), e);
  e.to = {BufferRegion{w, bl.offset(r)}, BufferRegion{w, 0}, tmp};
  embed(out, gather(Problem{Collective::Gather, pb.ranks, pb.root, true, bl}, r), e);
  prune(out);
  return out;
}

// scratchCount(reduceByScatterGather(pb, r, ...)) from the two generators' scratch formulas: the
// in-place root's copy of its data (Scratch[0, n)); a non-root's working vector W = Scratch[0, n),
// of which both phases touch only its own block (the ReduceScatter's result, the Gather's input);
// each generator's own scratch from Scratch[n] on.
std::uint64_t scatterGatherScratch(const Problem& pb, std::uint32_t r, ScratchFn reduceScatter,
                                   ScratchFn gather) {
  const std::uint64_t n = pb.total();
  if (pb.ranks == 1 || n == 0) return 0;
  const Blocks& bl = pb.blocks;
  const bool root = r == pb.root;
  std::uint64_t top = 0;
  if (root && pb.inPlace)
    top = n;
  else if (!root && bl.count(r) > 0)
    top = bl.offset(r) + bl.count(r);
  const std::uint64_t rs =
      reduceScatter(Problem{Collective::ReduceScatter, pb.ranks, 0, false, bl}, r);
  const std::uint64_t g = gather(Problem{Collective::Gather, pb.ranks, pb.root, true, bl}, r);
  if (rs > 0) top = std::max(top, n + rs);
  if (g > 0) top = std::max(top, n + g);
  return top;
}

// Lockstep, or with empty blocks the ReduceScatter's and Gather's critical path from per-step
// counts (tree::phasesPath) on the generators' trees: identity-numbered slices, orientation +1
// (NHR) or -1 (NB).
Metrics treeReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                       const CostParams& params, int orient) {
  if (!someBlockEmpty(pb)) return lockstepCost(g, pb, elemSize, params);
  constexpr std::array phases{tree::CostPhase::ReduceScatter, tree::CostPhase::Gather};
  return tree::phasesPath(tree::SliceTree(pb.ranks, orient), pb.blocks, phases, elemSize, params,
                          pb.root);
}

}  // namespace

Metrics nhrReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                      const CostParams& params) {
  return treeReduceCost(g, pb, elemSize, params, +1);
}

Metrics nbReduceCost(const GeneratorSpec& g, const Problem& pb, std::size_t elemSize,
                     const CostParams& params) {
  return treeReduceCost(g, pb, elemSize, params, -1);
}

std::uint64_t nhrReduceScratch(const Problem& pb, std::uint32_t rank) {
  return scatterGatherScratch(pb, rank, nhrReduceScatterScratch, nhrScatterScratch);
}

std::uint64_t nbReduceScratch(const Problem& pb, std::uint32_t rank) {
  return scatterGatherScratch(pb, rank, nbReduceScatterScratch, nbScatterScratch);
}

std::uint64_t meshReduceScratch(const Problem& pb, std::uint32_t rank) {
  return scatterGatherScratch(pb, rank, meshReduceScatterScratch, noScratch);
}

RankSchedule nhrReduce(const Problem& pb, std::uint32_t rank) {
  return reduceByScatterGather(pb, rank, nhrReduceScatter, nhrGather);
}

RankSchedule nbReduce(const Problem& pb, std::uint32_t rank) {
  return reduceByScatterGather(pb, rank, nbReduceScatter, nbGather);
}

RankSchedule meshReduce(const Problem& pb, std::uint32_t rank) {
  return reduceByScatterGather(pb, rank, meshReduceScatter, meshGather);
}

// The replay of meshReduce's schedule without building it (whose p ranks list p-1 transfers each:
// p^2). Every rank posts its ReduceScatter step at time 0 (the in-place root's copy before it is
// free), so rank r's finishes at R_r = its own step's cost: it sends block j to every j != r,
// receives its own block c_r from every peer and reduces p-1 times c_r. The Gather step then
// starts when both ends are posted: a non-root r (c_r > 0) sends c_r once the root has finished
// its ReduceScatter, max(R_r, R_root); the root receives every c_j > 0 once all of those have,
// max over them and itself. The critical path is the latest finish, the lowest rank of equal
// ones, as the replay's. Each step is costed by addStepLoad() from its loads, so the times are
// the replay's to the last bit; where two paths tie in time the replay keeps whichever partner
// matched first, which this does not model (only the steps and bytes of equal times may differ).
// O(p) time and memory.
Metrics meshReduceCost(const GeneratorSpec&, const Problem& pb, std::size_t elemSize,
                       const CostParams& params) {
  const std::uint32_t p = pb.ranks;
  const std::uint64_t n = pb.total();
  if (p <= 1 || n == 0) return {};
  const Blocks& bl = pb.blocks;
  const std::uint32_t root = pb.root;
  const LargestOther largestBut(bl);
  struct Timed {
    double t = 0;
    Metrics path;
  };
  const auto scatterStep = [&](std::uint32_t r) {
    const std::uint64_t c = bl.count(r);
    StepLoad sl;
    // Every send is one peer-direction; the busiest is the largest block sent. The total per
    // direction is what the shared-link rule reads.
    if (n > c) {
      sl.add(0, Dir::Send, largestBut(r) * elemSize);
      sl.total[0][0] = (n - c) * elemSize;
    }
    if (c > 0) {
      sl.add(0, Dir::Recv, c * elemSize);
      sl.total[0][1] = (p - 1) * c * elemSize;
      sl.reduced = (p - 1) * c * elemSize;
    }
    Timed out;
    out.t = addStepLoad(sl, params, out.path);
    return out;
  };
  const Timed rootScatter = scatterStep(root);
  // The root's Gather step starts at the latest of its own and its senders' ReduceScatter
  // finishes (the first of equal ones: its own, then ranks in order).
  Timed rootStart = rootScatter;
  std::vector<Timed> done(p);
  for (std::uint32_t r = 0; r < p; ++r) {
    if (r == root) continue;
    Timed t = scatterStep(r);
    const std::uint64_t c = bl.count(r);
    if (c > 0) {
      if (t.t > rootStart.t) rootStart = t;
      if (rootScatter.t > t.t) t = rootScatter;
      StepLoad sl;
      sl.add(0, Dir::Send, c * elemSize);
      t.t += addStepLoad(sl, params, t.path);
    }
    done[r] = std::move(t);
  }
  done[root] = rootStart;
  if (n > bl.count(root)) {
    StepLoad sl;
    sl.add(0, Dir::Recv, largestBut(root) * elemSize);
    sl.total[0][1] = (n - bl.count(root)) * elemSize;
    done[root].t += addStepLoad(sl, params, done[root].path);
  }
  const Timed* last = &done.front();
  for (const Timed& d : done)
    if (d.t > last->t) last = &d;
  Metrics m = last->path;
  m.time = last->t;
  return m;
}

}  // namespace hccl::algo
