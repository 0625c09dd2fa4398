// Inputs for real-data runs: deterministic per (seed, rank, index), chosen per (type, op) so that
// results mean something: signed values of mixed magnitudes whose sums need rounding, products of
// factors near one (no overflow, no underflow over 64 ranks), odd integer factors (a product of
// random integers is 0 modulo 2^bits), and logical and bitwise operands whose reduction over p
// ranks is neither always true nor always false.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/types.hpp"

namespace hccl::reference {

// `count` elements of rank `rank`'s contribution to a collective over `ranks` ranks.
std::vector<std::byte> contribution(DataType t, ReduceOp op, std::uint64_t seed,
                                    std::uint32_t ranks, std::uint32_t rank, std::uint64_t count);

// A 64-bit hash of its arguments (splitmix64 steps), for anything else a test wants to vary.
std::uint64_t mix(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0);

}  // namespace hccl::reference
