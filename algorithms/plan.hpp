// Plans: the ways to serve a call over the hierarchy, as entries of one table.
//
// An entry says whether it can serve a call (and why not), decides (which algorithm runs at each
// level, what it predicts) and composes a rank's schedule for the decisions it made. The entries,
// in the order that breaks ties:
//   per-level  plan_levels.cpp    each level runs its phases with its own algorithm (phases.hpp,
//                                 hierarchical.hpp); on servers of unequal size, flat
//   flat       plan_flat.cpp      the outermost level's algorithm over every rank, when a
//                                 rank-order reduction cannot be split by server
//   pipeline   plan_pipeline.cpp  HCCL's pipeline over level0 and level1 (pipeline.hpp)
//   AHC        plan_ahc.cpp       HCCL's AHC over servers of unequal size (ahc.hpp)
//   tree       plan_tree.cpp      a small Broadcast's whole vector level by level, outer first
//                                 (model only: no HCCL_ALGO word)
// A new plan is one file defining its entry (a Plan subclass returned by `const Plan& xPlan()`),
// its line in the table (plan.cpp) and its source line in meson.build; the selector, the
// composer, the engine and hccl_info reach it through the table. A plan owning an HCCL_ALGO word
// is forced by it, and HCCL's default rules (hccl_rules.hpp) can name it by that word.
//
// Selection over the table, for a call (select()):
//   1. forced: HCCL_ALGO names a level1 algorithm that a whole plan owns (pipeline, AHC,
//      AHC_BROKE), and that plan can serve: it does;
//   2. rule: otherwise the same for a size rule of the tuning file;
//   3. automatic: the entries that can serve and may be chosen automatically; when a level1
//      algorithm was named but its plan cannot serve (or no plan owns it), only the compositions
//      of level algorithms, which honour it or report its fallback. `model` takes the argmin of
//      their predictions (ties to the earlier entry), `hccl_rules` the plan HCCL's defaults name.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/decision.hpp"
#include "algorithms/layout.hpp"
#include "algorithms/schedule.hpp"
#include "algorithms/selection.hpp"

namespace hccl::algo {

// Why a plan is asked to decide: the reason its level1 choice reports, and in words.
struct Choice {
  Reason reason = Reason::Model;
  std::string detail;
  // The level1 word that named the plan (forced, size rule or HCCL default), if one did.
  std::optional<Algorithm> named;
  // For the model: the decision it is weighed against, and that decision's plan in words.
  const Decision* against = nullptr;
  std::string againstName;
  // For the model: the time the plan must predict less than to be taken (the best so far). A
  // plan may stop costing once it is sure to predict no less and return a decision whose
  // prediction is only that sure (>= toBeat), as it is then dropped unread; so only a plan whose
  // beaten() prints nothing may (the pipeline's, pipeline_cost.cpp).
  double toBeat = std::numeric_limits<double>::infinity();

  Choice() = default;
  Choice(Reason r, std::string d, std::optional<Algorithm> n)
      : reason(r), detail(std::move(d)), named(n) {}
  static Choice weighedAgainst(const Decision& d, std::string name);

  // The detail, or for the model "<t> predicted, <against> <its t>".
  std::string text(double predicted) const;
};

class Plan {
 public:
  virtual ~Plan() = default;
  // In messages: "pipeline", "AHC".
  virtual std::string_view name() const = 0;
  // In the model's comparisons: "per-level plan", "flat plan".
  virtual std::string describe(const Selection& s) const;
  // The HCCL_ALGO level1 words that name this plan; a plan owning none composes level
  // algorithms, honouring forced levels itself.
  virtual bool owns(Algorithm a) const;
  bool composesLevels() const;
  // The collectives a whole plan serves, for listings (the compositions: whatever their level
  // algorithms serve).
  virtual std::vector<Collective> collectives() const;
  // Empty when the plan can serve `call` on s.shape(); otherwise why not.
  virtual std::string whyNot(const Selection& s, const CallInfo& call) const = 0;
  // Whether the model or HCCL's defaults may choose it when no configuration names it.
  virtual bool automatic(const Selection& s) const;
  // The decision for `call` (levels, prediction, key algorithms), chosen for `why`; the caller
  // sets the key's plan index.
  virtual Decision decide(const Selection& s, const CallInfo& call, const Choice& why) const = 0;
  // What a decision that weighed this plan and chose another appends to its last level ("; AHC
  // 12.1 us"), or nothing.
  virtual std::string beaten(double predicted) const;
  // Rank `rank`'s schedule for `pb` (a Problem over layout.ranks() ranks) under a key this plan
  // decided. Throws std::invalid_argument when the layout or the collective does not fit.
  virtual RankSchedule compose(const Layout& layout, const PlanKey& key, const Problem& pb,
                               std::uint32_t rank) const = 0;
  // True when the largest scratch of compose()'s schedules for `c` on this (symmetric) layout is
  // always an edge rank's (scratch_ranks.hpp); chunk sizing then builds those ranks' schedules
  // only. False (every rank's) unless the entry says so.
  virtual bool scratchAtEdges(const Layout& layout, const PlanKey& key, Collective c) const;
  // scratchCount(compose(layout, key, pb, rank)) where the entry can tell it without building the
  // schedule (a formula the tests hold to the schedules), else nothing: chunk sizing asks it of
  // every edge rank for each candidate chunk.
  virtual std::optional<std::uint64_t> scratchOf(const Layout& layout, const PlanKey& key,
                                                 const Problem& pb, std::uint32_t rank) const;
  // At least scratchCount(compose(layout, key, pb, rank)), where scratchOf() cannot tell it
  // exactly but the entry can bound it (by default scratchOf()'s answer); nothing where it cannot.
  // Chunk sizing builds such a rank's schedule only when no other rank already needs the bound.
  virtual std::optional<std::uint64_t> scratchBound(const Layout& layout, const PlanKey& key,
                                                    const Problem& pb, std::uint32_t rank) const;
  // True when compose() reduces in rank order for this layout, key and collective.
  virtual bool rankOrdered(const Layout& layout, const PlanKey& key, Collective c) const;
  // Empty when compose() can run on `layout` (for callers that name the level algorithms
  // themselves, composeHierarchical()); otherwise why not.
  virtual std::string whyNotOn(const Layout& layout) const;
};

// Every entry, in the order above.
std::span<const Plan* const> planTable();
// The entry of a key, and the whole plan owning a level1 word (nullptr: none does).
const Plan& planOf(const PlanKey& key);
const Plan* planOwning(Algorithm a);

// The selection over the table described above. Rank-local calls (CallInfo::rankLocal,
// AllToAllV) and Barrier are decided with count 0: the decision may depend only on what every
// rank knows.
Decision select(const Selection& s, const CallInfo& call);

// Rank `rank`'s schedule for a decision (or its key): the one function the engine calls.
RankSchedule compose(const Layout& layout, const PlanKey& key, const Problem& pb,
                     std::uint32_t rank);
RankSchedule compose(const Layout& layout, const Decision& d, const Problem& pb,
                     std::uint32_t rank);

// The key for level algorithms named directly (tests, hccl_sim): the whole plan owning algs[1]
// where it runs on the layout, else the per-level composition. `inter` is AHC's algorithm among
// the logical same-index cards (default: HCCL's rule).
PlanKey planKeyFor(const Layout& layout, const LevelAlgorithms& algs,
                   std::optional<Algorithm> inter = std::nullopt);

}  // namespace hccl::algo
