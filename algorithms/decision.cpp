#include "algorithms/decision.hpp"

#include <fmt/format.h>

namespace hccl::algo {

std::string bytesText(std::uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::string secondsText(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

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
    case Reason::Sequence:
      return "sequence rule";
  }
  return "?";
}

std::uint64_t CallInfo::bytes() const {
  return count * elemSize;
}

std::string CallInfo::describe() const {
  std::string s = fmt::format("{} {}", name(coll), bytesText(bytes()));
  if (coll == Collective::ReduceScatter || coll == Collective::AllGather ||
      coll == Collective::Scatter || coll == Collective::Gather)
    s += " per rank";
  if (coll == Collective::AllToAll || coll == Collective::AllToAllV) s += " per pair";
  if (type) s += fmt::format(" {}", hccl::name(*type));
  if (op)
    s += fmt::format(" {}", hccl::name(*op));
  else if (reduces(coll))
    s += commutative ? " user-op" : " user-op(non-commutative)";
  if (inPlace) s += " in-place";
  if (uneven) s += " uneven";
  if (rankLocal) s += " rank-local";
  if (afterBroadcastFrom) s += fmt::format(" after a broadcast from rank {}", *afterBroadcastFrom);
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

LevelAlgorithms levelAlgorithms(const std::vector<LevelChoice>& levels) {
  LevelAlgorithms algs{Algorithm::Ring, Algorithm::Ring, Algorithm::Ring};
  for (const LevelChoice& c : levels) algs[static_cast<std::size_t>(c.level)] = c.algorithm;
  return algs;
}

}  // namespace hccl::algo
