#include "bench/elements.hpp"

#include <cstdint>
#include <type_traits>

namespace bench {

namespace {

// Types in which a negative value exists; their patterns include negatives.
template <typename T>
constexpr bool kSigned = std::is_signed_v<T>;

// Exact accumulation type for sums and products of the small pattern values.
template <typename T>
using Wide =
    std::conditional_t<std::is_floating_point_v<T>, double,
                       std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;

template <typename T>
T value(const Pattern& p, int rank, std::size_t index) {
  const auto r = static_cast<std::size_t>(rank);
  const auto n = static_cast<std::size_t>(p.nranks);
  switch (p.op) {
    case Op::Sum: {
      // 0..7, or -3..4 where negatives exist: |partial sums| <= 4n, exact in float below 2^22
      // ranks.
      const auto v = static_cast<int>((r * 7 + index * 3 + 1) % 8);
      return static_cast<T>(kSigned<T> ? v - 3 : v);
    }
    case Op::Prod: {
      // One rank per index contributes 2, the others 1, signs vary: products are +-1 or +-2.
      int v = (index % n == r) ? 2 : 1;
      if (kSigned<T> && (r + index) % 3 == 0) v = -v;
      return static_cast<T>(v);
    }
    case Op::Max:
    case Op::Min: {
      const auto v = static_cast<int>((r * 13 + index * 7) % 23);
      return static_cast<T>(kSigned<T> ? v - 11 : v);
    }
    case Op::BAnd:
    case Op::BOr:
    case Op::BXor:
      return static_cast<T>((r * 37 + index * 11 + 5) % 128);
    case Op::LAnd:
    case Op::LOr:
    case Op::LXor:
      return static_cast<T>((r * 5 + index) % 7 != 0 ? 1 : 0);
  }
  return T{};
}

// The reduction over ranks 0..upto-1 of value(p, r, index), in rank order.
template <typename T>
T reducedOver(const Pattern& p, int upto, std::size_t index) {
  switch (p.op) {
    case Op::Sum: {
      Wide<T> acc = 0;
      for (int r = 0; r < upto; ++r) acc += static_cast<Wide<T>>(value<T>(p, r, index));
      return static_cast<T>(acc);  // integer types wrap, as MPI's do
    }
    case Op::Prod: {
      Wide<T> acc = 1;
      for (int r = 0; r < upto; ++r) acc *= static_cast<Wide<T>>(value<T>(p, r, index));
      return static_cast<T>(acc);
    }
    default:
      break;
  }
  T acc = value<T>(p, 0, index);
  for (int r = 1; r < upto; ++r) {
    const T v = value<T>(p, r, index);
    switch (p.op) {
      case Op::Max:
        acc = v > acc ? v : acc;
        break;
      case Op::Min:
        acc = v < acc ? v : acc;
        break;
      case Op::LAnd:
        acc = static_cast<T>((acc != 0) && (v != 0));
        break;
      case Op::LOr:
        acc = static_cast<T>((acc != 0) || (v != 0));
        break;
      case Op::LXor:
        acc = static_cast<T>((acc != 0) != (v != 0));
        break;
      default:
        if constexpr (std::is_integral_v<T>) {
          if (p.op == Op::BAnd) acc = static_cast<T>(acc & v);
          if (p.op == Op::BOr) acc = static_cast<T>(acc | v);
          if (p.op == Op::BXor) acc = static_cast<T>(acc ^ v);
        }
        break;
    }
  }
  return acc;
}

template <typename T>
T reduced(const Pattern& p, std::size_t index) {
  return reducedOver<T>(p, p.nranks, index);
}

template <typename T>
void fillT(void* buf, std::size_t count, const Pattern& p, int rank, std::size_t first) {
  T* out = static_cast<T*>(buf);
  for (std::size_t k = 0; k < count; ++k) out[k] = value<T>(p, rank, first + k);
}

template <typename T>
std::size_t countWrongReducedT(const void* buf, std::size_t count, const Pattern& p,
                               std::size_t first) {
  const T* in = static_cast<const T*>(buf);
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < count; ++k)
    if (in[k] != reduced<T>(p, first + k)) ++wrong;
  return wrong;
}

template <typename T>
std::size_t countWrongPrefixT(const void* buf, std::size_t count, const Pattern& p, int upto,
                              std::size_t first) {
  const T* in = static_cast<const T*>(buf);
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < count; ++k)
    if (in[k] != reducedOver<T>(p, upto, first + k)) ++wrong;
  return wrong;
}

template <typename T>
std::size_t countWrongValuesT(const void* buf, std::size_t count, const Pattern& p, int rank,
                              std::size_t first) {
  const T* in = static_cast<const T*>(buf);
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < count; ++k)
    if (in[k] != value<T>(p, rank, first + k)) ++wrong;
  return wrong;
}

template <typename T>
TypeInfo makeType(std::string_view name, MPI_Datatype handle) {
  return TypeInfo{name,
                  handle,
                  sizeof(T),
                  std::is_integral_v<T>,
                  &fillT<T>,
                  &countWrongReducedT<T>,
                  &countWrongPrefixT<T>,
                  &countWrongValuesT<T>};
}

}  // namespace

MPI_Op OpInfo::handle() const {
  switch (op) {
    case Op::Sum:
      return MPI_SUM;
    case Op::Prod:
      return MPI_PROD;
    case Op::Max:
      return MPI_MAX;
    case Op::Min:
      return MPI_MIN;
    case Op::BAnd:
      return MPI_BAND;
    case Op::BOr:
      return MPI_BOR;
    case Op::BXor:
      return MPI_BXOR;
    case Op::LAnd:
      return MPI_LAND;
    case Op::LOr:
      return MPI_LOR;
    case Op::LXor:
      return MPI_LXOR;
  }
  return MPI_OP_NULL;
}

const std::vector<TypeInfo>& allTypes() {
  static const std::vector<TypeInfo> kTypes{
      makeType<float>("float", MPI_FLOAT),
      makeType<double>("double", MPI_DOUBLE),
      makeType<std::int8_t>("int8", MPI_INT8_T),
      makeType<std::uint8_t>("uint8", MPI_UINT8_T),
      makeType<std::int16_t>("int16", MPI_INT16_T),
      makeType<std::uint16_t>("uint16", MPI_UINT16_T),
      makeType<std::int32_t>("int32", MPI_INT32_T),
      makeType<std::uint32_t>("uint32", MPI_UINT32_T),
      makeType<std::int64_t>("int64", MPI_INT64_T),
      makeType<std::uint64_t>("uint64", MPI_UINT64_T),
      makeType<int>("int", MPI_INT),
      makeType<long>("long", MPI_LONG),
      makeType<unsigned>("unsigned", MPI_UNSIGNED),
      // OSU's default for its reduction benchmarks.
      makeType<char>("char", MPI_CHAR),
  };
  return kTypes;
}

const std::vector<OpInfo>& allOps() {
  static const std::vector<OpInfo> kOps{
      {Op::Sum, "sum", false},  {Op::Prod, "prod", false}, {Op::Max, "max", false},
      {Op::Min, "min", false},  {Op::BAnd, "band", true},  {Op::BOr, "bor", true},
      {Op::BXor, "bxor", true}, {Op::LAnd, "land", true},  {Op::LOr, "lor", true},
      {Op::LXor, "lxor", true},
  };
  return kOps;
}

std::vector<std::string> typeNames() {
  std::vector<std::string> names;
  for (const auto& t : allTypes()) names.emplace_back(t.name);
  return names;
}

std::vector<std::string> opNames() {
  std::vector<std::string> names;
  for (const auto& o : allOps()) names.emplace_back(o.name);
  return names;
}

const TypeInfo* findType(std::string_view name) {
  for (const auto& t : allTypes()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const OpInfo* findOp(std::string_view name) {
  for (const auto& o : allOps()) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

}  // namespace bench
