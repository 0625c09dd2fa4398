// The verifier's interval maps (algorithms/provenance.hpp) against an element-by-element model:
// whatever form the runs are stored in (plain, ramps, ramps with gaps), what read(),
// firstUninit() and markSets() give must be what the elements written hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "algorithms/provenance.hpp"

namespace hccl::algo::prov {
namespace {

// One element: never written, or the set, the flags and the input index it holds.
struct Elem {
  bool written = false;
  std::uint32_t set = 0;
  std::uint8_t flags = 0;
  std::int64_t index = 0;
  bool operator==(const Elem&) const = default;
};

using Model = std::vector<Elem>;

// Pieces of read(off, count) as elements (element i of a piece holds input index i + delta).
Model expand(const std::vector<Piece>& pieces, std::uint64_t count) {
  Model out(count);
  std::uint64_t at = 0;
  for (const Piece& p : pieces) {
    EXPECT_EQ(p.begin, at) << "pieces must cover the range in order";
    EXPECT_LT(p.begin, p.end);
    for (std::uint64_t i = p.begin; i < p.end && i < count; ++i)
      if (!p.v.uninit())
        out[i] = {true, p.v.set, p.v.flags, static_cast<std::int64_t>(i) + p.v.delta};
    at = p.end;
  }
  EXPECT_EQ(at, count);
  for (std::size_t k = 1; k < pieces.size(); ++k)
    EXPECT_FALSE(pieces[k - 1].v.uninit() && pieces[k].v.uninit())
        << "never-written pieces next to each other at " << pieces[k].begin;
  return out;
}

// The map's write of pieces (deltas relative to off) applied to the model.
void apply(Model& m, std::uint64_t off, const std::vector<Piece>& pieces) {
  for (const Piece& p : pieces)
    for (std::uint64_t i = p.begin; i < p.end; ++i)
      m[off + i] = p.v.uninit()
                       ? Elem{}
                       : Elem{true, p.v.set, p.v.flags, static_cast<std::int64_t>(i) + p.v.delta};
}

// absorbDead on the model: a dead element continues its live left neighbour's run (the first
// live element's before it), never-written if that one is.
void absorb(Model& m, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& live) {
  std::vector<bool> isLive(m.size(), false);
  for (const auto& [b, e] : live)
    for (std::uint64_t x = b; x < e && x < m.size(); ++x) isLive[x] = true;
  const auto firstLive = std::find(isLive.begin(), isLive.end(), true);
  if (firstLive == isLive.end()) {
    m.assign(m.size(), Elem{});
    return;
  }
  const auto lo = static_cast<std::uint64_t>(firstLive - isLive.begin());
  const auto shifted = [](Elem e, std::int64_t by) {
    if (e.written) e.index += by;
    return e;
  };
  for (std::uint64_t x = 0; x < lo; ++x)
    m[x] = shifted(m[lo], static_cast<std::int64_t>(x) - static_cast<std::int64_t>(lo));
  for (std::uint64_t x = lo + 1; x < m.size(); ++x)
    if (!isLive[x]) m[x] = shifted(m[x - 1], 1);
}

void expectSame(const IntervalMap& map, const Model& m, std::mt19937& rng, const char* after) {
  ASSERT_EQ(expand(map.read(0, m.size()), m.size()), m) << "after " << after;
  for (int t = 0; t < 8; ++t) {
    const std::uint64_t off = rng() % m.size(), count = rng() % (m.size() - off + 1);
    const Model want(m.begin() + static_cast<std::ptrdiff_t>(off),
                     m.begin() + static_cast<std::ptrdiff_t>(off + count));
    ASSERT_EQ(expand(map.read(off, count), count), want)
        << after << " read " << off << "+" << count;
    // The first never-written elements of the range, as one run.
    std::optional<std::pair<std::uint64_t, std::uint64_t>> gap;
    for (std::uint64_t i = 0; i < count; ++i) {
      if (want[i].written) {
        if (gap) break;
        continue;
      }
      if (!gap) gap.emplace(i, i);
      gap->second = i + 1;
    }
    const auto u = map.firstUninit(off, count);
    ASSERT_EQ(u.has_value(), gap.has_value()) << after << " firstUninit " << off << "+" << count;
    if (u) {
      EXPECT_EQ(u->begin, gap->first) << after << " firstUninit " << off << "+" << count;
      EXPECT_EQ(u->end, gap->second) << after << " firstUninit " << off << "+" << count;
    }
  }
  std::vector<bool> marks(256, false), want(256, false);
  map.markSets(marks);
  for (const Elem& e : m)
    if (e.written && e.set < want.size()) want[e.set] = true;
  EXPECT_EQ(marks, want) << "after " << after;
}

// Blocks of c elements written at a stride (every `stride` blocks from `first`), their sets and
// indices stepping evenly, in one of several orders: what builds ramps, with gaps or without.
TEST(ProvenanceMaps, RandomWritesReadBackAsTheElementsHold) {
  std::mt19937 rng(20261207);
  for (int round = 0; round < 2000; ++round) {
    const std::uint64_t size = 40 + rng() % 120;
    IntervalMap map(size);
    Model m(size);
    for (int op = 0; op < 12; ++op) {
      const auto kind = static_cast<unsigned>(rng() % 10);
      if (kind < 6) {  // strided blocks
        const std::uint64_t c = 1 + rng() % 3, stride = 1 + rng() % 4;
        const std::uint64_t first = rng() % size, blocks = 2 + rng() % 12;
        const auto set0 = static_cast<std::uint32_t>(rng() % 200);
        const std::int64_t setStep = static_cast<std::int64_t>(rng() % 5) - 2;
        const std::int64_t delta0 = static_cast<std::int64_t>(rng() % 50) - 25;
        const std::int64_t deltaStep = rng() % 2 ? -static_cast<std::int64_t>(c * stride)
                                                 : static_cast<std::int64_t>(rng() % 7) - 3;
        const auto flags = static_cast<std::uint8_t>(rng() % 3 == 0 ? Value::kOrdered : 0);
        std::vector<std::uint64_t> order;
        for (std::uint64_t b = 0; b < blocks; ++b)
          if (first + (b * stride + 1) * c <= size) order.push_back(b);
        switch (rng() % 4) {
          case 0:
            break;
          case 1:
            std::reverse(order.begin(), order.end());
            break;
          case 2:
            std::shuffle(order.begin(), order.end(), rng);
            break;
          default:  // odd blocks, then even ones
            std::stable_partition(order.begin(), order.end(), [](auto b) { return b % 2 == 1; });
        }
        for (std::uint64_t b : order) {
          const Value v{static_cast<std::uint32_t>(set0 + static_cast<std::int64_t>(b) * setStep),
                        delta0 + static_cast<std::int64_t>(b) * deltaStep, flags};
          const std::vector<Piece> ps{{0, c, v}};
          map.write(first + b * stride * c, ps);
          apply(m, first + b * stride * c, ps);
        }
      } else if (kind < 8) {  // a copy of one range over another (never-written parts too)
        const std::uint64_t count = 1 + rng() % (size / 2);
        const std::uint64_t from = rng() % (size - count + 1), to = rng() % (size - count + 1);
        const std::vector<Piece> ps = map.read(from, count);
        map.write(to, ps);
        apply(m, to, ps);
      } else if (kind < 9) {  // a plain value, sometimes never-written
        const std::uint64_t count = 1 + rng() % 9, off = rng() % (size - count + 1);
        const Value v = rng() % 3 == 0 ? Value{}
                                       : Value{static_cast<std::uint32_t>(rng() % 200),
                                               static_cast<std::int64_t>(rng() % 40), 0};
        map.write(off, {{0, count, v}});
        apply(m, off, {{0, count, v}});
      } else {  // dead elements folded into their live neighbours
        std::vector<std::pair<std::uint64_t, std::uint64_t>> live;
        for (std::uint64_t x = rng() % 10; x < size; x += 1 + rng() % 20) {
          const std::uint64_t e = std::min(size, x + 1 + rng() % 12);
          live.emplace_back(x, e);
          x = e;
        }
        map.absorbDead(live);
        absorb(m, live);
      }
      expectSame(map, m, rng, kind < 6 ? "strided blocks" : kind < 9 ? "copy or fill" : "fold");
      if (testing::Test::HasFatalFailure()) return;
    }
  }
}

// NHR's AllGather in place (one rank's output, p blocks of c elements): at step k, h = 2^k, the
// rank holds the blocks r - 2h*j and receives r - h, r - 3h, ... in that order. Stored as ramps
// with gaps, its output is a few runs at every step, where plain runs would be p / h.
TEST(ProvenanceMaps, BinomialAllGatherStaysAFewRuns) {
  constexpr std::uint64_t p = 64;
  std::mt19937 rng(7);
  for (std::uint64_t c : {1u, 3u})
    for (std::uint64_t r : {0u, 5u, 62u, 63u}) {
      IntervalMap map(p * c);
      Model m(p * c);
      const auto put = [&](std::uint64_t s) {  // block s holds rank s's c input elements
        const std::vector<Piece> ps{{0, c, Value{static_cast<std::uint32_t>(s + 100), 0, 0}}};
        map.write(s * c, ps);
        apply(m, s * c, ps);
      };
      put(r);
      for (std::uint64_t h = p / 2; h >= 1; h /= 2) {
        for (std::uint64_t j = 0; j < p / (2 * h); ++j) put((r + 2 * p - h - 2 * h * j % p) % p);
        expectSame(map, m, rng, "a step");
        EXPECT_LE(map.runs(), 6u) << "c " << c << " rank " << r << " h " << h;
      }
      for (const Elem& e : m) EXPECT_TRUE(e.written);
    }
}

// H-D_R's AllGather (recursive doubling, one rank's output) with blocks of s % 3 elements, the
// sweep's uneven blocks: at step k, h = 2^k, the rank holds its aligned group of h blocks and
// receives its partner's group, as one copy of the partner's pieces. The sizes repeat every
// three blocks (0, 1, 2) and each block holds another rank, so the held blocks are compound
// ramps (a block and the next one as its tail): a few runs at every step, where plain runs
// were one a non-empty block (42 at the last step here; 2p/3 a rank, 413 MB at 4096 ranks).
TEST(ProvenanceMaps, UnevenGatheredBlocksStayAFewRuns) {
  constexpr std::uint64_t p = 64;
  std::vector<std::uint64_t> off(p + 1, 0);
  for (std::uint64_t s = 0; s < p; ++s) off[s + 1] = off[s] + s % 3;
  std::mt19937 rng(11);
  for (std::uint64_t r : {0u, 1u, 2u, 5u, 31u, 62u, 63u}) {
    IntervalMap map(off[p]);
    Model m(off[p]);
    const auto put = [&](std::uint64_t first, std::uint64_t count) {  // blocks [first, +count)
      std::vector<Piece> ps;
      for (std::uint64_t s = first; s < first + count; ++s)
        if (s % 3 != 0)  // block s holds rank s's elements, relative to the copy's start
          ps.push_back({off[s] - off[first], off[s + 1] - off[first],
                        Value{static_cast<std::uint32_t>(s + 100),
                              -static_cast<std::int64_t>(off[s] - off[first]), 0}});
      if (ps.empty()) return;
      const std::uint64_t at = off[first] + ps.front().begin, shift = ps.front().begin;
      for (Piece& piece : ps) {
        piece.begin -= shift;
        piece.end -= shift;
        piece.v.delta += static_cast<std::int64_t>(shift);
      }
      map.write(at, ps);
      apply(m, at, ps);
    };
    put(r, 1);
    for (std::uint64_t h = 1; h < p; h *= 2) {
      put((r ^ h) & ~(h - 1), h);
      expectSame(map, m, rng, "a step");
      if (testing::Test::HasFatalFailure()) return;
      EXPECT_LE(map.runs(), 8u) << "rank " << r << " h " << h;
    }
    for (const Elem& e : m) EXPECT_TRUE(e.written);
  }
}

}  // namespace
}  // namespace hccl::algo::prov
