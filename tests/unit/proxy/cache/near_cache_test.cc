// The near cache's store (lb/proxy/cache/near_cache.h): exact bytes back, the bounds, CLOCK,
// ttl, and the tickets and stripes that keep a write's effect from being undone by a fill or
// hidden by another worker's entry.
#include <gtest/gtest.h>

#include <string>

#include "lb/proxy/cache/near_cache.h"

namespace lb {
namespace {

NearCacheLimits limitsOf(uint32_t items, uint64_t bytes, uint64_t ttl_ms = 1000) {
  NearCacheLimits l;
  l.items = items;
  l.bytes = bytes;
  l.ttl_ms = ttl_ms;
  return l;
}

bool put(NearCache& c, const std::string& key, const std::string& reply, uint64_t now = 0,
         uint32_t source = 0) {
  const uint64_t h = NearCache::hashOf(key);
  return c.fill(h, key, reply, c.ticket(h), now, source);
}

std::string get(NearCache& c, const std::string& key, uint64_t now = 0) {
  return std::string(c.find(NearCache::hashOf(key), key, now));
}

uint64_t invalidations(NearCache& c, NearInvalidation r) {
  return c.stats().invalidations[static_cast<int>(r)].get();
}

TEST(NearCacheStoreTest, GivesBackTheExactBytes) {
  NearCacheState shared(1);
  NearCache c(shared, 0, limitsOf(8, 4096));
  const std::string reply("$5\r\nva\0ue\r\n", 11);
  ASSERT_TRUE(put(c, "k", reply));
  EXPECT_EQ(get(c, "k"), reply);
  EXPECT_EQ(get(c, "other"), "");
  EXPECT_EQ(c.items(), 1u);
  EXPECT_EQ(c.bytes(), 1u + reply.size());
  EXPECT_EQ(shared.worker(0).items.get(), 1);
  EXPECT_EQ(shared.worker(0).bytes.get(), static_cast<int64_t>(1 + reply.size()));
}

TEST(NearCacheStoreTest, NeverHoldsMoreThanItsItems) {
  NearCacheState shared(1);
  NearCache c(shared, 0, limitsOf(4, 1 << 20));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(put(c, "k" + std::to_string(i), "v"));
  EXPECT_EQ(c.items(), 4u);
  int found = 0;
  for (int i = 0; i < 100; ++i) found += get(c, "k" + std::to_string(i)).empty() ? 0 : 1;
  EXPECT_EQ(found, 4);
}

TEST(NearCacheStoreTest, NeverHoldsMoreThanItsBytes) {
  NearCacheState shared(1);
  NearCache c(shared, 0, limitsOf(100, 1024));
  const std::string big(300, 'x');
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(put(c, "k" + std::to_string(i), big));
    EXPECT_LE(c.bytes(), 1024u);
  }
  EXPECT_EQ(c.items(), 3u);   // 3 * 302 fits in 1024, 4 do not
  EXPECT_FALSE(put(c, "huge", std::string(2000, 'y')));   // larger than the whole cache
  EXPECT_EQ(get(c, "huge"), "");
}

// CLOCK: an entry read since the hand last passed survives the next eviction.
TEST(NearCacheStoreTest, EvictsAnUnreadEntryBeforeARecentlyReadOne) {
  NearCacheState shared(1);
  NearCache c(shared, 0, limitsOf(2, 1 << 20));
  ASSERT_TRUE(put(c, "a", "1"));
  ASSERT_TRUE(put(c, "b", "2"));
  EXPECT_EQ(get(c, "a"), "1");   // a's bit set
  ASSERT_TRUE(put(c, "c", "3"));
  EXPECT_EQ(get(c, "a"), "1");
  EXPECT_EQ(get(c, "b"), "");
  EXPECT_EQ(get(c, "c"), "3");
}

TEST(NearCacheStoreTest, ExpiresAfterTtl) {
  NearCacheState shared(1);
  NearCache c(shared, 0, limitsOf(8, 4096, 100));
  ASSERT_TRUE(put(c, "k", "v", 1000));
  EXPECT_EQ(get(c, "k", 1099), "v");
  EXPECT_EQ(get(c, "k", 1100), "");
  EXPECT_EQ(c.items(), 0u);
  EXPECT_EQ(invalidations(c, NearInvalidation::kTtl), 1u);
}

TEST(NearCacheStoreTest, AWriteDropsTheKeyAndAFillThatRacedIt) {
  NearCacheState shared(1);
  NearCache c(shared, 0, limitsOf(8, 4096));
  ASSERT_TRUE(put(c, "k", "old"));
  const uint64_t h = NearCache::hashOf("k");
  const NearTicket before = c.ticket(h);   // a GET sent before the SET
  c.invalidateWrite(h, "k");
  EXPECT_EQ(get(c, "k"), "");
  EXPECT_EQ(invalidations(c, NearInvalidation::kWrite), 1u);
  EXPECT_FALSE(c.fill(h, "k", "old", before, 0, 0));   // its reply may predate the SET
  EXPECT_EQ(get(c, "k"), "");
  EXPECT_TRUE(c.fill(h, "k", "new", c.ticket(h), 0, 0));   // a GET sent after it
  EXPECT_EQ(get(c, "k"), "new");
}

// Two workers' caches of one cluster: a write through one hides the other's entry at once.
TEST(NearCacheStoreTest, AWriteThroughOneWorkerIsSeenByAnother) {
  NearCacheState shared(2);
  NearCache a(shared, 0, limitsOf(8, 4096));
  NearCache b(shared, 1, limitsOf(8, 4096));
  ASSERT_TRUE(put(b, "k", "old"));
  a.invalidateWrite(NearCache::hashOf("k"), "k");
  EXPECT_EQ(get(b, "k"), "");
  EXPECT_EQ(shared.worker(1).invalidations[static_cast<int>(NearInvalidation::kWrite)].get(), 1u);
}

TEST(NearCacheStoreTest, FlushOfOneSourceKeepsTheOthersAndDropsRacingFills) {
  NearCacheState shared(1);
  NearCache c(shared, 0, limitsOf(8, 4096));
  ASSERT_TRUE(put(c, "a", "1", 0, 1));
  ASSERT_TRUE(put(c, "b", "2", 0, 2));
  const uint64_t h = NearCache::hashOf("x");
  const NearTicket before = c.ticket(h);
  c.flushSource(1);
  EXPECT_EQ(get(c, "a"), "");
  EXPECT_EQ(get(c, "b"), "2");
  EXPECT_EQ(invalidations(c, NearInvalidation::kFlush), 1u);
  EXPECT_FALSE(c.fill(h, "x", "v", before, 0, 2));
  c.flushAll();
  EXPECT_EQ(c.items(), 0u);
  EXPECT_EQ(c.bytes(), 0u);
}

// Many keys come and go through a small index: every one still there is found, none that
// went is (the backward-shift deletion keeps probe chains whole).
TEST(NearCacheStoreTest, IndexStaysConsistentUnderChurn) {
  NearCacheState shared(1);
  NearCache c(shared, 0, limitsOf(16, 1 << 20));
  for (int round = 0; round < 2000; ++round) {
    const std::string k = "key" + std::to_string(round % 37);
    if (round % 3 == 0)
      c.invalidateWrite(NearCache::hashOf(k), k);
    else
      put(c, k, "v" + k);
    ASSERT_LE(c.items(), 16u);
  }
  size_t found = 0;
  for (int i = 0; i < 37; ++i) {
    const std::string k = "key" + std::to_string(i);
    const std::string v = get(c, k);
    if (!v.empty()) {
      EXPECT_EQ(v, "v" + k);
      ++found;
    }
  }
  EXPECT_EQ(found, c.items());
}

TEST(NearCacheStoreTest, GaugesReturnToZeroWhenTheCacheGoes) {
  NearCacheState shared(1);
  {
    NearCache c(shared, 0, limitsOf(8, 4096));
    ASSERT_TRUE(put(c, "k", "v"));
  }
  EXPECT_EQ(shared.worker(0).items.get(), 0);
  EXPECT_EQ(shared.worker(0).bytes.get(), 0);
}

}  // namespace
}  // namespace lb
