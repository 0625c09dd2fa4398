// A non-commutative user op (2x2 integer matrices multiplied modulo 2^32, through
// engine::Reduction::user) through every reducing generator and through compositions:
//   - every generator, claiming rank order or not, gives the bits of the same-order interpreter;
//   - every generator and composition that claims rank order (GeneratorSpec::rankOrdered,
//     composedRankOrdered) gives exactly the rank-order product M_0 M_1 ... M_{p-1};
//   - the claims are meaningful: each reducing generator that does not claim it gives another
//     answer at some p, and so does a composition over an interleaved layout.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <array>
#include <cstring>

#include "algorithms/generators.hpp"
#include "algorithms/hierarchical.hpp"
#include "algorithms/selector.hpp"
#include "algorithms/verifier.hpp"
#include "coll_hccl/reference/check.hpp"
#include "coll_hccl/reference/inputs.hpp"
#include "tests/algorithms/problems.hpp"

namespace hccl::test {
namespace {

using namespace hccl::reference;

using algo::Algorithm;
using algo::GeneratorSpec;
using algo::Layout;
using algo::LevelAlgorithms;
using algo::Problem;
using algo::test::problemFor;

using Mat = std::array<std::uint32_t, 4>;  // row-major 2x2

Mat product(const Mat& x, const Mat& y) {
  return {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3], x[2] * y[0] + x[3] * y[2],
          x[2] * y[1] + x[3] * y[3]};
}

// MPI_User_function order: inout = in (x) inout, `in` on the left.
void engineMatmul(const void* in, void* inout, std::size_t count, void*) {
  for (std::size_t i = 0; i < count; ++i) {
    Mat x, y;
    std::memcpy(&x, static_cast<const std::byte*>(in) + i * sizeof(Mat), sizeof(Mat));
    std::memcpy(&y, static_cast<std::byte*>(inout) + i * sizeof(Mat), sizeof(Mat));
    const Mat r = product(x, y);
    std::memcpy(static_cast<std::byte*>(inout) + i * sizeof(Mat), &r, sizeof(Mat));
  }
}

// The interpreter's element op: dst = a (x) b.
void referenceMatmul(std::byte* dst, const std::byte* a, const std::byte* b, const void*) {
  Mat x, y;
  std::memcpy(&x, a, sizeof(Mat));
  std::memcpy(&y, b, sizeof(Mat));
  const Mat r = product(x, y);
  std::memcpy(dst, &r, sizeof(Mat));
}

// Small entries, so products of 64 matrices differ in low bits whenever the order does.
std::vector<Bytes> matrices(const Problem& pb, std::uint64_t seed) {
  std::vector<Bytes> c(pb.ranks);
  for (std::uint32_t r = 0; r < pb.ranks; ++r) {
    const std::uint64_t n = contributionCount(pb, r);
    c[r].resize(n * sizeof(Mat));
    for (std::uint64_t i = 0; i < n; ++i) {
      Mat m;
      for (std::size_t e = 0; e < 4; ++e)
        m[e] = static_cast<std::uint32_t>(mix(seed, r, i * 4 + e) % 7);
      std::memcpy(c[r].data() + i * sizeof(Mat), &m, sizeof(Mat));
    }
  }
  return c;
}

UserOpOutcome run(const algo::Schedule& s, std::uint64_t seed) {
  const engine::Reduction red = engine::Reduction::user(&engineMatmul, nullptr, sizeof(Mat), false);
  return runUserOp(s, red, ElementOp{referenceMatmul, nullptr}, sizeof(Mat),
                   matrices(s.problem, seed));
}

constexpr std::array<std::uint32_t, 12> kRanks = {1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 32, 64};

class UserOp : public ::testing::TestWithParam<GeneratorSpec> {};

TEST_P(UserOp, SameOrderAndRankOrderWhenClaimed) {
  const GeneratorSpec& spec = GetParam();
  for (std::uint32_t p : kRanks) {
    // Per-block counts for ReduceScatter: small blocks at 32 and 64 ranks keep the run short.
    const bool bigBlocks = spec.coll == Collective::ReduceScatter && p >= 32;
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{p} + 1, std::uint64_t{300}}) {
      if (p >= 32 && n == 1) continue;
      if (bigBlocks) n = n % 4 + 1;
      for (bool inPlace : {false, true}) {
        for (bool inBlock : {false, true}) {
          if (inBlock && !(inPlace && spec.coll == Collective::ReduceScatter)) continue;
          Problem pb = problemFor(spec.coll, p, n, inPlace, (p * 7 + 3) % p);
          pb.resultInBlock = inBlock;
          const UserOpOutcome o = run(algo::buildSchedule(spec.generate, pb), p + n);
          EXPECT_TRUE(o.error.empty()) << o.error;
          if (spec.rankOrdered) {
            EXPECT_EQ(o.rankOrderMismatches, 0u) << algo::toString(pb) << " claims rank order:\n"
                                                 << o.firstMismatch;
          }
          if (HasFailure()) return;
        }
      }
    }
  }
}

// A generator that does not claim rank order must show it: some p where the product differs.
TEST_P(UserOp, NoClaimShowsAnotherOrder) {
  const GeneratorSpec& spec = GetParam();
  if (spec.rankOrdered) GTEST_SKIP() << "claims rank order";
  std::string seen;
  for (std::uint32_t p : {3u, 4u, 5u, 8u, 13u}) {
    const Problem pb = problemFor(spec.coll, p, 4 * p, false, 1);
    const UserOpOutcome o = run(algo::buildSchedule(spec.generate, pb), p);
    ASSERT_TRUE(o.error.empty()) << o.error;
    seen += fmt::format(" p={}: {} of {}", p, o.rankOrderMismatches, pb.total());
    if (o.rankOrderMismatches > 0) return;
  }
  ADD_FAILURE() << "always the rank-order product, yet rankOrdered is false:" << seen;
}

std::vector<GeneratorSpec> reducingSpecs() {
  std::vector<GeneratorSpec> v;
  for (const GeneratorSpec& s : algo::generatorSpecs())
    if (reduces(s.coll)) v.push_back(s);
  return v;
}

std::string paramName(const ::testing::TestParamInfo<GeneratorSpec>& p) {
  return algo::test::specName(p.param);
}
INSTANTIATE_TEST_SUITE_P(Reducing, UserOp, ::testing::ValuesIn(reducingSpecs()), paramName);

// ---- compositions ------------------------------------------------------------------------------

algo::Schedule compose(const Layout& lay, const LevelAlgorithms& algs, const Problem& pb) {
  algo::Schedule s{pb, {}};
  for (std::uint32_t r = 0; r < pb.ranks; ++r)
    s.ranks.push_back(algo::composeHierarchical(lay, algs, pb, r));
  return s;
}

// Every combination of {ring, fullmesh, H-D_R, NHR, NB} on two levels (and a third for pods),
// over block-ordered, interleaved and asymmetric layouts: the same-order bits always, the
// rank-order product exactly when composedRankOrdered() says so; and an interleaved layout or an
// unordered algorithm visibly reorders.
TEST(UserOpComposed, RankOrderExactlyWhenClaimed) {
  const std::array<Algorithm, 5> algs = {Algorithm::Ring, Algorithm::Mesh, Algorithm::Rhd,
                                         Algorithm::NHR, Algorithm::NB};
  const std::pair<const char*, Layout> layouts[] = {
      {"2x3", Layout::servers(2, 3)},           {"3x2", Layout::servers(3, 2)},
      {"rr:2x3", Layout::uneven({3, 3}, true)}, {"3+5", Layout::uneven({3, 5})},
      {"rr:5+3", Layout::uneven({5, 3}, true)}, {"2x2x2", Layout::pods(2, 2, 2)}};
  std::size_t claimed = 0, shownUnordered = 0;
  for (const auto& [label, lay] : layouts) {
    for (Algorithm a0 : {Algorithm::Ring, Algorithm::Mesh, Algorithm::Rhd}) {
      for (Algorithm a1 : algs) {
        const LevelAlgorithms la{a0, a1, Algorithm::Rhd};
        for (Collective c : {Collective::AllReduce, Collective::ReduceScatter}) {
          // A ReduceScatter over two or more levels claims rank order but does not keep it (see
          // RankOrderReduceScatter below): left to those tests.
          if (c == Collective::ReduceScatter && lay.symmetric() && lay.shape().levels.size() > 1 &&
              algo::composedRankOrdered(lay, la, c))
            continue;
          for (bool inPlace : {false, true}) {
            const Problem pb = problemFor(c, lay.ranks(), 2 * lay.ranks() + 1, inPlace);
            const UserOpOutcome o = run(compose(lay, la, pb), lay.ranks());
            const std::string what = fmt::format("{} {}/{}/{} {}", label, algo::hcclName(a0),
                                                 algo::hcclName(a1), "H-D_R", algo::toString(pb));
            EXPECT_TRUE(o.error.empty()) << what << ": " << o.error;
            if (algo::composedRankOrdered(lay, la, c)) {
              ++claimed;
              EXPECT_EQ(o.rankOrderMismatches, 0u) << what << " claims rank order:\n"
                                                   << o.firstMismatch;
            } else if (o.rankOrderMismatches > 0) {
              ++shownUnordered;
            }
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(claimed, 0u);
  EXPECT_GT(shownUnordered, 0u);
}

// ---- ReduceScatter over levels is not rank-ordered ------------------------------------------
//
// A ReduceScatter composed over two levels runs the outer level first (hierarchical.hpp:
// "top RS -> ... -> L0 RS"), so over 2 servers of 3 ranks rank r's block is
// (in0 (+) in3) (+) (in1 (+) in4) (+) (in2 (+) in5), not in0 (+) in1 (+) ... (+) in5, even with
// fullmesh, which reduces in rank order, at every level. composedRankOrdered() must not claim
// rank order for it, and the selector must run a non-commutative reduce_scatter flat.

TEST(RankOrderReduceScatter, ComposedReduceScatterClaim) {
  const Layout lay = Layout::servers(2, 3);
  const LevelAlgorithms mesh{Algorithm::Mesh, Algorithm::Mesh, Algorithm::Mesh};
  for (bool inPlace : {false, true}) {
    const Problem pb = Problem::reduceScatter(6, 5, inPlace);
    const algo::Schedule s = compose(lay, mesh, pb);
    const UserOpOutcome o = run(s, 3);
    ASSERT_TRUE(o.error.empty()) << o.error;
    EXPECT_GT(o.rankOrderMismatches, 0u) << "the data came out in rank order after all";
    const auto issues = algo::verify(s, {.requireRankOrder = true});
    EXPECT_FALSE(issues.empty()) << "the verifier found the rank order kept";
    EXPECT_FALSE(algo::composedRankOrdered(lay, mesh, Collective::ReduceScatter))
        << "composedRankOrdered claims rank order for " << algo::toString(pb)
        << " over 2x3 with fullmesh at every level, but the schedule reduces server-major "
           "(first mismatch:\n"
        << o.firstMismatch << ")\nverifier: " << algo::describe(issues);
  }
}

// The same, as the engine meets it: the selector's decision for a non-commutative
// reduce_scatter with HCCL_ALGO=level0:fullmesh;level1:fullmesh, turned into a schedule the way
// Communicator::planFor does. Declining, or running flat, would be right; a wrong product is not.
TEST(RankOrderReduceScatter, SelectorForcedFullmesh) {
  const Layout lay = Layout::servers(2, 3);
  auto settings = algo::resolveSettings(
      {{}, {}, algo::mapLookup({{"HCCL_ALGO", "level0:fullmesh;level1:fullmesh"}})});
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  algo::Selector sel(lay.shape(), settings.value(), algo::defaultCostModel());
  algo::CallInfo call;
  call.coll = Collective::ReduceScatter;
  call.count = 5;
  call.elemSize = sizeof(Mat);
  call.commutative = false;  // a user op: type and op stay unset
  const algo::Decision& d = sel.decide(call);
  if (!d.ok()) return;  // declined: the engine falls back to Open MPI's own algorithms
  const Problem pb = Problem::reduceScatter(6, 5);
  algo::Schedule s{pb, {}};
  for (std::uint32_t r = 0; r < 6; ++r) s.ranks.push_back(algo::compose(lay, d, pb, r));
  const UserOpOutcome o = run(s, 4);
  ASSERT_TRUE(o.error.empty()) << o.error;
  EXPECT_EQ(o.rankOrderMismatches, 0u)
      << "non-commutative reduce_scatter on 2x3 decided as " << d.summary() << " ("
      << algo::planOf(d.plan).name() << " plan) gives another product:\n"
      << o.firstMismatch;
}

// Interleaved ranks with rank-ordered algorithms at every level: the composition reduces server
// by server, so the order is not the rank order, and it does not claim it.
TEST(UserOpComposed, InterleavedLayoutReorders) {
  const Layout lay = Layout::uneven({3, 3}, true);
  const LevelAlgorithms la{Algorithm::Mesh, Algorithm::Mesh, Algorithm::Mesh};
  ASSERT_FALSE(algo::composedRankOrdered(lay, la, Collective::AllReduce));
  const Layout block = Layout::servers(2, 3);
  ASSERT_TRUE(algo::composedRankOrdered(block, la, Collective::AllReduce));
  const Problem pb = Problem::allReduce(6, 40);
  const UserOpOutcome interleaved = run(compose(lay, la, pb), 9);
  const UserOpOutcome blocked = run(compose(block, la, pb), 9);
  EXPECT_TRUE(interleaved.error.empty()) << interleaved.error;
  EXPECT_TRUE(blocked.error.empty()) << blocked.error;
  EXPECT_GT(interleaved.rankOrderMismatches, 0u);
  EXPECT_EQ(blocked.rankOrderMismatches, 0u) << blocked.firstMismatch;
}

// Scan and Exscan over levels with the non-commutative product: the rank-order result exactly
// on consecutive servers over two and three levels, in and out of place; on interleaved servers
// the composition runs flat (and is rank-ordered too).
TEST(UserOpComposed, ScanAndExscanOverLevels) {
  const std::pair<const char*, Layout> layouts[] = {
      {"2x2", Layout::servers(2, 2)},   {"2x3", Layout::servers(2, 3)},
      {"4x4", Layout::servers(4, 4)},   {"2x2x2", Layout::pods(2, 2, 2)},
      {"3x2x3", Layout::pods(3, 2, 3)}, {"rr:2x3", Layout::uneven({3, 3}, true)}};
  for (const auto& [label, lay] : layouts)
    for (const LevelAlgorithms& la :
         {LevelAlgorithms{Algorithm::Mesh, Algorithm::Rhd, Algorithm::Rhd},
          LevelAlgorithms{Algorithm::Rhd, Algorithm::Mesh, Algorithm::Mesh}})
      for (Collective c : {Collective::Scan, Collective::Exscan})
        for (bool inPlace : {false, true}) {
          const Problem pb = problemFor(c, lay.ranks(), 2 * lay.ranks() + 1, inPlace);
          ASSERT_TRUE(algo::composedRankOrdered(lay, la, c)) << label;
          const UserOpOutcome o = run(compose(lay, la, pb), lay.ranks() + inPlace);
          EXPECT_TRUE(o.error.empty()) << label << " " << algo::toString(pb) << ": " << o.error;
          EXPECT_EQ(o.rankOrderMismatches, 0u) << label << " " << algo::toString(pb) << "\n"
                                               << o.firstMismatch;
        }
}

}  // namespace
}  // namespace hccl::test
