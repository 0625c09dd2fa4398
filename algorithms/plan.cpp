#include "algorithms/plan.hpp"

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace hccl::algo {

// The entries (each defined in its own file), in the order that breaks ties.
const Plan& levelsPlan();
const Plan& flatPlan();
const Plan& pipelinePlan();
const Plan& ahcPlan();
const Plan& treePlan();

std::span<const Plan* const> planTable() {
  static const std::array<const Plan*, 5> table = {&levelsPlan(), &flatPlan(), &pipelinePlan(),
                                                   &ahcPlan(), &treePlan()};
  return table;
}

const Plan& planOf(const PlanKey& key) {
  const auto table = planTable();
  if (key.plan >= table.size())
    throw std::invalid_argument(
        fmt::format("no plan {} (the table has {})", key.plan, table.size()));
  return *table[key.plan];
}

const Plan* planOwning(Algorithm a) {
  for (const Plan* p : planTable())
    if (p->owns(a)) return p;
  return nullptr;
}

std::string toString(const PlanKey& k) {
  std::string s = fmt::format("{}[{},{},{}", planOf(k).name(), hcclName(k.algorithms[0]),
                              hcclName(k.algorithms[1]), hcclName(k.algorithms[2]));
  if (k.inter) s += fmt::format(";{}", hcclName(*k.inter));
  if (k.segments != 1) s += fmt::format(";x{}", k.segments);
  return s + "]";
}

Choice Choice::weighedAgainst(const Decision& d, std::string name) {
  Choice c;
  c.against = &d;
  c.againstName = std::move(name);
  return c;
}

std::string Choice::text(double predicted) const {
  if (!against) return detail;
  return fmt::format("{} predicted, {} {}", secondsText(predicted), againstName,
                     secondsText(against->predicted));
}

std::string Plan::describe(const Selection&) const {
  return fmt::format("{} plan", name());
}

bool Plan::owns(Algorithm) const {
  return false;
}

bool Plan::composesLevels() const {
  for (int a = 0; a < kNumAlgorithms; ++a)
    if (owns(static_cast<Algorithm>(a))) return false;
  return true;
}

std::vector<Collective> Plan::collectives() const {
  return {};
}

bool Plan::automatic(const Selection&) const {
  return true;
}

std::string Plan::beaten(double) const {
  return {};
}

bool Plan::scratchAtEdges(const Layout&, const PlanKey&, Collective) const {
  return false;
}

std::optional<std::uint64_t> Plan::scratchOf(const Layout&, const PlanKey&, const Problem&,
                                             std::uint32_t) const {
  return std::nullopt;
}

std::optional<std::uint64_t> Plan::scratchBound(const Layout& layout, const PlanKey& key,
                                                const Problem& pb, std::uint32_t rank) const {
  return scratchOf(layout, key, pb, rank);
}

bool Plan::rankOrdered(const Layout&, const PlanKey&, Collective) const {
  return false;
}

std::string Plan::whyNotOn(const Layout&) const {
  return {};
}

Decision select(const Selection& s, const CallInfo& asked) {
  // A rank-local call (AllToAllV, GatherV, ScatterV) has no count every rank knows, and a
  // barrier no data: every rank decides alike by deciding without one.
  CallInfo call = asked;
  if (call.countsRankLocal() || call.coll == Collective::Barrier) call.count = 0;
  const auto table = planTable();
  std::vector<std::string> whyNot;
  for (const Plan* p : table) whyNot.push_back(p->whyNot(s, call));
  auto decide = [&](std::size_t i, const Choice& why) {
    Decision d = table[i]->decide(s, call, why);
    d.plan.plan = static_cast<std::uint8_t>(i);
    return d;
  };

  // 1, 2: a whole plan named at level1 by HCCL_ALGO, else by a size rule.
  Choice named{Reason::Forced, s.forcedBy(), s.forced(call, 1)};
  if (!named.named) named = {Reason::Rule, s.sizeRuleOf(), s.sizeRule(call, 1)};
  if (named.named)
    for (std::size_t i = 0; i < table.size(); ++i)
      if (table[i]->owns(*named.named) && whyNot[i].empty()) return decide(i, named);

  // 3: automatic, among the entries that can serve.
  std::vector<std::size_t> able;
  for (std::size_t i = 0; i < table.size(); ++i)
    if (whyNot[i].empty() && (named.named ? table[i]->composesLevels() : table[i]->automatic(s)))
      able.push_back(i);
  if (able.empty()) {
    Decision d;
    d.error = fmt::format("no plan can serve {}: {}", call.describe(), fmt::join(whyNot, "; "));
    return d;
  }
  const Decision first = decide(able.front(), {});
  if (!first.ok() || able.size() == 1) return first;
  if (!s.modelSelection()) {
    // HCCL's defaults name a whole plan at level1, or leave the choice to each level.
    if (const auto d = s.hcclDefault(call, 1, s.groupSize(1), RuleScope::Level, true))
      for (std::size_t i : able)
        if (table[i]->owns(d->algorithm))
          return decide(i, {Reason::HcclRules, "HCCL default for " + d->why, d->algorithm});
    return first;
  }
  // The model: the lowest prediction; ties keep the earlier entry.
  Choice weighed = Choice::weighedAgainst(first, table[able.front()]->describe(s));
  Decision best = first;
  std::string beaten;
  for (std::size_t k = 1; k < able.size(); ++k) {
    weighed.toBeat = best.predicted;
    Decision d = decide(able[k], weighed);
    if (!d.ok()) continue;
    if (d.predicted < best.predicted)
      best = std::move(d);
    else if (!call.countsRankLocal())  // at count 0 the other plan's time prices nothing
      beaten += table[able[k]]->beaten(d.predicted);
  }
  if (best.plan.plan == first.plan.plan && !best.levels.empty())
    best.levels.back().detail += beaten;
  return best;
}

RankSchedule compose(const Layout& layout, const PlanKey& key, const Problem& pb,
                     std::uint32_t rank) {
  if (pb.ranks != layout.ranks())
    throw std::invalid_argument(
        fmt::format("a problem of {} ranks on a layout of {}", pb.ranks, layout.ranks()));
  return planOf(key).compose(layout, key, pb, rank);
}

RankSchedule compose(const Layout& layout, const Decision& d, const Problem& pb,
                     std::uint32_t rank) {
  return compose(layout, d.plan, pb, rank);
}

PlanKey planKeyFor(const Layout& layout, const LevelAlgorithms& algs,
                   std::optional<Algorithm> inter) {
  const auto table = planTable();
  std::size_t levels = 0;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i]->owns(algs[1]) && table[i]->whyNotOn(layout).empty())
      return {static_cast<std::uint8_t>(i), algs, inter};
    if (table[i] == &levelsPlan()) levels = i;
  }
  return {static_cast<std::uint8_t>(levels), algs, inter};
}

}  // namespace hccl::algo
