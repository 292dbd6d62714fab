// jump: Lamping & Veach's properties, checked directly: growing from n to n + 1 buckets moves a
// key only onto the new bucket, shares are even, and only removing the last host is free.
#include <gtest/gtest.h>

#include <algorithm>

#include "plugins/selectors/selectors.h"
#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

TEST(JumpHashTest, OneBucketIsAlwaysZero) {
  test::Prng prng(1);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(jumpHash(prng.next(), 1), 0u);
}

TEST(JumpHashTest, GrowingMovesKeysOnlyToTheNewBucket) {
  test::Prng prng(2);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t key = prng.next();
    uint32_t prev = jumpHash(key, 1);
    for (uint32_t n = 2; n <= 64; ++n) {
      const uint32_t b = jumpHash(key, n);
      ASSERT_TRUE(b == prev || b == n - 1) << key << " n=" << n;
      prev = b;
    }
  }
}

TEST(JumpHashTest, SharesAreEven) {
  constexpr uint32_t kBuckets = 13;
  constexpr uint32_t kKeys = 260000;
  std::vector<uint32_t> count(kBuckets);
  for (uint32_t k = 0; k < kKeys; ++k)
    ++count[jumpHash(test::keyHash(KeyHash::kXxh64, k), kBuckets)];
  const auto [lo, hi] = std::minmax_element(count.begin(), count.end());
  // 20000 expected per bucket, binomial sd ~137: 3% is over 4 sd.
  EXPECT_GT(*lo, 19400u);
  EXPECT_LT(*hi, 20600u);
}

TEST(JumpTest, RemovingAMiddleHostRemapsOthersAsDocumented) {
  // The documented limitation: positions are identities, so dropping host 3 of 20 renumbers
  // hosts 4..19 and moves keys between hosts that stayed. Use ring_hash for that workflow.
  const SelectorInfo& jump = test::selector("jump");
  auto hosts = test::makeHosts(20);
  const auto before = test::ownerKeys(jump, hosts, 20000);
  const std::string gone = hosts[3].hash_key;
  hosts.erase(hosts.begin() + 3);
  const auto after = test::ownerKeys(jump, hosts, 20000);
  EXPECT_GT(test::movement(before, after, gone).collateral, 20000u / 4);
}

TEST(JumpTest, IgnoresWeights) {
  const SelectorInfo& jump = test::selector("jump");
  auto plain = test::makeHosts(6);
  auto weighted = plain;
  weighted[2].weight = 9;
  EXPECT_EQ(test::ownerKeys(jump, plain, 5000), test::ownerKeys(jump, weighted, 5000));
}

}  // namespace
}  // namespace lb
