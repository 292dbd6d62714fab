// twemproxy: nutcracker's ketama continuum. Golden points computed outside lb (Python's
// hashlib and coreutils' md5sum over the names nc_ketama.c forms), the single-precision point
// counts, placements observed on a live nutcracker 0.5.0, and the consistency properties the
// continuum keeps (and, with unequal weights, the ones it does not).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "plugins/selectors/selectors.h"
#include "plugins/selectors/twemproxy_hash.h"
#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

using test::movement;

const SelectorInfo& twemproxySelector() { return test::selector("twemproxy"); }

std::vector<HostSpec> pool(std::initializer_list<uint32_t> weights) {
  std::vector<HostSpec> hosts;
  for (uint32_t w : weights) hosts.push_back({"s" + std::to_string(hosts.size() + 1), w});
  return hosts;
}

// Owner hash_key of keys "key:0".. under one key hash (the selector's default is fnv1a_64,
// whose weak mixing of "key:N" would make the statistical properties below depend on it).
std::vector<std::string> owners(const std::vector<HostSpec>& hosts, const KeyHash& kh,
                                uint32_t count) {
  auto table = buildTwemproxy(hosts, {});
  std::vector<std::string> out;
  for (uint32_t i = 0; i < count; ++i)
    out.push_back(hosts[table->pick(test::keyHash(kh, i), 0)].hash_key);
  return out;
}
const KeyHash& md5Key() { return *twemproxy::findKeyHash("md5"); }

TEST(TwemproxyTest, RegisteredWithFnv1a64AsItsDefaultKeyHash) {
  EXPECT_EQ(twemproxySelector().key_hash.name, "fnv1a_64");
  const SelectorInfo* murmur = findSelector("twemproxy", "murmur");
  ASSERT_NE(murmur, nullptr);
  EXPECT_EQ(murmur->name, "twemproxy");
  EXPECT_EQ(murmur->key_hash, *twemproxy::findKeyHash("murmur"));
  EXPECT_EQ(findSelector("twemproxy", "xxh64"), nullptr);
  EXPECT_EQ(findSelector("ring_hash", "murmur"), nullptr);   // a fixed key hash
  EXPECT_EQ(findSelector("ring_hash", ""), &test::selector("ring_hash"));
  EXPECT_EQ(keyHashNames("twemproxy").size(), twemproxy::kKeyHashes.size());
  EXPECT_EQ(keyHashNames("twemproxy").front(), "fnv1a_64");
  EXPECT_TRUE(keyHashNames("maglev").empty());
}

// nc_ketama.c: floorf((float)(pct * 160 / 4 * (float)n + 0.0000000001)) * 4, pct a float.
TEST(TwemproxyTest, PointsPerServerFollowNutcrackersSinglePrecision) {
  // Equal weights give 160 points each, except where 1/n rounded to float, times 40n, falls
  // under 40: 25, 47, 50, 55 and 61 servers get 156 each (and so on above 64).
  for (uint32_t n = 1; n <= 64; ++n) {
    const bool short_by_one_digest = n == 25 || n == 47 || n == 50 || n == 55 || n == 61;
    EXPECT_EQ(twemproxyPointsPerServer(1, n, n), short_by_one_digest ? 156u : 160u) << n;
  }
  EXPECT_EQ(twemproxyPointsPerServer(1, 11, 3), 40u);
  EXPECT_EQ(twemproxyPointsPerServer(3, 11, 3), 128u);
  EXPECT_EQ(twemproxyPointsPerServer(7, 11, 3), 304u);
  // Where exact arithmetic gives an integer, the float product falls just under it and the
  // 1e-10 added in double is lost when rounded back to float: 1/25 * 40 * 5 = 8 exactly, but
  // nutcracker floors 7.9999995 to 7 and gives 28 points, not 32.
  EXPECT_EQ(twemproxyPointsPerServer(1, 25, 5), 28u);
  EXPECT_EQ(twemproxyPointsPerServer(29, 60, 3), 228u);   // exact: 232
  // A share under 1/40 of the mean gets no point at all.
  EXPECT_EQ(twemproxyPointsPerServer(1, 1001, 2), 0u);
  EXPECT_EQ(twemproxyPointsPerServer(1000, 1001, 2), 316u);
}

// The first points of the continuum of s1, s2, s3 (weight 1), from Python's hashlib: each name
// "sK-i" (i = 0..39), its MD5 digest as four little-endian words, all 480 sorted.
TEST(TwemproxyTest, GoldenContinuumOfThreeNamedServers) {
  const auto c = twemproxyContinuum(pool({1, 1, 1}));
  ASSERT_EQ(c.size(), 480u);
  const std::vector<std::pair<uint32_t, uint32_t>> first = {
      {17992034, 2}, {25053147, 0}, {28026067, 1}, {31796670, 1}, {43708338, 0}, {43774975, 2}};
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(c[i].value, first[i].first) << i;
    EXPECT_EQ(c[i].host, first[i].second) << i;
  }
  EXPECT_EQ(c[478].value, 4267531469u);
  EXPECT_EQ(c[478].host, 0u);
  EXPECT_EQ(c[479].value, 4270593805u);
  EXPECT_EQ(c[479].host, 2u);
  // `printf 's1-0' | md5sum` = 4b762698 784b0045 c38cd842 1707a59a: s1's first four points.
  for (uint32_t v : {0x9826764bu, 0x45004b78u, 0x42d88cc3u, 0x9aa50717u}) {
    auto it = std::find_if(c.begin(), c.end(),
                           [&](const ContinuumPoint& p) { return p.value == v; });
    ASSERT_NE(it, c.end()) << std::hex << v;
    EXPECT_EQ(it->host, 0u);
  }
  EXPECT_TRUE(std::is_sorted(c.begin(), c.end(), [](const auto& a, const auto& b) {
    return a.value < b.value;
  }));
}

TEST(TwemproxyTest, GoldenContinuumWithUnequalWeights) {
  const auto c = twemproxyContinuum(pool({1, 3, 7}));
  ASSERT_EQ(c.size(), 472u);   // 40 + 128 + 304
  std::vector<uint32_t> count(3);
  for (const auto& p : c) ++count[p.host];
  EXPECT_EQ(count, (std::vector<uint32_t>{40, 128, 304}));
  // From hashlib as above: s3-... owns the first point, then s3 and s2.
  EXPECT_EQ(c[0].value, 14733755u);
  EXPECT_EQ(c[0].host, 2u);
  EXPECT_EQ(c[1].value, 17992034u);
  EXPECT_EQ(c[2].value, 28026067u);
  EXPECT_EQ(c[2].host, 1u);
}

// Observed: nutcracker 0.5.0 (Debian 12), pool `hash: fnv1a_64, distribution: ketama`, servers
// "127.0.0.1:PORT:1 s1" .. s3, SET through it, then EXISTS on each redis-server. "\xff\xfe"
// and "你好" land elsewhere if bytes are read unsigned; "" hashes to 0.
TEST(TwemproxyTest, PlacesKeysWhereNutcrackerDoes) {
  const auto hosts = pool({1, 1, 1});
  auto table = twemproxySelector().build(hosts, {});
  auto owner = [&](std::string_view key) {
    return hosts[table->pick(hashKeyBytes(twemproxySelector().key_hash, key), 0)].hash_key;
  };
  EXPECT_EQ(owner("foo"), "s3");
  EXPECT_EQ(owner(""), "s3");
  EXPECT_EQ(owner("\xff\xfe"), "s2");
  EXPECT_EQ(owner("caf\xc3\xa9"), "s3");
  EXPECT_EQ(owner("\x80" "abc"), "s1");
  EXPECT_EQ(owner("\xe4\xbd\xa0\xe5\xa5\xbd"), "s1");
  EXPECT_EQ(owner("k\xffz"), "s2");
}

// ketama_dispatch: the first point >= hash, wrapping to the first point past the last.
TEST(TwemproxyTest, LookupTakesTheFirstPointAtOrAfterTheHashAndWraps) {
  const auto hosts = pool({1, 1, 1});
  const auto c = twemproxyContinuum(hosts);
  auto table = buildTwemproxy(hosts, {});
  EXPECT_EQ(table->pick(c[0].value, 0), c[0].host);
  EXPECT_EQ(table->pick(c[0].value + 1, 0), c[1].host);
  EXPECT_EQ(table->pick(0, 0), c[0].host);
  EXPECT_EQ(table->pick(c[479].value + 1, 0), c[0].host);
  EXPECT_EQ(table->pick(0xffffffffu, 0), c[0].host);
  // Only the low 32 bits count.
  EXPECT_EQ(table->pick((uint64_t{7} << 32) | c[1].value, 0), c[1].host);
}

TEST(TwemproxyTest, RetriesWalkClockwiseToDistinctHosts) {
  const auto hosts = pool({1, 1, 1, 1, 1});
  const auto c = twemproxyContinuum(hosts);
  auto table = buildTwemproxy(hosts, {});
  const uint64_t h = c[100].value;
  std::vector<uint32_t> expected;
  for (size_t i = 100; expected.size() < hosts.size(); i = (i + 1) % c.size())
    if (std::find(expected.begin(), expected.end(), c[i].host) == expected.end())
      expected.push_back(c[i].host);
  for (uint32_t a = 0; a < hosts.size(); ++a) EXPECT_EQ(table->pick(h, a), expected[a]) << a;
  EXPECT_EQ(table->pick(h, 5), expected[0]);   // attempt n wraps to the owner
}

TEST(TwemproxyTest, AHostWithoutPointsIsNeverOwnerButStillInTheWalk) {
  const std::vector<HostSpec> hosts = {{"big", 1000}, {"tiny", 1}};
  auto table = buildTwemproxy(hosts, {});
  for (uint32_t k = 0; k < 2000; ++k) {
    const uint64_t h = test::keyHash(md5Key(), k);
    ASSERT_EQ(table->pick(h, 0), 0u);
    ASSERT_EQ(table->pick(h, 1), 1u);
  }
}

// With equal weights every server keeps its 160 points whatever the others do, so removing
// one moves only its keys and adding one takes keys only onto itself.
TEST(TwemproxyTest, EqualWeightsMoveOnlyTheChangedHostsKeys) {
  auto hosts = test::makeHosts(12);
  const auto before = owners(hosts, md5Key(), 30000);
  auto fewer = hosts;
  fewer.erase(fewer.begin() + 5);
  const auto m = movement(before, owners(fewer, md5Key(), 30000), "host-5");
  EXPECT_EQ(m.collateral, 0u);
  EXPECT_EQ(m.moved, m.from_host);
  EXPECT_GT(m.from_host, 0u);
  auto more = hosts;
  more.push_back({"host-new", 1});
  const auto a = movement(before, owners(more, md5Key(), 30000), "host-new");
  EXPECT_EQ(a.collateral, 0u);
  EXPECT_EQ(a.moved, a.to_host);
  EXPECT_NEAR(static_cast<double>(a.to_host) / 30000, 1.0 / 13, 0.025);
}

// Weights are shares: a server's points depend on the total, so a change of membership with
// unequal weights moves some keys between servers that stay, as it does in nutcracker.
TEST(TwemproxyTest, UnequalWeightsReshareOnMembershipChange) {
  std::vector<HostSpec> hosts = {{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}};
  const auto before = owners(hosts, md5Key(), 30000);
  hosts.pop_back();
  const auto m = movement(before, owners(hosts, md5Key(), 30000), "d");
  EXPECT_GT(m.collateral, 0u);
}

TEST(TwemproxyTest, WeightedSharesFollowWeights) {
  const std::vector<HostSpec> hosts = {{"w1", 1}, {"w2", 2}, {"w3", 3}, {"w4", 4}};
  auto table = buildTwemproxy(hosts, {});
  constexpr uint32_t kKeys = 200000;
  std::vector<uint32_t> count(hosts.size());
  for (uint32_t k = 0; k < kKeys; ++k) ++count[table->pick(test::keyHash(md5Key(), k), 0)];
  // 64 .. 256 points each: a ring host's share spreads by ~1/sqrt(points), 12% at 64.
  for (size_t i = 0; i < hosts.size(); ++i)
    EXPECT_NEAR(static_cast<double>(count[i]) / kKeys / ((i + 1) / 10.0), 1.0, 0.3) << i;
}

TEST(TwemproxyTest, ReorderingBackendsMovesNoKey) {
  auto hosts = test::makeHosts(20);
  for (size_t i = 0; i < hosts.size(); ++i) hosts[i].weight = 1 + i % 3;
  auto reversed = hosts;
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(owners(hosts, md5Key(), 20000), owners(reversed, md5Key(), 20000));
}

TEST(TwemproxyTest, AttemptsZeroToNMinusOneArePermutationOfHosts) {
  for (uint32_t n : {1u, 2u, 7u, 40u}) {
    auto hosts = test::makeHosts(n);
    hosts.back().weight = 3;
    auto table = buildTwemproxy(hosts, {});
    ASSERT_EQ(table->hostCount(), n);
    for (uint32_t k = 0; k < 200; ++k) {
      const uint64_t h = test::keyHash(twemproxySelector().key_hash, k);
      std::set<uint32_t> seen;
      for (uint32_t a = 0; a < n; ++a) seen.insert(table->pick(h, a));
      ASSERT_EQ(seen.size(), n) << "n=" << n << " key " << k;
    }
  }
}

// MD5("t307-30") and MD5("t570-31") share the word 3770804139 (a birthday search over names
// tN, Python's hashlib). nutcracker sorts its servers by name before building, so the tie goes
// to t307 whichever the file lists first; lb keeps that order (checked live in
// TwemproxyCompatTest.RedisKetamaTiedPointsGoToTheServerFirstByName).
TEST(TwemproxyTest, TiedPointsKeepNutcrackersNameOrderNotTheFiles) {
  const std::vector<HostSpec> hosts = {{"t570", 1}, {"t307", 1}};
  const auto c = twemproxyContinuum(hosts);
  auto tie = std::find_if(c.begin(), c.end(),
                          [](const ContinuumPoint& p) { return p.value == 3770804139u; });
  ASSERT_NE(tie, c.end());
  ASSERT_EQ(tie[1].value, 3770804139u);
  EXPECT_EQ(hosts[tie[0].host].hash_key, "t307");
  EXPECT_EQ(hosts[tie[1].host].hash_key, "t570");
  EXPECT_EQ(buildTwemproxy(hosts, {})->pick(3770804139u, 0), 1u);   // t307
}

}  // namespace
}  // namespace lb
