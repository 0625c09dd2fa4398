#include "coll_hccl/reference/interpreter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <stdexcept>

#include "algorithms/replay.hpp"

namespace hccl::reference {
namespace {

struct Landing {
  algo::Slice slice;
  std::vector<std::byte> bytes;
};

class Interpreter final : public algo::ReplayObserver {
 public:
  Interpreter(const algo::Schedule& s, std::size_t elemSize, const ElementOp& op,
              const std::vector<RankMemory>& memory)
      : s_(s), es_(elemSize), op_(op), pending_(s.ranks.size()) {
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
      std::array<std::vector<std::byte>, algo::kNumBufs> b;
      b[static_cast<std::size_t>(algo::Buf::Input)] = memory[r].input;
      b[static_cast<std::size_t>(algo::Buf::Output)] = memory[r].output;
      b[static_cast<std::size_t>(algo::Buf::Scratch)].assign(
          algo::scratchCount(s.ranks[r]) * elemSize, std::byte{0xA5});
      bufs_.push_back(std::move(b));
    }
  }

  void matched(const algo::XferRef& send, const algo::XferRef& recv) override {
    const algo::Transfer& ts = s_.ranks[send.rank].steps[send.step].xfers[send.index];
    const algo::Transfer& tr = s_.ranks[recv.rank].steps[recv.step].xfers[recv.index];
    if (ts.slice.count != tr.slice.count)
      throw std::runtime_error(
          fmt::format("rank {} step {} sends {} elements, rank {} step {} "
                      "receives {}",
                      send.rank, send.step, ts.slice.count, recv.rank, recv.step, tr.slice.count));
    const std::span<std::byte> from = view(send.rank, send.step, ts.slice);
    pending_[recv.rank].push_back({tr.slice, {from.begin(), from.end()}});
  }

  void completed(std::uint32_t rank, std::uint32_t step) override {
    for (const Landing& l : pending_[rank]) {
      const std::span<std::byte> to = view(rank, step, l.slice);
      std::copy(l.bytes.begin(), l.bytes.end(), to.begin());
    }
    pending_[rank].clear();
    for (const algo::LocalOp& op : s_.ranks[rank].steps[step].ops) run(rank, step, op);
  }

  std::vector<std::vector<std::byte>> outputs() {
    std::vector<std::vector<std::byte>> out;
    for (auto& b : bufs_) out.push_back(std::move(b[static_cast<std::size_t>(algo::Buf::Output)]));
    return out;
  }

 private:
  std::span<std::byte> view(std::uint32_t rank, std::uint32_t step, const algo::Slice& sl) {
    std::vector<std::byte>& b = bufs_[rank][static_cast<std::size_t>(sl.buf)];
    if (sl.end() * es_ > b.size())
      throw std::runtime_error(fmt::format("rank {} step {}: {} outside a buffer of {} elements",
                                           rank, step, algo::toString(sl), b.size() / es_));
    return {b.data() + sl.offset * es_, sl.count * es_};
  }

  void run(std::uint32_t rank, std::uint32_t step, const algo::LocalOp& op) {
    const std::span<std::byte> dst = view(rank, step, op.dst);
    const std::span<std::byte> a = view(rank, step, op.a);
    if (a.size() != dst.size())
      throw std::runtime_error(
          fmt::format("rank {} step {}: {} of unequal slices", rank, step, algo::toString(op)));
    if (op.kind == algo::OpKind::Copy) {
      const std::vector<std::byte> tmp(a.begin(), a.end());
      std::copy(tmp.begin(), tmp.end(), dst.begin());
      return;
    }
    const std::span<std::byte> b = view(rank, step, op.b);
    if (b.size() != dst.size())
      throw std::runtime_error(
          fmt::format("rank {} step {}: {} of unequal slices", rank, step, algo::toString(op)));
    for (std::size_t i = 0; i < op.dst.count; ++i)
      op_(dst.data() + i * es_, a.data() + i * es_, b.data() + i * es_);
  }

  const algo::Schedule& s_;
  std::size_t es_;
  ElementOp op_;
  std::vector<std::array<std::vector<std::byte>, algo::kNumBufs>> bufs_;
  std::vector<std::vector<Landing>> pending_;
};

}  // namespace

InterpretResult interpret(const algo::Schedule& s, std::size_t elemSize, const ElementOp& op,
                          const std::vector<RankMemory>& memory) {
  InterpretResult res;
  if (memory.size() != s.ranks.size()) {
    res.error = fmt::format("{} rank memories for {} ranks", memory.size(), s.ranks.size());
    return res;
  }
  try {
    Interpreter in(s, elemSize, op, memory);
    const std::vector<algo::ReplayProblem> problems = algo::replay(s.ranks, in);
    for (const algo::ReplayProblem& p : problems) res.error += p.message + "\n";
    res.outputs = in.outputs();
  } catch (const std::exception& e) {
    res.error = e.what();
  }
  return res;
}

}  // namespace hccl::reference
