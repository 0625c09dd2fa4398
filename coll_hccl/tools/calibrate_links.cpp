#include "coll_hccl/tools/calibrate_links.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <thread>

#include "algorithms/generators.hpp"
#include "coll_hccl/engine/executor.hpp"
#include "coll_hccl/engine/reduction.hpp"
#include "coll_hccl/engine/slot_executor.hpp"

namespace hccl::calib {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kComm = 4000;  // apart from anything else sharing the transport
constexpr std::uint64_t kMaxIterations = 200000;
constexpr std::uint64_t kMaxBlock = 64;

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::ranges::sort(v);
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double lowerQuartile(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t k = (v.size() - 1) / 4;
  std::ranges::nth_element(v, v.begin() + static_cast<std::ptrdiff_t>(k));
  return v[k];
}

StepProbe::StepProbe(tl::Transport& transport, Sync& sync, std::size_t maxBytes,
                     std::chrono::milliseconds limit, bool yieldWhileWaiting)
    : t_(transport), sync_(sync), limit_(limit), yield_(yieldWhileWaiting) {
  const auto p = static_cast<std::size_t>(t_.size());
  sendBuf_.resize(p);
  recvBuf_.resize(p);
  for (std::size_t q = 0; q < p; ++q) {
    if (static_cast<int>(q) == t_.rank()) continue;
    // Touched now, so page faults stay out of the timings.
    sendBuf_[q].assign(maxBytes, std::byte{0x5a});
    recvBuf_[q].assign(maxBytes, std::byte{0});
  }
  done_.reserve(2 * p);
  times_.reserve(kMaxIterations);
}

std::vector<int> StepProbe::peersOf(std::span<const int> partners) const {
  if (t_.rank() == 0) return {partners.begin(), partners.end()};
  if (std::ranges::find(partners, t_.rank()) != partners.end()) return {0};
  return {};
}

void StepProbe::step(std::span<const int> peers, std::size_t bytes) {
  if (peers.empty()) return;
  done_.assign(2 * peers.size(), tl::Completion{});
  const tl::Tag tag{kComm, seq_, msg_++};
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const auto q = static_cast<std::size_t>(peers[i]);
    const tl::IoVec in{recvBuf_[q].data(), bytes};
    t_.recv(peers[i], std::span(&in, 1), tag, &done_[2 * i]);
  }
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const auto q = static_cast<std::size_t>(peers[i]);
    const tl::IoVec out{sendBuf_[q].data(), bytes};
    t_.send(peers[i], std::span(&out, 1), tag, &done_[2 * i + 1]);
  }
  const auto end = Clock::now() + limit_;
  for (std::uint32_t spins = 0;; ++spins) {
    bool pending = false;
    for (const tl::Completion& c : done_) {
      if (c.state == tl::Completion::State::Failed) throw std::runtime_error(c.error);
      pending = pending || c.pending();
    }
    if (!pending) return;
    if (yield_ && spins % 256 == 255) std::this_thread::yield();
    if (spins % 1024 == 1023 && Clock::now() > end) {
      for (tl::Completion& c : done_) t_.cancel(&c);
      throw std::runtime_error(
          fmt::format("rank {}: a step of {} bytes did not complete within {} ms", t_.rank(), bytes,
                      limit_.count()));
    }
    t_.progress();
  }
}

std::uint64_t StepProbe::iterationsFor(std::span<const int> partners, std::size_t bytes,
                                       double sampleSeconds) {
  const std::vector<int> peers = peersOf(partners);
  ++seq_;
  msg_ = 0;
  sync_.barrier();
  // Two steps to warm up (endpoints, registration), then a short pilot.
  for (int i = 0; i < 2; ++i) step(peers, bytes);
  constexpr int kPilot = 8;
  std::vector<double> pilot;
  for (int i = 0; i < kPilot; ++i) {
    const auto t0 = Clock::now();
    step(peers, bytes);
    pilot.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  // Sized by the fastest pilot step, the cost of a step nothing interrupted: under load most
  // pilot steps may be interrupted, and sizing by them would leave too few steps to time.
  // sample()'s time budget bounds what that costs when the steps turn out slower.
  const double fastest = std::max(*std::ranges::min_element(pilot), 1e-7);
  const auto mine = static_cast<std::uint64_t>(
      std::clamp(std::ceil(sampleSeconds / fastest), 8.0, static_cast<double>(kMaxIterations)));
  return sync_.maxOf(peers.empty() ? 0 : mine);
}

double StepProbe::sample(std::span<const int> partners, std::size_t bytes, std::uint64_t iterations,
                         double budgetSeconds) {
  const std::vector<int> peers = peersOf(partners);
  ++seq_;
  msg_ = 0;
  times_.clear();
  // Blocks of steps; after each, rank 0 decides the next block's length (0: stop, when every
  // step is done or the budget is spent), so every member runs the same steps. A block lasts
  // about an eighth of the budget at the last block's pace, and at most kMaxBlock steps: on a
  // loaded machine the pace can drop a thousandfold from one block to the next (a step that
  // waits for a descheduled peer lasts a time slice), and the cap bounds the overshoot. The
  // first step after each agreement absorbs the skew it leaves between ranks and is not timed.
  const auto start = Clock::now();
  sync_.barrier();
  for (std::uint64_t block = 8; block > 0;) {
    step(peers, bytes);
    const auto first = Clock::now();
    auto last = first;
    for (std::uint64_t i = 0; i < block; ++i) {
      step(peers, bytes);
      const auto now = Clock::now();
      times_.push_back(std::chrono::duration<double>(now - last).count());
      last = now;
    }
    std::uint64_t next = 0;
    const std::uint64_t left = iterations - std::min<std::uint64_t>(iterations, times_.size());
    if (t_.rank() == 0 && left > 0 &&
        std::chrono::duration<double>(last - start).count() < budgetSeconds) {
      const double pace = std::max(
          std::chrono::duration<double>(last - first).count() / static_cast<double>(block), 1e-7);
      const auto most = static_cast<double>(std::min(left, kMaxBlock));
      next = static_cast<std::uint64_t>(
          std::clamp(budgetSeconds / 8 / pace, std::min(8.0, most), most));
    }
    block = sync_.maxOf(next);
  }
  return lowerQuartile(times_);
}

double StepProbe::budget(double sampleSeconds) {
  return std::max(4 * sampleSeconds, 0.05);
}

StepTiming StepProbe::measure(std::span<const int> partners, std::size_t bytes, int repeat,
                              double sampleSeconds) {
  StepTiming timing;
  timing.bytes = bytes;
  timing.iterations = iterationsFor(partners, bytes, sampleSeconds);
  for (int k = 0; k < repeat; ++k)
    timing.samples.push_back(sample(partners, bytes, timing.iterations, budget(sampleSeconds)));
  timing.seconds = median(timing.samples);
  return timing;
}

namespace {

// fp32 sum calls of schedules `a` and `b` for `pb` through the executor over `transport`, back to
// back; per schedule the median over `repeat` samples (taken alternately) of a sample's
// lower-quartile call time on this rank.
// Calls of `bytes` by `a` and by `b`, back to back: per call the median over `repeat` samples
// (taken alternately) of a sample's lower-quartile call time on this rank.
std::pair<double, double> timeTwoCalls(Sync& sync, std::size_t bytes,
                                       const std::function<void()>& a,
                                       const std::function<void()>& b, int repeat,
                                       double sampleSeconds) {
  // Calls per sample from the bytes alone, so both ranks run the same number: about
  // sampleSeconds at 1 GB/s, within [16, 4000].
  const auto calls = static_cast<int>(std::clamp(
      sampleSeconds * 1e9 / static_cast<double>(std::max<std::size_t>(bytes, 1)), 16.0, 4000.0));
  const auto sample = [&](const std::function<void()>& call) {
    sync.barrier();
    for (int i = 0; i < 4; ++i) call();  // warm: pages, endpoints, the skew of the barrier
    std::vector<double> t;
    t.reserve(static_cast<std::size_t>(calls));
    auto last = Clock::now();
    for (int i = 0; i < calls; ++i) {
      call();
      const auto now = Clock::now();
      t.push_back(std::chrono::duration<double>(now - last).count());
      last = now;
    }
    return lowerQuartile(std::move(t));
  };
  std::vector<double> aT, bT;
  for (int k = 0; k < repeat; ++k) {
    aT.push_back(sample(a));
    bT.push_back(sample(b));
  }
  return {median(aT), median(bT)};
}

// fp32 sum calls of a schedule for `pb` through the executor over `transport`, on buffers of its
// own (input all ones).
class ExecutorCalls {
 public:
  ExecutorCalls(tl::Transport& transport, const algo::Problem& pb, std::uint64_t scratchElems)
      : pb_(pb),
        in_(pb.blocks.total(), 1.0f),
        out_(pb.blocks.total(), 0.0f),
        scratch_(scratchElems + 1),
        bind_{engine::Binding::contiguous(in_.data(), in_.size()),
              engine::Binding::contiguous(out_.data(), out_.size()),
              engine::Binding::contiguous(scratch_.data(), scratch_.size())},
        ex_(transport, sizeof(float), &sum_),
        counters_(transport.size()),
        rank_(transport.rank()) {}
  void operator()(const algo::RankSchedule& s) {
    constexpr std::uint32_t kRoundsComm = kComm + 1;  // apart from the steps' tags
    if (!ex_.start(s, bind_, counters_, kRoundsComm, ++seq_) || !ex_.run())
      throw std::runtime_error(fmt::format("rank {}: a {} of {} bytes failed: {}", rank_,
                                           name(pb_.coll), in_.size() * sizeof(float),
                                           ex_.error()));
  }

 private:
  algo::Problem pb_;
  std::vector<float> in_, out_, scratch_;
  engine::Bindings bind_;
  engine::Reduction sum_ = engine::Reduction::predefined(DataType::Float32, ReduceOp::Sum);
  engine::Executor ex_;
  engine::MessageCounters counters_;
  int rank_;
  std::uint32_t seq_ = 0;
};

// fp32 sum calls of schedules `a` and `b` for `pb` through the executor over `transport`.
std::pair<double, double> timeTwoSchedules(tl::Transport& transport, Sync& sync,
                                           const algo::Problem& pb, const algo::RankSchedule& a,
                                           const algo::RankSchedule& b, int repeat,
                                           double sampleSeconds) {
  ExecutorCalls call(transport, pb, std::max(algo::scratchCount(a), algo::scratchCount(b)));
  return timeTwoCalls(
      sync, pb.blocks.total() * sizeof(float), [&] { call(a); }, [&] { call(b); }, repeat,
      sampleSeconds);
}

algo::Problem twoRanks(Collective c, std::size_t bytes) {
  algo::Problem pb;
  pb.coll = c;
  pb.ranks = 2;
  pb.root = 0;
  pb.blocks = algo::Blocks::even(bytes / sizeof(float), 2);
  return pb;
}

}  // namespace

PairTiming timePair(tl::Transport& transport, Sync& sync, const SchedulePair& pair,
                    std::size_t bytes, int repeat, double sampleSeconds) {
  const auto r = static_cast<std::uint32_t>(transport.rank());
  const algo::Problem pb = twoRanks(pair.coll, bytes);
  const auto [a, b] =
      timeTwoSchedules(transport, sync, pb, pair.a(pb, r), pair.b(pb, r), repeat, sampleSeconds);
  return {bytes, a, b};
}

namespace {

// Calls of one two-rank schedule pair on the link's slots, compiled with the given paths.
class SlotCalls {
 public:
  SlotCalls(tl::ShmLink& link, const algo::Problem& pb, algo::RankGenerator gen, std::uint32_t rank,
            std::size_t window, std::size_t blockFrom, std::size_t streamFrom)
      : link_(link), pb_(pb), rank_(rank) {
    const algo::RankSchedule mine = gen(pb, rank), peer = gen(pb, 1 - rank);
    const algo::RankSchedule* all[2] = {rank == 0 ? &mine : &peer, rank == 0 ? &peer : &mine};
    const int linkRank[2] = {0, 1};
    std::string why;
    if (!engine::SlotProgram::compile(all, rank, linkRank, sizeof(float),
                                      engine::SlotProgram::payloadOf(link.slotBytes()), program_,
                                      why, window, blockFrom, streamFrom))
      throw std::runtime_error(fmt::format("rank {}: no slot program for a {} of {} elements: {}",
                                           rank, name(pb.coll), pb.blocks.total(), why));
    const std::uint64_t n = pb.blocks.total();
    in_.assign(n, 1.0f);
    out_.assign(n, 0.0f);
    scratch_.assign(algo::scratchCount(mine) + 1, 0.0f);
  }
  void operator()() {
    std::byte* const bufs[3] = {reinterpret_cast<std::byte*>(in_.data()),
                                reinterpret_cast<std::byte*>(out_.data()),
                                reinterpret_cast<std::byte*>(scratch_.data())};
    run_.begin(program_, link_, bufs, sizeof(float), reduces(pb_.coll) ? &sum_ : nullptr, ++seq_);
    engine::SlotRun::Result res = run_.spin(64);
    for (auto until = Clock::now() + std::chrono::seconds(60);
         res == engine::SlotRun::Result::Pending; res = run_.spin(64))
      if (Clock::now() > until)
        throw std::runtime_error(fmt::format("rank {}: no progress", rank_));
    if (res == engine::SlotRun::Result::Failed)
      throw std::runtime_error(fmt::format("rank {}: a {} of {} bytes on the slots failed: {}",
                                           rank_, name(pb_.coll),
                                           pb_.blocks.total() * sizeof(float), run_.error()));
  }

 private:
  tl::ShmLink& link_;
  algo::Problem pb_;
  std::uint32_t rank_;
  engine::SlotProgram program_;
  std::vector<float> in_, out_, scratch_;
  engine::Reduction sum_ = engine::Reduction::predefined(DataType::Float32, ReduceOp::Sum);
  engine::SlotRun run_;
  std::uint64_t seq_ = 0;
};

}  // namespace

StreamTiming timeStream(tl::Transport& transport, tl::ShmLink& link, Sync& sync, std::size_t bytes,
                        int repeat, double sampleSeconds) {
  const auto r = static_cast<std::uint32_t>(transport.rank());
  const algo::Problem pb = twoRanks(Collective::AllReduce, bytes);
  // Every post above a slot streams (stream_from_bytes 1), as the engine compiles it.
  SlotCalls slots(link, pb, algo::meshPushAllReduce, r, 1, 0, 1);
  const algo::RankSchedule mine = algo::meshPushAllReduce(pb, r);
  ExecutorCalls executor(transport, pb, algo::scratchCount(mine));
  const auto [viaExecutor, viaSlots] = timeTwoCalls(
      sync, bytes, [&] { executor(mine); }, [&] { slots(); }, repeat, sampleSeconds);
  return {bytes, viaExecutor, viaSlots};
}

CopyPathTiming timeCopyPaths(tl::ShmLink& link, Sync& sync, Collective coll, std::size_t postBytes,
                             int repeat, double sampleSeconds) {
  const auto r = static_cast<std::uint32_t>(link.rank());
  const bool gather = coll == Collective::AllGather;
  if (!gather && coll != Collective::Broadcast)
    throw std::invalid_argument(
        fmt::format("timeCopyPaths: {} is not AllGather or Broadcast", name(coll)));
  const std::size_t bytes = gather ? 2 * postBytes : postBytes;
  const algo::Problem pb = twoRanks(coll, bytes);
  const algo::RankGenerator gen =
      gather ? algo::RankGenerator(algo::meshAllGather) : algo::RankGenerator(algo::meshBroadcast);
  // As the engine compiles a copy: a window of the channel's slots, then streamed or a block.
  const std::size_t window = link.slotsPerChannel();
  SlotCalls streamed(link, pb, gen, r, window, 0, 1);
  SlotCalls block(link, pb, gen, r, window, 1, 0);
  const auto [s, b] = timeTwoCalls(
      sync, bytes, [&] { streamed(); }, [&] { block(); }, repeat, sampleSeconds);
  return {postBytes, s, b};
}

}  // namespace hccl::calib
