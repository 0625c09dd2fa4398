// Failures of the UCX transport's transfers: dead and silent peers, cancellation, length
// mismatches, teardown with transfers pending. Every wait is bounded; a hang shows as a failure at
// the group's deadline.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <thread>

#include "fork_group.hpp"
#include "patterns.hpp"
#include "ucx_checks.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using tl::Completion;
using tl::IoVec;
using tl::Tag;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void expectKilled(const GroupResult& r, std::initializer_list<int> ranks) {
  for (int q : ranks) {
    EXPECT_EQ(r.ranks[static_cast<std::size_t>(q)].signal, SIGKILL) << r.summary();
  }
}

// Rank 0 posts a receive and a rendezvous-sized send to each of its peers (rank 1 on its
// server, rank 2 on another one) and checks that every one fails, naming the peer and its
// class, within `within`.
void expectPeersFail(Child& child, tl::UcxTransport& t, double within) {
  std::vector<std::byte> in1(1 << 16), in2(1 << 16), out(8 << 20);
  std::vector<Completion> done(4);
  const IoVec r1{in1.data(), in1.size()};
  const IoVec r2{in2.data(), in2.size()};
  const IoVec s{out.data(), out.size()};
  const auto start = Clock::now();
  t.recv(1, std::span(&r1, 1), Tag{3, 4, 5}, &done[0]);
  t.recv(2, std::span(&r2, 1), Tag{3, 4, 5}, &done[1]);
  t.send(1, std::span(&s, 1), Tag{3, 4, 6}, &done[2]);
  t.send(2, std::span(&s, 1), Tag{3, 4, 6}, &done[3]);
  // When each one fails, not just when the last one does.
  std::vector<double> failedAfter(done.size(), -1);
  while (secondsSince(start) < within + 3) {
    t.progress();
    bool pending = false;
    for (std::size_t i = 0; i < done.size(); ++i) {
      if (!done[i].pending() && failedAfter[i] < 0) failedAfter[i] = secondsSince(start);
      pending = pending || done[i].pending();
    }
    if (!pending) break;
  }
  for (std::size_t i = 0; i < done.size(); ++i) {
    const bool toRank1 = i % 2 == 0;
    const Completion& c = done[i];
    CHILD_CHECK(!c.pending(),
                fmt::format("transfer {} still pending after {:.1f} s", i, within + 3));
    child.report(fmt::format("after {:.2f} s: {}", failedAfter[i], c.error));
    CHILD_CHECK(c.state == Completion::State::Failed, "a transfer to a dead peer succeeded");
    CHILD_CHECK(
        contains(c.error, toRank1 ? "rank 1 over the HCCS class" : "rank 2 over the RoCE class"),
        c.error);
    CHILD_CHECK(contains(c.error, "tag comm=3 seq=4"), c.error);
    CHILD_CHECK(failedAfter[i] <= within,
                fmt::format("failed after {:.2f} s, more than {:.2f} s", failedAfter[i], within));
  }

  // The link stays failed: later transfers fail at once.
  Completion again;
  t.send(1, std::span(&s, 1), Tag{3, 5, 0}, &again);
  for (int i = 0; i < 10 && again.pending(); ++i) t.progress();
  CHILD_CHECK(again.state == Completion::State::Failed, "a send to a dead peer was accepted");
  child.report("then: " + again.error);
}

tl::UcxOptions failFast() {
  tl::UcxOptions o;
  o.timeout = 4s;
  o.keepalive = 200ms;
  return o;
}

TEST(UcxErrors, PeersKilledMidRunFailTheirTransfersInsideTheTimeout) {
  const std::vector<int> serverOf = {0, 0, 1};
  const auto r = runGroup(3, 30s, [&](Child& child) {
    tl::UcxTransport t(child.rank(), serverOf, child.allGather(), failFast());
    // A first exchange with everyone, so the links are up and in use.
    std::vector<std::vector<std::byte>> bufs(6, std::vector<std::byte>(1024));
    std::vector<Completion> done(6);
    std::size_t k = 0;
    for (int q = 0; q < 3; ++q) {
      if (q == t.rank()) continue;
      const IoVec out{bufs[k].data(), 1024};
      t.send(q, std::span(&out, 1), Tag{1, 0, 0}, &done[k]);
      ++k;
      const IoVec in{bufs[k].data(), 1024};
      t.recv(q, std::span(&in, 1), Tag{1, 0, 0}, &done[k]);
      ++k;
    }
    done.resize(k);
    waitAll(t, done, 10s);
    for (const auto& c : done) CHILD_CHECK(c.state == Completion::State::Done, c.error);
    child.barrier();
    if (t.rank() != 0) child.die();
    expectPeersFail(child, t, 4.0);
  });
  EXPECT_TRUE(r.ranks[0].finished && r.ranks[0].failure.empty()) << r.summary();
  expectKilled(r, {1, 2});
}

TEST(UcxErrors, PeersGoneBeforeAnyEndpointFailTransfersInsideTheTimeout) {
  const std::vector<int> serverOf = {0, 0, 1};
  const auto r = runGroup(3, 30s, [&](Child& child) {
    tl::UcxTransport t(child.rank(), serverOf, child.allGather(), failFast());
    if (t.rank() != 0) child.die();
    std::this_thread::sleep_for(300ms);  // let them go
    expectPeersFail(child, t, 4.0);
  });
  EXPECT_TRUE(r.ranks[0].finished && r.ranks[0].failure.empty()) << r.summary();
  expectKilled(r, {1, 2});
}

// Peers alive but posting nothing: the timeout turns the wait into an error.
TEST(UcxErrors, SilentPeersTimeOutWithPeerClassAndTag) {
  const std::vector<int> serverOf = {0, 0, 1};
  const auto r = runGroup(3, 30s, [&](Child& child) {
    tl::UcxOptions options;
    options.timeout = 1500ms;
    tl::UcxTransport t(child.rank(), serverOf, child.allGather(), options);
    if (t.rank() == 0) {
      std::vector<std::byte> in(4096), out(4 << 20);
      std::vector<Completion> done(4);
      const IoVec rv{in.data(), in.size()};
      const IoVec s{out.data(), out.size()};
      const auto start = Clock::now();
      t.recv(1, std::span(&rv, 1), Tag{3, 4, 5}, &done[0]);
      t.recv(2, std::span(&rv, 1), Tag{3, 4, 5}, &done[1]);
      t.send(1, std::span(&s, 1), Tag{3, 4, 6}, &done[2]);
      t.send(2, std::span(&s, 1), Tag{3, 4, 6}, &done[3]);
      waitAll(t, done, 8s);
      const double elapsed = secondsSince(start);
      for (std::size_t i = 0; i < done.size(); ++i) {
        const Completion& c = done[i];
        child.report(fmt::format("after {:.2f} s: {}", elapsed, c.error));
        CHILD_CHECK(c.state == Completion::State::Failed, "a transfer nobody matched succeeded");
        CHILD_CHECK(contains(c.error, i % 2 == 0 ? "rank 1 over the HCCS class"
                                                 : "rank 2 over the RoCE class"),
                    c.error);
        CHILD_CHECK(contains(c.error, fmt::format("tag comm=3 seq=4 msg={}", i < 2 ? 5 : 6)),
                    c.error);
        CHILD_CHECK(contains(c.error, "timeout"), c.error);
      }
      CHILD_CHECK(elapsed >= 1.5 && elapsed < 5.0,
                  fmt::format("timed out after {:.2f} s for a 1.5 s timeout", elapsed));
    }
    child.barrier();
  });
  EXPECT_TRUE(r.ok()) << r.summary();
}

// cancel() withdraws a receive (a later message with its tag lands in the next receive, not in
// the cancelled one's buffer) and gives up a send; it leaves completed records alone.
void cancelScenario(Child& child, const std::vector<int>& serverOf) {
  tl::UcxTransport t(child.rank(), serverOf, child.allGather(), {});
  const int peer = 1 - t.rank();
  if (t.rank() == 0) {
    std::vector<std::byte> cancelled(4096, std::byte{0x5A});
    const IoVec c{cancelled.data(), cancelled.size()};
    Completion recv;
    t.recv(peer, std::span(&c, 1), Tag{2, 0, 0}, &recv);
    t.progress();
    t.cancel(&recv);
    CHILD_CHECK(recv.state == Completion::State::Failed, "cancel left the receive pending");
    CHILD_CHECK(contains(recv.error, "cancelled"), recv.error);
    child.report("cancelled receive: " + recv.error);

    child.barrier();  // rank 1 now sends the message the cancelled receive was waiting for
    std::vector<std::byte> fresh(4096);
    const IoVec f{fresh.data(), fresh.size()};
    Completion second;
    t.recv(peer, std::span(&f, 1), Tag{2, 0, 0}, &second);
    waitAll(t, std::vector<Completion*>{&second}, 10s);
    CHILD_CHECK(second.state == Completion::State::Done, second.error);
    CHILD_CHECK(!firstMismatch(fresh, seedOf({42})), "the message went astray");
    CHILD_CHECK(std::all_of(cancelled.begin(), cancelled.end(),
                            [](std::byte b) { return b == std::byte{0x5A}; }),
                "UCX wrote into a cancelled receive's buffer");

    Completion finished = second;
    t.cancel(&finished);  // not a pending record: no effect
    CHILD_CHECK(finished.state == Completion::State::Done, "cancel changed a finished record");

    auto big = std::make_unique<std::vector<std::byte>>(8 << 20);
    const IoVec b{big->data(), big->size()};
    Completion send;
    t.send(peer, std::span(&b, 1), Tag{2, 1, 0}, &send);  // rank 1 never receives it
    t.progress();
    t.cancel(&send);
    CHILD_CHECK(send.state == Completion::State::Failed, "cancel left the send pending");
    child.report("cancelled send: " + send.error);
    big.reset();  // the transport must not read it any more
    for (int i = 0; i < 1000; ++i) t.progress();
  } else {
    child.barrier();
    std::vector<std::byte> msg(4096);
    fillPattern(msg, seedOf({42}));
    const IoVec m{msg.data(), msg.size()};
    Completion send;
    t.send(peer, std::span(&m, 1), Tag{2, 0, 0}, &send);
    waitAll(t, std::vector<Completion*>{&send}, 10s);
    CHILD_CHECK(send.state == Completion::State::Done, send.error);
  }
  child.barrier();
}

TEST(UcxErrors, CancelOverHccs) {
  const auto r = runGroup(2, 30s, [](Child& c) { cancelScenario(c, {0, 0}); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

TEST(UcxErrors, CancelOverRoce) {
  const auto r = runGroup(2, 30s, [](Child& c) { cancelScenario(c, {0, 1}); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

// A receive whose length differs from the send fails instead of passing off partial data.
TEST(UcxErrors, LengthMismatchFailsTheReceive) {
  for (const std::vector<int>& serverOf : {std::vector<int>{0, 0}, std::vector<int>{0, 1}}) {
    const auto r = runGroup(2, 30s, [&](Child& child) {
      tl::UcxTransport t(child.rank(), serverOf, child.allGather(), {});
      const int peer = 1 - t.rank();
      std::vector<std::byte> a(100), b(200);
      std::vector<Completion> done(2);
      if (t.rank() == 0) {
        const IoVec shortSend{a.data(), 50};
        const IoVec longSend{b.data(), 200};
        t.send(peer, std::span(&shortSend, 1), Tag{1, 1, 1}, &done[0]);
        t.send(peer, std::span(&longSend, 1), Tag{1, 1, 2}, &done[1]);
        waitAll(t, done, 10s);
      } else {
        const IoVec r1{a.data(), 100};
        const IoVec r2{b.data(), 100};
        t.recv(peer, std::span(&r1, 1), Tag{1, 1, 1}, &done[0]);
        t.recv(peer, std::span(&r2, 1), Tag{1, 1, 2}, &done[1]);
        waitAll(t, done, 10s);
        for (const auto& c : done) {
          child.report(c.error);
          CHILD_CHECK(c.state == Completion::State::Failed, "a mismatched receive succeeded");
        }
        CHILD_CHECK(contains(done[0].error, "the matching send had 50 bytes"), done[0].error);
        CHILD_CHECK(contains(done[1].error, "longer than the receive"), done[1].error);
      }
      child.barrier();
    });
    EXPECT_TRUE(r.ok()) << r.summary();
  }
}

// Destroying the transport with transfers still pending (a receive nobody sends to, a send nobody
// receives) neither hangs nor touches their records.
void destroyWhilePending(Child& child, const std::vector<int>& serverOf) {
  auto t = std::make_unique<tl::UcxTransport>(child.rank(), serverOf, child.allGather(),
                                              tl::UcxOptions{});
  if (child.rank() == 0) {
    std::vector<std::byte> in(4096), out(8 << 20);
    Completion recv;
    Completion send;
    const IoVec r{in.data(), in.size()};
    const IoVec s{out.data(), out.size()};
    t->recv(1, std::span(&r, 1), Tag{5, 0, 0}, &recv);
    t->send(1, std::span(&s, 1), Tag{5, 0, 1}, &send);
    for (int i = 0; i < 100; ++i) t->progress();
    const auto start = Clock::now();
    t.reset();
    const double seconds = secondsSince(start);
    child.report(fmt::format("destroyed with 2 transfers pending in {:.3f} s", seconds));
    CHILD_CHECK(seconds < 3, fmt::format("destruction took {:.2f} s", seconds));
    CHILD_CHECK(recv.pending() && send.pending() && recv.error.empty() && send.error.empty(),
                "the destructor touched an abandoned record");
  }
  child.barrier();
}

TEST(UcxErrors, DestroyWithTransfersPendingOverHccs) {
  const auto r = runGroup(2, 30s, [](Child& c) { destroyWhilePending(c, {0, 0}); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

TEST(UcxErrors, DestroyWithTransfersPendingOverRoce) {
  const auto r = runGroup(2, 30s, [](Child& c) { destroyWhilePending(c, {0, 1}); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

}  // namespace
}  // namespace hccl::test
