// The shared-memory link over forked ranks: the slot protocol under long back-to-back runs with
// delays, single copy against the tagged transport, and the segment's privacy and clean-up.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "patterns.hpp"
#include "shm_stack.hpp"
#include "ucx_tl/shm_bootstrap.hpp"
#include "ucx_tl/shm_layout.hpp"
#include "ucx_tl/shm_link.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;
using tl::Completion;
using tl::ShmLink;

void checkDone(const Completion& c, const std::string& what) {
  CHILD_CHECK(c.state == Completion::State::Done, what + ": " + c.error);
}

// ---- layout -------------------------------------------------------------------------------------

TEST(ShmLayout, EveryLineIsAlignedInsideAndOwnedOnce) {
  for (std::size_t L : {1u, 2u, 3u, 8u}) {
    for (std::size_t K : {1u, 2u, 4u}) {
      for (std::size_t S : {64u, 4160u}) {
        const tl::shm::Layout l{L, K, S};
        std::vector<std::pair<std::size_t, std::size_t>> spans = {{0, tl::shm::kLine}};
        for (std::size_t w = 0; w < L; ++w)
          for (std::size_t r = 0; r < L; ++r)
            for (std::uint64_t p = 1; p <= K; ++p) {
              const std::size_t at = l.slotOffset(w, r, p);
              EXPECT_EQ(at, l.slotOffset(w, r, p + K)) << "post p+K reuses post p's slot";
              spans.emplace_back(at, at + l.slotStride());
            }
        for (std::size_t r = 0; r < L; ++r)
          for (std::size_t w = 0; w < L; ++w)
            for (bool b : {false, true}) {
              const std::size_t at = l.ackOffset(r, w, b);
              spans.emplace_back(at, at + tl::shm::kLine);
            }
        // The payload starts in the flag's line and ends inside the slot.
        EXPECT_EQ(tl::shm::kPayloadOffset + tl::shm::kInlineBytes, tl::shm::kLine);
        EXPECT_LE(tl::shm::kPayloadOffset + S, l.slotStride());
        std::sort(spans.begin(), spans.end());
        for (std::size_t i = 0; i < spans.size(); ++i) {
          EXPECT_EQ(spans[i].first % tl::shm::kLine, 0u);
          EXPECT_LE(spans[i].second, l.bytes());
          if (i > 0) {
            EXPECT_LE(spans[i - 1].second, spans[i].first) << "overlap at " << i;
          }
        }
      }
    }
  }
}

// ---- the slot protocol --------------------------------------------------------------------------

// Every post's size and bytes follow from (writer, channel, number), so a reader checks it
// against its own expectation.
std::size_t postSize(std::uint64_t seed, std::size_t max) {
  const std::uint64_t x = mix(seed);
  switch (x % 8) {
    case 0:
      return 0;
    case 1:
      return max;
    default:
      return static_cast<std::size_t>((x >> 8) % (max + 1));
  }
}

struct StressCounts {
  std::uint64_t delivered = 0;  // posts checked by this rank
  std::uint64_t ringFull = 0;   // posts that found their slot still in use (ran ahead)
  std::uint64_t blocks = 0;     // posts read by single copy
  std::uint64_t notYet = 0;     // reads that found nothing yet (the reader ran ahead)
};

// How many posts writer w sends its right neighbour in a round: 1..4, more than the ring holds.
std::uint64_t burst(int writer, std::uint64_t round) {
  return 1 + mix(seedOf({3, static_cast<std::uint64_t>(writer), round})) % 4;
}

// Each round every rank posts one broadcast and a burst of 1..4 posts to its right neighbour
// (now and then a block descriptor, read by single copy), and reads every other rank's
// broadcast and its left neighbour's burst, checking every byte before it releases. Rings hold
// two posts, so writers run into slots still being read; everything is non-blocking (as an
// executor would drive it): a rank that cannot post reads, and the other way round. Rank `slow`
// sleeps or spins at random points.
void stress(Child& child, int ranks, std::uint64_t rounds, bool yield, int slow) {
  std::vector<int> serverOf(static_cast<std::size_t>(ranks), 0);
  tl::ShmOptions o = smallRing(512);
  o.yield = yield;
  o.timeout = 60s;
  ShmLink link(child.rank(), serverOf, child.allGather(), o);
  const int me = child.rank();
  const int right = (me + 1) % ranks;
  const int left = (me + ranks - 1) % ranks;
  const std::size_t max = link.slotBytes();
  std::mt19937_64 rng(static_cast<std::uint64_t>(me) * 7919 + 1);
  auto delay = [&] {
    if (me != slow) return;
    const std::uint64_t x = rng();
    if (x % 8192 == 0) {
      std::this_thread::sleep_for(1ms);
    } else if (x % 128 == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(x % 50);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  };
  const auto u = [](int v) { return static_cast<std::uint64_t>(v); };
  // A block's buffer stays untouched until its post is released: one per ring slot.
  std::vector<std::vector<std::byte>> blockBuffers(o.slotsPerChannel);
  std::vector<std::uint64_t> blockPost(o.slotsPerChannel, 0);
  std::uint64_t pairPosts = 0;  // posts sent right so far
  StressCounts n;
  std::vector<std::byte> readBack, bytes;
  for (std::uint64_t round = 1; round <= rounds; ++round) {
    bool broadcastSent = false;
    std::uint64_t sent = 0;
    const std::uint64_t toSend = burst(me, round), toRead = burst(left, round);
    std::uint64_t readPair = 0;
    std::vector<bool> readBroadcast(static_cast<std::size_t>(ranks), false);
    readBroadcast[static_cast<std::size_t>(me)] = true;
    int broadcastsLeft = ranks - 1;
    const auto since = std::chrono::steady_clock::now();
    while (!broadcastSent || sent < toSend || readPair < toRead || broadcastsLeft > 0) {
      bool moved = false;
      delay();
      if (!broadcastSent) {
        const std::uint64_t seed = seedOf({1, u(me), round});
        const std::span<std::byte> slot = link.tryAcquire(ShmLink::kEveryPeer);
        if (slot.empty()) {
          ++n.ringFull;
        } else {
          const std::size_t size = postSize(seed, max);
          fillPattern(slot.first(size), seed);
          link.publish(ShmLink::kEveryPeer, size);
          broadcastSent = moved = true;
        }
      }
      if (sent < toSend) {
        const std::uint64_t seed = seedOf({2, u(me), round, sent});
        const std::size_t k = pairPosts % o.slotsPerChannel;
        if (sent == 0 && round % 16 == 5) {
          // A block of up to 64 KiB; its buffer's previous post must be released first.
          if (blockPost[k] == 0 || link.released(right, blockPost[k])) {
            blockBuffers[k].resize(postSize(seed, 65536) + 1);
            fillPattern(blockBuffers[k], seed);
            if (!link.tryAcquire(right).empty()) {
              checkDone(link.publishBlock(right, blockBuffers[k].data(), blockBuffers[k].size(),
                                          &blockPost[k]),
                        "publishBlock");
              ++sent, ++pairPosts, moved = true;
            } else {
              ++n.ringFull;
            }
          }
        } else {
          const std::span<std::byte> slot = link.tryAcquire(right);
          if (slot.empty()) {
            ++n.ringFull;
          } else {
            const std::size_t size = postSize(seed, max);
            fillPattern(slot.first(size), seed);
            link.publish(right, size);
            ++sent, ++pairPosts, moved = true;
          }
        }
      }
      // Reads, in a random channel order.
      const int first = static_cast<int>(rng() % static_cast<std::uint64_t>(ranks));
      for (int i = 0; i < ranks; ++i) {
        const int q = (first + i) % ranks;
        const bool pair = q == me;  // stands for the left neighbour's pair channel
        if (pair ? readPair >= toRead : readBroadcast[static_cast<std::size_t>(q)]) continue;
        const int writer = pair ? left : q;
        ShmLink::Post post;
        if (!link.tryPeek(writer, !pair, &post)) {
          ++n.notYet;
          continue;
        }
        const std::uint64_t seed =
            pair ? seedOf({2, u(writer), round, readPair}) : seedOf({1, u(writer), round});
        if (post.block) {
          CHILD_CHECK(pair && readPair == 0 && round % 16 == 5, "unexpected block");
          CHILD_CHECK(post.blockBytes == postSize(seed, 65536) + 1, "block size");
          readBack.resize(post.blockBytes);
          checkDone(link.read(post, 0, readBack.data(), readBack.size()), "block read");
          CHILD_CHECK(!firstMismatch(readBack, seed), fmt::format("block of round {}", round));
          ++n.blocks;
        } else {
          CHILD_CHECK(post.data.size() == postSize(seed, max),
                      fmt::format("round {} from {}: {} bytes", round, writer, post.data.size()));
          const auto bad = firstMismatch(post.data, seed);
          CHILD_CHECK(!bad, fmt::format("round {} from {} ({}): byte {} differs", round, writer,
                                        pair ? "pair" : "broadcast", bad.value_or(0)));
        }
        delay();
        link.release(writer, !pair);
        ++n.delivered;
        moved = true;
        if (pair) {
          ++readPair;
        } else {
          readBroadcast[static_cast<std::size_t>(q)] = true;
          --broadcastsLeft;
        }
      }
      if (!moved) {
        if (yield) std::this_thread::yield();
        CHILD_CHECK(std::chrono::steady_clock::now() - since < 30s,
                    fmt::format("round {} made no progress for 30 s", round));
      }
    }
  }
  child.report(
      fmt::format("rank {}: {} posts checked ({} blocks), slot still in use {} times, "
                  "nothing to read yet {} times",
                  me, n.delivered, n.blocks, n.ringFull, n.notYet));
  std::uint64_t expected = 0;
  for (std::uint64_t round = 1; round <= rounds; ++round) {
    expected += burst(left, round) + static_cast<std::uint64_t>(ranks - 1);
  }
  CHILD_CHECK(n.delivered == expected,
              fmt::format("{} posts delivered, {} expected", n.delivered, expected));
  // The run must have exercised reuse under contention: writers found slots still in use.
  CHILD_CHECK(n.ringFull > 0, "no post ever found its slot in use");
  child.barrier();
}

// Over 10^5 posts checked per rank in each test (about 3.5 and 4.5 per round).
TEST(ShmLink, SlotProtocolTwoRanksSpinning) {
  const GroupResult g = runGroup(2, 240s, [](Child& c) { stress(c, 2, 30000, false, /*slow=*/1); });
  EXPECT_TRUE(g.ok()) << g.summary();
}

TEST(ShmLink, SlotProtocolThreeRanksYielding) {
  const GroupResult g = runGroup(3, 240s, [](Child& c) { stress(c, 3, 25000, true, /*slow=*/2); });
  EXPECT_TRUE(g.ok()) << g.summary();
}

// A writer loads its readers' acknowledgements only when the last ones it saw do not cover the
// slot it reuses (Writing::knownReleased). Step by step, two slots a channel: a slot is refused
// while its previous post is held, granted as soon as the reader released it (the writer looks
// again), and a release it has already seen is not looked for again. A small post's bytes share
// the flag's line (kPayloadOffset into it), so it moves as one line.
TEST(ShmLink, ASlotIsReusedOnlyAfterItsReleaseSeenOnce) {
  const GroupResult g = onLinkPair(smallRing(256), [](Child& c, ShmLink& link) {
    const auto post = [&](std::uint8_t v) {
      const std::span<std::byte> slot = link.tryAcquire(ShmLink::kEveryPeer);
      CHILD_CHECK(!slot.empty(), fmt::format("post {}: its slot is refused", v));
      std::memset(slot.data(), v, 8);
      link.publish(ShmLink::kEveryPeer, 8);
    };
    const auto read = [&](std::uint8_t v) {
      ShmLink::Post p;
      checkDone(link.peek(0, true, &p), "peek");
      CHILD_CHECK(p.number == v && p.data.size() == 8 && std::to_integer<int>(p.data[7]) == v,
                  fmt::format("post {}: read number {} of {} bytes", v, p.number, p.data.size()));
      CHILD_CHECK(reinterpret_cast<std::uintptr_t>(p.data.data()) % tl::shm::kLine ==
                      tl::shm::kPayloadOffset,
                  "a small post's bytes are not in its flag's line");
      link.release(0, true);
    };
    if (c.rank() == 0) {
      post(1);
      post(2);
      CHILD_CHECK(link.tryAcquire(ShmLink::kEveryPeer).empty(), "slot of post 1 reused unread");
      CHILD_CHECK(!link.released(ShmLink::kEveryPeer, 1), "post 1 released before its read");
    }
    c.barrier();  // 1: rank 1 reads post 1
    if (c.rank() == 1) read(1);
    c.barrier();  // 2
    if (c.rank() == 0) {
      CHILD_CHECK(link.released(ShmLink::kEveryPeer, 1), "post 1's release not seen");
      post(3);  // the slot of post 1
      CHILD_CHECK(link.tryAcquire(ShmLink::kEveryPeer).empty(), "slot of post 2 reused unread");
    }
    c.barrier();  // 3: rank 1 reads posts 2 and 3
    if (c.rank() == 1) {
      read(2);
      read(3);
    }
    c.barrier();  // 4
    if (c.rank() == 0) {
      post(4);
      post(5);
      CHILD_CHECK(link.tryAcquire(ShmLink::kEveryPeer).empty(), "slot of post 4 reused unread");
    }
    c.barrier();  // 5
    if (c.rank() == 1) {
      read(4);
      read(5);
    }
    c.barrier();
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

// A writer also takes its next slot's first payload lines ahead (shm::kOwnedLines), under the
// same condition: a post of several lines its reader still holds keeps every byte while the
// writer posts on, and once the reader released it the slot carries the next post intact.
TEST(ShmLink, AHeldPostKeepsItsLinesThroughLaterPosts) {
  const GroupResult g = onLinkPair(smallRing(512), [](Child& c, ShmLink& link) {
    // Every line the writer may take ahead, and a byte beyond.
    const std::size_t bytes = tl::shm::kOwnedLines * tl::shm::kLine - tl::shm::kPayloadOffset + 1;
    CHILD_CHECK(bytes <= link.slotBytes(), "the post does not fit a slot");
    const auto fill = [&](std::uint8_t v) {
      const std::span<std::byte> slot = link.tryAcquire(ShmLink::kEveryPeer);
      CHILD_CHECK(!slot.empty(), fmt::format("post {}: its slot is refused", v));
      std::memset(slot.data(), v, bytes);
      link.publish(ShmLink::kEveryPeer, bytes);
    };
    const auto check = [&](const ShmLink::Post& p, std::uint8_t v) {
      CHILD_CHECK(p.number == v && p.data.size() == bytes,
                  fmt::format("post {}: {} bytes", v, p.data.size()));
      for (std::size_t i = 0; i < p.data.size(); ++i)
        CHILD_CHECK(std::to_integer<int>(p.data[i]) == v,
                    fmt::format("post {}: byte {} is {}", v, i, std::to_integer<int>(p.data[i])));
    };
    ShmLink::Post held;
    if (c.rank() == 0) fill(1);
    c.barrier();  // 1: rank 1 holds post 1
    if (c.rank() == 1) checkDone(link.peek(0, true, &held), "peek 1");
    c.barrier();  // 2: rank 0 posts 2 (its next slot is post 1's, still held)
    if (c.rank() == 0) fill(2);
    c.barrier();  // 3
    if (c.rank() == 1) {
      check(held, 1);
      link.release(0, true);
      checkDone(link.peek(0, true, &held), "peek 2");
      check(held, 2);
      link.release(0, true);
    }
    c.barrier();  // 4: the writer sees both releases, posts 3 into post 1's slot, then 4
    if (c.rank() == 0) {
      checkDone(link.waitReleased(ShmLink::kEveryPeer, 2), "releases");
      fill(3);
      fill(4);
    }
    c.barrier();  // 5
    if (c.rank() == 1) {
      for (std::uint8_t v = 3; v <= 4; ++v) {
        checkDone(link.peek(0, true, &held), "peek");
        check(held, v);
        link.release(0, true);
      }
    }
    c.barrier();
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

// A writer takes its next slot's line ahead of its next post (a store into the slot's control
// word), but only once it has seen every reader release the slot's previous post: a block post
// that is withdrawn while its reader still holds it stays withdrawn through the writer's next
// posts, and its late read fails instead of copying the buffer.
TEST(ShmLink, AHeldWithdrawnBlockStaysWithdrawnThroughLaterPosts) {
  tl::ShmOptions o = smallRing(256);
  o.singleCopy = tl::SingleCopy::Cma;
  const GroupResult g = onLinkPair(o, [](Child& c, ShmLink& link) {
    std::vector<std::byte> buf(4096, std::byte{5});
    if (c.rank() == 0) {
      std::uint64_t number = 0;
      checkDone(link.publishBlock(ShmLink::kEveryPeer, buf.data(), buf.size(), &number), "block");
      CHILD_CHECK(number == 1, fmt::format("the block is post {}", number));
      link.revoke(ShmLink::kEveryPeer, 1);
      // Post 2 fills the ring: the slot after it is post 1's, still held.
      checkDone(link.post(ShmLink::kEveryPeer, std::span(buf.data(), 8)), "post 2");
    }
    c.barrier();  // 1: rank 1 reads the withdrawn block, then post 2
    if (c.rank() == 1) {
      ShmLink::Post p;
      checkDone(link.peek(0, true, &p), "peek 1");
      CHILD_CHECK(p.number == 1 && p.block, "post 1 is not the block");
      std::vector<std::byte> into(buf.size());
      const Completion r = link.read(p, 0, into.data(), into.size());
      CHILD_CHECK(r.state == Completion::State::Failed && r.fault == tl::Fault::Withdrawn,
                  fmt::format("read of the withdrawn block: {} ({})", tl::name(r.fault), r.error));
      link.release(0, true);
      checkDone(link.peek(0, true, &p), "peek 2");
      CHILD_CHECK(p.number == 2 && !p.block && p.data.size() == 8, "post 2");
      link.release(0, true);
    }
    c.barrier();
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

// ---- the copy speed probe -----------------------------------------------------------------------

// Both ranks must compile the same slot program from copyRatio (engine: fast_single_copy), so
// it is one number per server: each rank reports it in full precision, and they must match. It
// is timed only where CMA carries single copies and the link does not yield.
std::vector<std::string> reportedRatios(const tl::ShmOptions& o) {
  const GroupResult g = onLinkPair(
      o, [](Child& c, ShmLink& link) { c.report(fmt::format("{:a}", link.copyRatio())); });
  EXPECT_TRUE(g.ok()) << g.summary();
  std::vector<std::string> ratios;
  for (const ChildResult& r : g.ranks)
    for (const std::string& line : r.reports) ratios.push_back(line);
  return ratios;
}

TEST(ShmLink, CopyRatioIsOneNumberPerServer) {
  tl::ShmOptions o;
  o.singleCopy = tl::SingleCopy::Cma;
  const std::vector<std::string> ratios = reportedRatios(o);
  ASSERT_EQ(ratios.size(), 2u);
  EXPECT_EQ(ratios[0], ratios[1]);
  // A CMA read pins and copies; a memcpy only copies: not faster than it, and not absurd.
  const double ratio = std::stod(ratios[0]);
  EXPECT_GE(ratio, 0.5) << ratios[0];
  EXPECT_LT(ratio, 1000.0) << ratios[0];
}

TEST(ShmLink, CopyRatioIsNotTimedWhereItIsNotUsed) {
  tl::ShmOptions yielding;
  yielding.singleCopy = tl::SingleCopy::Cma;
  yielding.yield = true;
  tl::ShmOptions none;
  none.singleCopy = tl::SingleCopy::None;
  for (const tl::ShmOptions& o : {yielding, none}) {
    const std::vector<std::string> ratios = reportedRatios(o);
    ASSERT_EQ(ratios.size(), 2u);
    EXPECT_EQ(std::stod(ratios[0]), 0.0);
    EXPECT_EQ(std::stod(ratios[1]), 0.0);
  }
}

// ---- single copy against the tagged transport ---------------------------------------------------

// Rank 0 sends each buffer over the tagged transport and posts it as a block on a CMA link and
// on a UCX-RMA link; rank 1 reads it every way and compares bitwise. Then the other direction:
// rank 1 posts its receive buffer, rank 0 writes into it.
void singleCopy(Child& child) {
  const std::vector<int> serverOf = {0, 0};
  tl::UcxOptions uo;
  uo.timeout = 20s;
  tl::UcxTransport tagged(child.rank(), serverOf, child.allGather(), uo);
  tl::ShmOptions cmaOptions;
  cmaOptions.singleCopy = tl::SingleCopy::Cma;
  cmaOptions.timeout = 20s;
  tl::ShmOptions rmaOptions = cmaOptions;
  rmaOptions.singleCopy = tl::SingleCopy::UcxRma;
  ShmLink cma(child.rank(), serverOf, child.allGather(), cmaOptions);
  ShmLink rma(child.rank(), serverOf, child.allGather(), rmaOptions);
  CHILD_CHECK(cma.singleCopy() == tl::SingleCopy::Cma, "cma mode");
  CHILD_CHECK(rma.singleCopy() == tl::SingleCopy::UcxRma, "ucx-rma mode");
  child.report(cma.describe());

  const std::vector<std::size_t> sizes = {1, 7, 4096, 65537, (1u << 20) + 3, 8u << 20};
  const int peer = 1 - child.rank();
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t n = sizes[k];
    // One byte in, so no buffer is aligned.
    std::vector<std::byte> storage(n + 1);
    const std::span<std::byte> buf(storage.data() + 1, n);
    tl::Completion sent, got;
    const tl::Tag tag{3, static_cast<std::uint32_t>(k), 0};
    if (child.rank() == 0) {
      fillPattern(buf, seedOf({9, k}));
      const tl::IoVec v{buf.data(), n};
      tagged.send(peer, std::span(&v, 1), tag, &sent);
      waitAll(tagged, std::vector<tl::Completion*>{&sent}, 20s);
      std::uint64_t a = 0, b = 0;
      checkDone(cma.publishBlock(peer, buf.data(), n, &a), "cma publish");
      checkDone(rma.publishBlock(peer, buf.data(), n, &b), "rma publish");
      // rma's wait progresses UCX, which serves rank 1's emulated get.
      checkDone(cma.waitReleased(peer, a), "cma release");
      checkDone(rma.waitReleased(peer, b), "rma release");
      // Now write into rank 1's buffer: its descriptor arrives on its channel to us.
      ShmLink::Post target;
      for (ShmLink* link : {&cma, &rma}) {
        checkDone(link->peek(peer, false, &target), "target peek");
        CHILD_CHECK(target.block && target.blockBytes == n, "target block");
        checkDone(link->write(target, 0, buf.data(), n), "write");
        link->release(peer, false);
      }
    } else {
      std::vector<std::byte> viaTag(n), viaCma(n + 3), viaRma(n), viaStream;
      const tl::IoVec v{viaTag.data(), n};
      tagged.recv(peer, std::span(&v, 1), tag, &got);
      waitAll(tagged, std::vector<tl::Completion*>{&got}, 20s);
      CHILD_CHECK(!firstMismatch(viaTag, seedOf({9, k})), "tagged path");
      ShmLink::Post p;
      checkDone(cma.peek(peer, false, &p), "cma peek");
      CHILD_CHECK(p.block && p.blockBytes == n, "cma block");
      checkDone(cma.read(p, 0, viaCma.data() + 3, n), "cma read");
      checkDone(cma.stream(p, 0, n, 65536,
                           [&](std::span<const std::byte> piece, std::size_t at) {
                             CHILD_CHECK(at == viaStream.size(), "stream order");
                             viaStream.insert(viaStream.end(), piece.begin(), piece.end());
                           }),
                "cma stream");
      if (n > 5) {  // an inner range, at odd offsets
        std::vector<std::byte> inner(n - 5);
        checkDone(cma.read(p, 3, inner.data(), inner.size()), "cma inner read");
        CHILD_CHECK(std::memcmp(inner.data(), viaTag.data() + 3, inner.size()) == 0, "inner");
      }
      cma.release(peer, false);
      checkDone(rma.peek(peer, false, &p), "rma peek");
      checkDone(rma.read(p, 0, viaRma.data(), n), "rma read");
      rma.release(peer, false);
      CHILD_CHECK(std::memcmp(viaCma.data() + 3, viaTag.data(), n) == 0, "cma != tagged");
      CHILD_CHECK(std::memcmp(viaRma.data(), viaTag.data(), n) == 0, "ucx rma != tagged");
      CHILD_CHECK(viaStream == viaTag, "stream != tagged");
      // Rank 0 writes into these, over each link in turn.
      std::vector<std::byte> intoCma(n), intoRma(n);
      std::uint64_t a = 0, b = 0;
      checkDone(cma.publishBlock(peer, intoCma.data(), n, &a), "cma target");
      checkDone(rma.publishBlock(peer, intoRma.data(), n, &b), "rma target");
      checkDone(cma.waitReleased(peer, a), "cma target release");
      checkDone(rma.waitReleased(peer, b), "rma target release");
      CHILD_CHECK(intoCma == viaTag, "cma write != tagged");
      CHILD_CHECK(intoRma == viaTag, "ucx rma write != tagged");
    }
  }
  child.barrier();
}

TEST(ShmLink, SingleCopyMatchesTaggedPathBitwise) {
  const GroupResult g = runGroup(2, 120s, singleCopy);
  EXPECT_TRUE(g.ok()) << g.summary();
}

// ---- the segment: private, unlinked, per server -------------------------------------------------

// The mapping of `base` in /proc/self/maps: its "lo-hi" range and its path.
std::pair<std::string, std::string> mappingOf(const void* base) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto a = reinterpret_cast<std::uintptr_t>(base);
  while (std::getline(maps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || a < lo || a >= hi) continue;
    const auto slash = line.find('/');
    return {line.substr(0, line.find(' ')),
            slash == std::string::npos ? std::string() : line.substr(slash)};
  }
  return {};
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string withoutDeleted(std::string path) {
  const std::string tag = " (deleted)";
  if (path.ends_with(tag)) path.resize(path.size() - tag.size());
  return path;
}

std::vector<std::string> pathsReported(const GroupResult& g) {
  std::vector<std::string> out;
  for (const auto& r : g.ranks)
    for (const auto& line : r.reports)
      if (line.starts_with("segment ")) out.push_back(line.substr(8));
  return out;
}

struct Inode {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  bool operator==(const Inode&) const = default;
};

// Every (device, inode) this process maps, from /proc/self/maps.
std::vector<Inode> mappedInodes() {
  std::vector<Inode> out;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned major = 0, minor = 0;
    unsigned long inode = 0;
    if (std::sscanf(line.c_str(), "%*s %*s %*s %x:%x %lu", &major, &minor, &inode) == 3 &&
        inode != 0) {
      out.push_back({makedev(major, minor), inode});
    }
  }
  return out;
}

tl::ShmOptions withSource(tl::SegmentSource source) {
  tl::ShmOptions o;
  o.segment = source;
  return o;
}

// Two servers of two ranks on this machine, as two jobs would be: each server's ranks share one
// segment, mode 0600, owned by this user, with no name in /dev/shm, and no rank maps the other
// server's.
void segmentIsPrivate(tl::SegmentSource source) {
  const GroupResult g = runGroup(4, 60s, [source](Child& child) {
    const std::vector<int> serverOf = {0, 0, 1, 1};
    ShmLink link(child.rank(), serverOf, child.allGather(), withSource(source));
    const auto [range, path] = mappingOf(link.segmentBase());
    CHILD_CHECK(path == link.segmentPath(), path + " vs " + link.segmentPath());
    if (source == tl::SegmentSource::Memfd) {
      CHILD_CHECK(path == "/memfd:hccl-shm (deleted)", "not an anonymous memory file: " + path);
    } else {
      CHILD_CHECK(path.starts_with("/dev/shm/ucx_shm_posix_") && path.ends_with(" (deleted)"),
                  "not an unlinked UCX posix file: " + path);
    }
    CHILD_CHECK(!exists(withoutDeleted(path)), "the segment has a name: " + path);
    struct stat st;
    CHILD_CHECK(::stat(("/proc/self/map_files/" + range).c_str(), &st) == 0, "map_files");
    CHILD_CHECK((st.st_mode & 0777) == 0600, fmt::format("mode {:o}", st.st_mode & 0777));
    CHILD_CHECK(st.st_uid == ::getuid(), "owner");
    child.report("segment " + path);
    // Every rank's segment inode: the same as its server's, and the other server's is not
    // mapped here.
    const Inode mine{st.st_dev, st.st_ino};
    std::vector<Inode> all(4);
    child.allGather()(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
    const auto here = mappedInodes();
    for (std::size_t q = 0; q < 4; ++q) {
      const bool sameServer = serverOf[q] == serverOf[static_cast<std::size_t>(child.rank())];
      CHILD_CHECK(sameServer == (all[q] == mine), fmt::format("rank {}'s segment", q));
      if (!sameServer) {
        CHILD_CHECK(std::find(here.begin(), here.end(), all[q]) == here.end(),
                    fmt::format("rank {}'s (other server's) segment is mapped here", q));
      }
    }
    child.barrier();
  });
  ASSERT_TRUE(g.ok()) << g.summary();
  const auto paths = pathsReported(g);
  ASSERT_EQ(paths.size(), 4u);
  for (const auto& p : paths) EXPECT_FALSE(exists(withoutDeleted(p))) << p;
}

TEST(ShmLink, MemfdSegmentIsPrivateAndPerServer) {
  segmentIsPrivate(tl::SegmentSource::Memfd);
}

TEST(ShmLink, UcxSegmentIsPrivateAndPerServer) {
  segmentIsPrivate(tl::SegmentSource::UcxPosix);
}

// kill -9 of either rank, leader or not, leaves nothing in /dev/shm, and the survivor's wait
// fails naming the dead peer instead of hanging.
void killOne(int victim, tl::SegmentSource source) {
  tl::ShmOptions o = withSource(source);
  o.liveness = 50ms;
  o.timeout = 30s;
  const GroupResult g = onLinkPair(o, [victim](Child& child, ShmLink& link) {
    child.report("segment " + link.segmentPath());
    // One exchange first, so both have used the segment.
    checkDone(link.post(1 - child.rank(), std::as_bytes(std::span("hello", 5))), "post");
    ShmLink::Post post;
    checkDone(link.peek(1 - child.rank(), false, &post), "peek");
    link.release(1 - child.rank(), false);
    child.barrier();
    if (child.rank() == victim) child.die();
    const auto start = std::chrono::steady_clock::now();
    const Completion c = link.peek(victim, false, &post);
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    child.report(fmt::format("after {:.2f} s: {}", waited, c.error));
    CHILD_CHECK(c.state == Completion::State::Failed, "peek on a dead peer did not fail");
    CHILD_CHECK(c.error.find("has exited") != std::string::npos, c.error);
    CHILD_CHECK(waited < 10, "took too long to notice");
  });
  ASSERT_FALSE(g.timedOut) << g.summary();
  EXPECT_EQ(g.ranks[static_cast<std::size_t>(victim)].signal, SIGKILL) << g.summary();
  const ChildResult& survivor = g.ranks[static_cast<std::size_t>(1 - victim)];
  EXPECT_TRUE(survivor.finished && survivor.failure.empty()) << g.summary();
  const auto paths = pathsReported(g);
  ASSERT_EQ(paths.size(), 2u) << g.summary();
  for (const auto& p : paths) EXPECT_FALSE(exists(withoutDeleted(p))) << p;
}

// kill -9 of a block's writer while its reader copies from it (CMA): the copy fails as the
// killed process's memory goes, which can come before /proc shows it exited (ShmLink's read
// waits up to kExitGrace for that), and the reader must call it a lost peer (Fault::PeerLost,
// "exited"), not a transport error: the engine names the culprit from that. The reader copies
// 64 MiB again and again, so the kill lands mid-copy or between two copies.
TEST(ShmLink, KillNineMidReadIsALostPeer) {
  tl::ShmOptions o;
  o.singleCopy = tl::SingleCopy::Cma;
  o.liveness = 50ms;
  o.timeout = 30s;
  const GroupResult g = onLinkPair(o, [](Child& child, ShmLink& link) {
    CHILD_CHECK(link.singleCopy() == tl::SingleCopy::Cma, "cma mode");
    const std::size_t n = std::size_t{64} << 20;
    std::vector<std::byte> buf(n, std::byte{7});
    if (child.rank() == 0) {
      std::uint64_t number = 0;
      checkDone(link.publishBlock(1, buf.data(), n, &number), "publish");
      child.barrier();
      std::this_thread::sleep_for(30ms);
      child.die();
    }
    ShmLink::Post p;
    checkDone(link.peek(0, false, &p), "peek");
    child.barrier();
    Completion c;
    int reads = 0;
    for (; reads < 10000; ++reads) {
      c = link.read(p, 0, buf.data(), n);
      if (c.state != Completion::State::Done) break;
    }
    child.report(fmt::format("after {} whole reads: {}", reads, c.error));
    CHILD_CHECK(c.state == Completion::State::Failed, "reads from a killed writer did not fail");
    CHILD_CHECK(c.fault == tl::Fault::PeerLost, c.error);
    CHILD_CHECK(c.error.find("exited") != std::string::npos, c.error);
  });
  ASSERT_FALSE(g.timedOut) << g.summary();
  EXPECT_EQ(g.ranks[0].signal, SIGKILL) << g.summary();
  EXPECT_TRUE(g.ranks[1].finished && g.ranks[1].failure.empty()) << g.summary();
}

TEST(ShmLink, KillNineOfTheLeaderLeavesNothing) {
  killOne(0, tl::SegmentSource::Memfd);
  killOne(0, tl::SegmentSource::UcxPosix);
}

TEST(ShmLink, KillNineOfAPeerLeavesNothing) {
  killOne(1, tl::SegmentSource::Memfd);
  killOne(1, tl::SegmentSource::UcxPosix);
}

// A wait on a live peer that never moves fails with the timeout, whether it waits for a post
// (peek) or for its readers to release the slot it writes next (acquire on a full ring): the
// waits read the clock only after a round of spins, and must still end.
TEST(ShmLink, BlockingWaitsTimeOutWithoutProgress) {
  const GroupResult g = runGroup(2, 60s, [](Child& child) {
    tl::ShmOptions o;
    o.slotsPerChannel = 2;
    o.timeout = 300ms;
    o.yield = child.rank() == 1;  // both ways of waiting
    ShmLink link(child.rank(), {0, 0}, child.allGather(), o);
    const int peer = 1 - child.rank();
    const auto waited = [](auto start) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    // Nothing is posted to this rank: peek times out.
    ShmLink::Post post;
    auto start = std::chrono::steady_clock::now();
    Completion c = link.peek(peer, false, &post);
    CHILD_CHECK(c.state == Completion::State::Failed && c.fault == tl::Fault::Timeout,
                "peek without a post: " + c.error);
    CHILD_CHECK(waited(start) >= 0.3, fmt::format("peek failed after {} s", waited(start)));
    CHILD_CHECK(c.error.find("not published") != std::string::npos, c.error);
    child.barrier();  // both peeks are over before anything is posted
    // Fill the ring of two slots; the peer never releases, so a third acquire times out.
    for (int i = 0; i < 2; ++i)
      checkDone(link.post(peer, std::as_bytes(std::span("x", 1))), "post");
    std::span<std::byte> slot;
    start = std::chrono::steady_clock::now();
    c = link.acquire(peer, &slot);
    CHILD_CHECK(c.state == Completion::State::Failed && c.fault == tl::Fault::Timeout,
                "acquire on a full ring: " + c.error);
    CHILD_CHECK(waited(start) >= 0.3, fmt::format("acquire failed after {} s", waited(start)));
    CHILD_CHECK(c.error.find("not yet released") != std::string::npos, c.error);
    child.barrier();
  });
  ASSERT_FALSE(g.timedOut) << g.summary();
  for (const ChildResult& r : g.ranks) EXPECT_TRUE(r.finished && r.failure.empty()) << g.summary();
}

std::vector<std::string> devShm() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// kill -9 at random moments of set-up and teardown (the default link, memfd, never names a
// file): nothing new stays in /dev/shm. (UCX's posix domain would: it names the file for the
// whole of ucp_mem_map, see shm_link.hpp.)
TEST(ShmLink, KillNineDuringSetUpLeavesNothing) {
  const auto before = devShm();
  for (int run = 0; run < 8; ++run) {
    const GroupResult g = runGroup(2, 60s, [run](Child& child) {
      std::mt19937_64 rng(static_cast<std::uint64_t>(run) * 31 + 7);
      const auto fuse = std::chrono::microseconds(rng() % 20000);
      if (child.rank() == run % 2) {
        std::thread([fuse] {
          std::this_thread::sleep_for(fuse);
          ::kill(::getpid(), SIGKILL);
        }).detach();
      }
      for (int i = 0; i < 1000; ++i) {
        ShmLink link(child.rank(), {0, 0}, child.allGather());
      }
    });
    EXPECT_FALSE(g.timedOut) << g.summary();
    EXPECT_EQ(g.ranks[static_cast<std::size_t>(run % 2)].signal, SIGKILL) << g.summary();
  }
  // Files other processes create for a moment are gone again; a leak stays. Open MPI's vader
  // BTL segments belong to MPI jobs running beside this test (the MPI suite, benchmarks) and
  // live as long as those jobs: never this test's, which runs no MPI. So do coll_hccl's own
  // progress boards (coll_hccl.<pid>.*), which the engine of an MPI job creates, never ShmLink
  // (its named segments, on UCX's posix domain, are UCX's files).
  std::this_thread::sleep_for(500ms);
  const auto after = devShm();
  std::vector<std::string> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  std::erase_if(added, [](const std::string& f) {
    const std::string name = std::filesystem::path(f).filename().string();
    return name.starts_with("vader_segment.") || name.starts_with("coll_hccl.");
  });
  for (const auto& f : added) EXPECT_FALSE(exists(f)) << "left in /dev/shm: " << f;
}

// A rank maps only a segment that lists its own process: a record pointing it at another job's
// segment (here the other server's, a perfectly valid segment with a matching token) is refused,
// as is a record whose token differs from the segment's (a stale or reused descriptor).
void forged(const std::function<void(std::vector<tl::shm::Record>&)>& forge,
            const std::string& expect) {
  const GroupResult g = runGroup(4, 60s, [&](Child& child) {
    tl::AllGather honest = child.allGather();
    int calls = 0;
    // Rank 1 receives forged records in the second all-gather (the records themselves).
    tl::AllGather tampered = [&](std::span<const std::byte> mine, std::span<std::byte> all) {
      honest(mine, all);
      if (child.rank() != 1 || ++calls != 2) return;
      const std::size_t each = all.size() / 4;
      std::vector<tl::shm::Record> records;
      for (int q = 0; q < 4; ++q) {
        records.push_back(
            tl::shm::decode(all.subspan(static_cast<std::size_t>(q) * each, each), q));
      }
      forge(records);
      const auto blob = tl::shm::encode(records[0]);
      CHILD_CHECK(blob.size() <= each, "forged record too long");
      std::copy(blob.begin(), blob.end(), all.begin());
    };
    try {
      ShmLink link(child.rank(), {0, 0, 1, 1}, tampered);
    } catch (const tl::UcxError& e) {
      child.report(e.what());
      const std::string what = e.what();
      if (child.rank() < 2) CHILD_CHECK(what.find(expect) != std::string::npos, what);
      return;
    }
    CHILD_CHECK(false, "set-up went through with a forged record");
  });
  EXPECT_TRUE(g.ok()) << g.summary();
}

TEST(ShmLink, RefusesAnotherJobsSegment) {
  forged([](std::vector<tl::shm::Record>& r) { r[0] = r[2]; }, "does not list this process");
}

TEST(ShmLink, RefusesASegmentWithAnotherToken) {
  forged([](std::vector<tl::shm::Record>& r) { r[0].token[3] ^= 0x40; }, "is not this job's");
}

}  // namespace
}  // namespace hccl::test
