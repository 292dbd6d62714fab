// twemproxy with `distribution = "modula"`: nutcracker's nc_modula.c, a list of servers in
// nutcracker's order (sorted by name, shorter first), one entry per unit of weight, and
// list[hash % length]. Golden owners computed by hand: the key hashes from a few lines of
// Python written from nc_fnv.c and nc_murmur.c, then hash % 3 or % 4 into the list; the same
// rule is checked against a live nutcracker 0.5.0 in
// tests/integration/cache/twemproxy_compat_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/routing/cluster_table.h"
#include "plugins/selectors/selectors.h"
#include "plugins/selectors/twemproxy_hash.h"
#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

SelectorOptions modula() {
  SelectorOptions o;
  o.modula = true;
  return o;
}

std::vector<HostSpec> named(std::initializer_list<std::pair<const char*, uint32_t>> hosts) {
  std::vector<HostSpec> out;
  for (const auto& [name, weight] : hosts) out.push_back({name, weight});
  return out;
}

// The owner of each key under `hash`, by hash_key.
std::vector<std::string> owners(const std::vector<HostSpec>& hosts, const char* hash,
                                const std::vector<std::string>& keys) {
  const auto table = buildTwemproxy(hosts, modula());
  const KeyHash& kh = *twemproxy::findKeyHash(hash);
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(hosts[table->pick(hashKeyBytes(kh, k), 0)].hash_key);
  return out;
}

const std::vector<std::string> kKeys = {"key:0", "key:1", "key:2", "key:3", "key:4",
                                        "key:5", "key:6", "key:7", "user:42", "obj/7"};

TEST(TwemproxyModulaTest, ListHasOneEntryPerUnitOfWeightInServerOrder) {
  EXPECT_EQ(twemproxyModulaList(named({{"s1", 1}, {"s2", 1}, {"s3", 1}})),
            (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(twemproxyModulaList(named({{"s1", 1}, {"s2", 2}, {"s3", 1}})),
            (std::vector<uint32_t>{0, 1, 1, 2}));
}

// conf_validate_server sorts the pool's servers with string_compare before nutcracker builds
// them: a shorter name first, equal lengths bytewise. The file's order does not count.
TEST(TwemproxyModulaTest, ListFollowsNutcrackersNameOrderNotTheFiles) {
  EXPECT_EQ(twemproxyModulaList(named({{"zeta", 2}, {"b", 1}, {"alpha", 1}})),
            (std::vector<uint32_t>{1, 0, 0, 2}));
  EXPECT_EQ(twemproxyModulaList(named({{"s10", 1}, {"s9", 1}, {"s1", 1}})),
            (std::vector<uint32_t>{2, 1, 0}));
}

// murmur("key:0") = 1895216676, % 3 = 0: s1. And so on.
TEST(TwemproxyModulaTest, GoldenOwnersMurmurWeightsOneOneOne) {
  EXPECT_EQ(owners(named({{"s1", 1}, {"s2", 1}, {"s3", 1}}), "murmur", kKeys),
            (std::vector<std::string>{"s1", "s1", "s3", "s1", "s2", "s1", "s1", "s1", "s1",
                                      "s2"}));
}

// The list is s1 s2 s2 s3: murmur("key:1") = 3691594071, % 4 = 3: s3.
TEST(TwemproxyModulaTest, GoldenOwnersMurmurWeightsOneTwoOne) {
  EXPECT_EQ(owners(named({{"s1", 1}, {"s2", 2}, {"s3", 1}}), "murmur", kKeys),
            (std::vector<std::string>{"s1", "s3", "s2", "s2", "s2", "s2", "s2", "s2", "s2",
                                      "s1"}));
}

// fnv1a_64("key:N") is 2 (mod 3) for every N < 8: FNV-1a's last multiply leaves the final byte's
// low bits weakly mixed, which modula by a small N shows and nutcracker shows the same.
TEST(TwemproxyModulaTest, GoldenOwnersFnv1a64WeightsOneOneOne) {
  EXPECT_EQ(owners(named({{"s1", 1}, {"s2", 1}, {"s3", 1}}), "fnv1a_64", kKeys),
            (std::vector<std::string>{"s3", "s3", "s3", "s3", "s3", "s3", "s3", "s3", "s1",
                                      "s1"}));
}

// fnv1a_64("key:0") = 2519685398, % 4 = 2: the second s2 of s1 s2 s2 s3.
TEST(TwemproxyModulaTest, GoldenOwnersFnv1a64WeightsOneTwoOne) {
  EXPECT_EQ(owners(named({{"s1", 1}, {"s2", 2}, {"s3", 1}}), "fnv1a_64", kKeys),
            (std::vector<std::string>{"s2", "s2", "s1", "s3", "s2", "s2", "s1", "s3", "s2",
                                      "s1"}));
}

// server_pool_hash hashes an empty key to 0: the first server in name order.
TEST(TwemproxyModulaTest, EmptyKeyBelongsToTheFirstServerInNameOrder) {
  const auto hosts = named({{"zeta", 2}, {"b", 1}, {"alpha", 1}});
  EXPECT_EQ(owners(hosts, "fnv1a_64", {""}), std::vector<std::string>{"b"});
  EXPECT_EQ(owners(hosts, "murmur", {""}), std::vector<std::string>{"b"});
}

// modula_dispatch takes nutcracker's 32-bit hash; lb's 64-bit hash is folded to its low half.
TEST(TwemproxyModulaTest, PicksByTheLow32BitsOfTheHash) {
  const auto table = buildTwemproxy(named({{"s1", 1}, {"s2", 2}, {"s3", 1}}), modula());
  for (uint64_t h : {0ull, 1ull, 2ull, 3ull, 4294967295ull})
    EXPECT_EQ(table->pick(h | (uint64_t{0xabcdef} << 32), 0), table->pick(h, 0)) << h;
  EXPECT_EQ(table->pick(4294967295ull, 0), 2u);   // 2^32 - 1 = 3 (mod 4): s3
}

// Attempt k > 0 is the k-th next distinct host along the list from the key's slot, wrapping:
// list s1 s2 s2 s3, slot 1 (s2) walks s2, s3, s1; slot 3 (s3) walks s3, s1, s2.
TEST(TwemproxyModulaTest, RetriesWalkTheListToTheNextDistinctHosts) {
  const auto table = buildTwemproxy(named({{"s1", 1}, {"s2", 2}, {"s3", 1}}), modula());
  const std::vector<std::vector<uint32_t>> walks = {{0, 1, 2}, {1, 2, 0}, {1, 2, 0}, {2, 0, 1}};
  for (uint32_t slot = 0; slot < 4; ++slot) {
    std::vector<uint32_t> walk;
    for (uint32_t attempt = 0; attempt < 3; ++attempt) walk.push_back(table->pick(slot, attempt));
    EXPECT_EQ(walk, walks[slot]) << "slot " << slot;
    EXPECT_EQ(table->pick(slot, 3), walks[slot][0]);   // attempt >= hostCount() wraps
  }
}

// Mod-N placement is not minimal-movement: from 4 to 5 equal servers a key stays only when
// h % 4 == h % 5, i.e. h % 20 < 4, so about 80% of keys move (docs/selectors.md).
TEST(TwemproxyModulaTest, GrowingFromFourToFiveServersMovesFourKeysInFive) {
  const auto four = test::makeHosts(4, "s");
  const auto five = test::makeHosts(5, "s");
  const auto before = buildTwemproxy(four, modula());
  const auto after = buildTwemproxy(five, modula());
  const KeyHash& kh = *twemproxy::findKeyHash("murmur");
  uint32_t moved = 0;
  constexpr uint32_t kCount = 100000;
  for (uint32_t i = 0; i < kCount; ++i) {
    const uint64_t h = test::keyHash(kh, i);
    moved += four[before->pick(h, 0)].hash_key != five[after->pick(h, 0)].hash_key;
  }
  EXPECT_NEAR(moved / double{kCount}, 0.8, 0.01);
}

// The properties of tests/unit/plugins/selectors/selector_properties_test.cc that modula keeps. Not
// the movement ones: mod-N moves keys between servers that stay (above).
TEST(TwemproxyModulaTest, AttemptsZeroToNMinusOneArePermutationOfHosts) {
  for (uint32_t n : {1u, 2u, 5u, 40u}) {
    auto hosts = test::makeHosts(n);
    for (uint32_t i = 0; i < n; ++i) hosts[i].weight = 1 + i % 3;
    const auto table = buildTwemproxy(hosts, modula());
    for (uint32_t k = 0; k < 200; ++k) {
      const uint64_t h = test::keyHash(*twemproxy::findKeyHash("murmur"), k);
      std::vector<bool> seen(n);
      for (uint32_t a = 0; a < n; ++a) {
        const uint32_t host = table->pick(h, a);
        ASSERT_LT(host, n);
        EXPECT_FALSE(seen[host]) << "n=" << n << " key " << k << " attempt " << a;
        seen[host] = true;
      }
    }
  }
}

// Because nutcracker sorts its servers by name, reordering the file moves no key.
TEST(TwemproxyModulaTest, ReorderingBackendsMovesNoKey) {
  auto hosts = test::makeHosts(30);
  for (size_t i = 0; i < hosts.size(); ++i) hosts[i].weight = 1 + i % 2;
  auto reordered = hosts;
  std::reverse(reordered.begin(), reordered.end());
  std::rotate(reordered.begin(), reordered.begin() + 7, reordered.end());
  const auto a = buildTwemproxy(hosts, modula());
  const auto b = buildTwemproxy(reordered, modula());
  for (uint32_t k = 0; k < 20000; ++k) {
    const uint64_t h = test::keyHash(*twemproxy::findKeyHash("murmur"), k);
    for (uint32_t at = 0; at < 3; ++at)
      ASSERT_EQ(hosts[a->pick(h, at)].hash_key, reordered[b->pick(h, at)].hash_key) << k;
  }
}

TEST(TwemproxyModulaTest, WeightedSharesFollowWeights) {
  const auto hosts = named({{"a", 1}, {"b", 2}, {"c", 5}});
  const auto table = buildTwemproxy(hosts, modula());
  std::vector<uint32_t> count(3);
  constexpr uint32_t kCount = 80000;
  for (uint32_t k = 0; k < kCount; ++k)
    ++count[table->pick(test::keyHash(*twemproxy::findKeyHash("murmur"), k), 0)];
  EXPECT_NEAR(count[0] / double{kCount}, 1.0 / 8, 0.01);
  EXPECT_NEAR(count[1] / double{kCount}, 2.0 / 8, 0.01);
  EXPECT_NEAR(count[2] / double{kCount}, 5.0 / 8, 0.01);
}

TEST(TwemproxyModulaTest, RebuildIsIdenticalAndSmall) {
  const auto hosts = test::makeHosts(25);
  const auto a = buildTwemproxy(hosts, modula());
  const auto b = buildTwemproxy(hosts, modula());
  for (uint64_t h = 0; h < 5000; ++h)
    for (uint32_t at = 0; at < 3; ++at) ASSERT_EQ(a->pick(h * 2654435761u, at), b->pick(h * 2654435761u, at));
  EXPECT_EQ(a->memoryBytes(), b->memoryBytes());
  EXPECT_LT(a->memoryBytes(), 1024u);   // 25 four-byte entries, not a ring
}

// The config's choice reaches the table the proxy and `lb analyze` build (selectorOptionsOf).
TEST(TwemproxyModulaTest, ConfigDistributionModulaBuildsTheModulaTable) {
  auto r = loadConfigString(
      "[clusters.pool]\nselector = \"twemproxy\"\n"
      "twemproxy = { hash = \"murmur\", distribution = \"modula\" }\n"
      "backends = [ { name = \"s1\", address = \"127.0.0.1:9001\" },\n"
      "  { name = \"s2\", address = \"127.0.0.1:9002\", weight = 2 },\n"
      "  { name = \"s3\", address = \"127.0.0.1:9003\" } ]\n",
      "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const ClusterConfig& c = *r->findCluster("pool");
  EXPECT_EQ(c.twemproxy_distribution, "modula");
  EXPECT_TRUE(selectorOptionsOf(c).modula);
  const SelectorInfo* info = selectorOf(c);
  ASSERT_NE(info, nullptr);
  const auto hosts = hostSpecsOf(c);
  const auto table = info->build(hosts, selectorOptionsOf(c));
  std::vector<std::string> got;
  for (const auto& k : kKeys) got.push_back(hosts[table->pick(hashKeyBytes(info->key_hash, k), 0)].hash_key);
  EXPECT_EQ(got, owners(named({{"s1", 1}, {"s2", 2}, {"s3", 1}}), "murmur", kKeys));
}

TEST(TwemproxyModulaTest, DistributionDefaultsToKetama) {
  auto r = loadConfigString(
      "[clusters.pool]\nselector = \"twemproxy\"\n"
      "backends = [ { name = \"s1\", address = \"127.0.0.1:9001\" } ]\n",
      "lb.toml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->findCluster("pool")->twemproxy_distribution, "ketama");
  EXPECT_FALSE(selectorOptionsOf(*r->findCluster("pool")).modula);
}

}  // namespace
}  // namespace lb
