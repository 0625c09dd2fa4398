// Forked ranks exchange data over both link classes through the UCX transport.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "fork_group.hpp"
#include "patterns.hpp"
#include "ucx_checks.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;
using tl::Completion;
using tl::IoVec;
using tl::Tag;

constexpr auto kTransferLimit = 20s;

tl::UcxOptions testOptions() {
  tl::UcxOptions o;
  o.timeout = 10s;
  return o;
}

// Splits [0, n) of buf into three pieces, the middle one empty, cut at `cut` (clamped).
std::vector<IoVec> threePieces(std::vector<std::byte>& buf, std::size_t cut) {
  cut = std::min(cut, buf.size());
  return {{buf.data(), cut}, {buf.data() + cut, 0}, {buf.data() + cut, buf.size() - cut}};
}

// Every rank sends every size to every rank (itself included), once contiguous and once as an
// iov whose pieces differ from the receiver's, then checks every byte.
void allPairsAllSizes(Child& child, const std::vector<int>& serverOf, bool eager) {
  const std::vector<std::size_t> sizes = {0, 1, 7, 4096, 65537, (1u << 20) + 5};
  tl::UcxOptions options = testOptions();
  options.eagerEndpoints = eager;
  tl::UcxTransport t(child.rank(), serverOf, child.allGather(), options);
  for (int q = 0; q < t.size(); ++q) checkLink(child, t, q, serverOf);
  child.report(t.describe());

  const auto me = static_cast<std::uint64_t>(t.rank());
  struct Xfer {
    int peer;
    std::size_t size;
    Tag tag;
    std::vector<std::byte> buf;
    std::vector<IoVec> iov;
    Completion done;
  };
  std::vector<Xfer> sends;
  std::vector<Xfer> recvs;
  sends.reserve(sizes.size() * 2 * static_cast<std::size_t>(t.size()));
  recvs.reserve(sends.capacity());
  for (int q = 0; q < t.size(); ++q) {
    for (std::uint32_t k = 0; k < sizes.size(); ++k) {
      for (std::uint32_t asIov = 0; asIov < 2; ++asIov) {
        const Tag tag{7, k, asIov};
        const auto peer = static_cast<std::uint64_t>(q);
        Xfer& s =
            sends.emplace_back(Xfer{q, sizes[k], tag, std::vector<std::byte>(sizes[k]), {}, {}});
        fillPattern(s.buf, seedOf({me, peer, k, asIov}));
        s.iov = asIov ? threePieces(s.buf, sizes[k] / 3)
                      : std::vector<IoVec>{{s.buf.data(), s.buf.size()}};
        Xfer& r =
            recvs.emplace_back(Xfer{q, sizes[k], tag, std::vector<std::byte>(sizes[k]), {}, {}});
        r.iov = asIov ? threePieces(r.buf, sizes[k] / 2 + 1)
                      : std::vector<IoVec>{{r.buf.data(), r.buf.size()}};
      }
    }
  }
  for (auto& r : recvs) t.recv(r.peer, r.iov, r.tag, &r.done);
  for (auto& s : sends) t.send(s.peer, s.iov, s.tag, &s.done);
  std::vector<Completion*> all;
  for (auto& x : sends) all.push_back(&x.done);
  for (auto& x : recvs) all.push_back(&x.done);
  waitAll(t, all, kTransferLimit);

  for (const auto& s : sends) {
    CHILD_CHECK(s.done.state == Completion::State::Done, s.done.error);
  }
  for (const auto& r : recvs) {
    CHILD_CHECK(r.done.state == Completion::State::Done, r.done.error);
    CHILD_CHECK(r.done.bytes == r.size, fmt::format("{} bytes from {}", r.done.bytes, r.peer));
    const auto bad = firstMismatch(
        r.buf, seedOf({static_cast<std::uint64_t>(r.peer), me, r.tag.seq, r.tag.msg}));
    CHILD_CHECK(!bad, fmt::format("{} bytes from rank {} (iov {}): byte {} differs", r.size, r.peer,
                                  r.tag.msg, bad.value_or(0)));
  }
  child.barrier();  // nobody tears down while a peer still needs it
}

TEST(UcxExchange, AllPairsAllSizesFourRanksTwoServers) {
  const std::vector<int> serverOf = {0, 0, 1, 1};
  const auto r = runGroup(4, 40s, [&](Child& c) { allPairsAllSizes(c, serverOf, false); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

// With every endpoint created during construction instead of on first use.
TEST(UcxExchange, AllPairsAllSizesThreeRanksThreeServersEagerEndpoints) {
  const std::vector<int> serverOf = {5, 9, 2};  // any ids; every pair is RoCE-class
  const auto r = runGroup(3, 40s, [&](Child& c) { allPairsAllSizes(c, serverOf, true); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

// 64 MiB one way and back over one link (contiguous out, iov back), checked and timed.
void largeRoundTrip(Child& child, const std::vector<int>& serverOf, bool intraRoce,
                    const char* label) {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  tl::UcxOptions options = testOptions();
  options.intraRoce = intraRoce;
  tl::UcxTransport t(child.rank(), serverOf, child.allGather(), options);
  const int peer = 1 - t.rank();
  checkLink(child, t, peer, serverOf, intraRoce);

  std::vector<std::byte> out(kBytes);
  std::vector<std::byte> in(kBytes);
  double best = 1e9;
  for (std::uint32_t round = 0; round < 2; ++round) {
    const auto mine = seedOf({static_cast<std::uint64_t>(t.rank()), round});
    const auto theirs = seedOf({static_cast<std::uint64_t>(peer), round});
    fillPattern(out, mine);
    std::fill(in.begin(), in.end(), std::byte{0});
    child.barrier();
    // Rank 0 sends contiguously and receives into three pieces; rank 1 the other way round.
    const auto pieces = threePieces(t.rank() == 0 ? in : out, kBytes / 3);
    const IoVec whole{(t.rank() == 0 ? out : in).data(), kBytes};
    Completion first;
    Completion second;
    const auto start = std::chrono::steady_clock::now();
    if (t.rank() == 0) {
      t.send(peer, std::span(&whole, 1), Tag{1, round, 0}, &first);
      t.recv(peer, pieces, Tag{1, round, 1}, &second);
    } else {
      t.recv(peer, std::span(&whole, 1), Tag{1, round, 0}, &first);
      waitAll(t, std::vector<Completion*>{&first}, kTransferLimit);
      t.send(peer, pieces, Tag{1, round, 1}, &second);
    }
    waitAll(t, std::vector<Completion*>{&first, &second}, kTransferLimit);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, seconds / 2);
    CHILD_CHECK(first.state == Completion::State::Done, first.error);
    CHILD_CHECK(second.state == Completion::State::Done, second.error);
    const auto bad = firstMismatch(in, theirs);
    CHILD_CHECK(!bad, fmt::format("64 MiB from rank {}: byte {} differs", peer, bad.value_or(0)));
  }
  if (t.rank() == 0) {
    child.report(
        fmt::format("{}: 64 MiB one way in {:.1f} ms = {:.2f} GB/s (round trip / 2, best of 2, "
                    "informational)",
                    label, best * 1e3, static_cast<double>(kBytes) / best / 1e9));
  }
  child.barrier();
}

TEST(UcxExchange, Large64MiBOverHccs) {
  const auto r = runGroup(2, 40s, [](Child& c) { largeRoundTrip(c, {0, 0}, false, "HCCS"); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

TEST(UcxExchange, Large64MiBOverRoce) {
  const auto r = runGroup(2, 40s, [](Child& c) { largeRoundTrip(c, {0, 1}, false, "RoCE"); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

// HCCL_INTRA_ROCE_ENABLE: same server, but the RoCE class (tcp here) carries it.
TEST(UcxExchange, IntraRoceSendsSameServerTrafficOverTheNetwork) {
  const auto r = runGroup(2, 40s, [](Child& c) {
    largeRoundTrip(c, {0, 0}, true, "RoCE (intraRoce, same server)");
  });
  EXPECT_TRUE(r.ok()) << r.summary();
}

}  // namespace
}  // namespace hccl::test

namespace hccl::test {
namespace {

// Every rank sends every other rank one message per (comm, seq, msg) of a grid whose tags differ
// in one field at a time (including values at each field's top), posting sends and receives in
// different random orders, several senders into one worker at once. Each payload encodes its own
// identity, so any cross-matching between comms, seqs, messages or sources shows.
void manyTagsOutOfOrder(Child& child, const std::vector<int>& serverOf) {
  const std::vector<std::uint32_t> comms = {0, 1, 4095};
  const std::vector<std::uint32_t> seqs = {0, 1, 2, 65535};
  const std::vector<std::uint32_t> msgs = {0, 1, 2, 3, 65535};
  tl::UcxTransport t(child.rank(), serverOf, child.allGather(), testOptions());
  const auto me = static_cast<std::uint64_t>(t.rank());

  struct Xfer {
    int peer;
    Tag tag;
    std::vector<std::byte> buf;
    Completion done;
  };
  auto sizeOf = [](const Tag& tag) -> std::size_t {
    // Mostly eager, some rendezvous, some empty.
    return (tag.msg == 3) ? 200000 : (tag.msg == 2) ? 0 : 100 + tag.seq % 7 + tag.comm % 5;
  };
  std::vector<Xfer> sends;
  std::vector<Xfer> recvs;
  for (int q = 0; q < t.size(); ++q) {
    if (q == t.rank()) continue;
    for (auto c : comms) {
      for (auto s : seqs) {
        for (auto m : msgs) {
          const Tag tag{c, s, m};
          Xfer& x = sends.emplace_back(Xfer{q, tag, std::vector<std::byte>(sizeOf(tag)), {}});
          fillPattern(x.buf, seedOf({me, static_cast<std::uint64_t>(q), c, s, m}));
          recvs.emplace_back(Xfer{q, tag, std::vector<std::byte>(sizeOf(tag)), {}});
        }
      }
    }
  }
  std::mt19937 rng(static_cast<unsigned>(1000 + t.rank()));
  std::shuffle(sends.begin(), sends.end(), rng);
  std::shuffle(recvs.begin(), recvs.end(), rng);

  // Half the receives before any send, the rest interleaved with the sends.
  const std::size_t early = recvs.size() / 2;
  for (std::size_t i = 0; i < early; ++i) {
    IoVec v{recvs[i].buf.data(), recvs[i].buf.size()};
    t.recv(recvs[i].peer, std::span(&v, 1), recvs[i].tag, &recvs[i].done);
  }
  for (std::size_t i = 0; i < sends.size(); ++i) {
    IoVec v{sends[i].buf.data(), sends[i].buf.size()};
    t.send(sends[i].peer, std::span(&v, 1), sends[i].tag, &sends[i].done);
    if (early + i < recvs.size()) {
      Xfer& r = recvs[early + i];
      IoVec w{r.buf.data(), r.buf.size()};
      t.recv(r.peer, std::span(&w, 1), r.tag, &r.done);
    }
    if (i % 16 == 0) t.progress();
  }
  std::vector<Completion*> all;
  for (auto& x : sends) all.push_back(&x.done);
  for (auto& x : recvs) all.push_back(&x.done);
  waitAll(t, all, kTransferLimit);

  for (const auto& s : sends) CHILD_CHECK(s.done.state == Completion::State::Done, s.done.error);
  for (const auto& r : recvs) {
    CHILD_CHECK(r.done.state == Completion::State::Done, r.done.error);
    const auto bad = firstMismatch(
        r.buf, seedOf({static_cast<std::uint64_t>(r.peer), me, r.tag.comm, r.tag.seq, r.tag.msg}));
    CHILD_CHECK(!bad, fmt::format("from rank {} comm {} seq {} msg {}: byte {} differs "
                                  "(cross-matched)",
                                  r.peer, r.tag.comm, r.tag.seq, r.tag.msg, bad.value_or(0)));
  }
  child.report(fmt::format("{} sends and {} receives with distinct tags matched exactly",
                           sends.size(), recvs.size()));

  // Equal tags between one pair match in posting order, rendezvous and eager alike, whether the
  // receive is posted before the message arrives or after.
  const int next = (t.rank() + 1) % t.size();
  const int prev = (t.rank() + t.size() - 1) % t.size();
  const std::vector<std::size_t> sameTagSizes = {200000, 64, 200000, 64};
  std::vector<std::vector<std::byte>> out;
  std::vector<std::vector<std::byte>> in;
  for (std::size_t k = 0; k < sameTagSizes.size(); ++k) {
    out.emplace_back(sameTagSizes[k]);
    in.emplace_back(sameTagSizes[k]);
    fillPattern(out[k], seedOf({me, 77, k}));
  }
  std::vector<Completion> done(2 * sameTagSizes.size());
  auto postRecv = [&](std::size_t k) {
    const IoVec v{in[k].data(), in[k].size()};
    t.recv(prev, std::span(&v, 1), Tag{9, 9, 9}, &done[k]);
  };
  postRecv(0);
  postRecv(1);
  for (std::size_t k = 0; k < out.size(); ++k) {
    const IoVec v{out[k].data(), out[k].size()};
    t.send(next, std::span(&v, 1), Tag{9, 9, 9}, &done[out.size() + k]);
  }
  for (int i = 0; i < 1000; ++i) t.progress();
  postRecv(2);
  postRecv(3);
  waitAll(t, done, kTransferLimit);
  for (std::size_t k = 0; k < in.size(); ++k) {
    CHILD_CHECK(done[k].state == Completion::State::Done, done[k].error);
    CHILD_CHECK(!firstMismatch(in[k], seedOf({static_cast<std::uint64_t>(prev), 77, k})),
                fmt::format("equal tags: receive {} got another message", k));
  }
  child.barrier();
}

TEST(UcxExchange, ManyTagsInFlightOutOfOrderFourRanks) {
  const std::vector<int> serverOf = {0, 0, 0, 1};  // three senders into one HCCS worker
  const auto r = runGroup(4, 40s, [&](Child& c) { manyTagsOutOfOrder(c, serverOf); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

TEST(UcxExchange, ManyTagsInFlightOutOfOrderOverRoceOnly) {
  const std::vector<int> serverOf = {0, 1, 2};  // two senders into one RoCE worker
  const auto r = runGroup(3, 40s, [&](Child& c) { manyTagsOutOfOrder(c, serverOf); });
  EXPECT_TRUE(r.ok()) << r.summary();
}

}  // namespace
}  // namespace hccl::test
