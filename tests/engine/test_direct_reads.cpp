// Receives read in place (executor.hpp): which ones the executor reads where they are, that the
// results do not change, and that reading in place never holds a peer's buffer while this rank
// waits for something else. The ranks are threads over the shared-memory link (shm_wrap.hpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "algorithms/generators.hpp"
#include "coll_hccl/engine/local_cluster.hpp"
#include "tests/engine/shm_wrap.hpp"
#include "ucx_tl/shm_transport.hpp"

namespace hccl::engine {
namespace {

using algo::Buf;

std::vector<std::byte> ints(std::uint64_t n, std::int32_t base) {
  std::vector<std::byte> b(n * 4);
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::int32_t>(base + static_cast<std::int32_t>(i));
    std::memcpy(b.data() + i * 4, &v, 4);
  }
  return b;
}

std::int32_t at(const std::vector<std::byte>& b, std::uint64_t i) {
  std::int32_t v;
  std::memcpy(&v, b.data() + i * 4, 4);
  return v;
}

LocalRunOptions overShm(std::size_t slotBytes) {
  tl::ShmOptions o = test::checkShmOptions();
  o.slotBytes = slotBytes;
  LocalRunOptions opt;
  opt.wrap = test::shmWrap(o);
  return opt;
}

// Rank r's input is r*1000 + i: the sum over p ranks is known in closed form.
std::vector<RankBuffers> inputs(std::uint32_t p, std::uint64_t n) {
  std::vector<RankBuffers> bufs(p);
  for (std::uint32_t r = 0; r < p; ++r) {
    bufs[r].input = ints(n, static_cast<std::int32_t>(r * 1000));
    bufs[r].output.assign(n * 4, std::byte{0x11});
  }
  return bufs;
}

void expectSums(const LocalRunResult& res, std::uint32_t p, std::uint64_t n) {
  ASSERT_TRUE(res.ok) << res.error;
  for (std::uint32_t r = 0; r < p; ++r)
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto want = static_cast<std::int32_t>(1000 * p * (p - 1) / 2 + p * i);
      ASSERT_EQ(at(res.outputs[r], i), want) << "rank " << r << " element " << i;
    }
}

// The one-shot mesh reduces every peer's whole vector from scratch: each of those receives is
// read in place, inline (small) or piecewise from the peer's buffer (large); the first fold of a
// rank whose own vector is not first reads both its operands from peers.
TEST(DirectReads, OneShotMeshReducesStraightFromThePeers) {
  // 12 B inline, 20 KB by CMA (slots of 256 B), 800 KB: several of the executor's 256 KiB
  // pieces and a partial last one.
  for (std::uint64_t n : {3u, 5000u, 200000u}) {
    const std::uint32_t p = 3;
    const algo::Schedule s =
        algo::buildSchedule(algo::meshOneShotAllReduce, algo::Problem::allReduce(p, n));
    const LocalRunResult res =
        runLocal(s, DataType::Int32, ReduceOp::Sum, inputs(p, n), overShm(256));
    expectSums(res, p, n);
    for (std::uint32_t r = 0; r < p; ++r) {
      EXPECT_EQ(res.stats[r].directReads + res.stats[r].directSettled, p - 1) << "rank " << r;
      EXPECT_GT(res.stats[r].directReads, 0u) << "rank " << r << " read nothing in place";
    }
  }
}

// Without the link nothing is read in place, and the result is the same.
TEST(DirectReads, NoneOverTaggedMessages) {
  const std::uint32_t p = 3;
  const std::uint64_t n = 100;
  const algo::Schedule s =
      algo::buildSchedule(algo::meshOneShotAllReduce, algo::Problem::allReduce(p, n));
  LocalRunOptions tagged;
  tagged.wrap = [](tl::Transport&, const AllGatherFn&) { return std::shared_ptr<tl::Transport>(); };
  const LocalRunResult res = runLocal(s, DataType::Int32, ReduceOp::Sum, inputs(p, n), tagged);
  expectSums(res, p, n);
  for (const ExecStats& st : res.stats) EXPECT_EQ(st.directReads + st.directSettled, 0u);
}

// Two ranks: out = in + peer's in, received into scratch. In `variant` 1 a later step reads the
// received scratch again, so it must really be written: it is not read in place. In variant 0 it
// is dead after the reduction.
algo::Schedule exchangeAndReduce(std::uint64_t n, int variant) {
  algo::Schedule s;
  s.problem = algo::Problem::allReduce(2, n);
  for (std::uint32_t r = 0; r < 2; ++r) {
    algo::RankSchedule rs;
    algo::Step& x = rs.newStep();
    algo::send(x, 1 - r, algo::in(0, n));
    algo::recv(x, 1 - r, algo::scratch(0, n));
    algo::reduce(x, algo::out(0, n), r == 0 ? algo::in(0, n) : algo::scratch(0, n),
                 r == 0 ? algo::scratch(0, n) : algo::in(0, n));
    if (variant == 1) algo::copy(rs.newStep(), algo::scratch(n, n), algo::scratch(0, n));
    s.ranks.push_back(std::move(rs));
  }
  return s;
}

TEST(DirectReads, OnlyWhatNothingReadsLater) {
  for (std::uint64_t n : {10u, 4000u}) {
    const LocalRunResult fused = runLocal(exchangeAndReduce(n, 0), DataType::Int32, ReduceOp::Sum,
                                          inputs(2, n), overShm(256));
    expectSums(fused, 2, n);
    for (const ExecStats& st : fused.stats) EXPECT_EQ(st.directReads, 1u);
    const LocalRunResult kept = runLocal(exchangeAndReduce(n, 1), DataType::Int32, ReduceOp::Sum,
                                         inputs(2, n), overShm(256));
    expectSums(kept, 2, n);
    for (const ExecStats& st : kept.stats) EXPECT_EQ(st.directReads + st.directSettled, 0u);
  }
}

// Each rank's reduction writes the very buffer its own block send reads, so it cannot run
// before the peer has read that block, and the peer's reduction cannot either: holding the
// peer's block until then would deadlock both. The executor copies it in after all instead.
TEST(DirectReads, AnOpThatMustWaitDoesNotHoldThePeersBuffer) {
  const std::uint64_t n = 4000;  // 16 KB: blocks, not slots
  algo::Schedule s;
  s.problem = algo::Problem::allReduce(2, n, /*inPlace=*/true);
  for (std::uint32_t r = 0; r < 2; ++r) {
    algo::RankSchedule rs;
    algo::Step& x = rs.newStep();
    algo::send(x, 1 - r, algo::out(0, n));
    algo::recv(x, 1 - r, algo::scratch(0, n));
    algo::reduce(x, algo::out(0, n), r == 0 ? algo::out(0, n) : algo::scratch(0, n),
                 r == 0 ? algo::scratch(0, n) : algo::out(0, n));
    s.ranks.push_back(std::move(rs));
  }
  std::vector<RankBuffers> bufs(2);
  for (std::uint32_t r = 0; r < 2; ++r)
    bufs[r].output = ints(n, static_cast<std::int32_t>(r * 1000));
  LocalRunOptions opt = overShm(256);
  opt.timeout = std::chrono::milliseconds(20000);
  const LocalRunResult res = runLocal(s, DataType::Int32, ReduceOp::Sum, std::move(bufs), opt);
  expectSums(res, 2, n);
  // The first rank whose message arrives copies it in; the other may find its send done by then.
  EXPECT_GE(res.stats[0].directSettled + res.stats[1].directSettled, 1u);
  for (const ExecStats& st : res.stats) EXPECT_EQ(st.directReads + st.directSettled, 1u);
}

// What each reducing rank saw of its peer's message while it reduced: ShmLink::held on the
// channel from the peer (1: the message is still held, its sender still waiting; 0: released),
// at every call of the reduction, in order. The ranks' threads record their own.
struct HeldLog {
  std::mutex m;
  std::map<int, std::vector<std::size_t>> byRank;
};
thread_local tl::ShmTransport* rankTransport = nullptr;

void sumLogged(const void* in, void* inout, std::size_t count, void* ctx) {
  auto* log = static_cast<HeldLog*>(ctx);
  tl::ShmTransport& t = *rankTransport;
  const int peer = 1 - t.rank();
  {
    const std::lock_guard<std::mutex> lock(log->m);
    log->byRank[t.rank()].push_back(t.link().held(peer, false));
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::int32_t a, b;
    std::memcpy(&a, static_cast<const std::byte*>(in) + i * 4, 4);
    std::memcpy(&b, static_cast<std::byte*>(inout) + i * 4, 4);
    b += a;
    std::memcpy(static_cast<std::byte*>(inout) + i * 4, &b, 4);
  }
}

LocalRunResult runLogged(const algo::Schedule& s, std::vector<RankBuffers> bufs, HeldLog& log) {
  LocalRunOptions opt = overShm(256);
  const TransportWrap shm = opt.wrap;
  opt.wrap = [shm](tl::Transport& ep, const AllGatherFn& allGather) {
    std::shared_ptr<tl::Transport> t = shm(ep, allGather);
    rankTransport = dynamic_cast<tl::ShmTransport*>(t.get());
    return t;
  };
  return runLocal(s, Reduction::user(sumLogged, &log, 4, true), std::move(bufs), opt);
}

// A sender whose message a peer reads in place is released once the peer has read the last
// piece, not once it has also reduced it (OSU averages both ranks' times, and the sender of a
// Reduce has nothing else to do). Ring Reduce at p = 2: the root only receives, so one piece
// (200 KB, within the executor's 256 KiB) is read in place and released before its reduction,
// and several (800 KB) are received whole, released before any reduction. Where the receiving
// rank sends too (the exchange), several pieces are read in place, the message released after
// the last one is read: the first reduction call still sees it held, the last one does not.
TEST(DirectReads, TheSenderIsReleasedBeforeTheLastReduction) {
  for (std::uint64_t n : {50000u, 200001u}) {
    SCOPED_TRACE(fmt::format("ring reduce, n {}", n));
    HeldLog log;
    const algo::Schedule s = algo::buildSchedule(algo::ringReduce, algo::Problem::reduce(2, n, 0));
    std::vector<RankBuffers> bufs = inputs(2, n);
    bufs[1].output.clear();  // a non-root has no output
    const LocalRunResult res = runLogged(s, std::move(bufs), log);
    ASSERT_TRUE(res.ok) << res.error;
    for (std::uint64_t i = 0; i < n; ++i)
      ASSERT_EQ(at(res.outputs[0], i), static_cast<std::int32_t>(1000 + 2 * i)) << "element " << i;
    EXPECT_EQ(res.stats[0].directReads, n * 4 <= 256 * 1024 ? 1u : 0u);
    ASSERT_EQ(log.byRank.count(1), 0u) << "the non-root reduced";
    const std::vector<std::size_t>& held = log.byRank[0];
    ASSERT_FALSE(held.empty());
    for (std::size_t k = 0; k < held.size(); ++k)
      EXPECT_EQ(held[k], 0u) << "reduction call " << k << " of " << held.size();
  }
  const std::uint64_t n = 200001;
  HeldLog log;
  const LocalRunResult res = runLogged(exchangeAndReduce(n, 0), inputs(2, n), log);
  expectSums(res, 2, n);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(fmt::format("exchange, rank {}", r));
    EXPECT_EQ(res.stats[static_cast<std::size_t>(r)].directReads, 1u);
    const std::vector<std::size_t>& held = log.byRank[r];
    ASSERT_GE(held.size(), 2u);
    EXPECT_EQ(held.front(), 1u);
    EXPECT_EQ(held.back(), 0u);
  }
}

// Mesh AllReduce pushed (mesh_push.cpp) over the link. Out of place every peer exposes its
// Output block during the first step, and the op reducing a rank's block writes it to one peer
// piece by piece as it goes (the last op pairs with one push: at p = 3 the other is written whole
// in its own step). In place the schedule is Mesh's, nothing pushed, and so is a message small
// enough for a slot. The results are Mesh's in every case.
TEST(Pushes, MeshPushWritesTheReducedBlockIntoThePeers) {
  for (std::uint32_t p : {2u, 3u})
    for (std::uint64_t n : {3u, 5000u, 200001u})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(fmt::format("p {} n {} in place {}", p, n, inPlace));
        const algo::Schedule s =
            algo::buildSchedule(algo::meshPushAllReduce, algo::Problem::allReduce(p, n, inPlace));
        std::vector<RankBuffers> bufs = inputs(p, n);
        if (inPlace)
          for (RankBuffers& b : bufs) b.output = std::exchange(b.input, {});
        const LocalRunResult res = runLocal(s, DataType::Int32, ReduceOp::Sum, bufs, overShm(256));
        expectSums(res, p, n);
        if (!res.ok) return;
        // The largest block, n / p rounded up, in bytes: pushed when above a slot's 232.
        const bool pushed = (n + p - 1) / p * 4 > 232;
        for (std::uint32_t r = 0; r < p; ++r) {
          const ExecStats& st = res.stats[r];
          EXPECT_EQ(st.pushesStreamed + st.pushesWhole, pushed && !inPlace ? p - 1 : 0)
              << "rank " << r;
          EXPECT_EQ(st.pushesStreamed, pushed && !inPlace ? 1u : 0u) << "rank " << r;
        }
      }
}

// Without the link nothing is pushed and the result is the same.
TEST(Pushes, NoneOverTaggedMessages) {
  const std::uint32_t p = 2;
  const std::uint64_t n = 5000;
  const algo::Schedule s =
      algo::buildSchedule(algo::meshPushAllReduce, algo::Problem::allReduce(p, n));
  LocalRunOptions tagged;
  tagged.wrap = [](tl::Transport&, const AllGatherFn&) { return std::shared_ptr<tl::Transport>(); };
  const LocalRunResult res = runLocal(s, DataType::Int32, ReduceOp::Sum, inputs(p, n), tagged);
  expectSums(res, p, n);
  for (const ExecStats& st : res.stats) EXPECT_EQ(st.pushesStreamed + st.pushesWhole, 0u);
}

}  // namespace
}  // namespace hccl::engine
