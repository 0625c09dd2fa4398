// The AHC plan (HCCL "AHC", and "AHC_BROKE" on servers of equal size): ReduceScatter and
// AllGather inside the servers around a collective among the logical same-index cards (ahc.hpp),
// one schedule over level0 and level1 of one supernode. The model weighs it against running flat
// on servers of unequal size; on equal servers it runs only when named (HCCL documents no
// automatic choice of AHC, so hccl_rules never picks it).
//
// Its algorithms: inside the servers a forced level0, else a level0 size rule, else HCCL's level0
// default (hccl_rules) or the model's best with HCCL's rule between them; between the servers
// HCCL's rule (the hccl_rules rows "within": "AHC": ring up to 3 servers, else NHR), which the
// model replaces only by a strictly better level1 algorithm. Both must take uneven blocks.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "algorithms/ahc.hpp"
#include "algorithms/catalog.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/rank_cost.hpp"

namespace hccl::algo {
namespace {

// The servers AHC runs on (empty: not applicable): the shape's unequal servers, or its equal
// servers when it has one supernode.
std::vector<std::uint32_t> serversOf(const Selection& s) {
  const CommShape& shape = s.shape();
  if (!shape.serverSizes.empty()) return shape.serverSizes;
  if (!shape.symmetric || s.levelIndex(2) || !s.levelIndex(1)) return {};
  return std::vector<std::uint32_t>(s.groupSize(1), s.groupSize(0));
}

bool fits(Algorithm a, const std::vector<Collective>& colls) {
  for (Collective c : colls) {
    const GeneratorSpec* spec = findGenerator(a, c);
    if (!spec || !spec->unevenBlocks) return false;
  }
  return true;
}

struct Algorithms {
  Algorithm intra = Algorithm::Ring, inter = Algorithm::Ring;
  Reason intraReason = Reason::Model;
  std::string intraNote;
  double predicted = 0;
};

// Over servers of equal size AHC is RS inside, one inter collective per same-index group (one
// segment per rank), AG inside: its ranks run in lockstep when the inter algorithm's do (ring
// and NB at any count of servers; H-D_R and NHR over a power of two) and every rank has a
// non-empty block (empty segments break the lockstep), so its critical path is
// the slowest representative's rank path (rank_cost.hpp; rank_cost_test.cpp checks it against
// the replay). Otherwise, and on unequal servers, every rank is replayed: at 4096x8 that is
// 32768 schedules per candidate, minutes.
bool lockstep(const std::vector<std::uint32_t>& servers, Algorithm inter, const CallInfo& call,
              std::uint32_t ranks) {
  if (Problem::fromMpiCount(call.coll, ranks, call.count, call.inPlace).blocks.total() < ranks)
    return false;
  if (std::adjacent_find(servers.begin(), servers.end(), std::not_equal_to<>()) != servers.end())
    return false;
  const auto G = static_cast<std::uint32_t>(servers.size());
  const bool powerOfTwo = (G & (G - 1)) == 0;
  return inter == Algorithm::Ring || inter == Algorithm::NB ||
         ((inter == Algorithm::Rhd || inter == Algorithm::NHR) && powerOfTwo);
}

double predict(const Selection& s, const CallInfo& call, Algorithm intra, Algorithm inter) {
  const std::vector<std::uint32_t> servers = serversOf(s);
  const Layout lay = Layout::uneven(servers);
  const std::vector<std::uint32_t> reps = lockstep(servers, inter, call, lay.ranks())
                                              ? planRepresentatives(lay)
                                              : std::vector<std::uint32_t>{};
  return s.predict(
      call, lay,
      [&](const Problem& pb, std::uint32_t r) { return ahcSchedule(lay, intra, inter, pb, r); },
      reps);
}

Algorithms choose(const Selection& s, const CallInfo& call) {
  Algorithms a;
  const std::vector<std::uint32_t> servers = serversOf(s);
  const auto G = static_cast<std::uint32_t>(servers.size());
  const auto inter = s.hcclDefault(call, 1, G, RuleScope::AhcInter);
  a.inter = inter ? inter->algorithm : Algorithm::Ring;
  std::vector<Collective> intraColls{call.coll};
  if (call.coll == Collective::AllReduce)
    intraColls = {Collective::ReduceScatter, Collective::AllGather};
  const bool model = s.modelSelection();
  a.intraReason = model ? Reason::Model : Reason::HcclRules;
  std::vector<Algorithm> intraCandidates;
  if (const auto forced = s.forced(call, 0)) {
    if (fits(*forced, intraColls)) {
      a.intra = *forced;
      a.intraReason = Reason::Forced;
      a.intraNote = s.forcedBy() + "; ";
    } else {
      a.intraNote = fmt::format("{} forced {} at level0 cannot run AHC's phases inside a server; ",
                                hcclName(*forced), s.forcedBy());
    }
  }
  if (a.intraReason != Reason::Forced) {
    const auto ruled = s.sizeRule(call, 0);
    if (ruled && fits(*ruled, intraColls)) {
      intraCandidates = {*ruled};
      a.intraReason = Reason::Rule;
      a.intraNote += s.sizeRuleOf() + "; ";
    } else if (const auto d =
                   s.hcclDefault(call, 0, *std::min_element(servers.begin(), servers.end()));
               !model && d && fits(d->algorithm, intraColls)) {
      intraCandidates = {d->algorithm};
    } else {
      for (const AlgorithmInfo& ai : algorithmCatalog())
        if (ai.hcclLevels[0] && fits(ai.id, intraColls)) intraCandidates.push_back(ai.id);
    }
  }
  if (intraCandidates.empty()) intraCandidates = {a.intra};
  double best = 0;
  for (std::size_t i = 0; i < intraCandidates.size(); ++i) {
    const double t = predict(s, call, intraCandidates[i], a.inter);
    if (i == 0 || t < best * (1 - 1e-6)) {
      best = t;
      a.intra = intraCandidates[i];
    }
  }
  if (model) {
    const Algorithm rule = a.inter;
    for (const AlgorithmInfo& ai : algorithmCatalog()) {
      if (!ai.hcclLevels[1] || ai.id == rule || !fits(ai.id, {call.coll})) continue;
      const double t = predict(s, call, a.intra, ai.id);
      if (t < best * (1 - 1e-6)) {
        best = t;
        a.inter = ai.id;
      }
    }
  }
  a.predicted = best;
  // Forced but unable to run inside the servers: reported as a refusal, not a free choice.
  if (s.forced(call, 0) && a.intraReason != Reason::Forced) a.intraReason = Reason::Fallback;
  return a;
}

class AhcPlan final : public Plan {
 public:
  std::string_view name() const override { return "AHC"; }
  bool owns(Algorithm a) const override { return isAhc(a); }
  std::vector<Collective> collectives() const override {
    return {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather};
  }
  bool automatic(const Selection& s) const override { return !s.shape().symmetric; }

  std::string whyNot(const Selection& s, const CallInfo& call) const override {
    const std::vector<std::uint32_t> servers = serversOf(s);
    if (servers.size() < 2) return "AHC needs several servers within one supernode";
    if (std::string why = ahcWhyNot(servers, call.coll); !why.empty()) return why;
    if (reduces(call.coll) && s.needsRankOrder(call))
      return fmt::format("AHC does not reduce in rank order ({})", s.rankOrderCause(call));
    return {};
  }

  Decision decide(const Selection& s, const CallInfo& call, const Choice& why) const override {
    const Algorithms a = choose(s, call);
    std::string sizes;
    for (std::uint32_t m : serversOf(s)) sizes += fmt::format("{}{}", sizes.empty() ? "" : "+", m);
    Decision d;
    d.levels.push_back(
        {0, a.intra, a.intraReason, a.intraNote + "inside the servers, for AHC", 0.0});
    d.levels.push_back({1, why.named.value_or(Algorithm::AHC), why.reason,
                        why.text(a.predicted) +
                            fmt::format("; {} between the logical same-index cards of servers {}",
                                        hcclName(a.inter), sizes),
                        a.predicted});
    d.predicted = a.predicted;
    d.plan.algorithms = levelAlgorithms(d.levels);
    d.plan.inter = a.inter;
    return d;
  }

  std::string beaten(double predicted) const override {
    return fmt::format("; AHC {}", secondsText(predicted));
  }

  RankSchedule compose(const Layout& layout, const PlanKey& key, const Problem& pb,
                       std::uint32_t rank) const override {
    const auto servers = static_cast<std::uint32_t>(layout.groups(0).size());
    return ahcSchedule(layout, key.algorithms[0], key.inter.value_or(ahcDefaultInter(servers)), pb,
                       rank);
  }
};

}  // namespace

const Plan& ahcPlan() {
  static const AhcPlan plan;
  return plan;
}

}  // namespace hccl::algo
