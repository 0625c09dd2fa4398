// HCCL_ALGO: which algorithm the user forces per op type and hierarchy level.
//
// The grammar and its examples are documented above parseHcclAlgo() in config_algo.cpp. The
// parsed result answers one question, forced(op, level): nullopt means "select automatically".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_result.hpp"
#include "algorithms/types.hpp"

namespace hccl::algo {

// The grammar names level0..level3; HCCL reserves level3, our hierarchy uses level0..2.
inline constexpr int kNumAlgoLevels = 4;
// HcclCommConfig.hcclAlgo holds at most this many bytes (chars); longer values are rejected.
inline constexpr std::size_t kMaxHcclAlgoLength = 1600;

// HCCL's op types (HcclCMDType) as far as HCCL_ALGO tells them apart. The first kNumOpKeys are the
// grammar's op keys; the V variants have no key of their own and follow their base op.
enum class OpType : std::uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  Scatter,
  AllToAll,
  Gather,    // code-only key in HCCL
  Send,      // code-only key in HCCL
  Receive,   // code-only key in HCCL
  SendRecv,  // code-only key in HCCL (batch send/recv)
  AllGatherV,
  ReduceScatterV,
  AllToAllV,
  AllToAllVC,
};
inline constexpr int kNumOpTypes = 15;
inline constexpr int kNumOpKeys = 11;

// "allreduce", ..., "sendrecv" (the grammar keys), then "allgatherv", "reducescatterv",
// "alltoallv", "alltoallvc".
std::string_view name(OpType op);
// The op whose key configures `op`: AllGatherV -> AllGather, AllToAllVC -> AllToAll, else op.
OpType configuredBy(OpType op);
OpType opType(Collective c);
// The collective an op type configures; nullopt for gather, send, receive and sendrecv, which
// HCCL_ALGO may name but no collective of this library is.
std::optional<Collective> collective(OpType op);

// One entry's algorithm per level; nullopt = automatic (unset, NA or null).
using LevelAlgos = std::array<std::optional<Algorithm>, kNumAlgoLevels>;

class AlgoConfig {
 public:
  enum class Form : std::uint8_t {
    Automatic,  // empty HCCL_ALGO: nothing forced
    Global,     // level0:NA;level1:<algo>... for every op
    PerOp,      // <op>=...;.../<op>=... with optional others=
  };

  AlgoConfig() = default;  // Automatic

  Form form() const { return form_; }
  // The algorithm forced for `op` at `level` (0..3), nullopt when it is selected automatically
  // (also for a level outside 0..3).
  std::optional<Algorithm> forced(OpType op, int level) const;
  std::optional<Algorithm> forced(Collective c, int level) const;
  // True when at least one op has at least one level forced.
  bool forcesAnything() const;

  // Canonical HCCL_ALGO text: "" when Automatic; levels as "level0:<a0>[;levelK:<aK>]..." listing
  // level0 always (NA when automatic) and levels 1..3 only when forced; per-op entries in OpType
  // order with others last. parseHcclAlgo(str()) == *this.
  std::string str() const;

  // True when the per-op form has an entry of its own for configuredBy(op) (others= aside).
  bool hasOwnEntry(OpType op) const;

  // Things the user wrote that are accepted, as HCCL accepts them, but have no effect, for a
  // verbose log: level2 next to level1:AHC (HCCL documents it), an algorithm at the reserved
  // level3, entries for gather/send/receive/sendrecv. Not part of equality.
  const std::vector<std::string>& notes() const { return notes_; }

  bool operator==(const AlgoConfig& o) const {
    return form_ == o.form_ && global_ == o.global_ && perOp_ == o.perOp_ && others_ == o.others_;
  }

 private:
  friend class HcclAlgoParser;
  const LevelAlgos* entryFor(OpType op) const;

  Form form_ = Form::Automatic;
  LevelAlgos global_{};
  std::array<std::optional<LevelAlgos>, kNumOpKeys> perOp_{};
  std::optional<LevelAlgos> others_;
  std::vector<std::string> notes_;
};

// Parses an HCCL_ALGO value (see the grammar in config_algo.cpp). Errors name the offending token,
// its 1-based position in `value` and the valid values.
ConfigResult<AlgoConfig> parseHcclAlgo(std::string_view value);

}  // namespace hccl::algo
