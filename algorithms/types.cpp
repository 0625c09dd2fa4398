#include "algorithms/types.hpp"

#include <array>
#include <utility>

namespace hccl {
namespace {

constexpr std::array<std::string_view, kNumCollectives> kCollNames = {
    "allreduce", "reducescatter", "allgather", "broadcast", "reduce", "scatter",
    "alltoall",  "gather",        "alltoallv", "barrier",   "scan",   "exscan"};

struct TypeInfo {
  std::string_view name;
  std::size_t size;
};
constexpr std::array<TypeInfo, kNumDataTypes> kTypes = {{
    {"int8", 1},
    {"int16", 2},
    {"int32", 4},
    {"int64", 8},
    {"uint8", 1},
    {"uint16", 2},
    {"uint32", 4},
    {"uint64", 8},
    {"fp16", 2},
    {"bf16", 2},
    {"fp32", 4},
    {"fp64", 8},
    {"longdouble", sizeof(long double)},
    {"complex64", 8},
    {"complex128", 16},
    {"bool", sizeof(bool)},
    {"byte", 1},
}};

constexpr std::array<std::string_view, kNumReduceOps> kOpNames = {
    "sum", "prod", "max", "min", "land", "lor", "lxor", "band", "bor", "bxor"};

template <typename E, std::size_t N>
std::optional<E> lookup(const std::array<std::string_view, N>& names, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

std::string_view name(Collective c) {
  return kCollNames[static_cast<std::size_t>(c)];
}
std::optional<Collective> parseCollective(std::string_view s) {
  return lookup<Collective>(kCollNames, s);
}
bool reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce ||
         c == Collective::Scan || c == Collective::Exscan;
}
bool rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Scatter ||
         c == Collective::Gather;
}

std::string_view name(DataType t) {
  return kTypes[static_cast<std::size_t>(t)].name;
}
std::optional<DataType> parseDataType(std::string_view s) {
  for (std::size_t i = 0; i < kTypes.size(); ++i)
    if (kTypes[i].name == s) return static_cast<DataType>(i);
  return std::nullopt;
}
std::size_t sizeOf(DataType t) {
  return kTypes[static_cast<std::size_t>(t)].size;
}

bool isFloating(DataType t) {
  switch (t) {
    case DataType::Float16:
    case DataType::BFloat16:
    case DataType::Float32:
    case DataType::Float64:
    case DataType::LongDouble:
      return true;
    default:
      return false;
  }
}
bool isInteger(DataType t) {
  return t <= DataType::UInt64;  // the eight fixed-width integers come first
}

std::string_view name(ReduceOp op) {
  return kOpNames[static_cast<std::size_t>(op)];
}
std::optional<ReduceOp> parseReduceOp(std::string_view s) {
  return lookup<ReduceOp>(kOpNames, s);
}

// MPI-3.1 section 5.9.2: which op applies to which group of predefined types.
bool defined(ReduceOp op, DataType t) {
  const bool integer = isInteger(t);
  const bool complex = t == DataType::ComplexFloat || t == DataType::ComplexDouble;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
      return integer || isFloating(t) || complex;
    case ReduceOp::Max:
    case ReduceOp::Min:
      return integer || isFloating(t);
    case ReduceOp::LAnd:
    case ReduceOp::LOr:
    case ReduceOp::LXor:
      return integer || t == DataType::Bool;
    case ReduceOp::BAnd:
    case ReduceOp::BOr:
    case ReduceOp::BXor:
      return integer || t == DataType::Byte;
  }
  return false;
}

std::vector<std::pair<DataType, ReduceOp>> definedPairs() {
  std::vector<std::pair<DataType, ReduceOp>> v;
  for (int t = 0; t < kNumDataTypes; ++t)
    for (int o = 0; o < kNumReduceOps; ++o)
      if (defined(static_cast<ReduceOp>(o), static_cast<DataType>(t)))
        v.emplace_back(static_cast<DataType>(t), static_cast<ReduceOp>(o));
  return v;
}

}  // namespace hccl
