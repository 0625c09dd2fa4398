// Pushes over the shared-memory link (Transport's "writing in place", tl::ShmTransport) between
// forked ranks: the receiver exposes its buffer, the sender writes into it with CMA; exposures
// and messages with the same tag keep apart; a pusher killed mid-push fails the receive as a
// lost peer, and a receiver killed before the push fails the sender's write the same way.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>

#include "shm_stack.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;
using tl::Completion;

using Stack = ShmStack;

// Pushes need single copy (CMA) between the two ranks of one server.
Stack makeStack(Child& child, tl::ShmOptions so) {
  so.singleCopy = tl::SingleCopy::Cma;
  return makeShmStack(child, {0, 0}, so);
}

std::byte pattern(std::size_t i, std::size_t bytes) {
  return static_cast<std::byte>((i * 131 + bytes) % 251);
}

// Rank 0 pushes into rank 1's two-range buffer, in three pieces written out of order, while
// rank 1 sends rank 0 an ordinary block message under the same tag the other way.
TEST(ShmPush, WritesIntoTheReceiversBuffer) {
  const GroupResult g = runGroup(2, 60s, [](Child& child) {
    tl::ShmOptions so;
    so.slotBytes = 1024;
    Stack st = makeStack(child, so);
    tl::ShmTransport& t = *st.shm;
    const int peer = 1 - child.rank();
    CHILD_CHECK(!t.pushable(peer, t.inlineBytes()), "an inline-sized message is pushable");
    CHILD_CHECK(t.pushable(peer, t.inlineBytes() + 1), "a block-sized message is not pushable");
    std::uint32_t msg = 0;
    for (std::size_t bytes : {t.inlineBytes() + 1, std::size_t{20000}, std::size_t{300001}}) {
      const tl::Tag tag{7, 1, msg++};
      std::vector<std::byte> data(bytes), other(bytes, std::byte{9}), got(bytes, std::byte{0});
      for (std::size_t i = 0; i < bytes; ++i) data[i] = pattern(i, bytes);
      Completion push, plain;
      if (child.rank() == 0) {
        const tl::IoVec o{got.data(), bytes};
        t.recv(1, std::span(&o, 1), tag, &plain);  // the same tag, the other way
        t.sendPushed(1, bytes, tag, &push);
        waitOne(t, push);
        CHILD_CHECK(push.state == Completion::State::Done, push.error);
        const std::size_t a = bytes / 3, b = 2 * bytes / 3;
        for (auto [from, to] :
             {std::pair{b, bytes}, std::pair{std::size_t{0}, a}, std::pair{a, b}}) {
          const Completion c = t.writeDirect(&push, from, {data.data() + from, to - from});
          CHILD_CHECK(c.state == Completion::State::Done, c.error);
        }
        t.finishDirect(&push);
        waitOne(t, plain);
        CHILD_CHECK(plain.state == Completion::State::Done, plain.error);
        CHILD_CHECK(got == other, "the plain message met the exposure");
      } else {
        const std::size_t half = bytes / 2;
        const tl::IoVec into[2] = {{got.data(), half}, {got.data() + half, bytes - half}};
        t.recvPushed(0, into, tag, &push);
        const tl::IoVec o{other.data(), bytes};
        t.send(0, std::span(&o, 1), tag, &plain);
        waitOne(t, push);
        CHILD_CHECK(push.state == Completion::State::Done, push.error);
        CHILD_CHECK(got == data, fmt::format("pushed {} bytes arrived changed", bytes));
        waitOne(t, plain);
        CHILD_CHECK(plain.state == Completion::State::Done, plain.error);
      }
    }
    child.barrier();
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

// kill -9 of the pusher after half its bytes: the receive fails as a lost peer, naming it, well
// before the timeout would.
TEST(ShmPush, PusherKilledMidPushFailsTheReceiveAsPeerLost) {
  const GroupResult g = runGroup(2, 60s, [](Child& child) {
    tl::ShmOptions so = quickFailures();
    so.timeout = 20s;
    Stack st = makeStack(child, so);
    tl::ShmTransport& t = *st.shm;
    const std::size_t bytes = 100000;
    std::vector<std::byte> buf(bytes, std::byte{3});
    Completion c;
    if (child.rank() == 1) {
      t.sendPushed(0, bytes, {1, 1, 0}, &c);
      waitOne(t, c);
      CHILD_CHECK(c.state == Completion::State::Done, c.error);
      const Completion w = t.writeDirect(&c, 0, {buf.data(), bytes / 2});
      CHILD_CHECK(w.state == Completion::State::Done, w.error);
      child.die();
    }
    const tl::IoVec v{buf.data(), bytes};
    const auto start = std::chrono::steady_clock::now();
    t.recvPushed(1, std::span(&v, 1), {1, 1, 0}, &c);
    waitOne(t, c);
    CHILD_CHECK(c.state == Completion::State::Failed && c.fault == tl::Fault::PeerLost,
                fmt::format("fault {} ({})", tl::name(c.fault), c.error));
    CHILD_CHECK(c.error.find("rank 1") != std::string::npos, "the error names no peer");
    CHILD_CHECK(std::chrono::steady_clock::now() - start < 10s, "found only by the timeout");
    child.report(c.error);
  });
  ASSERT_EQ(g.ranks.size(), 2u);
  EXPECT_TRUE(g.ranks[0].finished && g.ranks[0].exitCode == 0) << g.summary();
}

// kill -9 of the receiver after it exposed its buffer: the pusher's write fails as a lost peer.
TEST(ShmPush, ReceiverKilledFailsTheWriteAsPeerLost) {
  const GroupResult g = runGroup(2, 60s, [](Child& child) {
    Stack st = makeStack(child, quickFailures());
    tl::ShmTransport& t = *st.shm;
    const std::size_t bytes = 100000;
    std::vector<std::byte> buf(bytes, std::byte{5});
    Completion c;
    if (child.rank() == 1) {
      const tl::IoVec v{buf.data(), bytes};
      t.recvPushed(0, std::span(&v, 1), {1, 2, 0}, &c);
      child.barrier();
      child.die();
    }
    t.sendPushed(1, bytes, {1, 2, 0}, &c);
    waitOne(t, c);
    CHILD_CHECK(c.state == Completion::State::Done, c.error);
    child.barrier();
    std::this_thread::sleep_for(300ms);  // it is gone
    const Completion w = t.writeDirect(&c, 0, {buf.data(), bytes});
    CHILD_CHECK(w.state == Completion::State::Failed && w.fault == tl::Fault::PeerLost,
                fmt::format("fault {} ({})", tl::name(w.fault), w.error));
    t.cancel(&c);  // not finished: the exposure stays held, the receive never completes
    child.report(w.error);
  });
  ASSERT_EQ(g.ranks.size(), 2u);
  EXPECT_TRUE(g.ranks[0].finished && g.ranks[0].exitCode == 0) << g.summary();
}

}  // namespace
}  // namespace hccl::test
