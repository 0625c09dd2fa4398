#include "coll_hccl/engine/reduction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace hccl::engine {

Reduction Reduction::predefined(DataType t, ReduceOp op) {
  Reduction r;
  r.kernel_ = kernel(t, op);
  if (r.kernel_ == nullptr)
    throw std::invalid_argument(fmt::format(
        "reduction {} is not defined on {} (MPI defines sum/prod on integers, floats and complex; "
        "max/min on integers and floats; land/lor/lxor on integers and bool; band/bor/bxor on "
        "integers and byte)",
        name(op), name(t)));
  r.type_ = t;
  r.op_ = op;
  r.elemSize_ = sizeOf(t);
  // Floating sum and product are commutative but not associative; algorithms that want
  // reproducible rounding ask for rank order separately.
  r.commutative_ = true;
  return r;
}

Reduction Reduction::user(UserReduceFn fn, void* ctx, std::size_t elemSize, bool commutative) {
  if (fn == nullptr) throw std::invalid_argument("user reduction: null function");
  if (elemSize == 0) throw std::invalid_argument("user reduction: element size 0");
  Reduction r;
  r.user_ = fn;
  r.ctx_ = ctx;
  r.elemSize_ = elemSize;
  r.commutative_ = commutative;
  return r;
}

std::string Reduction::describe() const {
  if (kernel_ != nullptr) return fmt::format("{} on {}", name(op_), name(type_));
  return fmt::format("user op ({}-byte elements, {})", elemSize_,
                     commutative_ ? "commutative" : "non-commutative");
}

void Reduction::apply(void* dst, const void* a, const void* b, std::size_t count) {
  if (count == 0) return;
  if (kernel_ != nullptr) return kernel_(dst, a, b, count);
  applyUser(dst, a, b, count);
}

std::byte* Reduction::temp(std::size_t& elems) {
  if (temp_.empty()) temp_.resize(std::max(elemSize_, kTempBytes / elemSize_ * elemSize_));
  elems = temp_.size() / elemSize_;
  return temp_.data();
}

void Reduction::applyUser(void* dst, const void* a, const void* b, std::size_t count) {
  const std::size_t bytes = count * elemSize_;
  auto* d = static_cast<std::byte*>(dst);
  const auto* x = static_cast<const std::byte*>(a);
  const auto* y = static_cast<const std::byte*>(b);

  if (d != x && d != y) {  // disjoint: inout starts as b
    std::memcpy(d, y, bytes);
    user_(x, d, count, ctx_);
    return;
  }
  if (d == y && x != y) {  // inout is already b, and in does not alias it
    user_(x, d, count, ctx_);
    return;
  }
  // dst == a (b elsewhere, or b == a too): save a, then inout = b in dst. Blockwise through the
  // temporary; each block of a is saved before the same block of dst is overwritten.
  std::size_t blockElems = 0;
  std::byte* t = temp(blockElems);
  for (std::size_t done = 0; done < count; done += blockElems) {
    const std::size_t n = std::min(blockElems, count - done);
    const std::size_t off = done * elemSize_;
    std::memcpy(t, x + off, n * elemSize_);
    if (y != d) std::memcpy(d + off, y + off, n * elemSize_);
    user_(t, d + off, n, ctx_);
  }
}

}  // namespace hccl::engine
