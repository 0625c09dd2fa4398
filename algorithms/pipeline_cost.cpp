// The pipeline's per-rank path (pipeline.hpp, pipelineRankPath()) without building its schedule:
// the steps of pipeline.cpp, each reduced to what the cost rules of metrics.hpp read of it (per
// level the busiest peer-direction and the bytes per direction, and the bytes reduced), summed by
// the same addStepLoad() that rankPath() uses, so the result is rankPath()'s to the last bit.
// Rank (s, l) = s L + l of S servers of L ranks, w(t, j) the count of the block of rank (t, j), e
// the element size:
//   gather pass, step k = 0..S-1: forwards f = w(s-k, l) (its own block at k = 0);
//     level1 (k < S-1): sends f to (s+1, l), receives w(s-1-k, l) from (s-1, l);
//     level0: sends f to every local peer j, receives w(s-k, j) from each.
//   reduce pass, step 0: the server partial of block (s-1, l); steps i+1 = 1..S-1: sends the
//     running sum w(s-1-i, l) to (s+1, l), receives w(s-2-i, l), and builds the server partial of
//     block (s-2-i, l). A server partial of block (t, l), n = w(t, l): level0 sends w(t, j) to
//     every local peer j and receives n from each, then L-1 reductions of n (the first partial of
//     a single server: of the result); the ring's sum adds one more reduction.
//   A transfer of no element is not in the schedule, so it is not counted; a step with nothing
//   costs nothing, as the pruned step it stands for.
// AllGather: the gather pass; ReduceScatter: the reduce pass; AllReduce: both, in this order.
// tests/algorithms/pipeline_cost_test.cpp checks it against rankPath() of the built schedule for
// every rank (equal Metrics), and rank_cost_test.cpp the plan's cost against the replay.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "algorithms/pipeline.hpp"

namespace hccl::algo {
namespace {

// Rank (s, l) of S servers of L ranks in block placement: rank s L + l.
class PipelineCost {
 public:
  PipelineCost(std::uint32_t S, std::uint32_t L, const Blocks& bl, std::uint32_t rank,
               std::size_t elem, const CostParams& params)
      : bl_(bl), S_(S), s_(rank / L), L_(L), l_(rank % L), elem_(elem), params_(params) {}

  void gatherPass(std::uint64_t own) {
    for (std::int64_t k = 0; k < S_; ++k) {
      StepLoad ld;
      const std::uint64_t fwd = k == 0 ? own : w(s_ - k, l_);
      if (k + 1 < S_) {
        add(ld, 1, Dir::Send, fwd);
        add(ld, 1, Dir::Recv, w(s_ - 1 - k, l_));
      }
      addToPeers(ld, Dir::Send, fwd);
      const std::uint64_t from = first(s_ - k);
      for (std::uint32_t j = 0; j < L_; ++j)
        if (j != l_) add(ld, 0, Dir::Recv, bl_.count(static_cast<std::uint32_t>(from + j)));
      finish(ld);
    }
  }

  void reducePass(std::uint64_t result) {
    {
      StepLoad ld;
      serverPartial(ld, s_ - 1, S_ == 1 ? result : w(s_ - 1, l_));
      finish(ld);
    }
    for (std::int64_t i = 0; i + 1 < S_; ++i) {
      StepLoad ld;
      const std::uint64_t got = w(s_ - 2 - i, l_);
      add(ld, 1, Dir::Send, w(s_ - 1 - i, l_));
      add(ld, 1, Dir::Recv, got);
      serverPartial(ld, s_ - 2 - i, got);
      ld.reduced += (i + 2 == S_ ? result : got) * elem_;
      finish(ld);
    }
  }

  const Metrics& path() const { return m_; }

 private:
  // The first rank of server t (mod S).
  std::uint64_t first(std::int64_t t) const {
    return static_cast<std::uint64_t>(((t % S_) + S_) % S_) * L_;
  }
  std::uint64_t w(std::int64_t t, std::uint32_t j) const {
    return bl_.count(static_cast<std::uint32_t>(first(t) + j));
  }
  void add(StepLoad& ld, std::uint8_t level, Dir d, std::uint64_t count) const {
    if (count) ld.add(level, d, count * elem_);
  }
  // `count` elements to (or from) each of the L-1 local peers: L-1 add()s at once.
  void addToPeers(StepLoad& ld, Dir d, std::uint64_t count) const {
    if (count == 0 || L_ == 1) return;
    const std::uint64_t bytes = count * elem_;
    ld.used[0] = true;
    ld.busiest[0] = std::max(ld.busiest[0], bytes);
    ld.total[0][d == Dir::Send ? 0 : 1] += std::uint64_t{L_ - 1} * bytes;
  }
  // Server s's partial of block (t, l) into a slice of `dst` elements.
  void serverPartial(StepLoad& ld, std::int64_t t, std::uint64_t dst) const {
    const std::uint64_t target = first(t);
    const std::uint64_t n = bl_.count(static_cast<std::uint32_t>(target + l_));
    for (std::uint32_t j = 0; j < L_; ++j)
      if (j != l_) add(ld, 0, Dir::Send, bl_.count(static_cast<std::uint32_t>(target + j)));
    addToPeers(ld, Dir::Recv, n);
    if (L_ > 1) ld.reduced += std::uint64_t{L_ - 1} * dst * elem_;
  }
  // A step that loads the links as the one before (every step of a ring of servers on equal
  // blocks) reuses its addition: the same additions, so the same bits, without addStepLoad().
  void finish(const StepLoad& ld) {
    if (!known_ || !(ld == last_)) {
      delta_ = Metrics{};
      delta_.time = addStepLoad(ld, params_, delta_);
      last_ = ld;
      known_ = true;
    }
    for (std::size_t l = 0; l < m_.level.size(); ++l) {
      m_.level[l].steps += delta_.level[l].steps;
      m_.level[l].bytes += delta_.level[l].bytes;
    }
    m_.reducedBytes += delta_.reducedBytes;
    m_.time += delta_.time;
  }

  const Blocks& bl_;
  std::int64_t S_, s_;
  std::uint32_t L_, l_;
  std::size_t elem_;
  const CostParams& params_;
  Metrics m_;
  bool known_ = false;
  StepLoad last_;
  Metrics delta_;
};

}  // namespace

Metrics pipelineRankPath(std::uint32_t servers, std::uint32_t perServer, const Problem& pb,
                         std::uint32_t rank, std::size_t elemSize, const CostParams& params) {
  if (pb.coll != Collective::AllGather && pb.coll != Collective::ReduceScatter &&
      pb.coll != Collective::AllReduce)
    throw std::invalid_argument(fmt::format("pipeline has no {}", name(pb.coll)));
  if (servers == 0 || perServer == 0 || pb.ranks != servers * perServer || rank >= pb.ranks)
    throw std::invalid_argument(
        fmt::format("pipeline cost: rank {} of {} servers of {} for {} ranks", rank, servers,
                    perServer, pb.ranks));
  PipelineCost c(servers, perServer, pb.blocks, rank, elemSize, params);
  const std::uint64_t mine = pb.blocks.count(rank);
  if (pb.coll != Collective::AllGather) c.reducePass(mine);
  if (pb.coll != Collective::ReduceScatter) c.gatherPass(mine);
  return c.path();
}

}  // namespace hccl::algo
