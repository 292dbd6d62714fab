// The grouping of a multi-key command's keys by owner (lb/proxy/cache/key_groups.h): one
// fragment per distinct host in the order hosts first appear, each fragment's keys in the
// client's order, the host slots left as they were found, and the work linear in the keys.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "lb/proxy/cache/cache_worker.h"
#include "lb/proxy/cache/key_groups.h"

namespace lb {
namespace {

// One grouping over its own buffers, sized as the scratch form sizes them.
struct Grouped {
  std::vector<int32_t> slots;
  std::vector<uint16_t> fragment_of_key;
  std::vector<uint32_t> order;
  std::vector<uint32_t> fragment_host;
  std::vector<uint32_t> fragment_end;
  uint16_t fragments = 0;

  Grouped(size_t hosts, size_t keys)
      : slots(hosts, -1), fragment_of_key(keys), order(keys), fragment_host(keys),
        fragment_end(keys) {}
  KeyGroupSpans spans() { return {slots, fragment_of_key, order, fragment_host, fragment_end}; }

  // The keys of fragment f, in the order the fragment asks for them.
  std::vector<uint32_t> keysOf(uint16_t f) const {
    const uint32_t begin = f == 0 ? 0 : fragment_end[f - 1];
    return {order.begin() + begin, order.begin() + fragment_end[f]};
  }
};

Grouped group(const std::vector<uint32_t>& hosts, size_t host_count) {
  Grouped g(host_count, hosts.size());
  g.fragments = groupKeys(std::span<const uint32_t>(hosts), hosts.size(), g.spans());
  return g;
}

// A host list that counts how often it is read: the work the grouping does per key.
struct CountingHosts {
  const std::vector<uint32_t>& hosts;
  mutable uint64_t reads = 0;
  uint32_t operator[](size_t k) const {
    ++reads;
    return hosts[k];
  }
};

TEST(CacheKeyGroupsTest, KeysOfOneHostMakeOneFragmentInTheirOrder) {
  const Grouped g = group({3, 3, 3, 3}, 5);
  ASSERT_EQ(g.fragments, 1);
  EXPECT_EQ(g.fragment_host[0], 3u);
  EXPECT_EQ(g.keysOf(0), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(g.fragment_of_key, (std::vector<uint16_t>{0, 0, 0, 0}));
}

TEST(CacheKeyGroupsTest, KeysOnDistinctHostsMakeOneFragmentEachInFirstSeenOrder) {
  const Grouped g = group({4, 0, 2, 1}, 5);
  ASSERT_EQ(g.fragments, 4);
  EXPECT_EQ(std::vector<uint32_t>(g.fragment_host.begin(), g.fragment_host.begin() + 4),
            (std::vector<uint32_t>{4, 0, 2, 1}));
  for (uint16_t f = 0; f < 4; ++f) EXPECT_EQ(g.keysOf(f), (std::vector<uint32_t>{f}));
  EXPECT_EQ(g.fragment_of_key, (std::vector<uint16_t>{0, 1, 2, 3}));
}

TEST(CacheKeyGroupsTest, ARepeatedKeyIsAskedForAsOftenAsTheClientAskedForIt) {
  // MGET a b a a: key indices 0, 2 and 3 are the same key on host 1, and each is its own
  // place in the fragment, so the merge has a value for each of the client's four.
  const Grouped g = group({1, 0, 1, 1}, 2);
  ASSERT_EQ(g.fragments, 2);
  EXPECT_EQ(g.keysOf(0), (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(g.keysOf(1), (std::vector<uint32_t>{1}));
}

TEST(CacheKeyGroupsTest, EachFragmentKeepsItsKeysInTheClientsOrder) {
  const std::vector<uint32_t> hosts = {2, 0, 1, 0, 2, 2, 1, 0, 1, 2};
  const Grouped g = group(hosts, 3);
  ASSERT_EQ(g.fragments, 3);
  EXPECT_EQ(g.keysOf(0), (std::vector<uint32_t>{0, 4, 5, 9}));   // host 2, first seen
  EXPECT_EQ(g.keysOf(1), (std::vector<uint32_t>{1, 3, 7}));      // host 0
  EXPECT_EQ(g.keysOf(2), (std::vector<uint32_t>{2, 6, 8}));      // host 1
  for (size_t k = 0; k < hosts.size(); ++k)
    EXPECT_EQ(g.fragment_host[g.fragment_of_key[k]], hosts[k]) << "key " << k;
}

TEST(CacheKeyGroupsTest, TheHostSlotsAreUnusedAgainAfterwards) {
  Grouped g(6, 5);
  const std::vector<uint32_t> hosts = {5, 1, 5, 3, 0};
  g.fragments = groupKeys(std::span<const uint32_t>(hosts), hosts.size(), g.spans());
  ASSERT_EQ(g.fragments, 4);
  EXPECT_EQ(g.slots, std::vector<int32_t>(6, -1));
  // So the next command numbers its fragments from 0 again.
  const std::vector<uint32_t> next = {3, 3};
  EXPECT_EQ(groupKeys(std::span<const uint32_t>(next), next.size(), g.spans()), 1);
  EXPECT_EQ(g.fragment_host[0], 3u);
  EXPECT_EQ(g.slots, std::vector<int32_t>(6, -1));
}

TEST(CacheKeyGroupsTest, ManyKeysOverManyHostsReadEachKeysHostOnce) {
  // 20,000 keys over 1,000 hosts, round robin: a walk over every key per fragment would read
  // 20 million hosts; the counting sort reads 20,000.
  constexpr size_t kKeys = 20000;
  constexpr size_t kHosts = 1000;
  std::vector<uint32_t> hosts(kKeys);
  for (size_t k = 0; k < kKeys; ++k) hosts[k] = static_cast<uint32_t>(k % kHosts);
  Grouped g(kHosts, kKeys);
  const CountingHosts counting{hosts};
  g.fragments = groupKeys(counting, kKeys, g.spans());
  ASSERT_EQ(g.fragments, kHosts);
  EXPECT_EQ(counting.reads, kKeys);
  EXPECT_EQ(g.keysOf(7).size(), kKeys / kHosts);
  EXPECT_EQ(g.keysOf(7).front(), 7u);
  EXPECT_EQ(g.keysOf(7).back(), kKeys - kHosts + 7);
}

TEST(CacheKeyGroupsTest, MoreHostsThanAFragmentCountCanHoldIsRefusedAndLeavesNoSlotSet) {
  constexpr size_t kHosts = kMaxFragments + 1;
  std::vector<uint32_t> hosts(kHosts);
  for (size_t k = 0; k < kHosts; ++k) hosts[k] = static_cast<uint32_t>(k);
  Grouped g(kHosts, kHosts);
  EXPECT_EQ(groupKeys(std::span<const uint32_t>(hosts), hosts.size(), g.spans()), 0);
  EXPECT_EQ(g.slots, std::vector<int32_t>(kHosts, -1));
}

TEST(CacheKeyGroupsTest, TheScratchFormSizesItsResultsToTheFragments) {
  CacheScratch sc;
  sc.fragment_of_host.assign(8, -1);
  sc.hosts = {6, 2, 6, 2, 7, 9999};   // past the command's 5 keys: not read
  ASSERT_EQ(groupKeys(sc, 5), 3);
  EXPECT_EQ(sc.fragment_hosts, (std::vector<uint32_t>{6, 2, 7}));
  EXPECT_EQ(sc.cursor, (std::vector<uint32_t>{2, 4, 5}));   // each fragment's run end
  EXPECT_EQ(sc.order, (std::vector<uint32_t>{0, 2, 1, 3, 4}));
  EXPECT_EQ(sc.key_fragments, (std::vector<uint16_t>{0, 1, 0, 1, 2}));
  EXPECT_EQ(sc.fragment_of_host, std::vector<int32_t>(8, -1));
}

}  // namespace
}  // namespace lb
