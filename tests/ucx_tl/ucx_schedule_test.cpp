// Schedules from algorithms/ run unchanged on the UCX transport across forked processes and on
// the in-process transport, and give the same bits.
//
// The parent builds every rank's schedule once, runs those schedule objects through
// engine::runLocal (threads over the in-process fabric), and checks the outputs against an
// expectation computed here from the inputs alone. Then it forks the ranks; each child inherits
// the very same objects, runs its own rank's schedule with engine::Executor over a
// tl::UcxTransport with real buffers, and checks its output against that expectation and,
// bitwise, against the in-process output: the same schedule reduces in the same order, so even
// floating-point sums must agree to the last bit.
//
// With COLL_HCCL_TEST_LEVEL0=shm (the *_shm variants) each child carries its same-server traffic
// over the shared-memory link (tl::ShmTransport over a tl::ShmLink, with slots small enough that
// larger messages go by CMA) and reads receives in place where it can: the bits must not change.
//
// Integers (int32, wrapping sum) have an exact expectation. Floats (fp32) are drawn over several
// binades so that the order of reduction changes the rounding; their exact sum fits a double, and
// any order of the p - 1 additions stays within (p - 1) * 2^-24 * sum|x| of it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/hierarchical.hpp"
#include "algorithms/layout.hpp"
#include "coll_hccl/engine/executor.hpp"
#include "coll_hccl/engine/local_cluster.hpp"
#include "coll_hccl/engine/reduction.hpp"
#include "fork_group.hpp"
#include "patterns.hpp"
#include "ucx_checks.hpp"
#include "ucx_tl/shm_transport.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;
using algo::Algorithm;

constexpr auto kGroupDeadline = 50s;

// Element counts, 0 to 4 MiB of fp32; odd counts leave uneven blocks.
const std::vector<std::uint64_t> kCounts = {0, 1, 7, 1003, 65539, (1u << 20) + 3};

struct Case {
  std::string label;
  algo::Schedule schedule;  // every rank's; the same object runs on both transports
  DataType type = DataType::Int32;
  bool levelsMapped = false;                   // transfers of level 0 must ride HCCS, others RoCE
  std::vector<std::vector<std::byte>> inputs;  // per rank: Input, or Output's contents in place
  std::vector<std::vector<std::byte>> local;   // per rank: Output after runLocal
};

std::int32_t intValue(std::uint32_t rank, std::uint64_t i, std::uint64_t salt) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(mix(seedOf({salt, rank}) + i)));
}

// A 24-bit mantissa scaled into one of 11 binades in [2^-10, 1), either sign: sums of such
// values round differently in different orders, yet the exact sum of a few fits a double.
float floatValue(std::uint32_t rank, std::uint64_t i, std::uint64_t salt) {
  const std::uint64_t h = mix(seedOf({salt, rank, 1}) + i);
  const auto mantissa = static_cast<float>(h & 0xFFFFFF);  // < 2^24: exact
  const int exponent = -24 - static_cast<int>((h >> 24) % 11);
  const float v = std::ldexp(mantissa, exponent);
  return (h >> 40) & 1 ? -v : v;
}

template <typename T>
std::vector<std::byte> bytesOf(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T>
T elementAt(const std::vector<std::byte>& b, std::size_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}

std::vector<std::vector<std::byte>> makeInputs(DataType type, std::uint32_t p, std::uint64_t n,
                                               std::uint64_t salt) {
  std::vector<std::vector<std::byte>> out;
  for (std::uint32_t r = 0; r < p; ++r) {
    if (type == DataType::Int32) {
      std::vector<std::int32_t> v(n);
      for (std::uint64_t i = 0; i < n; ++i) v[i] = intValue(r, i, salt);
      out.push_back(bytesOf(v));
    } else {
      std::vector<float> v(n);
      for (std::uint64_t i = 0; i < n; ++i) v[i] = floatValue(r, i, salt);
      out.push_back(bytesOf(v));
    }
  }
  return out;
}

// Empty when `got` is the AllReduce sum of the case's inputs, else what differs. Computed from the
// inputs alone, independently of any schedule.
std::string checkSum(const Case& c, const std::vector<std::byte>& got) {
  const std::size_t es = sizeOf(c.type);
  const std::size_t n = c.inputs.front().size() / es;
  if (got.size() != n * es)
    return fmt::format("output has {} bytes, expected {}", got.size(), n * es);
  const std::size_t p = c.inputs.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (c.type == DataType::Int32) {
      std::uint32_t want = 0;
      for (const auto& in : c.inputs)
        want += static_cast<std::uint32_t>(elementAt<std::int32_t>(in, i));
      const auto have = static_cast<std::uint32_t>(elementAt<std::int32_t>(got, i));
      if (have != want) return fmt::format("element {}: {} expected {}", i, have, want);
    } else {
      double exact = 0, magnitude = 0;
      for (const auto& in : c.inputs) {
        const double x = elementAt<float>(in, i);
        exact += x;  // exact: the values span at most 35 bits
        magnitude += std::fabs(x);
      }
      const double have = elementAt<float>(got, i);
      const double bound = static_cast<double>(p - 1) * std::ldexp(magnitude, -24) * 1.0001;
      if (!(std::fabs(have - exact) <= bound))
        return fmt::format("element {}: {} expected {} within {}", i, have, exact, bound);
    }
  }
  return {};
}

// The first element where two outputs differ bitwise, as text; empty when equal.
std::string bitwiseDiff(const Case& c, const std::vector<std::byte>& ucx,
                        const std::vector<std::byte>& local) {
  if (ucx.size() != local.size())
    return fmt::format("UCX output has {} bytes, in-process {}", ucx.size(), local.size());
  const std::size_t es = sizeOf(c.type);
  for (std::size_t i = 0; i < ucx.size() / es; ++i) {
    if (std::memcmp(ucx.data() + i * es, local.data() + i * es, es) == 0) continue;
    if (c.type == DataType::Int32)
      return fmt::format("element {}: UCX {} in-process {}", i, elementAt<std::int32_t>(ucx, i),
                         elementAt<std::int32_t>(local, i));
    return fmt::format("element {}: UCX {:a} in-process {:a}", i, elementAt<float>(ucx, i),
                       elementAt<float>(local, i));
  }
  return {};
}

// Elements of an fp32 result that differ from the left-to-right sum in rank order: how much the
// bitwise comparison with the in-process run depends on the order of reduction.
std::size_t offRankOrder(const Case& c, const std::vector<std::byte>& got) {
  if (c.type != DataType::Float32) return 0;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size() / sizeof(float); ++i) {
    float fold = elementAt<float>(c.inputs[0], i);
    for (std::size_t r = 1; r < c.inputs.size(); ++r) fold += elementAt<float>(c.inputs[r], i);
    const float have = elementAt<float>(got, i);
    differ += std::memcmp(&fold, &have, sizeof fold) != 0 ? 1u : 0u;
  }
  return differ;
}

// Builds the case, runs it in-process and checks that run against the expectation.
Case prepare(std::string label, algo::Schedule schedule, DataType type, bool levelsMapped) {
  Case c;
  c.label = std::move(label);
  c.type = type;
  c.levelsMapped = levelsMapped;
  const algo::Problem& pb = schedule.problem;
  c.inputs = makeInputs(type, pb.ranks, pb.total(), mix(std::hash<std::string>{}(c.label)));
  std::vector<engine::RankBuffers> buffers(pb.ranks);
  for (std::uint32_t r = 0; r < pb.ranks; ++r) {
    if (pb.inPlace) {
      buffers[r].output = c.inputs[r];
    } else {
      buffers[r].input = c.inputs[r];
      buffers[r].output.assign(c.inputs[r].size(), std::byte{0x11});
    }
  }
  engine::LocalRunResult res = engine::runLocal(schedule, type, ReduceOp::Sum, std::move(buffers));
  EXPECT_TRUE(res.ok) << c.label << ": in-process run failed: " << res.error;
  c.schedule = std::move(schedule);
  c.local = std::move(res.outputs);
  c.local.resize(pb.ranks);
  for (std::uint32_t r = 0; r < pb.ranks && res.ok; ++r)
    EXPECT_EQ(checkSum(c, c.local[r]), "") << c.label << ", in-process rank " << r;
  return c;
}

// Every level-0 transfer of the rank's schedule goes to a same-server peer over the HCCS class,
// every level-1/2 transfer to another server over the RoCE class.
void checkLevels(const tl::Transport& t, const Case& c, const algo::RankSchedule& mine) {
  for (const algo::Step& st : mine.steps) {
    for (const algo::Transfer& x : st.xfers) {
      const tl::LinkClass want = x.level == 0 ? tl::LinkClass::Hccs : tl::LinkClass::Roce;
      const tl::LinkClass have = t.linkClass(static_cast<int>(x.peer));
      CHILD_CHECK(have == want, fmt::format("{}: rank {} level{} transfer to {} rides {}", c.label,
                                            t.rank(), x.level, x.peer, tl::className(have)));
    }
  }
}

bool overShm() {
  const char* v = std::getenv("COLL_HCCL_TEST_LEVEL0");
  return v != nullptr && std::string(v) == "shm";
}

// One child: every case's own-rank schedule over one UCX transport (with the shared-memory link
// for same-server peers when overShm()), checked.
void runOverUcx(Child& child, const std::vector<int>& serverOf, const std::vector<Case>& cases) {
  tl::UcxOptions options;
  options.timeout = 15s;  // a schedule that deadlocks fails instead of waiting for the deadline
  auto ucx = std::make_shared<tl::UcxTransport>(child.rank(), serverOf, child.allGather(), options);
  std::shared_ptr<tl::ShmTransport> shm;
  if (overShm()) {
    tl::ShmOptions so;
    so.slotBytes = 1024;
    so.slotsPerChannel = 2;
    so.timeout = 15s;
    shm = std::make_shared<tl::ShmTransport>(
        ucx, std::make_shared<tl::ShmLink>(child.rank(), serverOf, child.allGather(), so));
  }
  tl::Transport& t = shm ? static_cast<tl::Transport&>(*shm) : *ucx;
  std::uint64_t directReads = 0;
  const auto r = static_cast<std::size_t>(child.rank());
  // Where levels matter, UCX's own endpoint report must show shared memory to same-server peers
  // and a network transport to the others.
  if (std::ranges::any_of(cases, [](const Case& c) { return c.levelsMapped; }))
    for (int q = 0; q < t.size(); ++q)
      if (q != t.rank()) checkLink(child, *ucx, q, serverOf);
  engine::MessageCounters counters;
  std::uint32_t seq = 0;
  std::size_t reordered = 0, floats = 0;
  for (const Case& c : cases) {
    const algo::RankSchedule& mine = c.schedule.ranks[r];
    if (c.levelsMapped) checkLevels(t, c, mine);
    const std::size_t es = sizeOf(c.type);
    std::vector<std::byte> input, output;
    if (c.schedule.problem.inPlace) {
      output = c.inputs[r];
    } else {
      input = c.inputs[r];
      output.assign(input.size(), std::byte{0x11});
    }
    std::vector<std::byte> scratch(algo::scratchCount(mine) * es, std::byte{0xA5});
    engine::Bindings bind;
    bind.input = engine::Binding::contiguous(input.data(), input.size() / es);
    bind.output = engine::Binding::contiguous(output.data(), output.size() / es);
    bind.scratch = engine::Binding::contiguous(scratch.data(), scratch.size() / es);
    engine::Reduction red = engine::Reduction::predefined(c.type, ReduceOp::Sum);
    engine::Executor ex(t, es, &red);
    counters.reset(t.size());
    if (ex.start(mine, bind, counters, 1, ++seq)) ex.run();
    CHILD_CHECK(ex.done(), fmt::format("{}: {}", c.label, ex.error()));
    directReads += ex.stats().directReads;
    const std::string wrong = checkSum(c, output);
    CHILD_CHECK(wrong.empty(), fmt::format("{}: rank {}: {}", c.label, r, wrong));
    const std::string diff = bitwiseDiff(c, output, c.local[r]);
    CHILD_CHECK(diff.empty(), fmt::format("{}: rank {}: {}", c.label, r, diff));
    if (c.type == DataType::Float32) {
      reordered += offRankOrder(c, output);
      floats += output.size() / sizeof(float);
    }
  }
  if (r == 0)
    child.report(
        fmt::format("p={}: {} cases match the in-process runs bitwise; {} of {} fp32 "
                    "results differ from the rank-order sum",
                    t.size(), cases.size(), reordered, floats));
  if (shm) {
    const auto& n = shm->counters();
    child.report(
        fmt::format("rank {} over the shared-memory link: {} inline and {} block "
                    "messages, {} copied out of their slot, {} over UCX; {} receives "
                    "read in place",
                    r, n.inlineSends, n.blockSends, n.unexpected, n.viaBase, directReads));
    // Rank 0 sends to a same-server peer in every case here (flat rings and meshes start with
    // rank 1, which shares its server; compositions begin inside the server).
    CHILD_CHECK(r != 0 || (n.inlineSends > 0 && n.blockSends > 0),
                "rank 0 sent no inline or no block message over the link");
  }
  child.barrier();  // nobody tears down while a peer still needs it
}

void runGroupOf(const std::vector<int>& serverOf, const std::vector<Case>& cases) {
  if (::testing::Test::HasFailure()) return;  // the in-process runs already disagree
  const auto res = runGroup(static_cast<int>(serverOf.size()), kGroupDeadline,
                            [&](Child& c) { runOverUcx(c, serverOf, cases); });
  EXPECT_TRUE(res.ok()) << res.summary();
}

std::string caseLabel(const std::string& what, std::uint32_t p, DataType type, std::uint64_t n,
                      bool inPlace) {
  return fmt::format("{} p={} {} n={} {}", what, p, name(type), n,
                     inPlace ? "in place" : "out of place");
}

// Ranks spread over servers so that a flat schedule crosses both link classes from p = 3 on.
std::vector<int> mixedServers(std::uint32_t p) {
  std::vector<int> serverOf;
  for (std::uint32_t r = 0; r < p; ++r) serverOf.push_back(static_cast<int>(r / 2));
  return serverOf;
}

void flatAllReduce(Algorithm a) {
  const algo::GeneratorSpec* spec = algo::findGenerator(a, Collective::AllReduce);
  ASSERT_NE(spec, nullptr);
  for (std::uint32_t p : {2u, 3u, 4u}) {
    std::vector<Case> cases;
    for (std::uint64_t n : kCounts)
      for (bool inPlace : {false, true})
        for (DataType type : {DataType::Int32, DataType::Float32}) {
          const algo::Problem pb = algo::Problem::allReduce(p, n, inPlace);
          cases.push_back(prepare(caseLabel(std::string(algo::hcclName(a)), p, type, n, inPlace),
                                  algo::buildSchedule(spec->generate, pb), type, false));
        }
    runGroupOf(mixedServers(p), cases);
  }
}

TEST(UcxSchedule, RingAllReduce) {
  flatAllReduce(Algorithm::Ring);
}
TEST(UcxSchedule, RhdAllReduce) {
  flatAllReduce(Algorithm::Rhd);
}
TEST(UcxSchedule, NhrAllReduce) {
  flatAllReduce(Algorithm::NHR);
}
TEST(UcxSchedule, MeshAllReduce) {
  flatAllReduce(Algorithm::Mesh);
}

// The server of every rank, read off the layout's level-0 groups.
std::vector<int> serversOf(const algo::Layout& lay) {
  std::vector<int> serverOf(lay.ranks(), -1);
  const auto& servers = lay.groups(0);
  for (std::size_t s = 0; s < servers.size(); ++s)
    for (std::uint32_t r : servers[s]) serverOf[r] = static_cast<int>(s);
  return serverOf;
}

void hierarchicalAllReduce(const algo::Layout& lay,
                           const std::vector<algo::LevelAlgorithms>& combos) {
  std::vector<Case> cases;
  for (const algo::LevelAlgorithms& algs : combos)
    for (std::uint64_t n : kCounts)
      for (bool inPlace : {false, true})
        for (DataType type : {DataType::Int32, DataType::Float32}) {
          const algo::Problem pb = algo::Problem::allReduce(lay.ranks(), n, inPlace);
          algo::Schedule s{pb, {}};
          for (std::uint32_t r = 0; r < lay.ranks(); ++r)
            s.ranks.push_back(algo::composeHierarchical(lay, algs, pb, r));
          const std::string what = fmt::format("{} {}/{}", lay.describe(), algo::hcclName(algs[0]),
                                               algo::hcclName(algs[1]));
          cases.push_back(
              prepare(caseLabel(what, lay.ranks(), type, n, inPlace), std::move(s), type, true));
        }
  // The composition must put traffic on level 1, or the level check proves nothing.
  std::size_t level1 = 0;
  for (const Case& c : cases)
    for (const auto& rs : c.schedule.ranks)
      for (const auto& st : rs.steps)
        level1 += static_cast<std::size_t>(
            std::ranges::count_if(st.xfers, [](const algo::Transfer& x) { return x.level == 1; }));
  ASSERT_GT(level1, 0u);
  runGroupOf(serversOf(lay), cases);
}

const std::vector<algo::LevelAlgorithms> kCombos = {
    {Algorithm::Mesh, Algorithm::Ring, Algorithm::Ring},
    {Algorithm::Ring, Algorithm::Rhd, Algorithm::Ring},
    {Algorithm::Rhd, Algorithm::NHR, Algorithm::Ring},
    {Algorithm::Mesh, Algorithm::Pipeline, Algorithm::Ring},
};

// Two servers of two ranks: level 1 pairs rank i of one server with rank i of the other.
TEST(UcxSchedule, HierarchicalAllReduceTwoServersOfTwo) {
  hierarchicalAllReduce(algo::Layout::servers(2, 2), {kCombos[0], kCombos[1]});
}
TEST(UcxSchedule, HierarchicalAllReduceTwoServersOfTwoNhrPipeline) {
  hierarchicalAllReduce(algo::Layout::servers(2, 2), {kCombos[2], kCombos[3]});
}

// The same with ranks dealt round-robin (server 0 holds ranks 0 and 2): MPI rank order need not
// follow the servers.
TEST(UcxSchedule, HierarchicalAllReduceInterleavedServers) {
  hierarchicalAllReduce(algo::Layout::uneven({2, 2}, true), {kCombos[0], kCombos[3]});
}

}  // namespace
}  // namespace hccl::test
