// The reduction of one collective call, as the executor applies it: dst = a (+) b.
//
// Either a predefined kernel (reduce_kernels.hpp) or a user callback in MPI's shape, where
// fn(in, inout, count, ctx) computes inout = in (+) inout (MPI_User_function order: `in` is the
// left operand). The three-operand form maps onto the callback without reordering operands, so
// non-commutative operations stay correct:
//   dst == b:          fn(in = a, inout = b)
//   dst == a:          a saved to a temporary, b copied into dst, fn(in = temporary, inout = dst)
//   dst disjoint:      b copied into dst, fn(in = a, inout = dst)
// The temporary is a bounded block reused across calls, so apply() allocates at most once per
// Reduction. A Reduction is used by one thread at a time; give each rank its own copy.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/types.hpp"
#include "coll_hccl/engine/reduce_kernels.hpp"

namespace hccl::engine {

using UserReduceFn = void (*)(const void* in, void* inout, std::size_t count, void* ctx);

class Reduction {
 public:
  // Throws std::invalid_argument naming the pair when MPI does not define op on t.
  static Reduction predefined(DataType t, ReduceOp op);
  // elemSize: bytes per element (> 0). `commutative` is informational: it tells algorithm choice
  // whether rank-order reduction is required; apply() always keeps a on the left.
  static Reduction user(UserReduceFn fn, void* ctx, std::size_t elemSize, bool commutative);

  // dst = a (+) b for count elements. dst may be exactly a or b (or both), never a partial overlap.
  void apply(void* dst, const void* a, const void* b, std::size_t count);

  std::size_t elemSize() const { return elemSize_; }
  bool commutative() const { return commutative_; }
  bool isUser() const { return user_ != nullptr; }
  std::string describe() const;  // "sum on fp32", "user op (4-byte elements)"

  // Bytes of the reusable temporary a user op works through (apply splits larger calls).
  static constexpr std::size_t kTempBytes = std::size_t{64} << 10;

 private:
  Reduction() = default;
  void applyUser(void* dst, const void* a, const void* b, std::size_t count);
  std::byte* temp(std::size_t& elems);

  ReduceFn kernel_ = nullptr;
  DataType type_ = DataType::Byte;
  ReduceOp op_ = ReduceOp::Sum;
  UserReduceFn user_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t elemSize_ = 1;
  bool commutative_ = true;
  std::vector<std::byte> temp_;
};

}  // namespace hccl::engine
