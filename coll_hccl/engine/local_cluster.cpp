#include "coll_hccl/engine/local_cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

namespace hccl::engine {
namespace {

// Byte pattern of fresh scratch: a schedule that reads scratch before writing it gets garbage
// that no reference result matches.
constexpr std::byte kScratchPoison{0xA5};

TransportWrap& defaultWrap() {
  static TransportWrap w;
  return w;
}

// An all-gather between the rank threads of one run: rounds of equal-size contributions.
// Throws once the run was aborted (a rank failed and will never contribute).
class ThreadGather {
 public:
  ThreadGather(int ranks, const tl::InProcFabric& fabric) : ranks_(ranks), fabric_(fabric) {}
  void operator()(int rank, std::span<const std::byte> mine, std::span<std::byte> all) {
    std::unique_lock lk(mu_);
    const std::uint64_t round = round_;
    if (arrived_ == 0) data_.assign(mine.size() * static_cast<std::size_t>(ranks_), std::byte{});
    if (data_.size() != mine.size() * static_cast<std::size_t>(ranks_))
      throw std::runtime_error("runLocal all-gather: ranks contributed different sizes");
    if (!mine.empty())
      std::memcpy(data_.data() + static_cast<std::size_t>(rank) * mine.size(), mine.data(),
                  mine.size());
    if (++arrived_ == ranks_) {
      result_ = data_;
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    } else {
      while (round_ == round) {
        if (fabric_.aborted()) throw std::runtime_error("runLocal all-gather: the run was aborted");
        cv_.wait_for(lk, std::chrono::milliseconds(20));
      }
    }
    if (all.size() != result_.size())
      throw std::runtime_error("runLocal all-gather: result of another size");
    std::memcpy(all.data(), result_.data(), all.size());
  }

 private:
  int ranks_;
  const tl::InProcFabric& fabric_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::uint64_t round_ = 0;
  std::vector<std::byte> data_, result_;
};

std::string checkBuffers(const algo::Schedule& s, std::size_t elemSize,
                         const std::vector<RankBuffers>& buffers) {
  const std::size_t p = s.ranks.size();
  if (s.problem.ranks != p)
    return fmt::format("schedule has {} rank schedules but its problem has {} ranks", p,
                       s.problem.ranks);
  if (buffers.size() != p)
    return fmt::format("{} rank buffers given for a schedule of {} ranks", buffers.size(), p);
  if (elemSize == 0) return "element size 0";
  for (std::uint32_t r = 0; r < p; ++r) {
    const struct {
      algo::Buf buf;
      std::size_t have;
    } given[] = {{algo::Buf::Input, buffers[r].input.size()},
                 {algo::Buf::Output, buffers[r].output.size()}};
    for (const auto& g : given) {
      const std::uint64_t want = s.problem.bufferCount(g.buf, r) * elemSize;
      if (g.have != want)
        return fmt::format("rank {}: {} buffer has {} bytes, {} needs {} ({} elements of {} bytes)",
                           r, algo::name(g.buf), g.have, algo::toString(s.problem), want,
                           s.problem.bufferCount(g.buf, r), elemSize);
    }
  }
  return {};
}

LocalRunResult runRanks(const algo::Schedule& s, std::size_t elemSize, const Reduction* reduction,
                        std::vector<RankBuffers> buffers, const LocalRunOptions& options) {
  LocalRunResult result;
  if (std::string bad = checkBuffers(s, elemSize, buffers); !bad.empty()) {
    result.error = "runLocal: " + bad;
    return result;
  }
  const auto p = static_cast<int>(s.ranks.size());
  tl::InProcFabric fabric(p, tl::InProcOptions{options.timeout});
  if (options.configure) options.configure(fabric);
  std::vector<bool> dead(static_cast<std::size_t>(p), false);
  for (int r : options.deadRanks) {
    if (r < 0 || r >= p) {
      result.error = fmt::format("runLocal: dead rank {} outside [0, {})", r, p);
      return result;
    }
    dead[static_cast<std::size_t>(r)] = true;
    fabric.markDead(r);
  }

  const TransportWrap& wrap =
      options.deadRanks.empty() ? (options.wrap ? options.wrap : defaultWrap()) : options.wrap;
  ThreadGather gather(p, fabric);

  result.rankErrors.assign(static_cast<std::size_t>(p), {});
  result.stats.assign(static_cast<std::size_t>(p), {});
  std::mutex firstMu;
  std::optional<std::string> first;

  auto rankMain = [&](int r) {
    const auto ur = static_cast<std::size_t>(r);
    std::string err;
    try {
      std::optional<Reduction> red;
      if (reduction != nullptr) red.emplace(*reduction);
      std::vector<std::byte> scratch(algo::scratchCount(s.ranks[ur]) * elemSize, kScratchPoison);
      Bindings bind;
      RankBuffers& mine = buffers[ur];
      bind.input = Binding::contiguous(mine.input.data(), mine.input.size() / elemSize);
      bind.output = Binding::contiguous(mine.output.data(), mine.output.size() / elemSize);
      bind.scratch = Binding::contiguous(scratch.data(), scratch.size() / elemSize);
      tl::InProcTransport& ep = fabric.endpoint(r);
      std::shared_ptr<tl::Transport> wrapped;
      if (wrap)
        wrapped = wrap(ep, [&gather, r](std::span<const std::byte> m, std::span<std::byte> a) {
          gather(r, m, a);
        });
      Executor ex(wrapped ? *wrapped : ep, elemSize, red ? &*red : nullptr);
      MessageCounters counters(p);
      if (ex.start(s.ranks[ur], bind, counters, options.comm, options.seq)) {
        if (wrapped)
          ex.run();  // messages over another link do not wake the endpoint: poll
        else
          ex.run([&ep] { ep.wait(std::chrono::milliseconds(50)); });
      }
      if (ex.failed()) err = ex.error();
      result.stats[ur] = ex.stats();
    } catch (const std::exception& e) {
      err = fmt::format("rank {}: {}", r, e.what());
    }
    if (err.empty()) return;
    result.rankErrors[ur] = err;
    {
      std::lock_guard lk(firstMu);
      if (!first) first = err;
    }
    // The others would only wait for this rank until their timeout: stop them now.
    fabric.abort(fmt::format("rank {} failed", r));
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(p));
  try {
    for (int r = 0; r < p; ++r)
      if (!dead[static_cast<std::size_t>(r)]) threads.emplace_back(rankMain, r);
  } catch (const std::exception& e) {
    std::lock_guard lk(firstMu);
    if (!first) first = fmt::format("runLocal: cannot start rank threads: {}", e.what());
    fabric.abort("runLocal could not start every rank");
  }
  for (std::thread& t : threads) t.join();

  result.bytesMoved = fabric.bytesMoved();
  result.ok = !first.has_value();
  if (first) result.error = *first;
  result.outputs.reserve(buffers.size());
  for (RankBuffers& b : buffers) result.outputs.push_back(std::move(b.output));
  return result;
}

}  // namespace

void setDefaultTransportWrap(TransportWrap wrap) {
  defaultWrap() = std::move(wrap);
}

LocalRunResult runLocal(const algo::Schedule& schedule, const Reduction& reduction,
                        std::vector<RankBuffers> buffers, const LocalRunOptions& options) {
  return runRanks(schedule, reduction.elemSize(), &reduction, std::move(buffers), options);
}

LocalRunResult runLocal(const algo::Schedule& schedule, DataType type, ReduceOp op,
                        std::vector<RankBuffers> buffers, const LocalRunOptions& options) {
  if (!defined(op, type)) {
    const bool reduces = std::ranges::any_of(schedule.ranks, [](const algo::RankSchedule& rs) {
      return std::ranges::any_of(rs.steps, [](const algo::Step& st) {
        return std::ranges::any_of(
            st.ops, [](const algo::LocalOp& o) { return o.kind == algo::OpKind::Reduce; });
      });
    });
    if (reduces) {
      LocalRunResult result;
      result.error = fmt::format("runLocal: the schedule reduces, but {} is not defined on {}",
                                 name(op), name(type));
      return result;
    }
    return runRanks(schedule, sizeOf(type), nullptr, std::move(buffers), options);
  }
  const Reduction red = Reduction::predefined(type, op);
  return runRanks(schedule, sizeOf(type), &red, std::move(buffers), options);
}

LocalRunResult runLocal(const algo::Schedule& schedule, std::size_t elemSize,
                        std::vector<RankBuffers> buffers, const LocalRunOptions& options) {
  return runRanks(schedule, elemSize, nullptr, std::move(buffers), options);
}

}  // namespace hccl::engine
