// A cluster's key hash: chosen in the config (twemproxy.hash for selector twemproxy, the
// selector's own otherwise), carried by the snapshot's SelectorInfo that every protocol hashes
// keys with, sampled over its own width for the keyspace shares; and the hash tag that picks
// the bytes a key hash sees.
#include <gtest/gtest.h>

#include <numeric>

#include "lb/config/config.h"
#include "lb/routing/cluster_table.h"
#include "lb/routing/snapshot.h"
#include "plugins/selectors/twemproxy_hash.h"

namespace lb {
namespace {

Config load(const std::string& cluster_lines) {
  auto r = loadConfigString("[clusters.c]\n" + cluster_lines +
                                "backends = [ { name = \"s1\", address = \"127.0.0.1:9001\" },\n"
                                "  { name = \"s2\", address = \"127.0.0.1:9002\" } ]\n",
                            "lb.toml");
  if (!r.ok()) {
    ADD_FAILURE() << r.errors().front().format();
    return {};
  }
  return r.value();
}

TEST(ClusterKeyHashTest, TwemproxyDefaultsToFnv1a64) {
  const Config c = load("selector = \"twemproxy\"\n");
  ASSERT_EQ(c.clusters.size(), 1u);
  EXPECT_EQ(c.clusters[0].twemproxy_hash, "fnv1a_64");
  const SelectorInfo* s = selectorOf(c.clusters[0]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "twemproxy");
  EXPECT_EQ(s->key_hash, *twemproxy::findKeyHash("fnv1a_64"));
}

TEST(ClusterKeyHashTest, TwemproxyClusterNamesItsKeyHash) {
  const Config c = load("selector = \"twemproxy\"\ntwemproxy = { hash = \"murmur\" }\n");
  ASSERT_EQ(c.clusters.size(), 1u);
  const SelectorInfo* s = selectorOf(c.clusters[0]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->key_hash.name, "murmur");
  EXPECT_EQ(hashKeyBytes(s->key_hash, "apple"), twemproxy::murmur("apple"));
}

TEST(ClusterKeyHashTest, OtherSelectorsKeepTheirOwnKeyHash) {
  EXPECT_EQ(selectorOf(load("selector = \"ring_hash\"\n").clusters.at(0))->key_hash,
            KeyHash::kXxh64);
  EXPECT_EQ(selectorOf(load("").clusters.at(0))->key_hash, KeyHash::kXxh64);   // ring_hash
  ClusterConfig ketama;
  ketama.selector = "ketama";
  ketama.twemproxy_hash = "murmur";   // not read: ketama's key hash is fixed
  EXPECT_EQ(selectorOf(ketama)->key_hash, KeyHash::kCrc32);
}

// What the proxy and the admin /ring endpoint read: the snapshot cluster's selector.
TEST(ClusterKeyHashTest, SnapshotCarriesTheClustersChoice) {
  Config c = load("selector = \"twemproxy\"\ntwemproxy = { hash = \"md5\" }\n");
  StateRegistry registry(1);
  auto snap = buildSnapshot(std::move(c), registry, 1);
  ASSERT_TRUE(snap.ok()) << snap.errors().front().format();
  const ClusterSnapshot* cs = snap.value()->findCluster("c");
  ASSERT_NE(cs, nullptr);
  EXPECT_EQ(cs->selector->key_hash.name, "md5");
  EXPECT_EQ(cs->selector->name, "twemproxy");
}

// twemproxy's crc32 is 15 bits wide: its shares come from all 32768 values, and match the
// fraction of those values each host owns.
TEST(ClusterKeyHashTest, KeyspaceSharesSpanTheKeyHashsOwnWidth) {
  std::vector<HostSpec> hosts = {{"s1", 1}, {"s2", 1}, {"s3", 1}};
  const SelectorInfo* s = findSelector("twemproxy", "crc32");
  ASSERT_NE(s, nullptr);
  auto table = s->build(hosts, {});
  const auto shares = keyspaceShares(*table, s->key_hash);
  std::vector<double> exact(3, 0.0);
  for (uint32_t h = 0; h < (1u << 15); ++h) exact[table->pick(h, 0)] += 1.0 / (1u << 15);
  ASSERT_EQ(shares.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(shares[i], exact[i]) << i;
  EXPECT_NEAR(std::accumulate(shares.begin(), shares.end(), 0.0), 1.0, 1e-9);
  // A 64-bit hash is sampled over all 64 bits, a 32-bit one over 32.
  const auto wide = keyspaceShares(*table, KeyHash::kXxh64);
  EXPECT_NEAR(std::accumulate(wide.begin(), wide.end(), 0.0), 1.0, 1e-9);
}

TEST(ClusterKeyHashTest, KeyHashesCompareByFunction) {
  EXPECT_EQ(KeyHash::kXxh64, KeyHash::kXxh64);
  EXPECT_FALSE(KeyHash::kXxh64 == KeyHash::kCrc32);
  EXPECT_EQ(KeyHash::kXxh64.bits, 64);
  EXPECT_EQ(KeyHash::kCrc32.bits, 32);
  EXPECT_EQ(hashKeyBytes(KeyHash::kCrc32, "123456789"), 0xCBF43926u);
  EXPECT_EQ(hashKeyBytes(KeyHash::kXxh64, "abc"), xxh64("abc"));
}

// twemproxy's hash_tag and Redis Cluster's {...}: the part inside the first pair, if any.
TEST(ClusterKeyHashTest, HashTagSelectsThePartInsideTheFirstPair) {
  EXPECT_EQ(keyWithinHashTag("user:{42}:name", "{}"), "42");
  EXPECT_EQ(keyWithinHashTag("{a}{b}", "{}"), "a");
  EXPECT_EQ(keyWithinHashTag("x{a{b}c}", "{}"), "a{b");
  EXPECT_EQ(keyWithinHashTag("user:{}:name", "{}"), "user:{}:name");   // empty: whole key
  EXPECT_EQ(keyWithinHashTag("user:{42", "{}"), "user:{42");
  EXPECT_EQ(keyWithinHashTag("user:42}", "{}"), "user:42}");
  EXPECT_EQ(keyWithinHashTag("user:42", "{}"), "user:42");
  EXPECT_EQ(keyWithinHashTag("a$tag$b", "$$"), "tag");
  EXPECT_EQ(keyWithinHashTag("user:{42}", ""), "user:{42}");          // no tag configured
  EXPECT_EQ(keyWithinHashTag("", "{}"), "");
}

}  // namespace
}  // namespace lb
