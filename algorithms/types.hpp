// Vocabulary shared by every layer above algorithms/: collectives, element types, reduction ops.
// Plain enums so that the C adapter can map MPI handles onto them through the engine API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace hccl {

enum class Collective : std::uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce,
  Scatter,
  AllToAll,
  Gather,     // GatherV: Gather with uneven Blocks (rank-local on non-roots, schedule.hpp)
  AllToAllV,  // per-pair counts (PairCounts); AllToAllW is AllToAllV on packed bytes
  Barrier,
  Scan,    // inclusive prefix reduction in rank order
  Exscan,  // exclusive prefix reduction in rank order; rank 0 receives nothing
};
inline constexpr int kNumCollectives = 12;

// Names as HCCL_ALGO spells its op keys (lower case, no separators). HCCL has no keys for
// barrier, scan and exscan; coll_hccl adds them (config_algo.hpp), and "alltoallv" follows
// "alltoall" there as it does in HCCL.
std::string_view name(Collective c);
std::optional<Collective> parseCollective(std::string_view s);
// True when the collective combines data with a reduction operator.
bool reduces(Collective c);
// True for the collectives with a root (Broadcast, Reduce, Scatter, Gather).
bool rooted(Collective c);

enum class DataType : std::uint8_t {
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  LongDouble,     // x87 80-bit extended, stored in 16 bytes (MPI_LONG_DOUBLE on x86_64)
  ComplexFloat,   // two float32 (MPI_C_FLOAT_COMPLEX): sum and prod only
  ComplexDouble,  // two float64 (MPI_C_DOUBLE_COMPLEX): sum and prod only
  Bool,           // C _Bool / C++ bool (MPI_C_BOOL, MPI_CXX_BOOL): logical ops only
  Byte,           // opaque bytes (MPI_BYTE, MPI_PACKED): no reduction
};
inline constexpr int kNumDataTypes = 17;

std::string_view name(DataType t);
std::optional<DataType> parseDataType(std::string_view s);
std::size_t sizeOf(DataType t);
bool isFloating(DataType t);
bool isInteger(DataType t);

enum class ReduceOp : std::uint8_t { Sum, Prod, Max, Min, LAnd, LOr, LXor, BAnd, BOr, BXor };
inline constexpr int kNumReduceOps = 10;

std::string_view name(ReduceOp op);
std::optional<ReduceOp> parseReduceOp(std::string_view s);
// MPI's table of which predefined op is defined on which type group.
bool defined(ReduceOp op, DataType t);
// Every (type, op) pair for which defined() holds, in enum order (type first).
std::vector<std::pair<DataType, ReduceOp>> definedPairs();

}  // namespace hccl
