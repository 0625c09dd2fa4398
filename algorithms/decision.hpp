// What the selector decides for a call, and the key a rank's schedule is composed from.
//
// A Decision says, per hierarchy level, which algorithm runs there and why (the verbose line), and
// carries a PlanKey: the plan table entry that serves the call (see plan.hpp) and the algorithms it
// composes. Equal keys compose equal schedules for equal Problems on one layout, so the engine can
// cache schedules by key.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/types.hpp"

namespace hccl::algo {

struct CallInfo {
  Collective coll = Collective::AllReduce;
  // MPI's count, as describe() prints it: per rank for ReduceScatter, AllGather, Scatter and
  // Gather, per pair for AllToAll(V), the whole vector otherwise (phasesPerLevel() splits it).
  std::uint64_t count = 0;
  std::size_t elemSize = 1;
  std::optional<DataType> type;  // nullopt for opaque bytes of a derived type
  std::optional<ReduceOp> op;    // nullopt: no reduction, or a user op
  bool commutative = true;
  bool inPlace = false;
  bool uneven = false;  // ReduceScatter with unequal per-rank counts
  // GatherV, ScatterV, AllToAllV: counts differ by rank and are not known everywhere, so every
  // rank must decide without them (pass count 0) and only rank-local generators can serve.
  bool rankLocal = false;
  // The previous call on the communicator was a Broadcast from this root. Set on a Barrier only,
  // the one call a sequence rule reads it for (registry.cpp: the gathered Barrier), so that every
  // other call keeps one cache key per shape. Every rank numbers its calls in the same order, so
  // every rank knows it alike.
  std::optional<std::uint32_t> afterBroadcastFrom;
  // ... and its bytes (0: not known, e.g. hccl_info without --after-bcast-bytes).
  std::uint64_t afterBroadcastBytes = 0;

  std::uint64_t bytes() const;  // the size that selection and tables are keyed by
  // Counts that only each rank knows (rankLocal, and every AllToAllV): decided without them,
  // so no decision for the call prices its size.
  bool countsRankLocal() const { return rankLocal || coll == Collective::AllToAllV; }
  std::string describe() const;
  auto operator<=>(const CallInfo&) const = default;
};

// Sequence: a generator's sequence rule (generators.hpp's SequenceRule), chosen by the call
// before this one, not by cost.
enum class Reason : std::uint8_t { Forced, Fallback, Rule, Model, HcclRules, Sequence };
std::string_view name(Reason r);

struct LevelChoice {
  int level = 0;
  Algorithm algorithm = Algorithm::Ring;
  Reason reason = Reason::Model;
  std::string detail;    // why, in words
  double predicted = 0;  // seconds for this level's phases
};

// What composes a rank's schedule: the plan table entry (its index in planTable()), the algorithm
// of each level (indexed by level; ring where a level is not in use), and for AHC the algorithm
// among the logical same-index cards.
struct PlanKey {
  std::uint8_t plan = 0;
  LevelAlgorithms algorithms{Algorithm::Ring, Algorithm::Ring, Algorithm::Ring};
  std::optional<Algorithm> inter;
  // The pipeline's segments (pipeline.hpp); 1 for every other plan.
  std::uint32_t segments = 1;

  auto operator<=>(const PlanKey&) const = default;
};
// "pipeline[pipeline,pipeline,ring]", "AHC[fullmesh,AHC,ring;NHR]": unique per key.
std::string toString(const PlanKey& k);

struct Decision {
  std::vector<LevelChoice> levels;  // one per shape level, inner first
  std::string error;                // non-empty: nothing can serve the call (the engine declines)
  double predicted = 0;             // sum over levels
  PlanKey plan;

  bool ok() const { return error.empty(); }
  // "level0 fullmesh (model: 12.1 us; ring 20.3 us), level1 H-D_R (forced by env HCCL_ALGO)"
  std::string summary() const;
};

// The level algorithms of `levels` as a PlanKey holds them.
LevelAlgorithms levelAlgorithms(const std::vector<LevelChoice>& levels);

// "12.1 us", "3.40 ms", "1.20 s"; "64 B", "4 KiB", "16 MiB"
std::string secondsText(double s);
std::string bytesText(std::uint64_t bytes);

}  // namespace hccl::algo

template <>
struct std::hash<hccl::algo::PlanKey> {
  std::size_t operator()(const hccl::algo::PlanKey& k) const noexcept {
    std::size_t h = k.plan;
    for (hccl::algo::Algorithm a : k.algorithms) h = h * 31 + static_cast<std::size_t>(a);
    h = h * 31 + (k.inter ? static_cast<std::size_t>(*k.inter) + 1 : 0);
    return h * 31 + k.segments;
  }
};
