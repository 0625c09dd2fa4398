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
// Segments: the same stages over each segment's counts (w k/m .. w (k+1)/m of a block of w),
// segment k's stage j in step k + j; a step's transfers to one peer add up (one flow, as
// rankPath() counts them), so the stages of a step are gathered per peer before addStepLoad().
// tests/algorithms/pipeline_cost_test.cpp checks it against rankPath() of the built schedule for
// every rank (equal Metrics), and rank_cost_test.cpp the plan's cost against the replay.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "algorithms/pipeline.hpp"

namespace hccl::algo {
namespace {

// Rank (s, l) = s L + l of S servers of L ranks in block placement, in m segments.
class PipelineCost {
 public:
  PipelineCost(std::uint32_t S, std::uint32_t L, const Blocks& bl, std::uint32_t rank,
               std::size_t elem, const CostParams& params, std::uint32_t m)
      : bl_(bl),
        S_(S),
        s_(rank / L),
        L_(L),
        l_(rank % L),
        m_(m),
        elem_(elem),
        params_(params),
        uniform_(bl.isUniform()),
        slots_(uniform_ ? std::min<std::uint32_t>(L - 1, 1) : L),
        send0_(slots_),
        recv0_(slots_),
        lastSend0_(slots_),
        lastRecv0_(slots_) {}

  // Stage k (0..S-1) of the gather pass of segment `seg`.
  void gatherStage(std::uint32_t seg, std::uint64_t own, std::int64_t k) {
    const std::uint64_t fwd = k == 0 ? part(seg, own) : w(seg, s_ - k, l_);
    if (k + 1 < S_) {
      send1_ += fwd;
      recv1_ += w(seg, s_ - 1 - k, l_);
    }
    const std::uint64_t from = first(s_ - k);
    eachPeer([&](std::uint32_t slot, std::uint32_t j) {
      send0_[slot] += fwd;
      recv0_[slot] += part(seg, bl_.count(static_cast<std::uint32_t>(from + j)));
    });
  }

  // Stage `stage` (0..S-1) of the reduce pass of segment `seg`.
  void reduceStage(std::uint32_t seg, std::uint64_t result, std::int64_t stage) {
    if (stage == 0) {
      serverPartial(seg, s_ - 1, S_ == 1 ? part(seg, result) : w(seg, s_ - 1, l_));
      return;
    }
    const std::int64_t i = stage - 1;
    const std::uint64_t got = w(seg, s_ - 2 - i, l_);
    send1_ += w(seg, s_ - 1 - i, l_);
    recv1_ += got;
    serverPartial(seg, s_ - 2 - i, got);
    const std::uint64_t sum = i + 2 == S_ ? part(seg, result) : got;
    if (sum) reduced_ += sum * elem_;
  }

  // Steps of `stages` stages per segment, segment k's stage j in step k + j; once the path's
  // time reaches `stopAt`, no more.
  template <typename StageOf>
  void run(std::uint32_t stages, double stopAt, StageOf stageOf) {
    for (std::uint32_t t = 0; t + 1 < stages + m_ && !(path_.time >= stopAt); ++t) {
      for (std::uint32_t k = 0; k < m_; ++k)
        if (k <= t && t - k < stages) stageOf(k, t - k);
      finish();
    }
  }

  std::uint32_t segments() const { return m_; }
  const Metrics& path() const { return path_; }

 private:
  // The first rank of server t (mod S). The stages ask for servers within S of [0, S): a
  // subtraction or two instead of two 64-bit divisions, a few of which each step made.
  std::uint64_t first(std::int64_t t) const {
    while (t < 0) t += S_;
    while (t >= S_) t -= S_;
    return static_cast<std::uint64_t>(t) * L_;
  }
  // Segment `seg`'s part of a block of `n` elements.
  std::uint64_t part(std::uint32_t seg, std::uint64_t n) const {
    if (m_ == 1) return n;
    return n * (seg + 1) / m_ - n * seg / m_;
  }
  std::uint64_t w(std::uint32_t seg, std::int64_t t, std::uint32_t j) const {
    return part(seg, bl_.count(static_cast<std::uint32_t>(first(t) + j)));
  }
  // Server s's partial of block (t, l) into a slice of `dst` elements.
  void serverPartial(std::uint32_t seg, std::int64_t t, std::uint64_t dst) {
    const std::uint64_t target = first(t);
    const std::uint64_t n = part(seg, bl_.count(static_cast<std::uint32_t>(target + l_)));
    eachPeer([&](std::uint32_t slot, std::uint32_t j) {
      send0_[slot] += part(seg, bl_.count(static_cast<std::uint32_t>(target + j)));
      recv0_[slot] += n;
    });
    // A reduction of no element is no op (the schedule's builders drop it).
    if (L_ > 1 && dst) reduced_ += std::uint64_t{L_ - 1} * dst * elem_;
  }
  // Level0's per-peer counts of a step, slot by slot: one slot per local rank (the rank's own
  // stays empty); with uniform blocks every stage adds the same count to each of the L-1 local
  // peers, so their counts are equal all along and one slot, of peer (l+1) mod L, stands for all
  // of them: O(1) a stage instead of O(L), which at 512-2048 ranks a server was most of the
  // selector's first decision (the pipeline is costed for every segment count it tries).
  template <typename F>
  void eachPeer(F f) const {
    if (uniform_) {
      if (slots_ == 1) f(0, (l_ + 1) % L_);
      return;
    }
    for (std::uint32_t j = 0; j < L_; ++j)
      if (j != l_) f(j, j);
  }
  // `peers` transfers of `count` elements each, to distinct peers on `level` in direction d: as
  // many add()s of the same bytes (the busiest is one of them, the total all).
  void add(StepLoad& ld, std::uint8_t level, Dir d, std::uint64_t count,
           std::uint64_t peers = 1) const {
    if (!count) return;
    ld.add(level, d, count * elem_);
    ld.total[level][d == Dir::Send ? 0 : 1] += (peers - 1) * count * elem_;
  }
  // The step's load, per peer, then its cost. A step that loads the links as the one before
  // (every step of a ring of servers on equal blocks) reuses its addition: the same additions,
  // so the same bits, without addStepLoad(). The load is a function of the step's counts, so
  // counts equal to the last step's (compared first: a few words, where building the StepLoad
  // was most of a step's cost at 4096 servers) give its load too.
  void finish() {
    // Word by word: L is a few ranks, where memcmp's call cost more than the compare.
    bool sameCounts =
        known_ && send1_ == lastSend1_ && recv1_ == lastRecv1_ && reduced_ == lastReduced_;
    for (std::uint32_t j = 0; sameCounts && j < slots_; ++j)
      sameCounts = send0_[j] == lastSend0_[j] && recv0_[j] == lastRecv0_[j];
    if (!sameCounts) {
      StepLoad ld;
      add(ld, 1, Dir::Send, send1_);
      add(ld, 1, Dir::Recv, recv1_);
      const std::uint64_t peersPerSlot = uniform_ ? L_ - 1 : 1;
      for (std::uint32_t j = 0; j < slots_; ++j) {
        add(ld, 0, Dir::Send, send0_[j], peersPerSlot);
        add(ld, 0, Dir::Recv, recv0_[j], peersPerSlot);
      }
      ld.reduced = reduced_;
      if (!known_ || !(ld == last_)) {
        delta_ = stepDelta(ld, params_);
        last_ = ld;
        known_ = true;
      }
      lastSend1_ = send1_;
      lastRecv1_ = recv1_;
      lastReduced_ = reduced_;
      lastSend0_.swap(send0_);
      lastRecv0_.swap(recv0_);
    }
    for (std::uint32_t j = 0; j < slots_; ++j) send0_[j] = recv0_[j] = 0;
    send1_ = recv1_ = reduced_ = 0;
    addStepDelta(delta_, path_);
  }

  const Blocks& bl_;
  std::int64_t S_, s_;
  std::uint32_t L_, l_, m_;
  std::size_t elem_;
  const CostParams& params_;
  // Every block of the same count: level0's L-1 peers share one slot (eachPeer()).
  bool uniform_;
  std::uint32_t slots_;
  // The step being gathered: level1 to (s+1, l) and from (s-1, l), level0 per slot (eachPeer()),
  // bytes reduced.
  std::uint64_t send1_ = 0, recv1_ = 0, reduced_ = 0;
  std::vector<std::uint64_t> send0_, recv0_;
  Metrics path_;
  bool known_ = false;
  // The last step whose load was built: its counts and load.
  std::uint64_t lastSend1_ = 0, lastRecv1_ = 0, lastReduced_ = 0;
  std::vector<std::uint64_t> lastSend0_, lastRecv0_;
  StepLoad last_;
  Metrics delta_;
};

}  // namespace

Metrics pipelineRankPath(std::uint32_t servers, std::uint32_t perServer, const Problem& pb,
                         std::uint32_t rank, std::size_t elemSize, const CostParams& params,
                         std::uint32_t segments, double stopAt) {
  if (pb.coll != Collective::AllGather && pb.coll != Collective::ReduceScatter &&
      pb.coll != Collective::AllReduce)
    throw std::invalid_argument(fmt::format("pipeline has no {}", name(pb.coll)));
  if (servers == 0 || perServer == 0 || pb.ranks != servers * perServer || rank >= pb.ranks ||
      segments == 0)
    throw std::invalid_argument(
        fmt::format("pipeline cost: rank {} of {} servers of {} for {} ranks, {} segments", rank,
                    servers, perServer, pb.ranks, segments));
  PipelineCost c(servers, perServer, pb.blocks, rank, elemSize, params, segments);
  const std::uint64_t mine = pb.blocks.count(rank);
  switch (pb.coll) {
    case Collective::AllGather:
      c.run(servers, stopAt, [&](std::uint32_t k, std::uint32_t j) { c.gatherStage(k, mine, j); });
      break;
    case Collective::ReduceScatter:
      c.run(servers, stopAt, [&](std::uint32_t k, std::uint32_t j) { c.reduceStage(k, mine, j); });
      break;
    default:
      c.run(2 * servers, stopAt, [&](std::uint32_t k, std::uint32_t j) {
        if (j < servers)
          c.reduceStage(k, mine, j);
        else
          c.gatherStage(k, mine, j - servers);
      });
  }
  return c.path();
}

}  // namespace hccl::algo
