// The zone-aware preference order (lb/routing/zone_order.h) against an independent rack walk
// written here as Cassandra's NetworkTopologyStrategy writes it: walk the ring, take a node
// whose rack is new, set aside one whose rack is taken, and when every rack is taken, take the
// set-aside nodes and then the rest of the ring in order. Pinned for ring_hash, maglev and
// rendezvous with three zones, over many keys and a few fixed ones.
#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/core/hash.h"
#include "lb/routing/zone_order.h"
#include "plugins/builtin.h"

namespace lb {
namespace {

// Six hosts in three zones, listed zone by zone, so a selector's order meets two of one zone
// in a row as often as chance allows.
ClusterConfig zonedCluster(const std::string& selector) {
  ClusterConfig c;
  c.name = "cache";
  c.selector = selector;
  const char* zones[] = {"us-east-1a", "us-east-1a", "us-east-1b",
                         "us-east-1b", "us-east-1c", "us-east-1c"};
  for (int i = 0; i < 6; ++i)
    c.backends.push_back({"cache-" + std::to_string(i), "127.0.0.1:" + std::to_string(7000 + i),
                          1, "", zones[i], {}});
  return c;
}

// The rack walk over a plain order of host indices, with a zone per host. Written from the
// algorithm's description, not from lb's implementation: a queue of skipped nodes, released
// once the set of seen racks is complete.
std::vector<uint32_t> rackWalk(const std::vector<uint32_t>& ring_order,
                               const std::vector<std::string>& zone_of) {
  const std::set<std::string> all(zone_of.begin(), zone_of.end());
  std::set<std::string> seen;
  std::deque<uint32_t> skipped;
  std::vector<uint32_t> out;
  for (uint32_t h : ring_order) {
    if (seen.size() == all.size()) {
      out.push_back(h);
      continue;
    }
    if (seen.insert(zone_of[h]).second) {
      out.push_back(h);
      if (seen.size() == all.size())
        while (!skipped.empty()) {
          out.push_back(skipped.front());
          skipped.pop_front();
        }
    } else {
      skipped.push_back(h);
    }
  }
  return out;
}

class ZoneOrderTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ZoneOrderTest, MatchesTheRackWalkAndMovesNoPrimary) {
  const ClusterConfig c = zonedCluster(GetParam());
  const SelectorInfo* info = findSelector(c.selector);
  ASSERT_NE(info, nullptr);
  auto table = buildClusterTable(c, *info);
  ASSERT_NE(dynamic_cast<const ZoneOrderTable*>(table.get()), nullptr);
  const SelectorTable& plain = dynamic_cast<const ZoneOrderTable&>(*table).inner();
  std::vector<std::string> zone_of;
  for (const auto& b : c.backends) zone_of.push_back(b.zone);

  uint32_t plain_second_same_zone = 0;
  for (uint32_t k = 0; k < 20000; ++k) {
    const uint64_t hash = hashKeyBytes(info->key_hash, "key:" + std::to_string(k));
    std::vector<uint32_t> ring(6), zoned(6);
    for (uint32_t a = 0; a < 6; ++a) {
      ring[a] = plain.pick(hash, a);
      zoned[a] = table->pick(hash, a);
    }
    ASSERT_EQ(zoned, rackWalk(ring, zone_of)) << "key:" << k;
    ASSERT_EQ(zoned[0], ring[0]) << "the primary moved for key:" << k;
    ASSERT_EQ(std::set<std::string>({zone_of[zoned[0]], zone_of[zoned[1]], zone_of[zoned[2]]})
                  .size(),
              3u);
    plain_second_same_zone += zone_of[ring[0]] == zone_of[ring[1]];
  }
  // Without zones the second host shares the primary's zone about one key in five (one of the
  // five others): the walk is doing something.
  EXPECT_GT(plain_second_same_zone, 2000u);
}

INSTANTIATE_TEST_SUITE_P(Selectors, ZoneOrderTest,
                         ::testing::Values("ring_hash", "maglev", "rendezvous"));

// Fixed keys, fixed orders: a change to any selector or to the walk shows here by name. Each
// order is the rack walk applied by hand to the selector's plain order in its comment (the
// plain orders are pinned by the selectors' own tests).
TEST(ZoneOrderGoldenTest, FixedKeysKeepTheirOrders) {
  struct Golden {
    const char* selector;
    const char* key;
    std::vector<uint32_t> order;
  };
  const std::vector<Golden> golden = {
      {"ring_hash", "user:1", {2, 1, 5, 0, 3, 4}},  // plain: 2 1 0 3 5 4
      {"ring_hash", "user:42", {0, 3, 5, 1, 2, 4}},  // plain: 0 1 3 2 5 4
      {"ring_hash", "session:abc", {2, 1, 4, 0, 3, 5}},  // plain: 2 1 0 4 3 5
      {"ring_hash", "product:9000", {4, 1, 3, 5, 0, 2}},  // plain: 4 5 1 0 3 2
      {"maglev", "user:1", {0, 5, 2, 4, 1, 3}},  // plain: 0 5 2 4 1 3
      {"maglev", "user:42", {5, 3, 1, 2, 0, 4}},  // plain: 5 3 1 2 0 4
      {"maglev", "session:abc", {2, 4, 1, 5, 3, 0}},  // plain: 2 4 5 1 3 0
      {"maglev", "product:9000", {5, 2, 1, 3, 4, 0}},  // plain: 5 2 1 3 4 0
      {"rendezvous", "user:1", {1, 4, 2, 5, 0, 3}},  // plain: 1 4 2 5 0 3
      {"rendezvous", "user:42", {5, 1, 2, 4, 0, 3}},  // plain: 5 1 2 4 0 3
      {"rendezvous", "session:abc", {5, 1, 3, 4, 2, 0}},  // plain: 5 1 4 3 2 0
      {"rendezvous", "product:9000", {0, 5, 2, 1, 3, 4}},  // plain: 0 5 1 2 3 4
  };
  for (const Golden& g : golden) {
    const ClusterConfig c = zonedCluster(g.selector);
    const SelectorInfo* info = findSelector(c.selector);
    auto table = buildClusterTable(c, *info);
    const uint64_t hash = hashKeyBytes(info->key_hash, g.key);
    std::vector<uint32_t> got;
    for (uint32_t a = 0; a < 6; ++a) got.push_back(table->pick(hash, a));
    EXPECT_EQ(got, g.order) << g.selector << " " << g.key;
  }
}

// One zone, or none written, is the selector's own order: no wrapper, no cost.
TEST(ZoneOrderTest, OneZoneIsTheSelectorsOwnOrder) {
  ClusterConfig c = zonedCluster("ring_hash");
  for (auto& b : c.backends) b.zone = "only";
  auto table = buildClusterTable(c, *findSelector("ring_hash"));
  EXPECT_EQ(dynamic_cast<const ZoneOrderTable*>(table.get()), nullptr);
  for (auto& b : c.backends) b.zone.clear();
  table = buildClusterTable(c, *findSelector("ring_hash"));
  EXPECT_EQ(dynamic_cast<const ZoneOrderTable*>(table.get()), nullptr);
}

// A host without a zone stands in a zone of its own ("" ), beside the named ones.
TEST(ZoneOrderTest, HostsWithoutAZoneFormOneZone) {
  ClusterConfig c = zonedCluster("ring_hash");
  c.backends[4].zone.clear();
  c.backends[5].zone.clear();
  auto table = buildClusterTable(c, *findSelector("ring_hash"));
  ASSERT_NE(table, nullptr);
  for (uint32_t k = 0; k < 1000; ++k) {
    const uint64_t hash = hashKeyBytes(KeyHash::kXxh64, "k" + std::to_string(k));
    std::set<std::string> first3;
    for (uint32_t a = 0; a < 3; ++a) first3.insert(c.backends[table->pick(hash, a)].zone);
    ASSERT_EQ(first3.size(), 3u);
  }
}

// attempt >= hosts wraps, as every table does.
TEST(ZoneOrderTest, AttemptsWrap) {
  const ClusterConfig c = zonedCluster("maglev");
  auto table = buildClusterTable(c, *findSelector("maglev"));
  for (uint32_t a = 0; a < 6; ++a) EXPECT_EQ(table->pick(42, a), table->pick(42, a + 6));
}

}  // namespace
}  // namespace lb
