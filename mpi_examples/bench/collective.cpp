#include "bench/collective.hpp"

#include <cstring>

#include "bench/coll_specs.hpp"

namespace bench {

namespace {

// Adding a collective: its CollSpec in the file of its family, and one line here (the order of
// the -C list and of the default run).
constexpr const CollSpec* kAll[] = {
    &kAllreduce, &kAllgather, &kReduceScatter, &kReduceScatterV, &kBcast,   &kReduce,
    &kScatter,   &kAlltoall,  &kAllgatherV,    &kGather,         &kGatherV, &kScatterV,
    &kAlltoallV, &kAlltoallW, &kScan,          &kExscan,         &kBarrier,
};

}  // namespace

namespace detail {

std::size_t wrongPerRankBlocks(const Call& call, const void* buf, int nranks) {
  const Pattern p{call.op->op, nranks};
  std::size_t wrong = 0;
  for (int r = 0; r < nranks; ++r) {
    wrong += call.type->countWrongValues(
        at(const_cast<void*>(buf), static_cast<std::size_t>(r) * call.shape.block, call.type->size),
        call.shape.block, p, r, 0);
  }
  return wrong;
}

}  // namespace detail

std::string_view name(Coll c) {
  return c->name;
}

Coll parseColl(std::string_view s) {
  for (Coll c : kAll) {
    if (c->name == s) return c;
  }
  return nullptr;
}

std::vector<std::string> collNames() {
  std::vector<std::string> out;
  for (Coll c : kAll) out.emplace_back(c->name);
  return out;
}

bool reduces(Coll c) {
  return c->reduces;
}

std::optional<Shape> shapeFor(Coll c, std::size_t sizeBytes, std::size_t typeSize, int nranks) {
  const Shape s = c->shape(sizeBytes, typeSize, static_cast<std::size_t>(nranks));
  if (c->moves && s.block == 0) return std::nullopt;
  return s;
}

void Call::prepare(int rank, int nranks) const {
  std::memset(recv, kSentinelByte, shape.recvCount * type->size);
  coll->prepare(*this, rank, nranks);
}

}  // namespace bench
