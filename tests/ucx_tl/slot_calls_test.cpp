// Small collectives on the shared-memory link's slots (engine::SlotProgram and SlotRun over
// ShmLink's broadcast channels) over forked ranks: long runs of back-to-back calls of random
// collective, schedule, size (up to posts of several slots), type, op and placement, with random
// delays on one rank, every result checked against an expectation computed from the inputs alone,
// and the bytes around every result checked untouched. The streamed runs (SlotProgram's
// streamFrom) post up to several times the channel's slots per step, so the ranks must interleave
// writing and reading, and Mesh's and the ring's ReduceScatter step at two ranks reduces each
// chunk straight from its slot (Step::fused): the expectation, reduced in rank order with the
// lower rank on the left, is what the general executor's Reduce op computes, bit for bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "algorithms/generators.hpp"
#include "algorithms/write_contract.hpp"
#include "coll_hccl/engine/float16.hpp"
#include "coll_hccl/engine/reduce_kernels.hpp"
#include "coll_hccl/engine/reduction.hpp"
#include "coll_hccl/engine/slot_executor.hpp"
#include "fork_group.hpp"
#include "patterns.hpp"
#include "ucx_tl/shm_link.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;
using algo::Problem;
using algo::RankSchedule;
using engine::SlotProgram;
using engine::SlotRun;

constexpr std::size_t kGuard = 64;
constexpr std::byte kGuardByte{0xA5};

// The bytes of an element that carry its value (long double: 10 of its 16).
std::size_t valueBytes(DataType t) {
  return t == DataType::LongDouble ? 10 : sizeOf(t);
}

// Element `seed`'s value: small integers for floating types, so that every sum and product is
// exact (whatever the order) and no NaN appears; any bits for integers; 0/1 for bool.
void element(DataType t, std::uint64_t seed, std::byte* out) {
  const std::uint64_t x = mix(seed);
  const int small = static_cast<int>(x % 9) - 4;  // -4..4: a product of three is exact in bf16
  std::memset(out, 0, sizeOf(t));
  switch (t) {
    case DataType::Float16: {
      const std::uint16_t h = engine::floatToHalf(static_cast<float>(small));
      std::memcpy(out, &h, 2);
      break;
    }
    case DataType::BFloat16: {
      const std::uint16_t h = engine::floatToBf16(static_cast<float>(small));
      std::memcpy(out, &h, 2);
      break;
    }
    case DataType::Float32: {
      const float f = static_cast<float>(small);
      std::memcpy(out, &f, 4);
      break;
    }
    case DataType::Float64: {
      const double d = small;
      std::memcpy(out, &d, 8);
      break;
    }
    case DataType::LongDouble: {
      const long double d = small;
      std::memcpy(out, &d, valueBytes(t));
      break;
    }
    case DataType::ComplexFloat: {
      const float f[2] = {static_cast<float>(small),
                          static_cast<float>(static_cast<int>(x >> 8) % 5 - 2)};
      std::memcpy(out, f, 8);
      break;
    }
    case DataType::ComplexDouble: {
      const double d[2] = {static_cast<double>(small),
                           static_cast<double>(static_cast<int>(x >> 8) % 5 - 2)};
      std::memcpy(out, d, 16);
      break;
    }
    case DataType::Bool:
      out[0] = std::byte(x & 1);
      break;
    default:
      std::memcpy(out, &x, sizeOf(t));
  }
}

// Rank r's input block of a call: elements (call, rank, index).
void fillInput(std::byte* out, DataType t, std::uint64_t count, std::uint64_t call, int rank,
               std::uint64_t first = 0) {
  for (std::uint64_t i = 0; i < count; ++i)
    element(t, seedOf({call, static_cast<std::uint64_t>(rank), first + i}), out + i * sizeOf(t));
}

enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast };

struct Shape {
  Coll coll = Coll::AllReduce;
  int generator = 0;  // index into the collective's generators
  DataType type = DataType::Byte;
  std::optional<ReduceOp> op;
  std::uint64_t count = 0;  // AllReduce, Broadcast: the whole; AllGather, ReduceScatter: per rank
  bool inPlace = false;
  std::uint32_t root = 0;
  auto operator<=>(const Shape&) const = default;
};

using Generator = RankSchedule (*)(const Problem&, std::uint32_t);
std::vector<Generator> generatorsOf(Coll c) {
  switch (c) {
    case Coll::AllReduce:
      return {algo::meshOneShotAllReduce, algo::ringAllReduce, algo::meshAllReduce};
    case Coll::AllGather:
      return {algo::meshAllGather, algo::ringAllGather};
    case Coll::ReduceScatter:
      return {algo::meshReduceScatter, algo::ringReduceScatter};
    case Coll::Broadcast:
      return {algo::meshOneShotBroadcast, algo::meshBroadcast, algo::ringBroadcast};
  }
  return {};
}

Problem problemOf(const Shape& s, std::uint32_t p) {
  switch (s.coll) {
    case Coll::AllReduce:
      return Problem::allReduce(p, s.count, s.inPlace);
    case Coll::AllGather:
      return Problem::allGather(p, s.count, s.inPlace);
    case Coll::ReduceScatter:
      return Problem::reduceScatter(p, s.count, s.inPlace);
    case Coll::Broadcast:
      return Problem::broadcast(p, s.count, s.root);
  }
  return {};
}

// Call `call`'s shape, equal on every rank.
Shape shapeOf(std::uint64_t call, std::uint32_t p, std::size_t payload, std::size_t window) {
  std::mt19937_64 g(seedOf({77, call}));
  Shape s;
  s.coll = static_cast<Coll>(g() % 4);
  s.generator = static_cast<int>(g() % generatorsOf(s.coll).size());
  const bool reduces = s.coll == Coll::AllReduce || s.coll == Coll::ReduceScatter;
  if (reduces) {
    do {
      s.type = static_cast<DataType>(g() % kNumDataTypes);
      s.op = static_cast<ReduceOp>(g() % kNumReduceOps);
    } while (!defined(*s.op, s.type));
  } else {
    s.type = static_cast<DataType>(g() % kNumDataTypes);
  }
  // What one post carries at most (`window` slots: a post larger than a slot is a pipeline of
  // several): the whole vector (one-shot, broadcast), a block (AllGather) or p blocks.
  const std::size_t most =
      window * (payload / sizeOf(s.type)) / (s.coll == Coll::ReduceScatter ? p : 1);
  const std::uint64_t x = g();
  s.count = x % 8 == 0 ? most : 1 + (x >> 8) % std::max<std::size_t>(most, 1);
  s.inPlace = s.coll != Coll::Broadcast && g() % 3 == 0;
  s.root = static_cast<std::uint32_t>(g() % p);
  return s;
}

// The program of a shape on every rank alike, or none when the schedules do not fit the slots.
struct Compiled {
  bool slots = false;
  SlotProgram program;
  std::uint64_t scratch = 0;
};

// The expected result (outSize elements) from the inputs alone.
std::vector<std::byte> expected(const Shape& s, std::uint32_t p, int me, std::uint64_t call) {
  const std::size_t e = sizeOf(s.type);
  std::vector<std::byte> out;
  switch (s.coll) {
    case Coll::Broadcast:
      out.resize(s.count * e);
      fillInput(out.data(), s.type, s.count, call, static_cast<int>(s.root));
      return out;
    case Coll::AllGather:
      out.resize(p * s.count * e);
      for (std::uint32_t r = 0; r < p; ++r)
        fillInput(out.data() + r * s.count * e, s.type, s.count, call, static_cast<int>(r));
      return out;
    case Coll::AllReduce:
    case Coll::ReduceScatter: {
      const std::uint64_t total = s.coll == Coll::AllReduce ? s.count : s.count * p;
      const std::uint64_t first =
          s.coll == Coll::AllReduce ? 0 : s.count * static_cast<std::uint64_t>(me);
      const std::uint64_t n = s.coll == Coll::AllReduce ? total : s.count;
      out.resize(n * e);
      std::vector<std::byte> x(n * e);
      const engine::ReduceFn fn = engine::kernel(s.type, *s.op);
      fillInput(out.data(), s.type, n, call, 0, first);
      for (std::uint32_t r = 1; r < p; ++r) {  // rank order, the lower ranks on the left
        fillInput(x.data(), s.type, n, call, static_cast<int>(r), first);
        fn(out.data(), out.data(), x.data(), n);
      }
      return out;
    }
  }
  return out;
}

struct Totals {
  std::uint64_t run = 0, skipped = 0, waits = 0;
  std::uint64_t pipelined = 0;  // calls with a post spanning several slots
  std::uint64_t blocks = 0;     // calls with a block post
  std::uint64_t streamed = 0;   // calls with a streamed step
  std::uint64_t fused = 0;      // calls reducing chunks straight from the slots
  std::uint64_t merged = 0;     // calls whose ReduceScatter and AllGather stream as one
};

// Runs `calls` back-to-back calls; rank `slow` sleeps or spins at random points, before calls
// and while a call waits. Waits give the core away after a while (or at once with `yield`).
Totals run(Child& child, int p, std::uint64_t calls, bool yield, int slow, bool stream = false) {
  std::vector<int> serverOf(static_cast<std::size_t>(p), 0);
  tl::ShmOptions o;
  o.slotBytes = 1024;
  o.slotsPerChannel = 2;
  o.timeout = 60s;
  tl::ShmLink link(child.rank(), serverOf, child.allGather(), o);
  const int me = child.rank();
  const std::size_t payload = SlotProgram::payloadOf(link.slotBytes());
  const std::size_t window = link.slotsPerChannel();
  // Streamed: posts up to 5 windows long (10 slots), every one above a slot streamed.
  const std::size_t longest = stream ? 5 * window : window;
  std::vector<int> linkRank(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) linkRank[static_cast<std::size_t>(r)] = r;
  std::mt19937_64 rng(static_cast<std::uint64_t>(me) * 7919 + 5);
  auto delay = [&] {
    if (me != slow) return;
    const std::uint64_t x = rng();
    if (x % 4096 == 0) {
      std::this_thread::sleep_for(1ms);
    } else if (x % 64 == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(x % 40);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  };
  std::map<Shape, Compiled> programs;
  std::vector<std::byte> in, outBuf, scratch;
  Totals t;
  for (std::uint64_t call = 0; call < calls; ++call) {
    const Shape s = shapeOf(call, static_cast<std::uint32_t>(p), payload, longest);
    auto [it, fresh] = programs.try_emplace(s);
    Compiled& c = it->second;
    const Problem pb = problemOf(s, static_cast<std::uint32_t>(p));
    if (fresh) {
      const Generator gen = generatorsOf(s.coll)[static_cast<std::size_t>(s.generator)];
      std::vector<RankSchedule> all;
      std::vector<const RankSchedule*> ptrs;
      // As the engine generates them: in place, a schedule's intermediate data never lands in
      // the user's buffer (algorithms/write_contract.hpp).
      for (int r = 0; r < p; ++r)
        all.push_back(algo::withPrivateInput(pb, static_cast<std::uint32_t>(r), gen));
      for (const RankSchedule& r : all) ptrs.push_back(&r);
      std::string why;
      // Half the copy-only shapes send what exceeds a slot as blocks read with one copy (as the
      // engine does where the link has single copy), the rest through several slots; half of
      // those with blocks only below three slots (a single_copy range), streaming above.
      const bool blocks = (s.coll == Coll::Broadcast || s.coll == Coll::AllGather) &&
                          s.root % 2 == 0 && link.singleCopy() != tl::SingleCopy::None;
      const std::size_t blockBelow = blocks && s.root % 4 == 0 ? 3 * payload : SIZE_MAX;
      c.slots = SlotProgram::compile(ptrs, static_cast<std::uint32_t>(me), linkRank, sizeOf(s.type),
                                     payload, c.program, why, window, blocks ? payload + 1 : 0,
                                     stream ? payload + 1 : 0, blockBelow);
      c.scratch = algo::scratchCount(all[static_cast<std::size_t>(me)]);
    }
    if (!c.slots) {
      ++t.skipped;
      continue;
    }
    const std::size_t e = sizeOf(s.type);
    const auto u = static_cast<std::uint32_t>(p);
    // The rank's buffers as the layouts in schedule.hpp give them, guard bytes around.
    std::uint64_t inElems = 0, outElems = 0;
    switch (s.coll) {
      case Coll::AllReduce:
        inElems = outElems = s.count;
        break;
      case Coll::AllGather:
        inElems = s.count;
        outElems = u * s.count;
        break;
      case Coll::ReduceScatter:
        inElems = u * s.count;
        outElems = s.inPlace ? u * s.count : s.count;
        break;
      case Coll::Broadcast:
        outElems = s.count;
        break;
    }
    in.assign(inElems * e + 2 * kGuard, kGuardByte);
    outBuf.assign(outElems * e + 2 * kGuard, kGuardByte);
    scratch.assign(c.scratch * e + 1, std::byte{0});
    std::byte* inp = in.data() + kGuard;
    std::byte* outp = outBuf.data() + kGuard;
    switch (s.coll) {
      case Coll::AllReduce:
      case Coll::ReduceScatter:
        fillInput(s.inPlace ? outp : inp, s.type, inElems, call, me);
        break;
      case Coll::AllGather:
        fillInput(s.inPlace ? outp + static_cast<std::size_t>(me) * s.count * e : inp, s.type,
                  s.count, call, me);
        break;
      case Coll::Broadcast:
        if (static_cast<std::uint32_t>(me) == s.root) fillInput(outp, s.type, s.count, call, me);
        break;
    }
    std::optional<engine::Reduction> red;
    if (s.op) red.emplace(engine::Reduction::predefined(s.type, *s.op));
    std::byte* const bufs[3] = {s.inPlace || s.coll == Coll::Broadcast ? nullptr : inp, outp,
                                scratch.data()};
    delay();
    SlotRun runner;
    runner.begin(c.program, link, bufs, e, red ? &*red : nullptr, call);
    SlotRun::Result r = runner.poll();
    const auto giveUp = std::chrono::steady_clock::now() + 60s;  // a peer that failed
    for (unsigned spins = 0; r == SlotRun::Result::Pending; ++spins) {
      ++t.waits;
      CHILD_CHECK((spins & 1023) != 0 || std::chrono::steady_clock::now() < giveUp,
                  fmt::format("call {}: no progress for 60 s", call));
      delay();
      if (yield || spins > 256) std::this_thread::yield();
      r = runner.spin(16);
    }
    CHILD_CHECK(r == SlotRun::Result::Done, fmt::format("call {}: {}", call, runner.error()));
    const std::vector<std::byte> want = expected(s, u, me, call);
    const std::size_t resultElems = want.size() / e;
    for (std::size_t i = 0; i < resultElems; ++i)
      CHILD_CHECK(std::memcmp(outp + i * e, want.data() + i * e, valueBytes(s.type)) == 0,
                  fmt::format("call {} ({} x {}, collective {}, generator {}, in place {}): "
                              "element {} differs",
                              call, s.count, name(s.type), static_cast<int>(s.coll), s.generator,
                              s.inPlace, i));
    for (std::size_t i = 0; i < kGuard; ++i) {
      CHILD_CHECK(outBuf[i] == kGuardByte && outBuf[outBuf.size() - 1 - i] == kGuardByte,
                  fmt::format("call {}: a byte around the receive buffer changed", call));
      CHILD_CHECK(in[i] == kGuardByte && in[in.size() - 1 - i] == kGuardByte,
                  fmt::format("call {}: a byte around the send buffer changed", call));
    }
    // Beyond the result, an in-place ReduceScatter's input stays as it was.
    if (s.coll == Coll::ReduceScatter && s.inPlace) {
      std::vector<std::byte> rest(outElems * e);
      fillInput(rest.data(), s.type, outElems, call, me);
      CHILD_CHECK(
          std::memcmp(outp + s.count * e, rest.data() + s.count * e, (outElems - s.count) * e) == 0,
          fmt::format("call {}: in-place input beyond the result changed", call));
    }
    ++t.run;
    bool several = false, block = false, streamed = false, fused = false, merged = false;
    for (const SlotProgram::Step& st : c.program.steps) {
      several = several || st.postChunks > 1;
      block = block || st.block;
      streamed = streamed || st.stream;
      fused = fused || st.fused;
      merged = merged || st.merged;
      for (const SlotProgram::Recv& rv : st.recvs) block = block || rv.block;
    }
    t.pipelined += several;
    t.blocks += block;
    t.streamed += streamed;
    t.fused += fused;
    t.merged += merged;
  }
  child.report(fmt::format(
      "rank {}: {} calls on slots ({} with posts of several slots, {} with blocks), "
      "{} streamed, {} fused, {} merged, {} not for slots, {} waits",
      me, t.run, t.pipelined, t.blocks, t.streamed, t.fused, t.merged, t.skipped, t.waits));
  CHILD_CHECK(!stream || t.streamed > calls / (p == 2 ? 4 : 20),
              fmt::format("only {} of {} calls streamed", t.streamed, calls));
  // Fusing takes a ReduceScatter step at two ranks (Mesh's and the ring's AllReduce and
  // ReduceScatter); at three ranks those schedules do not run on slots.
  CHILD_CHECK(!stream || p != 2 || t.fused > calls / 20,
              fmt::format("only {} of {} calls reduced straight from the slots", t.fused, calls));
  CHILD_CHECK(
      !stream || p != 2 || t.merged > calls / 50,
      fmt::format("only {} of {} calls merged ReduceScatter and AllGather", t.merged, calls));
  CHILD_CHECK(link.singleCopy() == tl::SingleCopy::None || t.blocks > calls / 100,
              fmt::format("only {} of {} calls read a block", t.blocks, calls));
  CHILD_CHECK(t.pipelined > calls / 50,
              fmt::format("only {} of {} calls posted more than a slot", t.pipelined, calls));
  // Every two-rank schedule fits the slots; on three ranks those that send each peer another
  // slice do not (ReduceScatter, rings), and the calls still there are the rest.
  CHILD_CHECK(t.run > (p == 2 ? calls * 9 / 10 : calls / 8),
              fmt::format("only {} of {} calls ran on slots", t.run, calls));
  return t;
}

// A post of kAlignFrom bytes or more starts its data on a cache line wherever the slot's payload
// starts (ShmLink's is 16 B into a line), and still fits the slot with payloadOf's chunk; smaller
// posts keep their data right behind the header, in the flag's line.
TEST(SlotCalls, LargePostsStartTheirDataOnALine) {
  alignas(64) static std::byte line[4 * SlotProgram::kLine];
  for (const std::size_t slotBytes : {std::size_t{1024}, std::size_t{4096}, std::size_t{65536}}) {
    const std::size_t payload = SlotProgram::payloadOf(slotBytes);
    EXPECT_EQ(payload % SlotProgram::kLine, 0u) << slotBytes;
    for (std::size_t start = 0; start < SlotProgram::kLine; start += 8) {
      const std::byte* const at = line + start;
      for (const std::size_t bytes : {SlotProgram::kAlignFrom, payload}) {
        const std::size_t off = SlotProgram::dataOffset(at, bytes);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(at + off) % SlotProgram::kLine, 0u)
            << slotBytes << " " << start << " " << bytes;
        EXPECT_GE(off, SlotProgram::kHeaderBytes);
        EXPECT_LE(off + bytes, slotBytes) << slotBytes << " " << start << " " << bytes;
      }
      EXPECT_EQ(SlotProgram::dataOffset(at, SlotProgram::kAlignFrom - 1),
                SlotProgram::kHeaderBytes);
    }
  }
}

// SlotProgram::endsWithPost picks the programs whose rank leaves right after its post, the one
// place the communicator fences a Barrier's last post (fastBuild): the gathered Barrier's root,
// at any root; never another rank, nor mesh Barrier's ranks (each reads after it posts). A
// Bcast's root ends with its post too, which is why the communicator asks for a Barrier as well.
// At 3-5 ranks the gathered Barrier must compile for the slots at all (every rank's signal one
// post that every other rank reads), else its sequence rule sends it to the general executor.
TEST(SlotCalls, OnlyTheGatheredBarriersRootEndsWithItsPost) {
  for (std::uint32_t p = 2; p <= 5; ++p) {
    std::vector<int> linkRank(p);
    for (std::uint32_t r = 0; r < p; ++r) linkRank[r] = static_cast<int>(r);
    const auto compiled = [&](const Generator& gen, const Problem& pb, std::uint32_t me) {
      std::vector<RankSchedule> all;
      std::vector<const RankSchedule*> ptrs;
      for (std::uint32_t r = 0; r < p; ++r) all.push_back(gen(pb, r));
      for (const RankSchedule& r : all) ptrs.push_back(&r);
      SlotProgram program;
      std::string why;
      EXPECT_TRUE(SlotProgram::compile(ptrs, me, linkRank, 1, 4096, program, why))
          << "p " << p << ": " << why;
      return program;
    };
    for (std::uint32_t root = 0; root < p; ++root) {
      Problem pb = Problem::barrier(p);
      pb.root = root;
      for (std::uint32_t me = 0; me < p; ++me) {
        EXPECT_EQ(compiled(algo::gatheredBarrier, pb, me).endsWithPost(), me == root)
            << "p " << p << " root " << root << " rank " << me;
        EXPECT_FALSE(compiled(algo::meshBarrier, Problem::barrier(p), me).endsWithPost()) << me;
        EXPECT_EQ(
            compiled(algo::meshOneShotBroadcast, Problem::broadcast(p, 8, root), me).endsWithPost(),
            me == root)
            << "p " << p << " root " << root << " rank " << me;
      }
    }
  }
}

TEST(SlotCalls, HundredThousandBackToBackCallsTwoRanks) {
  const GroupResult g = runGroup(2, 280s, [](Child& c) { run(c, 2, 100000, false, /*slow=*/1); });
  EXPECT_TRUE(g.ok()) << g.summary();
  for (const std::string& line : g.allReports()) std::cout << line << "\n";
}

// Streamed posts of up to 10 slots through channels of 2: a writer gets at most 2 slots ahead
// of its slowest reader, so both ranks of a step must write and read in turn.
TEST(SlotCalls, StreamedCallsTwoRanks) {
  const GroupResult g =
      runGroup(2, 280s, [](Child& c) { run(c, 2, 20000, false, /*slow=*/0, /*stream=*/true); });
  EXPECT_TRUE(g.ok()) << g.summary();
  for (const std::string& line : g.allReports()) std::cout << line << "\n";
}

// Three ranks: a step receives from two writers at once, each rank taking whichever chunk came.
TEST(SlotCalls, StreamedCallsThreeRanksYielding) {
  const GroupResult g =
      runGroup(3, 280s, [](Child& c) { run(c, 3, 20000, true, /*slow=*/1, /*stream=*/true); });
  EXPECT_TRUE(g.ok()) << g.summary();
  for (const std::string& line : g.allReports()) std::cout << line << "\n";
}

TEST(SlotCalls, BackToBackCallsThreeRanksYielding) {
  const GroupResult g = runGroup(3, 280s, [](Child& c) { run(c, 3, 20000, true, /*slow=*/2); });
  EXPECT_TRUE(g.ok()) << g.summary();
  for (const std::string& line : g.allReports()) std::cout << line << "\n";
}

}  // namespace
}  // namespace hccl::test
