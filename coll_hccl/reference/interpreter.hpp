// The "same order" reference: a sequential interpreter that replays a whole schedule with
// algo::replay (the matching rules the verifier and the cost model use) on plain byte buffers and
// reduces with the reference's own scalar code. It shares nothing with the engine but the schedule:
// a send carries what its slice holds when it meets its receive (its rank has posted the step
// and not yet run the step's local ops), received data lands when the receiving step completes,
// then the step's copies and reductions run in order, element by element.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "coll_hccl/reference/scalar.hpp"

namespace hccl::reference {

struct RankMemory {
  std::vector<std::byte> input;
  std::vector<std::byte> output;
};

struct InterpretResult {
  std::vector<std::vector<std::byte>> outputs;  // every rank's Output at the end
  std::string error;                            // replay problems or slices outside a buffer
};

// Runs `s` on copies of `memory` (one per rank, sized as the problem says) with elements of
// `elemSize` bytes. Scratch starts as 0xA5 bytes, as the engine's does, so a schedule that reads
// scratch before writing it gives the same (wrong) bits in both and the rank-order check fails.
InterpretResult interpret(const algo::Schedule& s, std::size_t elemSize, const ElementOp& op,
                          const std::vector<RankMemory>& memory);

}  // namespace hccl::reference
