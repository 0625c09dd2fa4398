// The decision and plan caches: bounded, least recently used forgotten first, entries handed out
// stay alive after eviction.
#include "common/bounded_cache.hpp"

#include <gtest/gtest.h>

#include <string>

using hccl::common::BoundedCache;

namespace {

std::shared_ptr<const std::string> text(const char* s) {
  return std::make_shared<const std::string>(s);
}

std::string valueOf(BoundedCache<int, std::string>& cache, int key) {
  const std::shared_ptr<const std::string> v = cache.find(key);
  return v ? *v : std::string("<absent>");
}

TEST(BoundedCache, NeverHoldsMoreThanItsCapacity) {
  BoundedCache<int, std::string> cache(3);
  for (int k = 0; k < 100; ++k) cache.insert(k, text("v"));
  EXPECT_EQ(cache.size(), 3u);
  for (int k = 97; k < 100; ++k) EXPECT_NE(cache.find(k), nullptr) << k;
  EXPECT_EQ(cache.find(96), nullptr);
}

TEST(BoundedCache, AHitKeepsAnEntryAndTheColdestGoes) {
  BoundedCache<int, std::string> cache(2);
  cache.insert(1, text("one"));
  cache.insert(2, text("two"));
  ASSERT_NE(cache.find(1), nullptr);  // 1 is now the most recently used
  cache.insert(3, text("three"));
  EXPECT_EQ(valueOf(cache, 1), "one");
  EXPECT_EQ(cache.find(2), nullptr);
  EXPECT_EQ(valueOf(cache, 3), "three");
}

TEST(BoundedCache, ReplacingAKeyKeepsOneEntry) {
  BoundedCache<int, std::string> cache(2);
  cache.insert(1, text("old"));
  cache.insert(1, text("new"));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(valueOf(cache, 1), "new");
}

TEST(BoundedCache, AnEvictedValueLivesOnForItsHolder) {
  BoundedCache<int, std::string> cache(1);
  std::shared_ptr<const std::string> held = cache.insert(1, text("held"));
  cache.insert(2, text("other"));
  EXPECT_EQ(cache.find(1), nullptr);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(*held, "held");
}

TEST(BoundedCache, ZeroCapacityStillCachesTheLastEntry) {
  BoundedCache<int, std::string> cache(0);
  cache.insert(1, text("one"));
  EXPECT_EQ(cache.capacity(), 1u);
  EXPECT_NE(cache.find(1), nullptr);
}

}  // namespace
