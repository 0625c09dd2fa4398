#include "algorithms/selection.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "algorithms/catalog.hpp"
#include "algorithms/config_fallback.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/rank_cost.hpp"

namespace hccl::algo {

Selection::Selection(CommShape shape, Settings settings, CostModel model)
    : shape_(std::move(shape)), settings_(std::move(settings)), model_(std::move(model)) {}

std::optional<std::size_t> Selection::levelIndex(int level) const {
  for (std::size_t i = 0; i < shape_.levels.size(); ++i)
    if (shape_.levels[i].level == level) return i;
  return std::nullopt;
}

std::uint32_t Selection::groupSize(int level) const {
  const auto i = levelIndex(level);
  return i ? shape_.levels[*i].size : 1;
}

bool Selection::needsRankOrder(const CallInfo& call) const {
  return (reduces(call.coll) && !call.commutative) ||
         settings_.deterministic.value == Determinism::Strict;
}

std::string_view Selection::rankOrderCause(const CallInfo& call) const {
  return call.commutative ? "HCCL_DETERMINISTIC=strict" : "non-commutative op";
}

std::optional<Algorithm> Selection::forced(const CallInfo& call, int level) const {
  return settings_.algo.value.forced(call.coll, level);
}

std::string Selection::forcedBy() const {
  return "by " + settings_.algo.from.str();
}

std::optional<Algorithm> Selection::sizeRule(const CallInfo& call, int level) const {
  return model_.rule(call.coll, level, call.bytes());
}

std::string Selection::sizeRuleOf() const {
  return "size rule of " + model_.source;
}

std::optional<Selection::Default> Selection::hcclDefault(const CallInfo& call, int level,
                                                         std::uint32_t members, RuleScope scope,
                                                         bool wholePlans) const {
  RuleQuery q;
  q.level = level;
  q.within = scope;
  q.coll = call.coll;
  q.bytes = call.bytes();
  q.ranks = shape_.ranks;
  q.groupSize = members;
  if (shape_.serverSizes.empty()) {
    q.ranksPerServer = groupSize(0);
    q.servers = shape_.ranks / q.ranksPerServer;
  } else {
    q.ranksPerServer = *std::min_element(shape_.serverSizes.begin(), shape_.serverSizes.end());
    q.servers = static_cast<std::uint32_t>(shape_.serverSizes.size());
  }
  q.deterministic = settings_.deterministic.value != Determinism::Off;
  const HcclRule* row =
      firstMatch(model_.hcclRules, q, [&](Algorithm a) { return wholePlans || !planOwning(a); });
  if (!row) return std::nullopt;
  if (!row->why.empty()) return Default{row->algorithm, row->why};
  return Default{row->algorithm, fmt::format("{} groups of {}",
                                             level == 0   ? "server"
                                             : level == 1 ? "server-count"
                                                          : "pod-count",
                                             members)};
}

Decision Selection::chooseLevels(const CallInfo& call, const LevelPhases& phases) const {
  Decision d;
  for (std::size_t i = 0; i < shape_.levels.size(); ++i) {
    std::string error;
    std::optional<LevelChoice> c = chooseLevel(call, i, phases[i], error);
    if (!c) {
      d.error = fmt::format("level{}: {}", shape_.levels[i].level, error);
      d.levels.clear();
      return d;
    }
    // A level the call runs no phase on (the collectives not composed over levels run flat on
    // the outermost one) still names its algorithm; say that nothing runs there.
    if (phases[i].empty()) c->detail += "; no phase of the call runs at this level";
    d.predicted += c->predicted;
    d.levels.push_back(std::move(*c));
  }
  d.plan.algorithms = levelAlgorithms(d.levels);
  return d;
}

std::string Selection::incapable(Algorithm a, const CallInfo& call,
                                 const std::vector<Phase>& phases) const {
  if (const Plan* whole = planOwning(a)) {
    const std::string why = whole->whyNot(*this, call);
    return why.empty() ? fmt::format("{} spans level0 and level1 and is weighed as a whole plan",
                                     whole->name())
                       : why;
  }
  const bool needOrder = needsRankOrder(call);
  for (const Phase& ph : phases) {
    const GeneratorSpec* spec = findGenerator(a, ph.coll);
    if (!spec) return fmt::format("{} has no {}", hcclName(a), name(ph.coll));
    if (needOrder && reduces(ph.coll) && !spec->rankOrdered)
      return fmt::format("{} {} does not reduce in rank order ({})", hcclName(a), name(ph.coll),
                         rankOrderCause(call));
    if (call.uneven && !spec->unevenBlocks)
      return fmt::format("{} {} needs equal blocks", hcclName(a), name(ph.coll));
    if (call.countsRankLocal() && !spec->rankLocal)
      return fmt::format("{} {} needs every rank's counts on every rank", hcclName(a),
                         name(ph.coll));
  }
  return {};
}

double Selection::predictLevel(Algorithm a, const CallInfo& call, std::size_t levelIndex,
                               const std::vector<Phase>& phases) const {
  const LevelGroup& g = shape_.levels[levelIndex];
  // Flat schedules put their transfers on level 0: give slot 0 this level's link parameters.
  CostParams lvl = model_.params(call.type, call.op);
  lvl.levelAsFirst(static_cast<std::size_t>(g.level));
  double t = 0;
  for (const Phase& ph : phases) {
    const GeneratorSpec* spec = findGenerator(a, ph.coll);
    CostParams p = lvl;
    if (!reduces(ph.coll)) p.gamma = 0;
    // The generator's own costing (rank_cost.hpp): one rank's schedule, not the whole group's.
    t += predictedPath(*spec, phaseProblem(ph, g.size, call.inPlace), call.elemSize, p).time;
  }
  return t;
}

double Selection::predict(const CallInfo& call, const Layout& layout,
                          const RankGenerator& rankSchedule,
                          std::span<const std::uint32_t> representatives) const {
  const Problem pb = Problem::fromMpiCount(call.coll, layout.ranks(), call.count, call.inPlace);
  CostParams cp = model_.params(call.type, call.op);
  if (!reduces(call.coll)) cp.gamma = 0;
  if (representatives.empty()) {
    Schedule s{pb, {}};
    for (std::uint32_t r = 0; r < layout.ranks(); ++r) s.ranks.push_back(rankSchedule(pb, r));
    return criticalPath(s, call.elemSize, cp).time;
  }
  // From the representative ranks alone (rank_cost.hpp), one block element each when some block
  // is empty; tests/algorithms/rank_cost_test.cpp checks this against the replay.
  return slowestRank(rankSchedule, withoutEmptyBlocks(pb), representatives, call.elemSize, cp).time;
}

double Selection::predictFromPaths(const CallInfo& call, std::uint32_t ranks,
                                   const RankPathFn& rankPath,
                                   std::span<const std::uint32_t> representatives) const {
  const Problem pb = Problem::fromMpiCount(call.coll, ranks, call.count, call.inPlace);
  CostParams cp = model_.params(call.type, call.op);
  if (!reduces(call.coll)) cp.gamma = 0;
  return slowestRankPath(rankPath, withoutEmptyBlocks(pb), representatives, call.elemSize, cp).time;
}

std::vector<Candidate> Selection::candidates(const CallInfo& call, std::size_t levelIndex,
                                             const std::vector<Phase>& phases) const {
  const int level = shape_.levels[levelIndex].level;
  const auto list = [&](bool anyLevel) {
    std::vector<Candidate> out;
    for (const AlgorithmInfo& ai : algorithmCatalog()) {
      // Automatic choice stays within HCCL's documented levels (a full mesh between servers
      // would look free to the model but means p-1 flows into every NIC); forcing may go
      // further.
      Candidate c{
          ai.id, false,
          anyLevel || ai.hcclLevels[static_cast<std::size_t>(level)]
              ? incapable(ai.id, call, phases)
              : fmt::format("{} is not a level{} algorithm in HCCL", hcclName(ai.id), level),
          0};
      c.capable = c.whyNot.empty();
      if (c.capable) c.predicted = predictLevel(ai.id, call, levelIndex, phases);
      out.push_back(std::move(c));
    }
    return out;
  };
  std::vector<Candidate> out = list(false);
  // Where none of the algorithms HCCL lists for the level can serve the call (a rank-local
  // GatherV between servers: only the direct one can; an AllToAll between pods: HCCL's pairwise
  // is a level1 algorithm), every algorithm may, rather than leave the call unserved.
  // AllReduce, ReduceScatter and AllGather keep HCCL's level lists: there an incapable level
  // (non-commutative ReduceScatter between servers) declines rather than run a full mesh.
  const bool hcclListed = call.coll == Collective::AllReduce ||
                          call.coll == Collective::ReduceScatter ||
                          call.coll == Collective::AllGather;
  if (!hcclListed &&
      std::none_of(out.begin(), out.end(), [](const Candidate& c) { return c.capable; }))
    out = list(true);
  return out;
}

const GeneratorSpec* Selection::sequenceRule(const CallInfo& call, std::size_t levelIndex,
                                             const std::vector<Phase>& phases) const {
  const LevelGroup& g = shape_.levels[levelIndex];
  for (const GeneratorSpec& spec : generatorSpecs()) {
    const SequenceRule* r = spec.rule;
    if (!r || spec.coll != call.coll) continue;
    if (r->afterBroadcast && !call.afterBroadcastFrom) continue;
    if (shape_.ranks > r->maxRanks || g.size != shape_.ranks) continue;
    if (shape_.ranks > r->anySizeRanks && call.afterBroadcastBytes > r->maxBroadcastBytes) continue;
    if (r->sharedMemory && (g.level != 0 || !model_.level0SharedMemory)) continue;
    if (incapable(spec.algorithm, call, phases).empty()) return &spec;
  }
  return nullptr;
}

std::optional<LevelChoice> Selection::chooseLevel(const CallInfo& call, std::size_t levelIndex,
                                                  const std::vector<Phase>& phases,
                                                  std::string& error) const {
  const int level = shape_.levels[levelIndex].level;
  LevelChoice choice{level, Algorithm::Ring, Reason::Model, {}, 0};
  auto take = [&](Algorithm a, Reason r, std::string detail) {
    choice.algorithm = a;
    choice.reason = r;
    choice.detail = std::move(detail);
    choice.predicted = predictLevel(a, call, levelIndex, phases);
    return choice;
  };

  std::string fallbackNote;
  if (const auto f = forced(call, level)) {
    const std::string from = settings_.algo.from.str();
    const std::string why = incapable(*f, call, phases);
    if (why.empty()) return take(*f, Reason::Forced, "by " + from);
    for (Algorithm alt : fallbackChain(*f, call.coll))
      if (incapable(alt, call, phases).empty())
        return take(alt, Reason::Fallback,
                    fmt::format("{} forced by {}, but {}; HCCL's fallback order gives {}",
                                hcclName(*f), from, why, hcclName(alt)));
    fallbackNote = fmt::format("{} forced by {}, but {}, and nothing in its fallback order can; ",
                               hcclName(*f), from, why);
  }

  if (const auto ruled = sizeRule(call, level)) {
    if (incapable(*ruled, call, phases).empty())
      return take(*ruled, fallbackNote.empty() ? Reason::Rule : Reason::Fallback,
                  fallbackNote + sizeRuleOf());
  }

  if (fallbackNote.empty())
    if (const GeneratorSpec* spec = sequenceRule(call, levelIndex, phases))
      return take(spec->algorithm, Reason::Sequence, spec->rule->reason(call));

  if (!modelSelection()) {
    const auto r = hcclDefault(call, level, shape_.levels[levelIndex].size);
    if (r && incapable(r->algorithm, call, phases).empty())
      return take(r->algorithm, fallbackNote.empty() ? Reason::HcclRules : Reason::Fallback,
                  fallbackNote + "HCCL default for " + r->why);
  }

  // The model: argmin over capable candidates; strict '<' keeps ties on the earlier algorithm.
  const Candidate* best = nullptr;
  const Candidate* second = nullptr;
  std::vector<Candidate> all = candidates(call, levelIndex, phases);
  for (const Candidate& c : all) {
    if (!c.capable) continue;
    // Within a part per million counts as a tie, which the earlier algorithm keeps: equal
    // formulas (NHR, NB and H-D_R on a power of two) must not flip on rounding.
    if (!best || c.predicted < best->predicted * (1 - 1e-6)) {
      second = best;
      best = &c;
    } else if (!second || c.predicted < second->predicted) {
      second = &c;
    }
  }
  if (!best) {
    std::string why;
    for (const Candidate& c : all) why += (why.empty() ? "" : "; ") + c.whyNot;
    error = fallbackNote + "no algorithm can serve " + call.describe() + ": " + why;
    return std::nullopt;
  }
  // Rank-local counts are decided at count 0 (select()), where every prediction is of nothing:
  // say so instead of printing a time that no call of that kind takes.
  const bool priced = !call.countsRankLocal();
  std::string detail =
      fallbackNote + (priced ? fmt::format("{} predicted", secondsText(best->predicted))
                             : std::string("rank-local counts, decided without sizes: no time "
                                           "predicted"));
  if (second)
    detail += priced ? fmt::format(", next {} {}", hcclName(second->algorithm),
                                   secondsText(second->predicted))
                     : fmt::format(", next {}", hcclName(second->algorithm));
  choice = {level, best->algorithm, fallbackNote.empty() ? Reason::Model : Reason::Fallback,
            std::move(detail), best->predicted};
  return choice;
}

Selection Selection::flattened() const {
  CommShape f = shape_;
  f.levels = {{shape_.levels.back().level, shape_.ranks}};
  f.blockOrder = true;
  return Selection(std::move(f), settings_, model_);
}

}  // namespace hccl::algo
