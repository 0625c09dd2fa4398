// The UCX tag layout and the link-class table, without UCX.
#include <gtest/gtest.h>

#include <set>

#include "ucx_tl/ucx_tag.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::tl {
namespace {

TEST(UcxTag, FieldsRoundTripAndOccupyDisjointBits) {
  const Tag t{0xABC, 0x1234, 0xFEDC};
  const std::uint64_t bits = ucx::packTag(0xFFFFF, t);
  EXPECT_EQ(bits, 0xFFFFFABC1234FEDCull);  // src | comm | seq | msg, most significant first
  EXPECT_EQ(ucx::unpackTag(bits), (ucx::UnpackedTag{0xFFFFF, t}));
  EXPECT_EQ(ucx::packTag(1, {}), std::uint64_t{1} << 44);
  EXPECT_EQ(ucx::packTag(0, {1, 0, 0}), std::uint64_t{1} << 32);
  EXPECT_EQ(ucx::packTag(0, {0, 1, 0}), std::uint64_t{1} << 16);
  EXPECT_EQ(ucx::packTag(0, {0, 0, 1}), std::uint64_t{1});
  EXPECT_EQ(ucx::kSenderMask, 0xFFFFF00000000000ull);
}

TEST(UcxTag, FieldsWrapAtTheirWidthWithoutTouchingNeighbours) {
  EXPECT_EQ(ucx::packTag(0, {4096 + 5, 0, 0}), ucx::packTag(0, {5, 0, 0}));
  EXPECT_EQ(ucx::packTag(0, {0, 65536 + 9, 0}), ucx::packTag(0, {0, 9, 0}));
  EXPECT_EQ(ucx::packTag(0, {0, 0, 65536 + 3}), ucx::packTag(0, {0, 0, 3}));
  EXPECT_EQ(ucx::packTag(3, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}) & ucx::kSenderMask,
            ucx::packTag(3, {}));
}

TEST(UcxTag, DistinctIdentitiesGiveDistinctTags) {
  std::set<std::uint64_t> seen;
  for (std::uint32_t src : {0u, 1u, 1048575u}) {
    for (std::uint32_t comm : {0u, 1u, 4095u}) {
      for (std::uint32_t seq : {0u, 1u, 65535u}) {
        for (std::uint32_t msg : {0u, 1u, 65535u}) {
          EXPECT_TRUE(seen.insert(ucx::packTag(src, {comm, seq, msg})).second);
        }
      }
    }
  }
}

TEST(UcxLinkClasses, FromServerMap) {
  const std::vector<int> serverOf = {0, 0, 1, 1, 0};
  EXPECT_EQ(linkClasses(1, serverOf, false),
            (std::vector<LinkClass>{LinkClass::Hccs, LinkClass::Self, LinkClass::Roce,
                                    LinkClass::Roce, LinkClass::Hccs}));
  EXPECT_EQ(linkClasses(1, serverOf, true),
            (std::vector<LinkClass>{LinkClass::Roce, LinkClass::Self, LinkClass::Roce,
                                    LinkClass::Roce, LinkClass::Roce}));
}

}  // namespace
}  // namespace hccl::tl
