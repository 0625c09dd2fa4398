// The pipeline plan (HCCL "pipeline" at level1): the inter-server ring overlapped with the
// intra-server transfers (pipeline.hpp), one schedule over level0 and level1. It serves
// AllReduce, ReduceScatter and AllGather on servers of equal size within one supernode, never in
// rank order. Its prediction is the critical path of its own schedule, from representative ranks
// (its ranks run in lockstep; rank_cost.hpp), each rank's path computed from the block counts
// without building the schedule (pipeline_cost.cpp).
#include <fmt/format.h>

#include <algorithm>

#include "algorithms/pipeline.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/rank_cost.hpp"
#include "algorithms/scratch_ranks.hpp"

namespace hccl::algo {
namespace {

// The segment counts the pipeline is costed with (pipeline.hpp): the model picks the fastest.
// More segments hide the intra-server-only stages behind the inter-server ring (on 2 servers half
// the stages) for one step cost each. 16 and 32 pay where a slow inter-server link makes each
// segment's intra-server stages long against a step: on the 2x2 rig at 1 Gbit/s a 64 MiB
// AllReduce in 16 segments (the model's choice) took 0.562-0.567 s against 0.566-0.572 s in 8,
// the pipeline's fill and drain (the first segment's intra-server ReduceScatter, the last one's
// AllGather) half as long. Beyond kSegmentedMaxServers servers those stages are at most 2 of 32
// and the candidates would only lengthen the first decision.
constexpr std::uint32_t kSegmentCounts[] = {1, 2, 4, 8, 16, 32};
constexpr std::uint32_t kSegmentedMaxServers = 16;

class PipelinePlan final : public Plan {
 public:
  std::string_view name() const override { return "pipeline"; }
  bool owns(Algorithm a) const override { return a == Algorithm::Pipeline; }
  std::vector<Collective> collectives() const override {
    return {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather};
  }

  std::string whyNot(const Selection& s, const CallInfo& call) const override {
    const std::vector<Collective> serves = collectives();
    if (std::find(serves.begin(), serves.end(), call.coll) == serves.end())
      return fmt::format("pipeline has no {}", hccl::name(call.coll));
    if (!s.shape().symmetric) return "pipeline needs the same number of ranks on every server";
    if (s.levelIndex(2)) return "pipeline runs within one supernode";
    if (!s.levelIndex(1)) return "pipeline needs several servers";
    if (s.needsRankOrder(call))
      return fmt::format("pipeline does not reduce in rank order ({})", s.rankOrderCause(call));
    return {};
  }

  Decision decide(const Selection& s, const CallInfo& call, const Choice& why) const override {
    const std::uint32_t servers = s.groupSize(1), perServer = s.groupSize(0);
    // Its ranks run in lockstep: costed from representative ranks (rank_cost.hpp), each rank's
    // path from its block counts, without building its schedule or the layout
    // (pipeline_cost.cpp).
    const std::vector<std::uint32_t> reps = planRepresentatives(servers, perServer);
    double predicted = 0;
    std::uint32_t segments = 1;
    // Each path stops once it reaches why.toBeat (the model drops a pipeline predicting no less,
    // and its beaten() prints nothing): a segment count whose paths stopped predicts a time no
    // less than that, so it is never the fastest of those that did not.
    // Every segment of every block holds an element (segments of nothing only add steps, and
    // ranks whose segments are empty leave the lockstep the representatives are costed by).
    const std::uint64_t perBlock =
        call.coll == Collective::AllReduce ? call.count / (servers * perServer) : call.count;
    for (const std::uint32_t m : kSegmentCounts) {
      if (m > 1 && (servers > kSegmentedMaxServers || call.uneven || perBlock < m)) break;
      const double t = s.predictFromPaths(
          call, servers * perServer,
          [&](const Problem& pb, std::uint32_t r, std::size_t elem, const CostParams& cp) {
            return pipelineRankPath(servers, perServer, pb, r, elem, cp, m, why.toBeat);
          },
          reps);
      if (m == 1 || t < predicted) {
        predicted = t;
        segments = m;
      }
    }
    Decision d;
    for (const LevelGroup& g : s.shape().levels)
      d.levels.push_back({g.level, Algorithm::Pipeline, why.reason,
                          g.level == 0 ? "intra-server part of the pipeline"
                          : segments == 1
                              ? why.text(predicted)
                              : fmt::format("{} segments, {}", segments, why.text(predicted)),
                          g.level == 0 ? 0.0 : predicted});
    // The pipeline brings its own intra-server transfers: an algorithm forced at level0 cannot
    // take effect, and the decision says so rather than calling level0 a model choice. (level0
    // pipeline next to a forced level1 pipeline asks for what runs.)
    const auto forced0 = s.forced(call, 0);
    const bool honoured = forced0 == Algorithm::Pipeline && why.reason == Reason::Forced;
    if (forced0 && !honoured && !d.levels.empty() && d.levels.front().level == 0) {
      LevelChoice& l0 = d.levels.front();
      l0.reason = Reason::Fallback;
      l0.detail =
          fmt::format("{} forced {} at level0 is ignored: {}; {}", hcclName(*forced0), s.forcedBy(),
                      *forced0 == Algorithm::Pipeline
                          ? "pipeline spans level0 and level1 and is forced as level1:pipeline"
                          : "the pipeline runs its own intra-server transfers",
                      l0.detail);
    }
    d.predicted = predicted;
    d.plan.algorithms = levelAlgorithms(d.levels);
    d.plan.segments = segments;
    return d;
  }

  RankSchedule compose(const Layout& layout, const PlanKey& key, const Problem& pb,
                       std::uint32_t rank) const override {
    return pipelineSchedule(layout, pb, rank, key.segments);
  }

  // Its scratch is slots the largest block fits (pipeline.cpp, PassScratch), alike on every
  // server; the ends of its rings differ.
  bool scratchAtEdges(const Layout&, const PlanKey&, Collective) const override { return true; }

  std::optional<std::uint64_t> scratchOf(const Layout& layout, const PlanKey& key,
                                         const Problem& pb, std::uint32_t rank) const override {
    return pipelineScratch(layout, pb, rank, key.segments);
  }

  std::string whyNotOn(const Layout& layout) const override {
    const CommShape shape = layout.shape();
    bool level1 = false, level2 = false;
    for (const LevelGroup& g : shape.levels) {
      level1 = level1 || g.level == 1;
      level2 = level2 || g.level == 2;
    }
    if (!layout.symmetric()) return "pipeline needs the same number of ranks on every server";
    if (level2) return "pipeline runs within one supernode";
    if (!level1) return "pipeline needs several servers";
    return {};
  }
};

}  // namespace

const Plan& pipelinePlan() {
  static const PipelinePlan plan;
  return plan;
}

}  // namespace hccl::algo
