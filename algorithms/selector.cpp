#include "algorithms/selector.hpp"

#include <fmt/format.h>

#include <bit>

#include "algorithms/ahc.hpp"
#include "algorithms/catalog.hpp"
#include "algorithms/config_fallback.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/pipeline.hpp"

namespace hccl::algo {
namespace {

std::string seconds(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

// The whole call as one Problem over p ranks, for plans that span levels.
Problem wholeProblem(const CallInfo& call, std::uint32_t p) {
  switch (call.coll) {
    case Collective::ReduceScatter:
      return Problem::reduceScatter(p, call.count, call.inPlace);
    case Collective::AllGather:
      return Problem::allGather(p, call.count, call.inPlace);
    default:
      return Problem::allReduce(p, call.count, call.inPlace);
  }
}

std::string bytesText(std::uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

}  // namespace

std::string_view name(Reason r) {
  switch (r) {
    case Reason::Forced:
      return "forced";
    case Reason::Fallback:
      return "fallback";
    case Reason::Rule:
      return "tuning rule";
    case Reason::Model:
      return "model";
    case Reason::HcclRules:
      return "hccl_rules";
  }
  return "?";
}

std::uint64_t CallInfo::bytes() const {
  return count * elemSize;
}

std::string CallInfo::describe() const {
  std::string s = fmt::format("{} {}", name(coll), bytesText(bytes()));
  if (coll == Collective::ReduceScatter || coll == Collective::AllGather) s += " per rank";
  if (type) s += fmt::format(" {}", hccl::name(*type));
  if (op)
    s += fmt::format(" {}", hccl::name(*op));
  else if (reduces(coll))
    s += commutative ? " user-op" : " user-op(non-commutative)";
  if (inPlace) s += " in-place";
  if (uneven) s += " uneven";
  return s;
}

std::string Decision::summary() const {
  if (!ok()) return "declined: " + error;
  std::string out;
  for (const LevelChoice& c : levels) {
    if (!out.empty()) out += ", ";
    out += fmt::format("level{} {} ({}: {})", c.level, hcclName(c.algorithm), name(c.reason),
                       c.detail);
  }
  return out.empty() ? "single rank: local copy" : out;
}

Selector::Selector(CommShape shape, Settings settings, CostModel model)
    : shape_(std::move(shape)), settings_(std::move(settings)), model_(std::move(model)) {}

const Decision& Selector::decide(const CallInfo& call) {
  const Key key{static_cast<int>(call.coll),
                call.count,
                call.elemSize,
                call.type ? static_cast<int>(*call.type) : -1,
                call.op ? static_cast<int>(*call.op) : (call.commutative ? -1 : -2),
                call.inPlace,
                call.uneven,
                false};
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  if (cache_.size() > 4096) cache_.clear();  // many distinct sizes: keep memory bounded
  return cache_.emplace(key, compute(call)).first->second;
}

bool Selector::needsRankOrder(const CallInfo& call) const {
  return (reduces(call.coll) && !call.commutative) ||
         settings_.deterministic.value == Determinism::Strict;
}

std::optional<std::size_t> Selector::levelIndex(int level) const {
  for (std::size_t i = 0; i < shape_.levels.size(); ++i)
    if (shape_.levels[i].level == level) return i;
  return std::nullopt;
}

std::string Selector::pipelineWhyNot(const CallInfo& call) const {
  if (call.coll != Collective::AllReduce && call.coll != Collective::ReduceScatter &&
      call.coll != Collective::AllGather)
    return fmt::format("pipeline has no {}", name(call.coll));
  if (!shape_.symmetric) return "pipeline needs the same number of ranks on every server";
  if (levelIndex(2)) return "pipeline runs within one supernode";
  if (!levelIndex(1)) return "pipeline needs several servers";
  if (needsRankOrder(call))
    return fmt::format("pipeline does not reduce in rank order ({})",
                       call.commutative ? "HCCL_DETERMINISTIC=strict" : "non-commutative op");
  return {};
}

double Selector::pipelinePredict(const CallInfo& call) const {
  const std::uint32_t servers = shape_.levels[*levelIndex(1)].size;
  const std::uint32_t perServer = levelIndex(0) ? shape_.levels[*levelIndex(0)].size : 1;
  const Layout lay = Layout::servers(servers, perServer);
  const std::uint32_t p = lay.ranks();
  const Problem pb = wholeProblem(call, p);
  Schedule s{pb, {}};
  for (std::uint32_t r = 0; r < p; ++r) s.ranks.push_back(pipelineSchedule(lay, pb, r));
  CostParams cp = model_.params(call.type, call.op);
  if (!reduces(call.coll)) cp.gamma = 0;
  return criticalPath(s, call.elemSize, cp).time;
}

// HCCL's A2 rule: pipeline with several ranks per server once a rank's share is large enough.
bool Selector::hcclPipelineRule(const CallInfo& call) const {
  const std::uint32_t perServer = levelIndex(0) ? shape_.levels[*levelIndex(0)].size : 1;
  if (perServer < 2) return false;
  constexpr std::uint64_t kMinSize = 32 << 10, kMinAllReduceShare = 1 << 20;
  if (call.coll == Collective::AllReduce) return call.bytes() / shape_.ranks >= kMinAllReduceShare;
  return call.bytes() >= kMinSize;
}

Decision Selector::pipelineDecision(Reason why, std::string detail, double predicted) const {
  Decision d;
  for (const LevelGroup& g : shape_.levels)
    d.levels.push_back({g.level, Algorithm::Pipeline, why,
                        g.level == 0 ? "intra-server part of the pipeline" : detail,
                        g.level == 0 ? 0.0 : predicted});
  d.predicted = predicted;
  return d;
}

std::vector<std::uint32_t> Selector::ahcServers() const {
  if (!shape_.serverSizes.empty()) return shape_.serverSizes;
  if (!shape_.symmetric || levelIndex(2) || !levelIndex(1)) return {};
  const std::uint32_t perServer = levelIndex(0) ? shape_.levels[*levelIndex(0)].size : 1;
  return std::vector<std::uint32_t>(shape_.levels[*levelIndex(1)].size, perServer);
}

std::string Selector::ahcWhyNot(const CallInfo& call) const {
  const std::vector<std::uint32_t> servers = ahcServers();
  if (servers.size() < 2) return "AHC needs several servers within one supernode";
  if (std::string why = algo::ahcWhyNot(servers, call.coll); !why.empty()) return why;
  if (reduces(call.coll) && needsRankOrder(call))
    return fmt::format("AHC does not reduce in rank order ({})",
                       call.commutative ? "HCCL_DETERMINISTIC=strict" : "non-commutative op");
  return {};
}

double Selector::ahcPredict(const CallInfo& call, Algorithm intra, Algorithm inter) const {
  const Layout lay = Layout::uneven(ahcServers());
  const Problem pb = wholeProblem(call, lay.ranks());
  Schedule s{pb, {}};
  for (std::uint32_t r = 0; r < lay.ranks(); ++r)
    s.ranks.push_back(ahcSchedule(lay, intra, inter, pb, r));
  CostParams cp = model_.params(call.type, call.op);
  if (!reduces(call.coll)) cp.gamma = 0;
  return criticalPath(s, call.elemSize, cp).time;
}

// Inside the servers: forced level0, else a level0 size rule, else Mesh (hccl_rules: HCCL's level0
// on shared memory) or the model's best with HCCL's inter rule. Between them: HCCL's rule (ring up
// to 3 servers, else NHR), which the model replaces only by a strictly better level1 algorithm.
Selector::AhcPlan Selector::ahcPlan(const CallInfo& call) const {
  AhcPlan plan;
  const std::vector<std::uint32_t> servers = ahcServers();
  plan.inter = ahcDefaultInter(static_cast<std::uint32_t>(servers.size()));
  std::vector<Collective> intraColls{call.coll};
  if (call.coll == Collective::AllReduce)
    intraColls = {Collective::ReduceScatter, Collective::AllGather};
  auto fits = [](Algorithm a, const std::vector<Collective>& colls) {
    for (Collective c : colls) {
      const GeneratorSpec* spec = findGenerator(a, c);
      if (!spec || !spec->unevenBlocks) return false;
    }
    return true;
  };
  const bool model = settings_.selection.value == SelectionMode::Model;
  plan.intraReason = model ? Reason::Model : Reason::HcclRules;
  std::vector<Algorithm> intraCandidates;
  if (const auto forced = settings_.algo.value.forced(call.coll, 0)) {
    if (fits(*forced, intraColls)) {
      plan.intra = *forced;
      plan.intraReason = Reason::Forced;
      plan.intraNote = "by " + settings_.algo.from.str() + "; ";
    } else {
      plan.intraNote = fmt::format("{} forced at level0 cannot run AHC's phases inside a server; ",
                                   hcclName(*forced));
    }
  }
  if (plan.intraReason != Reason::Forced) {
    const auto ruled = model_.rule(call.coll, 0, call.bytes());
    if (ruled && fits(*ruled, intraColls)) {
      intraCandidates = {*ruled};
      plan.intraReason = Reason::Rule;
      plan.intraNote += "size rule of " + model_.source + "; ";
    } else if (!model) {
      intraCandidates = {Algorithm::Mesh};
    } else {
      for (const AlgorithmInfo& ai : algorithmCatalog())
        if (ai.hcclLevels[0] && fits(ai.id, intraColls)) intraCandidates.push_back(ai.id);
    }
  }
  if (intraCandidates.empty()) intraCandidates = {plan.intra};
  double best = 0;
  for (std::size_t i = 0; i < intraCandidates.size(); ++i) {
    const double t = ahcPredict(call, intraCandidates[i], plan.inter);
    if (i == 0 || t < best * (1 - 1e-6)) {
      best = t;
      plan.intra = intraCandidates[i];
    }
  }
  if (model) {
    const Algorithm rule = plan.inter;
    for (const AlgorithmInfo& ai : algorithmCatalog()) {
      if (!ai.hcclLevels[1] || ai.id == rule || !fits(ai.id, {call.coll})) continue;
      const double t = ahcPredict(call, plan.intra, ai.id);
      if (t < best * (1 - 1e-6)) {
        best = t;
        plan.inter = ai.id;
      }
    }
  }
  plan.predicted = best;
  return plan;
}

Decision Selector::ahcDecision(Algorithm named, Reason why, std::string detail,
                               const AhcPlan& plan) const {
  const std::vector<std::uint32_t> servers = ahcServers();
  std::string sizes;
  for (std::uint32_t m : servers) sizes += fmt::format("{}{}", sizes.empty() ? "" : "+", m);
  Decision d;
  d.levels.push_back(
      {0, plan.intra, plan.intraReason, plan.intraNote + "inside the servers, for AHC", 0.0});
  d.levels.push_back(
      {1, named, why,
       detail + fmt::format("; {} between the logical same-index cards of servers {}",
                            hcclName(plan.inter), sizes),
       plan.predicted});
  d.predicted = plan.predicted;
  d.ahcInter = plan.inter;
  return d;
}

Decision Selector::compute(const CallInfo& call) const {
  // A rank-order reduction survives composition only when each phase reduces whole runs of
  // consecutive ranks: servers must hold consecutive ranks, and the inner level must reduce first
  // (ReduceScatter runs the outer level first, so it would reduce server-major).
  const bool splitBreaksOrder = !shape_.blockOrder || call.coll == Collective::ReduceScatter;
  if (needsRankOrder(call) && splitBreaksOrder && shape_.levels.size() > 1) {
    if (!flat_) {
      CommShape f = shape_;
      f.levels = {{shape_.levels.back().level, shape_.ranks}};
      f.blockOrder = true;
      flat_ = std::make_unique<Selector>(f, settings_, model_);
    }
    Decision d = flat_->compute(call);
    d.flat = true;
    const char* why = shape_.blockOrder
                          ? "; flat over all ranks: a hierarchical reducescatter reduces "
                            "server-major, not in rank order"
                          : "; flat over all ranks: servers do not hold consecutive ranks, and a "
                            "rank-order reduction cannot be split by server";
    for (LevelChoice& c : d.levels) c.detail += why;
    return d;
  }
  // Pipeline and AHC span level0 and level1, so they are weighed as whole plans.
  const std::string pipeWhy = pipelineWhyNot(call);
  const auto forced1 = settings_.algo.value.forced(call.coll, 1);
  if (forced1 == Algorithm::Pipeline && pipeWhy.empty())
    return pipelineDecision(Reason::Forced, "by " + settings_.algo.from.str(),
                            pipelinePredict(call));
  const std::string ahcWhy = ahcWhyNot(call);
  if (forced1 && isAhc(*forced1) && ahcWhy.empty())
    return ahcDecision(*forced1, Reason::Forced, "by " + settings_.algo.from.str(), ahcPlan(call));
  const auto ruled1 = model_.rule(call.coll, 1, call.bytes());
  if (!forced1 && ruled1 == Algorithm::Pipeline && pipeWhy.empty())
    return pipelineDecision(Reason::Rule, "size rule of " + model_.source, pipelinePredict(call));
  if (!forced1 && ruled1 && isAhc(*ruled1) && ahcWhy.empty())
    return ahcDecision(*ruled1, Reason::Rule, "size rule of " + model_.source, ahcPlan(call));
  Decision d = perLevel(call);
  // Servers of unequal size: the model weighs AHC against running flat. (HCCL documents no
  // automatic choice of AHC, so hccl_rules mode stays flat unless AHC is forced.)
  if (d.ok() && !forced1 && !ruled1 && !shape_.symmetric && ahcWhy.empty() &&
      settings_.selection.value == SelectionMode::Model) {
    const AhcPlan plan = ahcPlan(call);
    if (plan.predicted < d.predicted)
      return ahcDecision(
          Algorithm::AHC, Reason::Model,
          fmt::format("{} predicted, flat plan {}", seconds(plan.predicted), seconds(d.predicted)),
          plan);
    d.levels.back().detail += fmt::format("; AHC {}", seconds(plan.predicted));
    return d;
  }
  if (!d.ok() || forced1 || ruled1 || !pipeWhy.empty()) return d;
  if (settings_.selection.value == SelectionMode::HcclRules) {
    if (hcclPipelineRule(call))
      return pipelineDecision(Reason::HcclRules,
                              "HCCL default for several ranks per server and large messages",
                              pipelinePredict(call));
    return d;
  }
  const double pipe = pipelinePredict(call);
  if (pipe < d.predicted)
    return pipelineDecision(
        Reason::Model,
        fmt::format("{} predicted, per-level plan {}", seconds(pipe), seconds(d.predicted)), pipe);
  return d;
}

Decision Selector::perLevel(const CallInfo& call) const {
  Decision d;
  for (std::size_t i = 0; i < shape_.levels.size(); ++i) {
    std::string error;
    std::optional<LevelChoice> c = chooseLevel(call, i, error);
    if (!c) {
      d.error = fmt::format("level{}: {}", shape_.levels[i].level, error);
      d.levels.clear();
      return d;
    }
    d.predicted += c->predicted;
    d.levels.push_back(std::move(*c));
  }
  return d;
}

std::string Selector::incapable(Algorithm a, const CallInfo& call,
                                const std::vector<Phase>& phases) const {
  if (a == Algorithm::Pipeline) {
    const std::string why = pipelineWhyNot(call);
    return why.empty() ? "pipeline spans level0 and level1 and is weighed as a whole plan" : why;
  }
  if (isAhc(a)) {
    const std::string why = ahcWhyNot(call);
    return why.empty() ? "AHC spans level0 and level1 and is weighed as a whole plan" : why;
  }
  const bool needOrder = needsRankOrder(call);
  for (const Phase& ph : phases) {
    const GeneratorSpec* spec = findGenerator(a, ph.coll);
    if (!spec) return fmt::format("{} has no {}", hcclName(a), name(ph.coll));
    if (needOrder && reduces(ph.coll) && !spec->rankOrdered)
      return fmt::format("{} {} does not reduce in rank order ({})", hcclName(a), name(ph.coll),
                         call.commutative ? "HCCL_DETERMINISTIC=strict" : "non-commutative op");
    if (call.uneven && !spec->unevenBlocks)
      return fmt::format("{} {} needs equal blocks", hcclName(a), name(ph.coll));
  }
  return {};
}

double Selector::predict(Algorithm a, const CallInfo& call, std::size_t levelIndex,
                         const std::vector<Phase>& phases) const {
  const LevelGroup& g = shape_.levels[levelIndex];
  // Flat schedules put their transfers on level 0: give slot 0 this level's link parameters.
  CostParams lvl = model_.params(call.type, call.op);
  const auto l = static_cast<std::size_t>(g.level);
  lvl.alpha[0] = lvl.alpha[l];
  lvl.beta[0] = lvl.beta[l];
  lvl.links[0] = lvl.links[l];
  double t = 0;
  for (const Phase& ph : phases) {
    const GeneratorSpec* spec = findGenerator(a, ph.coll);
    const Schedule s = buildSchedule(spec->generate, phaseProblem(ph, g.size, call.inPlace));
    CostParams p = lvl;
    if (!reduces(ph.coll)) p.gamma = 0;
    t += criticalPath(s, call.elemSize, p).time;
  }
  return t;
}

std::vector<Candidate> Selector::candidates(const CallInfo& call, std::size_t levelIndex) const {
  const auto phases = phasesPerLevel(call.coll, shape_, call.count)[levelIndex];
  std::vector<Candidate> out;
  const int level = shape_.levels[levelIndex].level;
  for (const AlgorithmInfo& ai : algorithmCatalog()) {
    // Automatic choice stays within HCCL's documented levels (a full mesh between servers would
    // look free to the model but means p-1 flows into every NIC); forcing may go further.
    Candidate c{ai.id, false,
                ai.hcclLevels[static_cast<std::size_t>(level)]
                    ? incapable(ai.id, call, phases)
                    : fmt::format("{} is not a level{} algorithm in HCCL", hcclName(ai.id), level),
                0};
    c.capable = c.whyNot.empty();
    if (c.capable) c.predicted = predict(ai.id, call, levelIndex, phases);
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<Algorithm> Selector::hcclRule(const CallInfo& call, std::size_t levelIndex) const {
  const LevelGroup& g = shape_.levels[levelIndex];
  switch (g.level) {
    case 0:  // HCCL picks level0 from the hardware; shared memory connects every pair: Mesh
      return Algorithm::Mesh;
    case 1:  // 910 rule: ring unless the server count is a power of two
      return std::has_single_bit(g.size) ? Algorithm::HalvingDoubling : Algorithm::Ring;
    default:  // ring below 8 pods that are not a power of two, else H-D_R
      return g.size < 8 && !std::has_single_bit(g.size) ? Algorithm::Ring
                                                        : Algorithm::HalvingDoubling;
  }
  (void)call;
}

std::optional<LevelChoice> Selector::chooseLevel(const CallInfo& call, std::size_t levelIndex,
                                                 std::string& error) const {
  const int level = shape_.levels[levelIndex].level;
  const auto phases = phasesPerLevel(call.coll, shape_, call.count)[levelIndex];
  LevelChoice choice{level, Algorithm::Ring, Reason::Model, {}, 0};
  auto take = [&](Algorithm a, Reason r, std::string detail) {
    choice.algorithm = a;
    choice.reason = r;
    choice.detail = std::move(detail);
    choice.predicted = predict(a, call, levelIndex, phases);
    return choice;
  };

  std::string fallbackNote;
  if (const auto forced = settings_.algo.value.forced(call.coll, level)) {
    const std::string from = settings_.algo.from.str();
    const std::string why = incapable(*forced, call, phases);
    if (why.empty()) return take(*forced, Reason::Forced, "by " + from);
    for (Algorithm alt : fallbackChain(*forced, call.coll))
      if (incapable(alt, call, phases).empty())
        return take(alt, Reason::Fallback,
                    fmt::format("{} forced by {}, but {}; HCCL's fallback order gives {}",
                                hcclName(*forced), from, why, hcclName(alt)));
    fallbackNote = fmt::format("{} forced by {}, but {}, and nothing in its fallback order can; ",
                               hcclName(*forced), from, why);
  }

  if (const auto ruled = model_.rule(call.coll, level, call.bytes())) {
    if (incapable(*ruled, call, phases).empty())
      return take(*ruled, fallbackNote.empty() ? Reason::Rule : Reason::Fallback,
                  fallbackNote + "size rule of " + model_.source);
  }

  if (settings_.selection.value == SelectionMode::HcclRules) {
    if (const auto r = hcclRule(call, levelIndex); r && incapable(*r, call, phases).empty())
      return take(*r, fallbackNote.empty() ? Reason::HcclRules : Reason::Fallback,
                  fallbackNote + fmt::format("HCCL default for {} groups of {}",
                                             level == 0   ? "server"
                                             : level == 1 ? "server-count"
                                                          : "pod-count",
                                             shape_.levels[levelIndex].size));
  }

  // The model: argmin over capable candidates; strict '<' keeps ties on the earlier algorithm.
  const Candidate* best = nullptr;
  const Candidate* second = nullptr;
  std::vector<Candidate> all = candidates(call, levelIndex);
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
  std::string detail = fallbackNote + fmt::format("{} predicted", seconds(best->predicted));
  if (second)
    detail += fmt::format(", next {} {}", hcclName(second->algorithm), seconds(second->predicted));
  choice = {level, best->algorithm, fallbackNote.empty() ? Reason::Model : Reason::Fallback,
            std::move(detail), best->predicted};
  return choice;
}

}  // namespace hccl::algo
