// Element types and reduction ops the benchmark offers, and the deterministic data it sends.
//
// Every rank fills its input from (op, rank, element index) and every rank can compute what any
// collective must return from the same rule, so results are checked against an expectation
// computed locally, never against another MPI call. The values are small integers (for floats
// too), so sums, products, minima and maxima are exact in every type and in every reduction
// order: a check either matches bit for bit or the collective is wrong.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

enum class Op { Sum, Prod, Max, Min, BAnd, BOr, BXor, LAnd, LOr, LXor };

struct OpInfo {
  Op op;
  std::string_view name;
  bool integerOnly;  // bitwise and logical ops: MPI defines them for integer types only
  MPI_Op handle() const;
};

// What a rank sends at a given index, given the op and the communicator size.
struct Pattern {
  Op op;
  int nranks;
};

struct TypeInfo {
  std::string_view name;
  MPI_Datatype handle;
  std::size_t size;
  bool isInteger;
  // Writes value(pattern, rank, firstIndex + k) for k < count.
  void (*fill)(void* buf, std::size_t count, const Pattern& p, int rank, std::size_t firstIndex);
  // Counts k < count where buf[k] differs from the reduction over all ranks of
  // value(pattern, r, firstIndex + k).
  std::size_t (*countWrongReduced)(const void* buf, std::size_t count, const Pattern& p,
                                   std::size_t firstIndex);
  // The same over ranks 0..upto-1 only (MPI_Scan at rank upto-1, MPI_Exscan at rank upto).
  std::size_t (*countWrongPrefix)(const void* buf, std::size_t count, const Pattern& p, int upto,
                                  std::size_t firstIndex);
  // Counts k < count where buf[k] differs from value(pattern, rank, firstIndex + k).
  std::size_t (*countWrongValues)(const void* buf, std::size_t count, const Pattern& p, int rank,
                                  std::size_t firstIndex);
};

const std::vector<TypeInfo>& allTypes();
const std::vector<OpInfo>& allOps();
std::vector<std::string> typeNames();
std::vector<std::string> opNames();
// nullptr when the name is unknown.
const TypeInfo* findType(std::string_view name);
const OpInfo* findOp(std::string_view name);

// Output buffers are painted with this byte first, so a collective that leaves its output untouched
// is caught: no correct result here is made of it (for fewer than 31 ranks; int8 sums wrap beyond).
inline constexpr unsigned char kSentinelByte = 0xA5;

}  // namespace bench
