// The executor on hand-built schedules: semantics of a step, bindings (contiguous and piecewise),
// tags, resumable progress, and every error path, which must end in a message, never a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "coll_hccl/engine/executor.hpp"
#include "ucx_tl/inproc.hpp"

// Counts heap allocations, to check the steady state allocates nothing.
#include "tests/alloc_counter.hpp"

namespace hccl::engine {
namespace {

using namespace std::chrono_literals;
using algo::in;
using algo::out;
using algo::scratch;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A transport that completes every transfer at once without moving data, and records what was
// posted. Storage is reserved up front so that it never allocates while recording.
class RecordingTransport final : public tl::Transport {
 public:
  struct Post {
    bool send;
    int peer;
    tl::Tag tag;
    std::size_t bytes;
    std::size_t pieces;
  };
  RecordingTransport(int rank, int size) : rank_(rank), size_(size) { log.reserve(4096); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  tl::LinkClass linkClass(int peer) const override {
    return peer == rank_ ? tl::LinkClass::Self : tl::LinkClass::Hccs;
  }
  void send(int peer, std::span<const tl::IoVec> iov, tl::Tag tag, tl::Completion* c) override {
    record(true, peer, iov, tag, c);
  }
  void recv(int peer, std::span<const tl::IoVec> iov, tl::Tag tag, tl::Completion* c) override {
    record(false, peer, iov, tag, c);
  }
  int progress() override { return 0; }
  void cancel(tl::Completion*) override {}

  std::vector<Post> log;
  bool throwOnSend = false;

 private:
  void record(bool send, int peer, std::span<const tl::IoVec> iov, tl::Tag tag, tl::Completion* c) {
    if (send && throwOnSend) throw std::runtime_error("transport exploded");
    std::size_t bytes = 0;
    for (const tl::IoVec& v : iov) bytes += v.length;
    log.push_back({send, peer, tag, bytes, iov.size()});
    c->bytes = bytes;
    c->state = tl::Completion::State::Done;
  }
  int rank_, size_;
};

// Runs two executors on one thread, alternating progress() calls; bounded.
bool driveBoth(Executor& a, Executor& b, int maxRounds = 100000) {
  for (int i = 0; i < maxRounds; ++i) {
    const bool da = a.progress();
    const bool db = b.progress();
    if (da && db) return true;
  }
  return false;
}

// ---- a 2-rank exchange and reduce ---------------------------------------------------------------

// Both ranks swap inputs and reduce with the lower rank on the left.
algo::RankSchedule exchangeReduce(std::uint32_t rank, std::uint64_t n) {
  algo::RankSchedule s;
  algo::Step& st = s.newStep();
  algo::send(st, 1 - rank, in(0, n));
  algo::recv(st, 1 - rank, scratch(0, n));
  if (rank == 0)
    algo::reduce(st, out(0, n), in(0, n), scratch(0, n));
  else
    algo::reduce(st, out(0, n), scratch(0, n), in(0, n));
  return s;
}

TEST(Executor, TwoRankExchangeAndReduce) {
  constexpr std::uint64_t n = 37;
  tl::InProcFabric fabric(2, tl::InProcOptions{5s});
  Reduction red0 = Reduction::predefined(DataType::Int32, ReduceOp::Sum), red1 = red0;
  std::vector<std::int32_t> in0(n), in1(n), out0(n), out1(n), tmp0(n), tmp1(n);
  std::iota(in0.begin(), in0.end(), 1);
  std::iota(in1.begin(), in1.end(), 1000);
  Bindings b0{Binding::contiguous(in0.data(), n), Binding::contiguous(out0.data(), n),
              Binding::contiguous(tmp0.data(), n)};
  Bindings b1{Binding::contiguous(in1.data(), n), Binding::contiguous(out1.data(), n),
              Binding::contiguous(tmp1.data(), n)};
  const algo::RankSchedule s0 = exchangeReduce(0, n), s1 = exchangeReduce(1, n);
  Executor e0(fabric.endpoint(0), 4, &red0), e1(fabric.endpoint(1), 4, &red1);
  MessageCounters c0(2), c1(2);
  ASSERT_TRUE(e0.start(s0, b0, c0, 1, 1)) << e0.error();
  ASSERT_TRUE(e1.start(s1, b1, c1, 1, 1)) << e1.error();
  ASSERT_TRUE(driveBoth(e0, e1));
  ASSERT_TRUE(e0.done()) << e0.error();
  ASSERT_TRUE(e1.done()) << e1.error();
  for (std::uint64_t i = 0; i < n; ++i) {
    EXPECT_EQ(out0[i], in0[i] + in1[i]);
    EXPECT_EQ(out1[i], in0[i] + in1[i]);
  }
  EXPECT_EQ(e0.stats().steps, 1u);
  EXPECT_EQ(e0.stats().bytesSent, n * 4);
  EXPECT_EQ(e0.stats().bytesReceived, n * 4);
  EXPECT_EQ(e0.stats().elementsReduced, n);
}

// progress() never blocks: rank 0 alone cannot finish; it does once rank 1 joins.
TEST(Executor, ResumableProgress) {
  constexpr std::uint64_t n = 5;
  tl::InProcFabric fabric(2);
  Reduction red0 = Reduction::predefined(DataType::Int64, ReduceOp::Max), red1 = red0;
  std::vector<std::int64_t> in0 = {1, 9, 3, 7, 5}, in1 = {8, 2, 6, 4, 10}, out0(n), out1(n),
                            tmp0(n), tmp1(n);
  Bindings b0{Binding::contiguous(in0.data(), n), Binding::contiguous(out0.data(), n),
              Binding::contiguous(tmp0.data(), n)};
  Bindings b1{Binding::contiguous(in1.data(), n), Binding::contiguous(out1.data(), n),
              Binding::contiguous(tmp1.data(), n)};
  const algo::RankSchedule s0 = exchangeReduce(0, n), s1 = exchangeReduce(1, n);
  Executor e0(fabric.endpoint(0), 8, &red0), e1(fabric.endpoint(1), 8, &red1);
  MessageCounters c0(2), c1(2);
  ASSERT_TRUE(e0.start(s0, b0, c0, 3, 4));
  for (int i = 0; i < 100; ++i) ASSERT_FALSE(e0.progress());
  EXPECT_EQ(e0.state(), Executor::State::Running);
  ASSERT_TRUE(e1.start(s1, b1, c1, 3, 4));
  ASSERT_TRUE(driveBoth(e0, e1));
  EXPECT_TRUE(e0.done() && e1.done()) << e0.error() << e1.error();
  EXPECT_EQ(out0, (std::vector<std::int64_t>{8, 9, 6, 7, 10}));
  EXPECT_EQ(out1, out0);
  EXPECT_TRUE(e0.progress()) << "progress() after the end keeps saying done";
}

// Ops that touch none of the step's transfer slices run while the transfers are in flight; the
// first op that reads a received slice, and every op after it, wait for the data.
TEST(Executor, IndependentLeadingOpsRunBeforeTheTransfersComplete) {
  constexpr std::uint64_t n = 4;
  tl::InProcFabric fabric(2);
  Reduction red = Reduction::predefined(DataType::Int32, ReduceOp::Sum);
  std::vector<std::int32_t> in0 = {1, 2, 3, 4}, out0(3 * n, -1), tmp0(n, 0);
  Bindings b0{Binding::contiguous(in0.data(), n), Binding::contiguous(out0.data(), 3 * n),
              Binding::contiguous(tmp0.data(), n)};
  algo::RankSchedule s;
  algo::Step& st = s.newStep();
  algo::send(st, 1, in(0, n));
  algo::recv(st, 1, out(n, n));
  algo::copy(st, out(0, n), in(0, n));       // independent: runs at once
  algo::copy(st, out(2 * n, n), out(n, n));  // reads the received block: waits
  algo::copy(st, scratch(0, n), in(0, n));   // independent, but after a dependent op: waits
  Executor e0(fabric.endpoint(0), 4, &red);
  MessageCounters c0(2);
  ASSERT_TRUE(e0.start(s, b0, c0, 1, 1)) << e0.error();
  ASSERT_FALSE(e0.progress());  // rank 1 has sent nothing yet
  EXPECT_EQ(std::vector<std::int32_t>(out0.begin(), out0.begin() + n), in0);
  EXPECT_EQ(out0[2 * n], -1) << "an op that reads a pending receive ran early";
  EXPECT_EQ(tmp0, std::vector<std::int32_t>(n, 0)) << "ops were reordered past a dependent one";

  std::vector<std::int32_t> in1 = {10, 20, 30, 40}, out1(3 * n), tmp1(n);
  Bindings b1{Binding::contiguous(in1.data(), n), Binding::contiguous(out1.data(), 3 * n),
              Binding::contiguous(tmp1.data(), n)};
  algo::RankSchedule s1;
  algo::Step& st1 = s1.newStep();
  algo::send(st1, 0, in(0, n));
  algo::recv(st1, 0, out(n, n));
  Executor e1(fabric.endpoint(1), 4, &red);
  MessageCounters c1(2);
  ASSERT_TRUE(e1.start(s1, b1, c1, 1, 1)) << e1.error();
  ASSERT_TRUE(driveBoth(e0, e1));
  ASSERT_TRUE(e0.done()) << e0.error();
  EXPECT_EQ(std::vector<std::int32_t>(out0.begin() + 2 * n, out0.end()), in1);
  EXPECT_EQ(tmp0, in0);
}

// ---- tags
// ----------------------------------------------------------------------------------------

TEST(Executor, MessageIndexPerPeerAndDirectionContinuesAcrossRuns) {
  RecordingTransport t(0, 3);
  algo::RankSchedule s;
  {
    algo::Step& a = s.newStep();
    algo::send(a, 1, out(0, 1));
    algo::send(a, 2, out(1, 1));
    algo::recv(a, 1, out(2, 1));
    algo::Step& b = s.newStep();
    algo::send(b, 1, out(3, 1));
    algo::recv(b, 1, out(4, 1));
    algo::recv(b, 1, out(5, 1));
  }
  std::vector<std::int32_t> buf(6);
  Bindings bind;
  bind.output = Binding::contiguous(buf.data(), 6);
  Executor ex(t, 4);
  MessageCounters counters(3);
  ASSERT_TRUE(ex.start(s, bind, counters, 11, 22));
  ASSERT_TRUE(ex.run());
  ASSERT_TRUE(ex.start(s, bind, counters, 11, 22));  // the next chunk of the same collective
  ASSERT_TRUE(ex.run());
  struct Want {
    bool send;
    int peer;
    std::uint32_t msg;
  };
  const std::vector<Want> want = {{true, 1, 0},  {true, 2, 0},  {false, 1, 0}, {true, 1, 1},
                                  {false, 1, 1}, {false, 1, 2}, {true, 1, 2},  {true, 2, 1},
                                  {false, 1, 3}, {true, 1, 3},  {false, 1, 4}, {false, 1, 5}};
  ASSERT_EQ(t.log.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(t.log[i].send, want[i].send) << i;
    EXPECT_EQ(t.log[i].peer, want[i].peer) << i;
    EXPECT_EQ(t.log[i].tag.msg, want[i].msg) << i;
    EXPECT_EQ(t.log[i].tag.comm, 11u);
    EXPECT_EQ(t.log[i].tag.seq, 22u);
  }
}

// ---- bindings
// ------------------------------------------------------------------------------------

TEST(Binding, FindDescribeAndValidation) {
  std::vector<int> mem(20);
  const Segment segs[] = {{0, mem.data(), 4}, {4, mem.data() + 10, 2}, {8, mem.data() + 6, 3}};
  const Binding b = Binding::pieces(segs);
  EXPECT_EQ(b.find(0), 0u);
  EXPECT_EQ(b.find(5), 1u);
  EXPECT_EQ(b.find(6), 3u) << "gap";
  EXPECT_EQ(b.find(10), 2u);
  EXPECT_EQ(b.find(11), 3u);
  EXPECT_EQ(b.end(), 11u);
  EXPECT_EQ(b.describe(), "[0,6) [8,11)");
  const Segment overlapping[] = {{0, mem.data(), 4}, {3, mem.data() + 10, 2}};
  EXPECT_THROW(Binding::pieces(overlapping), std::invalid_argument);
  const Segment null[] = {{0, nullptr, 4}};
  EXPECT_THROW(Binding::pieces(null), std::invalid_argument);
  const Binding s = Binding::strided(mem.data(), sizeof(int), 2, 5, 3);
  ASSERT_EQ(s.segments().size(), 3u);
  EXPECT_EQ(s.segments()[2].start, 4u);
  EXPECT_EQ(s.segments()[2].data, mem.data() + 10);
  EXPECT_EQ(Binding().describe(), "nothing");
}

// The exchange-and-reduce with every buffer scattered over random pieces of a shared arena, in
// random memory order: transfers become multi-entry iovs, local ops split at piece boundaries.
TEST(Executor, PiecewiseBindings) {
  constexpr std::uint64_t n = 101;
  std::mt19937 rng(7);
  // Each buffer is cut into pieces of 1..9 elements; all pieces of a rank are laid out in an
  // arena in shuffled order, one poison element apart, and the poison must survive.
  struct RankMem {
    std::vector<std::int32_t> arena;
    Bindings bind;
  };
  auto scatter = [&](RankMem& m, const std::vector<std::int32_t>& inVals) {
    struct Piece {
      int buf;
      std::uint64_t start, len;
      std::size_t at = 0;
    };
    std::vector<Piece> pieces;
    for (int buf = 0; buf < 3; ++buf)
      for (std::uint64_t pos = 0; pos < n;) {
        const std::uint64_t len = std::min<std::uint64_t>(n - pos, 1 + rng() % 9);
        pieces.push_back({buf, pos, len});
        pos += len;
      }
    std::vector<std::size_t> order(pieces.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    std::size_t at = 1;
    for (std::size_t k : order) {
      pieces[k].at = at;
      at += pieces[k].len + 1;
    }
    m.arena.assign(at, -7);
    Binding* binds[] = {&m.bind.input, &m.bind.output, &m.bind.scratch};
    for (const Piece& pc : pieces) {  // in logical order per buffer, as add() requires
      std::int32_t* where = m.arena.data() + pc.at;
      if (pc.buf == 0) std::memcpy(where, inVals.data() + pc.start, pc.len * 4);
      binds[pc.buf]->add({pc.start, where, pc.len});
    }
  };
  std::vector<std::int32_t> in0(n), in1(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    in0[i] = static_cast<std::int32_t>(rng() % 1000);
    in1[i] = static_cast<std::int32_t>(rng() % 1000);
  }
  RankMem m0, m1;
  scatter(m0, in0);
  scatter(m1, in1);
  const std::vector<std::int32_t> arena0Before = m0.arena;

  tl::InProcFabric fabric(2, tl::InProcOptions{5s});
  Reduction red0 = Reduction::predefined(DataType::Int32, ReduceOp::Sum), red1 = red0;
  const algo::RankSchedule s0 = exchangeReduce(0, n), s1 = exchangeReduce(1, n);
  Executor e0(fabric.endpoint(0), 4, &red0), e1(fabric.endpoint(1), 4, &red1);
  MessageCounters c0(2), c1(2);
  ASSERT_TRUE(e0.start(s0, m0.bind, c0, 1, 1)) << e0.error();
  ASSERT_TRUE(e1.start(s1, m1.bind, c1, 1, 1)) << e1.error();
  ASSERT_TRUE(driveBoth(e0, e1));
  ASSERT_TRUE(e0.done() && e1.done()) << e0.error() << e1.error();

  auto gather = [&](const Binding& b) {
    std::vector<std::int32_t> v(n);
    for (const Segment& s : b.segments()) std::memcpy(v.data() + s.start, s.data, s.count * 4);
    return v;
  };
  const std::vector<std::int32_t> got0 = gather(m0.bind.output), got1 = gather(m1.bind.output);
  for (std::uint64_t i = 0; i < n; ++i) {
    EXPECT_EQ(got0[i], in0[i] + in1[i]) << i;
    EXPECT_EQ(got1[i], in0[i] + in1[i]) << i;
  }
  // Gaps between pieces are untouched.
  std::vector<bool> bound(m0.arena.size(), false);
  for (const Binding* b : {&m0.bind.input, &m0.bind.output, &m0.bind.scratch})
    for (const Segment& s : b->segments())
      for (std::uint64_t k = 0; k < s.count; ++k)
        bound[static_cast<std::size_t>(static_cast<std::int32_t*>(s.data) - m0.arena.data()) + k] =
            true;
  for (std::size_t i = 0; i < bound.size(); ++i) {
    if (!bound[i]) {
      EXPECT_EQ(m0.arena[i], arena0Before[i]) << "gap at " << i << " written";
    }
  }
}

// A strided column: Output bound to every other block of 3 elements of a larger buffer.
TEST(Executor, StridedOutputLeavesTheOtherColumnAlone) {
  RecordingTransport t(0, 1);
  std::vector<std::int16_t> input = {1, 2, 3, 4, 5, 6}, wide(12, -1);
  algo::RankSchedule s;
  algo::copy(s.newStep(), out(0, 6), in(0, 6));
  Bindings bind;
  bind.input = Binding::contiguous(input.data(), 6);
  bind.output = Binding::strided(wide.data(), 2, 3, 6, 2);
  Executor ex(t, 2);
  MessageCounters c(1);
  ASSERT_TRUE(ex.start(s, bind, c, 1, 1));
  ASSERT_TRUE(ex.run()) << ex.error();
  EXPECT_EQ(wide, (std::vector<std::int16_t>{1, 2, 3, -1, -1, -1, 4, 5, 6, -1, -1, -1}));
}

// ---- the steady state does not allocate
// -----------------------------------------------------------

TEST(Executor, SecondRunOfAScheduleDoesNotAllocate) {
  RecordingTransport t(0, 2);
  algo::RankSchedule s;
  for (std::uint64_t k = 0; k < 8; ++k) {
    algo::Step& st = s.newStep();
    algo::send(st, 1, out(k * 4, 4));
    algo::send(st, 0, out(0, 2));
    algo::recv(st, 1, scratch(0, 4));
    algo::recv(st, 0, scratch(4, 2));
    algo::reduce(st, out(k * 4, 4), scratch(0, 4), out(k * 4, 4));
    algo::copy(st, scratch(6, 4), out(k * 4, 4));
  }
  std::vector<float> o(32, 1.0f), tmp(10, 0.5f);
  Bindings bind;
  const Segment pieces[] = {{0, o.data(), 5}, {5, o.data() + 5, 20}, {25, o.data() + 25, 7}};
  bind.output = Binding::pieces(pieces);
  bind.scratch = Binding::contiguous(tmp.data(), 10);
  Reduction red = Reduction::predefined(DataType::Float32, ReduceOp::Sum);
  Executor ex(t, 4, &red);
  MessageCounters c(2);
  ASSERT_TRUE(ex.start(s, bind, c, 1, 1));
  ASSERT_TRUE(ex.run()) << ex.error();
  const std::uint64_t before = hccl::test::gAllocCalls.load();
  const bool started = ex.start(s, bind, c, 1, 2);
  const bool ran = ex.run();
  const std::uint64_t allocs = hccl::test::gAllocCalls.load() - before;
  ASSERT_TRUE(started && ran) << ex.error();
  EXPECT_EQ(allocs, 0u);
  EXPECT_EQ(ex.stats().steps, 8u);
}

// ---- errors ------------------------------------------------------------------------------------

struct OneRank {
  RecordingTransport t{0, 2};
  std::vector<std::int32_t> i = std::vector<std::int32_t>(8, 1);
  std::vector<std::int32_t> o = std::vector<std::int32_t>(8, 0);
  std::vector<std::int32_t> tmp = std::vector<std::int32_t>(4, 0);
  Bindings bind{Binding::contiguous(i.data(), 8), Binding::contiguous(o.data(), 8),
                Binding::contiguous(tmp.data(), 4)};
  Reduction red = Reduction::predefined(DataType::Int32, ReduceOp::Sum);
  MessageCounters counters{2};

  // Starts and runs; returns the error ("" on success).
  std::string run(const algo::RankSchedule& s, bool withReduction = true) {
    Executor ex(t, 4, withReduction ? &red : nullptr);
    if (ex.start(s, bind, counters, 1, 1)) ex.run();
    EXPECT_TRUE(ex.done() || ex.failed());
    return ex.error();
  }
};

TEST(ExecutorErrors, SliceOutsideTheBindingNamesRankStepTransferAndRange) {
  OneRank r;
  algo::RankSchedule s;
  s.newStep();
  algo::recv(s.newStep(), 1, out(6, 4));
  const std::string e = r.run(s);
  EXPECT_TRUE(contains(e, "rank 0 step 1 transfer 0 (recv out[6+4] <- 1)")) << e;
  EXPECT_TRUE(contains(e, "element 8 of out is not bound (out is bound at [0,8))")) << e;
  EXPECT_TRUE(r.t.log.empty()) << "nothing is posted for a run that cannot complete";
}

TEST(ExecutorErrors, LocalOpOutsideTheBinding) {
  OneRank r;
  algo::RankSchedule s;
  algo::reduce(s.newStep(), out(0, 4), in(0, 4), scratch(2, 4));
  const std::string e = r.run(s);
  EXPECT_TRUE(contains(e, "rank 0 step 0 op 0 (reduce out[0+4] = in[0+4] (+) tmp[2+4])")) << e;
  EXPECT_TRUE(contains(e, "element 4 of tmp is not bound")) << e;
}

TEST(ExecutorErrors, ScheduleBugs) {
  OneRank r;
  auto one = [](auto build) {
    algo::RankSchedule s;
    build(s.newStep());
    return s;
  };
  EXPECT_TRUE(contains(r.run(one([](algo::Step& st) { algo::copy(st, out(0, 4), out(2, 4)); })),
                       "copy between overlapping slices"));
  EXPECT_TRUE(
      contains(r.run(one([](algo::Step& st) { algo::reduce(st, out(0, 4), out(1, 4), in(0, 4)); })),
               "destination partially overlaps the left operand"));
  EXPECT_TRUE(
      contains(r.run(one([](algo::Step& st) { algo::reduce(st, out(1, 4), in(0, 4), out(0, 4)); })),
               "destination partially overlaps the right operand"));
  EXPECT_TRUE(contains(r.run(one([](algo::Step& st) { algo::recv(st, 1, in(0, 4)); })),
                       "receives into the read-only Input buffer"));
  EXPECT_TRUE(contains(r.run(one([](algo::Step& st) { algo::copy(st, in(0, 4), out(0, 4)); })),
                       "writes the read-only Input buffer"));
  EXPECT_TRUE(contains(r.run(one([](algo::Step& st) { algo::send(st, 2, out(0, 4)); })),
                       "peer 2 is not a rank of this group of 2"));
  EXPECT_TRUE(contains(r.run(one([](algo::Step& st) { algo::copy(st, out(0, 4), in(0, 3)); })),
                       "source has 3 elements, destination 4"));
  EXPECT_TRUE(contains(
      r.run(one([](algo::Step& st) { algo::reduce(st, out(0, 4), in(0, 4), scratch(0, 4)); }),
            false),
      "a Reduce op, but the run has no reduction"));
  // Exact aliasing is legal: dst == a and dst == b.
  EXPECT_EQ(r.run(one([](algo::Step& st) { algo::reduce(st, out(0, 4), out(0, 4), in(0, 4)); })),
            "");
  EXPECT_EQ(r.run(one([](algo::Step& st) { algo::reduce(st, out(4, 4), in(0, 4), out(4, 4)); })),
            "");
}

TEST(ExecutorErrors, BindingsThatOverlapInMemory) {
  OneRank r;
  // Scratch bound onto Output's memory shifted by one element: logically disjoint slices, yet the
  // copy would overlap in memory.
  r.bind.scratch = Binding::contiguous(r.o.data() + 1, 4);
  algo::RankSchedule s;
  algo::copy(s.newStep(), out(0, 4), scratch(0, 4));
  const std::string e = r.run(s);
  EXPECT_TRUE(contains(e, "rank 0 step 0 op 0")) << e;
  EXPECT_TRUE(contains(e, "overlapping memory")) << e;
}

TEST(ExecutorErrors, TransportExceptionsBecomeTheFailedState) {
  OneRank r;
  r.t.throwOnSend = true;
  algo::RankSchedule s;
  algo::Step& st = s.newStep();
  algo::recv(st, 1, out(0, 4));
  algo::send(st, 1, in(0, 4));
  Executor ex(r.t, 4, &r.red);
  ASSERT_TRUE(ex.start(s, r.bind, r.counters, 1, 1));
  EXPECT_TRUE(ex.progress());
  EXPECT_TRUE(ex.failed());
  EXPECT_TRUE(contains(ex.error(), "rank 0 step 0: transport exploded")) << ex.error();
}

TEST(ExecutorErrors, CountersOfTheWrongSize) {
  OneRank r;
  MessageCounters wrong(3);
  Executor ex(r.t, 4);
  EXPECT_FALSE(ex.start(algo::RankSchedule{}, r.bind, wrong, 1, 1));
  EXPECT_TRUE(contains(ex.error(), "message counters sized for 3 ranks, the transport has 2"))
      << ex.error();
}

// Sizes disagree between the two sides: both ranks fail, naming step, transfer and lengths.
TEST(ExecutorErrors, MismatchedSizesFailBothRanks) {
  tl::InProcFabric fabric(2, tl::InProcOptions{5s});
  std::vector<std::int32_t> a(8, 1), b(8, 0);
  Bindings b0, b1;
  b0.output = Binding::contiguous(a.data(), 8);
  b1.output = Binding::contiguous(b.data(), 8);
  algo::RankSchedule s0, s1;
  algo::send(s0.newStep(), 1, out(0, 4));
  algo::recv(s1.newStep(), 0, out(0, 3));
  Executor e0(fabric.endpoint(0), 4), e1(fabric.endpoint(1), 4);
  MessageCounters c0(2), c1(2);
  ASSERT_TRUE(e0.start(s0, b0, c0, 1, 1));
  ASSERT_TRUE(e1.start(s1, b1, c1, 1, 1));
  ASSERT_TRUE(driveBoth(e0, e1));
  ASSERT_TRUE(e0.failed() && e1.failed());
  EXPECT_TRUE(contains(e0.error(), "rank 0 step 0 transfer 0 (send out[0+4] -> 1")) << e0.error();
  EXPECT_TRUE(contains(e1.error(), "rank 1 step 0 transfer 0 (recv out[0+3] <- 0")) << e1.error();
  for (const std::string& e : {e0.error(), e1.error()})
    EXPECT_TRUE(contains(e, "rank 0 sends 16 bytes to rank 1, which posted a receive of 12 bytes"))
        << e;
}

// A schedule that needs eager buffering (both ranks receive before they send) deadlocks on a
// rendezvous transport: it must end in a timeout error naming the peer, and cancel its transfers.
TEST(ExecutorErrors, DeadlockEndsInATimeout) {
  tl::InProcFabric fabric(2, tl::InProcOptions{100ms});
  std::vector<std::int32_t> a(4), b(4);
  Bindings b0, b1;
  b0.output = Binding::contiguous(a.data(), 4);
  b1.output = Binding::contiguous(b.data(), 4);
  auto build = [](std::uint32_t peer) {
    algo::RankSchedule s;
    algo::recv(s.newStep(), peer, out(0, 2));
    algo::send(s.newStep(), peer, out(2, 2));
    return s;
  };
  const algo::RankSchedule s0 = build(1), s1 = build(0);
  Executor e0(fabric.endpoint(0), 4), e1(fabric.endpoint(1), 4);
  MessageCounters c0(2), c1(2);
  ASSERT_TRUE(e0.start(s0, b0, c0, 1, 1));
  ASSERT_TRUE(e1.start(s1, b1, c1, 1, 1));
  const auto t0 = std::chrono::steady_clock::now();
  while (!(e0.progress() && e1.progress()) && std::chrono::steady_clock::now() - t0 < 10s) {
    fabric.endpoint(0).wait(5ms);
  }
  ASSERT_TRUE(e0.failed() && e1.failed());
  EXPECT_TRUE(contains(e0.error(), "rank 0 step 0 transfer 0 (recv out[0+2] <- 1")) << e0.error();
  EXPECT_TRUE(contains(e0.error(), "no progress for 100 ms (rank 1 posted no matching send)"))
      << e0.error();
}

TEST(ExecutorErrors, DeadPeer) {
  tl::InProcFabric fabric(3, tl::InProcOptions{10s});
  std::vector<std::int32_t> a(4);
  Bindings b;
  b.output = Binding::contiguous(a.data(), 4);
  algo::RankSchedule s;
  algo::Step& st = s.newStep();
  algo::recv(st, 1, out(0, 2));
  algo::recv(st, 2, out(2, 2));
  Executor ex(fabric.endpoint(0), 4);
  MessageCounters c(3);
  ASSERT_TRUE(ex.start(s, b, c, 1, 1));
  EXPECT_FALSE(ex.progress());
  fabric.markDead(2);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(ex.run([&] { fabric.endpoint(0).wait(5ms); }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "a dead peer is noticed at once";
  EXPECT_TRUE(contains(ex.error(), "rank 0 step 0 transfer 1 (recv out[2+2] <- 2")) << ex.error();
  EXPECT_TRUE(contains(ex.error(), "peer rank 2 is dead")) << ex.error();
  // The other receive was cancelled: a late send from rank 1 finds nothing to match.
  std::vector<std::int32_t> src(2, 5);
  tl::Completion late;
  const tl::IoVec iov{src.data(), 8};
  fabric.endpoint(1).send(0, {&iov, 1}, {1, 1, 0}, &late);
  EXPECT_TRUE(late.pending());
  EXPECT_EQ(a[0], 0);
}

}  // namespace
}  // namespace hccl::engine
