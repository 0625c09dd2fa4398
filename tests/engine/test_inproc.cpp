// The in-process transport: matching, rendezvous, iov copies, and every failure it injects or
// detects. Most tests drive several endpoints from one thread, which the contract allows (each
// endpoint is only driven by one thread at a time).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ucx_tl/inproc.hpp"

namespace hccl::tl {
namespace {

using namespace std::chrono_literals;
using State = Completion::State;

std::vector<IoVec> one(std::vector<std::uint8_t>& v) {
  return {{v.data(), v.size()}};
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Progress `ep` until `c` leaves Pending or the deadline passes (tests never hang).
void drive(InProcTransport& ep, const Completion& c, std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (c.pending() && std::chrono::steady_clock::now() < deadline) {
    ep.progress();
    if (c.pending()) ep.wait(5ms);
  }
}

TEST(InProc, SendMeetsRecvAndCopies) {
  InProcFabric f(2);
  std::vector<std::uint8_t> src = {1, 2, 3, 4, 5}, dst(5, 0);
  Completion s, r;
  f.endpoint(1).recv(0, one(dst), {7, 1, 0}, &r);
  f.endpoint(0).send(1, one(src), {7, 1, 0}, &s);
  EXPECT_EQ(s.state, State::Done) << "rendezvous: the send completes when matched and copied";
  EXPECT_EQ(s.bytes, 5u);
  EXPECT_TRUE(r.pending()) << "rank 1's record is only written by rank 1's own calls";
  EXPECT_EQ(f.endpoint(1).progress(), 1);
  EXPECT_EQ(r.state, State::Done);
  EXPECT_EQ(r.bytes, 5u);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(f.bytesMoved(), 5u);
}

TEST(InProc, SendWaitsForTheReceive) {
  InProcFabric f(2);
  std::vector<std::uint8_t> src = {9, 8}, dst(2, 0);
  Completion s, r;
  f.endpoint(0).send(1, one(src), {1, 1, 0}, &s);
  for (int i = 0; i < 10; ++i) f.endpoint(0).progress();
  EXPECT_TRUE(s.pending()) << "no eager buffering: unmatched sends stay pending";
  f.endpoint(1).recv(0, one(dst), {1, 1, 0}, &r);
  EXPECT_EQ(r.state, State::Done);
  EXPECT_TRUE(s.pending());
  f.endpoint(0).progress();
  EXPECT_EQ(s.state, State::Done);
  EXPECT_EQ(dst, src);
}

TEST(InProc, ManyTagsInFlightOutOfOrder) {
  InProcFabric f(2);
  constexpr std::uint32_t kMsgs = 200;
  std::vector<std::vector<std::uint8_t>> src(kMsgs), dst(kMsgs);
  for (std::uint32_t m = 0; m < kMsgs; ++m) {
    src[m].assign(m % 17 + 1, static_cast<std::uint8_t>(m));
    dst[m].assign(m % 17 + 1, 0xee);
  }
  std::vector<std::uint32_t> sendOrder(kMsgs), recvOrder(kMsgs);
  std::iota(sendOrder.begin(), sendOrder.end(), 0u);
  recvOrder = sendOrder;
  std::mt19937 rng(3);
  std::shuffle(sendOrder.begin(), sendOrder.end(), rng);
  std::shuffle(recvOrder.begin(), recvOrder.end(), rng);
  std::vector<Completion> s(kMsgs), r(kMsgs);
  // Interleave: half the receives first, then all sends, then the rest of the receives.
  for (std::uint32_t i = 0; i < kMsgs / 2; ++i) {
    const std::uint32_t m = recvOrder[i];
    f.endpoint(1).recv(0, one(dst[m]), {1, 5, m}, &r[m]);
  }
  for (std::uint32_t m : sendOrder) f.endpoint(0).send(1, one(src[m]), {1, 5, m}, &s[m]);
  for (std::uint32_t i = kMsgs / 2; i < kMsgs; ++i) {
    const std::uint32_t m = recvOrder[i];
    f.endpoint(1).recv(0, one(dst[m]), {1, 5, m}, &r[m]);
  }
  f.endpoint(0).progress();
  f.endpoint(1).progress();
  for (std::uint32_t m = 0; m < kMsgs; ++m) {
    EXPECT_EQ(s[m].state, State::Done) << m;
    EXPECT_EQ(r[m].state, State::Done) << m;
    EXPECT_EQ(dst[m], src[m]) << m;
  }
}

TEST(InProc, EqualTagsMatchInPostingOrder) {
  InProcFabric f(2);
  std::vector<std::uint8_t> a = {1}, b = {2}, x = {0}, y = {0};
  Completion s1, s2, r1, r2;
  f.endpoint(0).send(1, one(a), {1, 1, 4}, &s1);
  f.endpoint(0).send(1, one(b), {1, 1, 4}, &s2);
  f.endpoint(1).recv(0, one(x), {1, 1, 4}, &r1);
  f.endpoint(1).recv(0, one(y), {1, 1, 4}, &r2);
  EXPECT_EQ(x[0], 1);
  EXPECT_EQ(y[0], 2);
}

TEST(InProc, NoCrossMatchingAcrossCommSeqMsgOrPair) {
  InProcFabric f(3);
  std::vector<std::uint8_t> src = {42}, d1 = {0}, d2 = {0}, d3 = {0}, d4 = {0}, d5 = {0};
  Completion s, r1, r2, r3, r4, r5;
  f.endpoint(1).recv(0, one(d1), {2, 1, 0}, &r1);  // other comm
  f.endpoint(1).recv(0, one(d2), {1, 2, 0}, &r2);  // other seq
  f.endpoint(1).recv(0, one(d3), {1, 1, 1}, &r3);  // other msg
  f.endpoint(1).recv(2, one(d4), {1, 1, 0}, &r4);  // other source
  f.endpoint(2).recv(0, one(d5), {1, 1, 0}, &r5);  // other destination
  f.endpoint(0).send(1, one(src), {1, 1, 0}, &s);
  EXPECT_TRUE(s.pending());
  f.endpoint(1).progress();
  f.endpoint(2).progress();
  for (const Completion* c : {&r1, &r2, &r3, &r4, &r5}) EXPECT_TRUE(c->pending());
  std::vector<std::uint8_t> d6 = {0};
  Completion r6;
  f.endpoint(1).recv(0, one(d6), {1, 1, 0}, &r6);
  EXPECT_EQ(r6.state, State::Done);
  EXPECT_EQ(d6[0], 42);
  for (auto* d : {&d1, &d2, &d3, &d4, &d5}) EXPECT_EQ((*d)[0], 0);
}

TEST(InProc, ZeroByteTransfers) {
  InProcFabric f(2);
  Completion s1, r1, s2, r2;
  f.endpoint(1).recv(0, {}, {1, 1, 0}, &r1);
  f.endpoint(0).send(1, {}, {1, 1, 0}, &s1);
  std::uint8_t dummy = 0;
  const std::vector<IoVec> empties = {{&dummy, 0}, {&dummy, 0}};
  f.endpoint(0).send(1, empties, {1, 1, 1}, &s2);  // zero-length entries match an empty iov
  f.endpoint(1).recv(0, {}, {1, 1, 1}, &r2);
  f.endpoint(0).progress();
  f.endpoint(1).progress();
  for (const Completion* c : {&s1, &r1, &s2, &r2}) {
    EXPECT_EQ(c->state, State::Done);
    EXPECT_EQ(c->bytes, 0u);
  }
}

TEST(InProc, DifferentFragmentationOnBothSides) {
  InProcFabric f(2);
  std::vector<std::uint8_t> src(100), dst(100, 0);
  std::iota(src.begin(), src.end(), std::uint8_t{0});
  const std::vector<IoVec> sendIov = {
      {src.data(), 10}, {src.data() + 10, 0}, {src.data() + 10, 55}, {src.data() + 65, 35}};
  // Receive into scattered places: reversed halves, with empty entries between.
  const std::vector<IoVec> recvIov = {
      {dst.data() + 50, 7}, {dst.data(), 0}, {dst.data() + 57, 43}, {dst.data(), 50}};
  Completion s, r;
  f.endpoint(0).send(1, sendIov, {1, 1, 0}, &s);
  f.endpoint(1).recv(0, recvIov, {1, 1, 0}, &r);
  ASSERT_EQ(r.state, State::Done);
  EXPECT_EQ(r.bytes, 100u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(dst[static_cast<std::size_t>(50 + i)], i);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(dst[static_cast<std::size_t>(i)], 50 + i);
}

TEST(InProc, LengthMismatchFailsBothSidesNamingRanksAndLengths) {
  InProcFabric f(4);
  std::vector<std::uint8_t> src(12), dst(8);
  Completion s, r;
  f.endpoint(3).recv(2, one(dst), {1, 1, 0}, &r);
  f.endpoint(2).send(3, one(src), {1, 1, 0}, &s);
  f.endpoint(3).progress();
  ASSERT_EQ(s.state, State::Failed);
  ASSERT_EQ(r.state, State::Failed);
  for (const Completion* c : {&s, &r}) {
    EXPECT_TRUE(contains(c->error, "rank 2 sends 12 bytes to rank 3")) << c->error;
    EXPECT_TRUE(contains(c->error, "receive of 8 bytes")) << c->error;
  }
}

TEST(InProc, TimeoutNamesThePeer) {
  InProcFabric f(3, InProcOptions{50ms});
  std::vector<std::uint8_t> dst(4);
  Completion r;
  const auto t0 = std::chrono::steady_clock::now();
  f.endpoint(0).recv(2, one(dst), {1, 9, 3}, &r);
  drive(f.endpoint(0), r);
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(r.state, State::Failed);
  EXPECT_GE(waited, 50ms);
  EXPECT_TRUE(contains(r.error, "no progress for 50 ms")) << r.error;
  EXPECT_TRUE(contains(r.error, "recv from rank 2")) << r.error;
  EXPECT_TRUE(contains(r.error, "seq 9")) << r.error;
  // The failed receive is gone: a late send does not match it.
  std::vector<std::uint8_t> src(4);
  Completion s;
  f.endpoint(2).send(0, one(src), {1, 9, 3}, &s);
  EXPECT_TRUE(s.pending());
}

TEST(InProc, DeadPeerFailsNewAndPendingTransfers) {
  InProcFabric f(3);
  std::vector<std::uint8_t> buf(4);
  Completion pending, fresh, unaffected;
  f.endpoint(0).recv(1, one(buf), {1, 1, 0}, &pending);
  f.endpoint(0).recv(2, one(buf), {1, 1, 1}, &unaffected);
  f.markDead(1);
  EXPECT_TRUE(f.dead(1));
  f.endpoint(0).send(1, one(buf), {1, 1, 0}, &fresh);
  EXPECT_EQ(fresh.state, State::Failed) << "fails at post";
  EXPECT_TRUE(contains(fresh.error, "peer rank 1 is dead")) << fresh.error;
  EXPECT_TRUE(pending.pending()) << "only rank 0's own progress() writes its records";
  f.endpoint(0).progress();
  EXPECT_EQ(pending.state, State::Failed);
  EXPECT_TRUE(contains(pending.error, "peer rank 1 is dead")) << pending.error;
  EXPECT_TRUE(unaffected.pending());
}

TEST(InProc, AbortFailsEverything) {
  InProcFabric f(2);
  std::vector<std::uint8_t> buf(4);
  Completion a, b;
  f.endpoint(0).recv(1, one(buf), {1, 1, 0}, &a);
  f.abort("test stop");
  f.endpoint(0).progress();
  EXPECT_EQ(a.state, State::Failed);
  EXPECT_TRUE(contains(a.error, "aborted: test stop")) << a.error;
  f.endpoint(1).send(0, one(buf), {1, 1, 0}, &b);
  EXPECT_EQ(b.state, State::Failed);
}

TEST(InProc, CancelPendingAndMatchedButUndelivered) {
  InProcFabric f(2);
  std::vector<std::uint8_t> src = {5}, dst = {0};
  Completion r, s;
  f.endpoint(1).recv(0, one(dst), {1, 1, 0}, &r);
  f.endpoint(1).cancel(&r);
  EXPECT_EQ(r.state, State::Failed);
  EXPECT_TRUE(contains(r.error, "cancelled")) << r.error;
  f.endpoint(0).send(1, one(src), {1, 1, 0}, &s);
  EXPECT_TRUE(s.pending()) << "a cancelled receive matches nothing";
  EXPECT_EQ(dst[0], 0);

  Completion late;
  f.endpoint(1).recv(0, one(dst), {1, 1, 0}, &late);  // takes the pending send
  EXPECT_EQ(late.state, State::Done);
  EXPECT_EQ(dst[0], 5);

  // Matched (data copied, completion queued for rank 1) but cancelled before rank 1 progressed:
  // the queued completion must never be delivered.
  Completion r2, s2;
  f.endpoint(1).recv(0, one(dst), {1, 1, 1}, &r2);
  f.endpoint(0).send(1, one(src), {1, 1, 1}, &s2);
  EXPECT_EQ(s2.state, State::Done);
  EXPECT_TRUE(r2.pending());
  f.endpoint(1).cancel(&r2);
  EXPECT_EQ(r2.state, State::Failed);
  r2.error = "reused";
  EXPECT_EQ(f.endpoint(1).progress(), 0);
  EXPECT_EQ(r2.error, "reused");
  f.endpoint(1).cancel(&r2);  // completed record: no effect
  EXPECT_EQ(r2.error, "reused");
}

TEST(InProc, SelfTransfersAndLinkClasses) {
  InProcFabric f(3);
  f.setLinkClass(0, 2, LinkClass::Roce);
  EXPECT_EQ(f.endpoint(0).linkClass(0), LinkClass::Self);
  EXPECT_EQ(f.endpoint(0).linkClass(1), LinkClass::Hccs);
  EXPECT_EQ(f.endpoint(0).linkClass(2), LinkClass::Roce);
  EXPECT_EQ(f.endpoint(2).linkClass(0), LinkClass::Roce);
  std::vector<std::uint8_t> src = {1, 2}, dst = {0, 0};
  Completion s, r;
  f.endpoint(1).send(1, one(src), {1, 1, 0}, &s);
  f.endpoint(1).recv(1, one(dst), {1, 1, 0}, &r);
  f.endpoint(1).progress();
  EXPECT_EQ(s.state, State::Done);
  EXPECT_EQ(r.state, State::Done);
  EXPECT_EQ(dst, src);
}

TEST(InProc, BadArgumentsAreNamed) {
  EXPECT_THROW(InProcFabric(0), std::invalid_argument);
  InProcFabric f(2);
  EXPECT_THROW(f.endpoint(2), std::out_of_range);
  Completion c;
  f.endpoint(0).send(5, {}, {1, 1, 0}, &c);
  EXPECT_EQ(c.state, State::Failed);
  EXPECT_TRUE(contains(c.error, "rank 5: not a rank of this fabric")) << c.error;
}

// Ranks on threads: every rank sends many messages to every other rank, in random orders.
TEST(InProc, ThreadedAllToAll) {
  constexpr int kRanks = 5;
  constexpr std::uint32_t kMsgs = 40;
  InProcFabric f(kRanks, InProcOptions{10s});
  auto payload = [](int from, int to, std::uint32_t m) {
    return static_cast<std::uint8_t>(from * 31 + to * 7 + static_cast<int>(m));
  };
  std::vector<int> bad(kRanks, 0);
  auto rankMain = [&](int me) {
    InProcTransport& ep = f.endpoint(me);
    std::vector<std::vector<std::uint8_t>> out, in;
    std::vector<Completion> done(2 * kRanks * kMsgs);
    struct Item {
      bool send;
      int peer;
      std::uint32_t m;
    };
    std::vector<Item> items;
    for (int p = 0; p < kRanks; ++p)
      for (std::uint32_t m = 0; m < kMsgs; ++m)
        items.push_back({true, p, m}), items.push_back({false, p, m});
    std::mt19937 rng(static_cast<unsigned>(me));
    std::shuffle(items.begin(), items.end(), rng);
    out.resize(items.size());
    in.resize(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Item& it = items[i];
      if (it.send) {
        out[i].assign(it.m % 5 + 1, payload(me, it.peer, it.m));
        ep.send(it.peer, one(out[i]), {1, 1, it.m}, &done[i]);
      } else {
        in[i].assign(it.m % 5 + 1, 0);
        ep.recv(it.peer, one(in[i]), {1, 1, it.m}, &done[i]);
      }
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      drive(ep, done[i], 10s);
      if (done[i].state != State::Done) ++bad[static_cast<std::size_t>(me)];
      if (!items[i].send &&
          in[i] !=
              std::vector<std::uint8_t>(items[i].m % 5 + 1, payload(items[i].peer, me, items[i].m)))
        ++bad[static_cast<std::size_t>(me)];
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rankMain, r);
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(bad[static_cast<std::size_t>(r)], 0) << "rank " << r;
}

}  // namespace
}  // namespace hccl::tl
