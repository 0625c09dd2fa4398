// Where the ranks of a communicator sit, as the hierarchical composer needs it: for each level
// (0 = server, 1 = same-index ranks of the servers of a supernode, 2 = same position across
// supernodes) a partition of the ranks into groups, members in canonical order (servers
// supernode-major, members ascending). The engine fills it from topology's Hierarchy; tests build
// it directly.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace hccl::algo {

class Layout {
 public:
  using Groups = std::vector<std::vector<std::uint32_t>>;

  // groups[l] must partition 0..ranks-1 (a level not in use: one group per rank). The servers
  // (groups[0]) must be listed supernode-major. Throws std::invalid_argument otherwise.
  Layout(std::uint32_t ranks, std::array<Groups, kNumLevels> groups);
  // Block placement: `servers` servers of `perServer` ranks, rank r on server r / perServer.
  static Layout servers(std::uint32_t servers, std::uint32_t perServer);
  // `pods` supernodes of `serversPerPod` servers of `perServer` ranks, block placement.
  static Layout pods(std::uint32_t pods, std::uint32_t serversPerPod, std::uint32_t perServer);
  // Servers with the given rank counts (one supernode), ranks assigned round-robin when
  // `interleaved`, else in blocks.
  static Layout uneven(const std::vector<std::uint32_t>& perServer, bool interleaved = false);

  std::uint32_t ranks() const { return ranks_; }
  const Groups& groups(int level) const { return groups_[static_cast<std::size_t>(level)]; }
  // The members of rank r's group at `level`, and r's index among them.
  const std::vector<std::uint32_t>& groupOf(int level, std::uint32_t r) const;
  std::uint32_t indexIn(int level, std::uint32_t r) const;

  // Ranks server by server (supernode-major): where each rank's block sits when data is laid out
  // by hierarchy rather than by rank.
  const std::vector<std::uint32_t>& serverMajor() const { return order_; }
  // Position of rank r in serverMajor().
  std::uint32_t positionOf(std::uint32_t r) const { return positionOf_[r]; }
  // The ranks a member of a level-`level` group stands for, as positions [first, last) in
  // serverMajor(): itself at level 0, its server at level 1, its supernode at level 2.
  std::pair<std::uint32_t, std::uint32_t> unit(int level, std::uint32_t r) const;
  // True when serverMajor() is 0, 1, 2, ...: servers hold consecutive rank ranges.
  bool blockOrder() const { return blockOrder_; }
  // Every group of every level has the same size as the others of its level.
  bool symmetric() const { return symmetric_; }
  // Levels whose groups have more than one member, inner first, as the selector sees them. An
  // asymmetric layout is presented as one flat group over the outermost level in use.
  CommShape shape() const;
  std::string describe() const;

 private:
  std::uint32_t ranks_;
  std::array<Groups, kNumLevels> groups_;
  std::array<std::vector<std::uint32_t>, kNumLevels> groupIndex_, position_;
  std::vector<std::uint32_t> order_, positionOf_;
  std::vector<std::uint32_t> serverOf_, podOf_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> serverSpan_, podSpan_;
  bool blockOrder_ = true, symmetric_ = true;
};

}  // namespace hccl::algo
