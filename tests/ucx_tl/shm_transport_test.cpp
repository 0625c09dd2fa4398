// Tagged messages over the shared-memory link (tl::ShmTransport) between forked ranks: matching
// whatever the order in which the two ends post, inline and block messages, receives read in
// place, other servers' traffic over UCX, and every failure kind (peer lost, timeout, size
// mismatch, a withdrawn block).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "patterns.hpp"
#include "shm_stack.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;
using tl::Completion;

// ---- matching under reordering ------------------------------------------------------------------

// Message k of stream `comm` from a to b in round `round`: its size follows from its identity, so
// the receiver predicts it. Sizes straddle the inline limit and reach several slots (blocks).
std::size_t messageBytes(std::uint64_t seed, std::size_t inlineMax) {
  const std::uint64_t x = mix(seed);
  switch (x % 6) {
    case 0:
      return 0;
    case 1:
      return inlineMax;
    case 2:
      return inlineMax + 1;
    case 3:
      return static_cast<std::size_t>((x >> 8) % (4 * inlineMax));
    default:
      return static_cast<std::size_t>((x >> 8) % (inlineMax + 1));
  }
}

struct Counts {
  std::uint64_t checked = 0, inPlace = 0, pieces = 0;
};

// Every round each rank sends `streams` streams of `perStream` messages to every peer, posting
// sends and receives in independently shuffled orders (as concurrent calls on different
// communicators would), receiving some in place and reading them in random pieces, some of them
// only a few progress calls later. Rank `slow` sleeps now and then.
void matchingStress(Child& child, const std::vector<int>& serverOf, int rounds, int slow) {
  ShmStack st = makeShmStack(child, serverOf, smallRing(512));
  tl::ShmTransport& t = *st.shm;
  const int me = child.rank(), p = child.size();
  const std::size_t inlineMax = t.inlineBytes();
  constexpr int kStreams = 3, kPerStream = 3;
  std::mt19937_64 rng(static_cast<std::uint64_t>(me) * 104729 + 7);
  Counts n;
  struct Msg {
    int peer;
    tl::Tag tag;
    std::uint64_t seed;
    std::size_t bytes;
  };
  const auto u = [](int v) { return static_cast<std::uint64_t>(v); };
  for (int round = 0; round < rounds; ++round) {
    std::vector<Msg> sends, recvs;
    for (int q = 0; q < p; ++q) {
      if (q == me) continue;
      for (std::uint32_t comm = 1; comm <= kStreams; ++comm)
        for (std::uint32_t k = 0; k < kPerStream; ++k) {
          const tl::Tag tag{comm, static_cast<std::uint32_t>(round), k};
          const std::uint64_t out = seedOf({u(me), u(q), comm, u(round), k});
          const std::uint64_t in = seedOf({u(q), u(me), comm, u(round), k});
          sends.push_back({q, tag, out, messageBytes(out, inlineMax)});
          recvs.push_back({q, tag, in, messageBytes(in, inlineMax)});
        }
    }
    std::shuffle(sends.begin(), sends.end(), rng);
    std::shuffle(recvs.begin(), recvs.end(), rng);
    std::vector<std::vector<std::byte>> sendBufs(sends.size()), recvBufs(recvs.size());
    std::vector<Completion> sendDone(sends.size()), recvDone(recvs.size());
    std::vector<bool> direct(recvs.size()), finished(recvs.size(), false);
    std::vector<int> holdFor(recvs.size(), 0);
    std::size_t si = 0, ri = 0;
    const auto since = std::chrono::steady_clock::now();
    for (;;) {
      if (me == slow && rng() % 64 == 0) std::this_thread::sleep_for(50us);
      // Post a few of each, in their shuffled orders.
      for (int k = 0; k < 2 && si < sends.size(); ++k, ++si) {
        sendBufs[si].resize(sends[si].bytes);
        fillPattern(sendBufs[si], sends[si].seed);
        const tl::IoVec v{sendBufs[si].data(), sendBufs[si].size()};
        t.send(sends[si].peer, std::span(&v, 1), sends[si].tag, &sendDone[si]);
      }
      for (int k = 0; k < 2 && ri < recvs.size(); ++k, ++ri) {
        direct[ri] = t.direct(recvs[ri].peer, recvs[ri].bytes) && rng() % 2 == 0;
        holdFor[ri] = static_cast<int>(rng() % 4);
        if (direct[ri]) {
          t.recvDirect(recvs[ri].peer, recvs[ri].bytes, recvs[ri].tag, &recvDone[ri]);
        } else {
          recvBufs[ri].assign(recvs[ri].bytes, std::byte{0xEE});
          // Two pieces: the receive side's iov is split too.
          const std::size_t half = recvBufs[ri].size() / 2;
          const tl::IoVec v[2] = {{recvBufs[ri].data(), half},
                                  {recvBufs[ri].data() + half, recvBufs[ri].size() - half}};
          t.recv(recvs[ri].peer, std::span(v, 2), recvs[ri].tag, &recvDone[ri]);
        }
      }
      t.progress();
      bool pending = si < sends.size() || ri < recvs.size();
      for (std::size_t i = 0; i < si; ++i) {
        CHILD_CHECK(sendDone[i].state != Completion::State::Failed, sendDone[i].error);
        pending = pending || sendDone[i].pending();
      }
      for (std::size_t i = 0; i < ri; ++i) {
        const Completion& c = recvDone[i];
        CHILD_CHECK(c.state != Completion::State::Failed, c.error);
        if (c.pending()) {
          pending = true;
          continue;
        }
        if (finished[i]) continue;
        if (direct[i] && holdFor[i]-- > 0) {  // keep it in place for a while
          pending = true;
          continue;
        }
        std::vector<std::byte> got(recvs[i].bytes);
        if (direct[i]) {
          for (std::size_t at = 0; at < got.size();) {
            const std::size_t len = std::min<std::size_t>(got.size() - at, 1 + rng() % 700);
            std::vector<std::byte> piece(len);
            std::span<const std::byte> view;
            const Completion r = t.readDirect(&recvDone[i], at, piece, &view);
            CHILD_CHECK(r.state == Completion::State::Done, r.error);
            CHILD_CHECK(view.size() == len, "a view of another length");
            std::memcpy(got.data() + at, view.data(), len);
            at += len;
            ++n.pieces;
          }
          t.finishDirect(&recvDone[i]);
          ++n.inPlace;
        } else {
          got = recvBufs[i];
        }
        CHILD_CHECK(c.bytes == recvs[i].bytes, "completion reports another size");
        const auto bad = firstMismatch(got, recvs[i].seed);
        CHILD_CHECK(!bad,
                    fmt::format("round {} from rank {} (comm {} msg {}, {} bytes{}): byte "
                                "{} differs",
                                round, recvs[i].peer, recvs[i].tag.comm, recvs[i].tag.msg,
                                recvs[i].bytes, direct[i] ? ", in place" : "", bad.value_or(0)));
        finished[i] = true;
        ++n.checked;
      }
      if (!pending) break;
      CHILD_CHECK(std::chrono::steady_clock::now() - since < 20s,
                  fmt::format("round {} made no progress for 20 s", round));
    }
  }
  const auto& c = t.counters();
  child.report(fmt::format(
      "rank {}: {} messages checked ({} read in place in {} pieces); sent "
      "{} inline, {} blocks, {} over UCX; {} copied out of their slot",
      me, n.checked, n.inPlace, n.pieces, c.inlineSends, c.blockSends, c.viaBase, c.unexpected));
  if (std::ranges::count(serverOf, serverOf[static_cast<std::size_t>(me)]) > 1) {
    CHILD_CHECK(c.inlineSends > 0 && c.blockSends > 0 && n.inPlace > 0,
                "the run did not exercise inline, block and in-place messages");
    CHILD_CHECK(c.unexpected > 0, "no message ever had to be copied out of its slot");
  } else {
    CHILD_CHECK(c.inlineSends + c.blockSends == 0, "a rank alone on its server used the link");
  }
  child.barrier();
}

TEST(ShmTransport, MatchesInAnyOrderTwoRanks) {
  const GroupResult g = runGroup(2, 120s, [](Child& c) {
    matchingStress(c, {0, 0}, 1500, /*slow=*/1);
  });
  EXPECT_TRUE(g.ok()) << g.summary();
  for (const auto& line : g.allReports()) std::cout << line << "\n";
}

// Three ranks on one server and one on another: the fourth rank's traffic goes over UCX.
TEST(ShmTransport, MatchesInAnyOrderWithAnotherServer) {
  const GroupResult g = runGroup(4, 180s, [](Child& c) {
    matchingStress(c, {0, 0, 0, 1}, 300, /*slow=*/2);
  });
  EXPECT_TRUE(g.ok()) << g.summary();
  for (const auto& line : g.allReports()) std::cout << line << "\n";
}

// The receiver waits for everything but the first of a run of messages before it posts the first
// one's receive: the first stays unexpected in its slot while later ones are matched and released
// around it, until the window's span is full and the sender stalls. The receiver must copy the
// first one out rather than wait (it would wait forever), inline or block, held in place or not.
TEST(ShmTransport, AnUnexpectedOldestPostNeverStallsTheWindow) {
  tl::ShmOptions so = smallRing(512);
  so.timeout = 10s;
  const GroupResult g = onShmPair(so, [](Child& child, tl::ShmTransport& t) {
    constexpr std::uint32_t kMessages = 7;
    for (std::size_t bytes : {std::size_t{40}, std::size_t{3000}}) {
      for (bool direct : {false, true}) {
        std::vector<std::vector<std::byte>> bufs(kMessages);
        std::vector<Completion> done(kMessages);
        const auto tag = [&](std::uint32_t k) {
          return tl::Tag{9, static_cast<std::uint32_t>(bytes + (direct ? 1 : 0)), k};
        };
        const auto seed = [&](std::uint32_t k) { return seedOf({bytes, direct ? 1u : 0u, k}); };
        const auto post = [&](std::uint32_t k) {
          bufs[k].resize(bytes);
          if (child.rank() == 0) fillPattern(bufs[k], seed(k));
          const tl::IoVec v{bufs[k].data(), bytes};
          if (child.rank() == 0)
            t.send(1, std::span(&v, 1), tag(k), &done[k]);
          else if (direct && k > 0)
            t.recvDirect(0, bytes, tag(k), &done[k]);
          else
            t.recv(0, std::span(&v, 1), tag(k), &done[k]);
        };
        const auto check = [&](std::uint32_t k) {
          CHILD_CHECK(done[k].state == Completion::State::Done, done[k].error);
          if (child.rank() == 0) return;
          std::vector<std::byte> got(bytes);
          if (direct && k > 0) {
            std::span<const std::byte> view;
            const Completion r = t.readDirect(&done[k], 0, got, &view);
            CHILD_CHECK(r.state == Completion::State::Done, r.error);
            std::memcpy(got.data(), view.data(), bytes);
            t.finishDirect(&done[k]);
          } else {
            got = bufs[k];
          }
          CHILD_CHECK(!firstMismatch(got, seed(k)), fmt::format("message {} differs", k));
        };
        if (child.rank() == 0) {
          for (std::uint32_t k = 0; k < kMessages; ++k) post(k);
          for (std::uint32_t k = 0; k < kMessages; ++k) {
            waitOne(t, done[k]);
            check(k);
          }
        } else {
          for (std::uint32_t k = 1; k < kMessages; ++k) post(k);
          for (std::uint32_t k = 1; k < kMessages; ++k) {
            waitOne(t, done[k]);
            check(k);
          }
          post(0);
          waitOne(t, done[0]);
          check(0);
        }
        child.barrier();
      }
    }
    if (child.rank() == 1)
      CHILD_CHECK(t.counters().unexpected > 0, "the first message was never copied out");
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

// ---- failures -----------------------------------------------------------------------------------

TEST(ShmTransport, PeerDeathFailsPendingTransfersAsPeerLost) {
  const GroupResult g = onShmPair(quickFailures(), [](Child& child, tl::ShmTransport& t) {
    if (child.rank() == 1) {
      child.barrier();
      child.die();
    }
    child.barrier();
    std::this_thread::sleep_for(200ms);  // it is gone (or going)
    std::vector<std::byte> big(64 * 1024), small(16);
    Completion recv, send;
    const tl::IoVec r{small.data(), small.size()}, s{big.data(), big.size()};
    t.recv(1, std::span(&r, 1), {1, 1, 0}, &recv);
    t.send(1, std::span(&s, 1), {1, 1, 1}, &send);  // a block nobody will read
    waitOne(t, recv);
    waitOne(t, send);
    for (const Completion* c : {&recv, &send}) {
      CHILD_CHECK(c->state == Completion::State::Failed, "a transfer with a dead peer succeeded");
      CHILD_CHECK(c->fault == tl::Fault::PeerLost,
                  fmt::format("fault {} ({})", tl::name(c->fault), c->error));
      CHILD_CHECK(c->error.find("rank 1") != std::string::npos, "the error names no peer");
    }
    child.report(recv.error);
  });
  ASSERT_EQ(g.ranks.size(), 2u);
  EXPECT_TRUE(g.ranks[0].finished && g.ranks[0].exitCode == 0) << g.summary();
}

TEST(ShmTransport, ReceiveWithoutSenderTimesOut) {
  const GroupResult g = onShmPair(quickFailures(), [](Child& child, tl::ShmTransport& t) {
    if (child.rank() == 0) {
      std::vector<std::byte> buf(8);
      Completion recv;
      const tl::IoVec v{buf.data(), buf.size()};
      const auto start = std::chrono::steady_clock::now();
      t.recv(1, std::span(&v, 1), {1, 1, 0}, &recv);
      waitOne(t, recv);
      const auto took = std::chrono::steady_clock::now() - start;
      CHILD_CHECK(recv.state == Completion::State::Failed && recv.fault == tl::Fault::Timeout,
                  fmt::format("fault {} ({})", tl::name(recv.fault), recv.error));
      CHILD_CHECK(took >= 700ms, "failed before the timeout");
      child.report(recv.error);
    }
    child.barrier();
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

TEST(ShmTransport, SizeMismatchFailsTheReceive) {
  const GroupResult g = onShmPair(quickFailures(), [](Child& child, tl::ShmTransport& t) {
    for (std::size_t sent : {std::size_t{100}, std::size_t{5000}}) {  // inline, then a block
      std::vector<std::byte> buf(sent), got(sent + 8);
      Completion c;
      if (child.rank() == 0) {
        const tl::IoVec v{buf.data(), buf.size()};
        t.send(1, std::span(&v, 1), {1, 2, static_cast<std::uint32_t>(sent)}, &c);
      } else {
        const tl::IoVec v{got.data(), got.size()};
        t.recv(0, std::span(&v, 1), {1, 2, static_cast<std::uint32_t>(sent)}, &c);
      }
      waitOne(t, c);
      if (child.rank() == 1) {
        CHILD_CHECK(c.state == Completion::State::Failed && c.fault == tl::Fault::Mismatch,
                    fmt::format("fault {} ({})", tl::name(c.fault), c.error));
        CHILD_CHECK(c.error.find(std::to_string(sent)) != std::string::npos,
                    "the error does not name the sent size");
      } else {
        CHILD_CHECK(c.state == Completion::State::Done, c.error);
      }
    }
    child.barrier();
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

// A cancelled block send withdraws its buffer: the receiver that reads it afterwards fails
// instead of getting whatever the buffer holds by then.
TEST(ShmTransport, CancelledBlockFailsItsReader) {
  const GroupResult g = onShmPair(quickFailures(), [](Child& child, tl::ShmTransport& t) {
    std::vector<std::byte> buf(20000, std::byte{7});
    Completion c;
    const tl::IoVec v{buf.data(), buf.size()};
    if (child.rank() == 0) {
      t.send(1, std::span(&v, 1), {1, 3, 0}, &c);
      CHILD_CHECK(c.pending(), "a block send completed before its reader read it");
      t.cancel(&c);
      CHILD_CHECK(c.state == Completion::State::Failed && c.fault == tl::Fault::Cancelled,
                  fmt::format("cancelled send: {} ({})", tl::name(c.fault), c.error));
      child.barrier();
      child.barrier();  // keep the memory mapped while the reader tries
    } else {
      child.barrier();
      t.recv(0, std::span(&v, 1), {1, 3, 0}, &c);
      waitOne(t, c);
      CHILD_CHECK(c.state == Completion::State::Failed, "read a withdrawn block");
      CHILD_CHECK(c.error.find("withdrew") != std::string::npos, c.error);
      // A consequence of the writer's own failure: the engine looks for the cause (diagnosis).
      CHILD_CHECK(c.fault == tl::Fault::Withdrawn, tl::name(c.fault));
      child.report(c.error);
      child.barrier();
    }
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

}  // namespace
}  // namespace hccl::test
