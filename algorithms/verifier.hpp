// The symbolic verifier: runs a whole schedule, every rank, on provenance instead of numbers.
//
// Every element of every buffer carries the set of inputs it combines: input element i of rank r
// is the pair (r, i). Sends carry what their slice held when posted, receives land when their step
// completes, copies move provenance, reductions unite it. Runs of elements with the same
// provenance (same rank set, same index offset) are stored as one interval, so the cost grows
// with the number of slices, not with the element count.
//
// It reports, with rank, step and slice:
//   - a missing or duplicated contribution, or data at the wrong position, in the final output;
//   - a reduction combining elements of different positions, or counting a rank twice;
//   - reduction out of rank order, when the algorithm claims rank order (always for Scan and
//     Exscan, whose result MPI defines as the rank-order prefix);
//   - a rank leaving a Barrier before it has heard, directly or through others, from every rank;
//   - a send without a matching receive (peer, size, order), and a step that can never complete;
//   - a read of scratch (or of a not yet written output) before it is written;
//   - a write into a slice that a transfer of the same step still reads (or writes);
//   - a write into the user's input, a slice outside its buffer, an overlapping local op;
//   - a write into Output outside the rank's result (the write contract, write_contract.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "algorithms/write_contract.hpp"

namespace hccl::algo {

struct VerifyIssue {
  enum class Kind {
    MissingContribution,
    DuplicateContribution,
    WrongPosition,
    NotWritten,
    RankOrder,
    SizeMismatch,
    UnmatchedTransfer,
    Deadlock,
    UninitializedRead,
    TransferHazard,
    InputWrite,
    OutOfBounds,
    OverlappingOp,
    OutsideResult,
  };
  Kind kind;
  std::uint32_t rank;
  std::uint32_t step;  // the step at fault, or the rank's step count for final-state issues
  std::string message;
};

std::string_view name(VerifyIssue::Kind k);

struct VerifyOptions {
  bool requireRankOrder = false;  // every reduction must combine lower ranks on the left (always
                                  // on for Scan and Exscan)
  std::size_t maxIssues = 32;     // stop collecting after this many
  // Partial sums (rank sets) no buffer holds any more are dropped once they take this much
  // (and more than those held): bounds a ReduceScatter's p^2 partial sums at thousands of
  // ranks. Tests set 0 to drop them at nearly every step.
  std::size_t setGarbageBytes = std::size_t{64} << 20;
};

std::vector<VerifyIssue> verify(const Schedule& s, const VerifyOptions& opt = {});

// The same check of pb's schedule as `gen` builds it for each rank (through withPrivateInput,
// empty steps pruned), streamed for thousands of ranks: no rank's whole schedule is held, only
// a window of its next steps (about heldItems transfers and local ops over all ranks, at least
// one step per rank), generated again when the replay moves past it; a rank is checked when it
// finishes and its buffers are released. Costs a regeneration of every rank per window.
std::vector<VerifyIssue> verifyGenerated(const Problem& pb, const RankGenerator& gen,
                                         const VerifyOptions& opt = {},
                                         std::size_t heldItems = std::size_t{1} << 22);

// One line per issue, for test failure messages and tools.
std::string describe(const std::vector<VerifyIssue>& issues);

}  // namespace hccl::algo
