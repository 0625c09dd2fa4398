// TEMPORARY: see engine_placeholder_exec.hpp.
#include "coll_hccl/engine_placeholder_exec.hpp"

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <type_traits>
#include <vector>

#include "algorithms/types.hpp"

struct hccl_req {
  hccl_coll_desc_t desc{};
  std::vector<std::size_t> counts;  // REDUCE_SCATTER: copied, desc.recvcounts is not kept
  int rank = 0;
  int size = 0;
  std::size_t contrib = 0;              // bytes each rank put into `gathered`
  std::vector<unsigned char> gathered;  // every rank's input, rank order
  bool done = false;
};

namespace hccl::placeholder {
namespace {

std::mutex g_mutex;
std::vector<hccl_req*> g_active;  // gathered, waiting for progress to reduce

template <typename T>
constexpr bool kIsComplex =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

// MPI semantics of one element: a op b, where a comes from lower ranks.
template <typename T>
T combine(hccl_op_t op, T a, T b) {
  if constexpr (kIsComplex<T>) {
    return op == HCCL_OP_PROD ? a * b : a + b;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (op == HCCL_OP_LAND) return a && b;
    if (op == HCCL_OP_LOR) return a || b;
    return a != b;
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case HCCL_OP_PROD:
        return a * b;
      case HCCL_OP_MAX:
        return std::max(a, b);
      case HCCL_OP_MIN:
        return std::min(a, b);
      default:
        return a + b;
    }
  } else {
    using U = std::make_unsigned_t<T>;  // wrap around like Open MPI instead of signed overflow
    switch (op) {
      case HCCL_OP_SUM:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case HCCL_OP_PROD:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case HCCL_OP_MAX:
        return std::max(a, b);
      case HCCL_OP_MIN:
        return std::min(a, b);
      case HCCL_OP_LAND:
        return static_cast<T>(a != 0 && b != 0);
      case HCCL_OP_LOR:
        return static_cast<T>(a != 0 || b != 0);
      case HCCL_OP_LXOR:
        return static_cast<T>((a != 0) != (b != 0));
      case HCCL_OP_BAND:
        return static_cast<T>(a & b);
      case HCCL_OP_BOR:
        return static_cast<T>(a | b);
      default:
        return static_cast<T>(a ^ b);
    }
  }
}

template <typename T>
void kernel(hccl_op_t op, const unsigned char* in, unsigned char* inout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    T a;
    T b;
    std::memcpy(&a, in + i * sizeof(T), sizeof(T));
    std::memcpy(&b, inout + i * sizeof(T), sizeof(T));
    T r = combine<T>(op, a, b);
    std::memcpy(inout + i * sizeof(T), &r, sizeof(T));
  }
}

// inout = in op inout over n elements.
void reduceInto(const hccl_coll_desc_t& d, const unsigned char* in, unsigned char* inout,
                std::size_t n) {
  if (d.op == HCCL_OP_USER) {
    d.user_fn(in, inout, n, d.user_ctx);
    return;
  }
  switch (d.dtype) {
    case HCCL_DT_INT8:
      return kernel<std::int8_t>(d.op, in, inout, n);
    case HCCL_DT_INT16:
      return kernel<std::int16_t>(d.op, in, inout, n);
    case HCCL_DT_INT32:
      return kernel<std::int32_t>(d.op, in, inout, n);
    case HCCL_DT_INT64:
      return kernel<std::int64_t>(d.op, in, inout, n);
    case HCCL_DT_UINT8:
    case HCCL_DT_BYTE:
      return kernel<std::uint8_t>(d.op, in, inout, n);
    case HCCL_DT_UINT16:
      return kernel<std::uint16_t>(d.op, in, inout, n);
    case HCCL_DT_UINT32:
      return kernel<std::uint32_t>(d.op, in, inout, n);
    case HCCL_DT_UINT64:
      return kernel<std::uint64_t>(d.op, in, inout, n);
    case HCCL_DT_FLOAT32:
      return kernel<float>(d.op, in, inout, n);
    case HCCL_DT_FLOAT64:
      return kernel<double>(d.op, in, inout, n);
    case HCCL_DT_LONG_DOUBLE:
      return kernel<long double>(d.op, in, inout, n);
    case HCCL_DT_COMPLEX_FLOAT:
      return kernel<std::complex<float>>(d.op, in, inout, n);
    case HCCL_DT_COMPLEX_DOUBLE:
      return kernel<std::complex<double>>(d.op, in, inout, n);
    case HCCL_DT_BOOL:
      return kernel<bool>(d.op, in, inout, n);
    default:
      return;  // excluded by canExecute
  }
}

// Rank order a0 op (a1 op (... op a(p-1))): equal to the left fold for any associative op.
void reduceSlices(const hccl_req& r, std::size_t sliceOffset, std::size_t n, void* out) {
  const std::size_t bytes = n * r.desc.elem_size;
  if (bytes == 0) return;
  const auto slice = [&](int rank) {
    return r.gathered.data() + static_cast<std::size_t>(rank) * r.contrib + sliceOffset;
  };
  std::vector<unsigned char> acc(slice(r.size - 1), slice(r.size - 1) + bytes);
  for (int rank = r.size - 2; rank >= 0; --rank) reduceInto(r.desc, slice(rank), acc.data(), n);
  std::memcpy(out, acc.data(), bytes);
}

void execute(hccl_req& r) {
  const hccl_coll_desc_t& d = r.desc;
  const std::size_t es = d.elem_size;
  const auto rank = static_cast<std::size_t>(r.rank);
  switch (d.coll) {
    case HCCL_COLL_ALLREDUCE:
      reduceSlices(r, 0, d.count, d.recvbuf);
      break;
    case HCCL_COLL_ALLGATHER:
      if (!r.gathered.empty()) std::memcpy(d.recvbuf, r.gathered.data(), r.gathered.size());
      break;
    case HCCL_COLL_REDUCE_SCATTER_BLOCK:
      reduceSlices(r, rank * d.count * es, d.count, d.recvbuf);
      break;
    case HCCL_COLL_REDUCE_SCATTER: {
      const std::size_t before =
          std::accumulate(r.counts.begin(), r.counts.begin() + r.rank, std::size_t{0});
      reduceSlices(r, before * es, r.counts[rank], d.recvbuf);
      break;
    }
  }
  r.done = true;
}

}  // namespace

bool canExecute(const hccl_coll_desc_t& d, std::string& why) {
  if (d.elem_size == 0) {
    why = "zero-sized elements";
    return false;
  }
  if (d.coll == HCCL_COLL_ALLGATHER) return true;
  if (d.op == HCCL_OP_USER) return true;
  if (d.op < HCCL_OP_SUM || d.op > HCCL_OP_BXOR || d.dtype < 0 || d.dtype >= HCCL_DT_COUNT) {
    why = "unknown op or type";
    return false;
  }
  const auto t = static_cast<hccl::DataType>(d.dtype);
  if (!hccl::defined(static_cast<hccl::ReduceOp>(d.op), t) || d.dtype == HCCL_DT_FLOAT16 ||
      d.dtype == HCCL_DT_BFLOAT16 || d.elem_size != hccl::sizeOf(t)) {
    why = "no kernel for this op and type";
    return false;
  }
  return true;
}

hccl_status_t start(const CommView& comm, const hccl_coll_desc_t& d, hccl_req_t** out,
                    std::string& why) {
  auto r = std::make_unique<hccl_req>();
  r->desc = d;
  r->rank = comm.rank;
  r->size = comm.size;
  const std::size_t p = static_cast<std::size_t>(comm.size);
  const std::size_t es = d.elem_size;
  if (d.op == HCCL_OP_USER && d.user_fn == nullptr) {
    why = "user op without callback";
    return HCCL_ERR_ARG;
  }
  const auto* input = static_cast<const unsigned char*>(d.in_place ? d.recvbuf : d.sendbuf);
  switch (d.coll) {
    case HCCL_COLL_ALLREDUCE:
    case HCCL_COLL_ALLGATHER:
      r->contrib = d.count * es;
      if (d.coll == HCCL_COLL_ALLGATHER && d.in_place && input != nullptr) {
        input += static_cast<std::size_t>(comm.rank) * r->contrib;
      }
      break;
    case HCCL_COLL_REDUCE_SCATTER_BLOCK:
      r->contrib = p * d.count * es;
      break;
    case HCCL_COLL_REDUCE_SCATTER:
      if (d.recvcounts == nullptr) {
        why = "REDUCE_SCATTER without recvcounts";
        return HCCL_ERR_ARG;
      }
      r->counts.assign(d.recvcounts, d.recvcounts + p);
      r->desc.recvcounts = nullptr;
      r->contrib = std::accumulate(r->counts.begin(), r->counts.end(), std::size_t{0}) * es;
      break;
  }
  r->gathered.resize(p * r->contrib);
  if (input == nullptr) input = r->gathered.data();  // nothing to send
  if (comm.allgather(input, r->gathered.data(), r->contrib, comm.allgather_ctx) != 0) {
    why = "all-gather of the inputs failed";
    return HCCL_ERR_BOOTSTRAP;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_active.push_back(r.get());
  *out = r.release();
  return HCCL_SUCCESS;
}

hccl_status_t test(hccl_req_t* req, std::string& why) {
  (void)why;
  std::lock_guard<std::mutex> lock(g_mutex);
  return req->done ? HCCL_SUCCESS : HCCL_PENDING;
}

void release(hccl_req_t* req) {
  if (req == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::erase(g_active, req);
  }
  delete req;
}

int progress() {
  std::lock_guard<std::mutex> lock(g_mutex);
  int completed = 0;
  for (hccl_req* r : g_active) {
    execute(*r);
    ++completed;
  }
  g_active.clear();
  return completed;
}

}  // namespace hccl::placeholder
