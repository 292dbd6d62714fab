// ring_hash: the point scheme (XXH64 of "<hash_key>_<i>", 160 per unit of weight), the lookup
// against a from-scratch reference ring, the clockwise replica walk, and balance at 160 vnodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

using test::keyHash;
using test::makeHosts;

const SelectorInfo& ringHash() { return test::selector("ring_hash"); }

struct RefPoint {
  uint64_t hash;
  std::string key;
  uint32_t host;
};

// The documented scheme, written out naively: every point, sorted by (hash, hash_key).
std::vector<RefPoint> referenceRing(const std::vector<HostSpec>& hosts, uint32_t vnodes) {
  std::vector<RefPoint> ring;
  for (uint32_t h = 0; h < hosts.size(); ++h)
    for (uint32_t i = 0; i < vnodes * hosts[h].weight; ++i)
      ring.push_back({xxh64(hosts[h].hash_key + "_" + std::to_string(i)), hosts[h].hash_key, h});
  std::sort(ring.begin(), ring.end(), [](const RefPoint& a, const RefPoint& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.key < b.key;
  });
  return ring;
}

// First point >= hash, wrapping: a linear scan, obviously right.
size_t referenceLookup(const std::vector<RefPoint>& ring, uint64_t hash) {
  for (size_t i = 0; i < ring.size(); ++i)
    if (ring[i].hash >= hash) return i;
  return 0;
}

TEST(RingHashTest, EachPointHashBelongsToItsHost) {
  // A key whose hash equals a point's hash lands on that point: pins "<hash_key>_<i>", XXH64
  // seed 0, decimal i from 0 to vnodes * weight - 1.
  std::vector<HostSpec> hosts = {{"alpha", 1}, {"beta", 2}};
  auto table = ringHash().build(hosts, {});
  for (uint32_t i = 0; i < 160; ++i)
    ASSERT_EQ(table->pick(xxh64("alpha_" + std::to_string(i)), 0), 0u) << i;
  for (uint32_t i = 0; i < 320; ++i)
    ASSERT_EQ(table->pick(xxh64("beta_" + std::to_string(i)), 0), 1u) << i;
}

TEST(RingHashTest, MatchesReferenceRingForOwnerAndWalk) {
  auto hosts = makeHosts(7);
  hosts[2].weight = 3;
  SelectorOptions options;
  options.vnodes = 20;   // small ring: many keys fall in the same gaps and at the wrap
  auto table = ringHash().build(hosts, options);
  const auto ring = referenceRing(hosts, 20);
  test::Prng prng(7);
  std::vector<uint64_t> probes = {0, 1, UINT64_MAX, ring.front().hash, ring.back().hash,
                                  ring.back().hash + 1};
  for (int i = 0; i < 3000; ++i) probes.push_back(prng.next());
  for (uint64_t h : probes) {
    const size_t start = referenceLookup(ring, h);
    std::vector<uint32_t> order;   // distinct hosts clockwise from start
    for (size_t i = 0; order.size() < hosts.size(); ++i) {
      const uint32_t host = ring[(start + i) % ring.size()].host;
      if (std::find(order.begin(), order.end(), host) == order.end()) order.push_back(host);
    }
    for (uint32_t a = 0; a < hosts.size(); ++a) ASSERT_EQ(table->pick(h, a), order[a]) << h;
  }
}

TEST(RingHashTest, HashPastLastPointWrapsToFirst) {
  auto hosts = makeHosts(5);
  auto table = ringHash().build(hosts, {});
  const auto ring = referenceRing(hosts, 160);
  ASSERT_LT(ring.back().hash, UINT64_MAX);
  EXPECT_EQ(table->pick(UINT64_MAX, 0), ring.front().host);
  EXPECT_EQ(table->pick(ring.back().hash + 1, 0), ring.front().host);
}

// Balance at the default 160 vnodes: 10 hosts, 1M keys, the busiest host within 15% of the
// mean (the ring's own spread is ~1/sqrt(160) = 8% per host).
TEST(RingHashTest, TenHostsBalanceWithinFifteenPercent) {
  auto hosts = makeHosts(10);
  auto table = ringHash().build(hosts, {});
  constexpr uint32_t kKeys = 1000000;
  std::vector<uint32_t> count(hosts.size());
  for (uint32_t k = 0; k < kKeys; ++k) ++count[table->pick(keyHash(KeyHash::kXxh64, k), 0)];
  const double mean = static_cast<double>(kKeys) / hosts.size();
  const double max = *std::max_element(count.begin(), count.end());
  EXPECT_LE(max / mean, 1.15);
}

TEST(RingHashTest, VnodesOptionSetsPointsPerWeight) {
  auto hosts = makeHosts(3);
  SelectorOptions few;
  few.vnodes = 1;
  auto table = ringHash().build(hosts, few);
  // One point each: each host owns exactly the arc ending at its single point.
  for (uint32_t h = 0; h < 3; ++h) EXPECT_EQ(table->pick(xxh64(hosts[h].hash_key + "_0"), 0), h);
  auto big = ringHash().build(hosts, {});
  EXPECT_GT(big->memoryBytes(), table->memoryBytes() + 3 * 150 * 12);
}

}  // namespace
}  // namespace lb
