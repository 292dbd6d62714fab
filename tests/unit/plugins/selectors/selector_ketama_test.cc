// ketama: nginx's `hash $key consistent` ring. Known placements from nginx, the server-string
// split, and the whole ring against a reference written from nginx's description with a bitwise
// CRC-32 (no zlib), so a wrong continuation or byte order cannot hide behind shared code.
#include <gtest/gtest.h>

#include <algorithm>

#include "plugins/selectors/selectors.h"
#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

const SelectorInfo& ketama() { return test::selector("ketama"); }

uint32_t pickKey(const SelectorTable& t, std::string_view key, uint32_t attempt = 0) {
  return t.pick(hashKeyBytes(KeyHash::kCrc32, key), attempt);
}

// Bitwise reflected CRC-32 (poly 0xEDB88320) over the concatenation of parts.
uint32_t bitwiseCrc32(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

TEST(KetamaTest, PlacesKeysWhereNginxDoes) {
  // nginx: upstream { hash $request_uri consistent; server 127.0.0.1:7777; server
  // 127.0.0.1:7778; } sends /some/path to 7778, /some/longer/path and /g to 7777.
  std::vector<HostSpec> hosts = {{"127.0.0.1:7777", 1}, {"127.0.0.1:7778", 1}};
  auto table = ketama().build(hosts, {});
  EXPECT_EQ(pickKey(*table, "/some/path"), 1u);
  EXPECT_EQ(pickKey(*table, "/some/longer/path"), 0u);
  EXPECT_EQ(pickKey(*table, "/g"), 0u);
}

TEST(KetamaTest, SplitsServerStringLikeNginx) {
  auto split = [](std::string_view s) {
    KetamaServer k = splitKetamaServer(s);
    return std::string(k.host) + "|" + std::string(k.port);
  };
  EXPECT_EQ(split("127.0.0.1:7777"), "127.0.0.1|7777");
  EXPECT_EQ(split("[::1]:11211"), "[::1]|11211");
  EXPECT_EQ(split("cache.example:80"), "cache.example|80");
  EXPECT_EQ(split("cache-b"), "cache-b|");            // no port: the whole string is host
  EXPECT_EQ(split("cache:b"), "cache:b|");            // non-digit after ':': no port
  EXPECT_EQ(split("host:"), "host|");                 // empty port
  EXPECT_EQ(split("unix:/tmp/mc.sock"), "/tmp/mc.sock|");
  EXPECT_EQ(split("UNIX:/tmp/mc.sock:1"), "/tmp/mc.sock:1|");   // case-insensitive prefix
}

// The full ring from the description: point j = crc32(host 0x00 port LE32(point j-1)),
// point -1 = 0, 160 per weight, sorted, duplicates dropped keeping the first.
TEST(KetamaTest, MatchesBitwiseReferenceRing) {
  std::vector<HostSpec> hosts = {
      {"10.0.0.1:11211", 1}, {"10.0.0.2:11211", 2}, {"cache-c", 1}, {"[::1]:6379", 1}};
  struct P {
    uint32_t hash;
    uint32_t host;
  };
  std::vector<P> ring;
  for (uint32_t h = 0; h < hosts.size(); ++h) {
    KetamaServer s = splitKetamaServer(hosts[h].hash_key);
    const std::string base = std::string(s.host) + std::string(1, '\0') + std::string(s.port);
    uint32_t prev = 0;
    for (uint32_t j = 0; j < 160 * hosts[h].weight; ++j) {
      prev = bitwiseCrc32(base + le32(prev));
      ring.push_back({prev, h});
    }
  }
  std::stable_sort(ring.begin(), ring.end(),
                   [](const P& a, const P& b) { return a.hash < b.hash; });
  ring.erase(std::unique(ring.begin(), ring.end(),
                         [](const P& a, const P& b) { return a.hash == b.hash; }),
             ring.end());
  ASSERT_GT(ring.size(), 790u);
  auto table = ketama().build(hosts, {});
  test::Prng prng(11);
  for (int i = 0; i < 4000; ++i) {
    const uint32_t h = static_cast<uint32_t>(prng.next());
    auto it = std::lower_bound(ring.begin(), ring.end(), h,
                               [](const P& p, uint32_t v) { return p.hash < v; });
    // nginx's retry: the next point clockwise (hp->hash++), skipping hosts already tried.
    std::vector<uint32_t> order;
    for (size_t j = static_cast<size_t>(it - ring.begin()); order.size() < hosts.size(); ++j) {
      const uint32_t host = ring[j % ring.size()].host;
      if (std::find(order.begin(), order.end(), host) == order.end()) order.push_back(host);
    }
    for (uint32_t a = 0; a < hosts.size(); ++a) ASSERT_EQ(table->pick(h, a), order[a]) << h;
  }
  // Every point's own hash lands on its host.
  for (const P& p : ring) ASSERT_EQ(table->pick(p.hash, 0), p.host);
}

TEST(KetamaTest, SameHashKeyGivesSameTableWhateverTheAddress) {
  // The address is not part of HostSpec at all: two clusters whose backends moved to new
  // addresses but kept their hash_key build identical rings.
  std::vector<HostSpec> before = {{"mc-a", 1}, {"mc-b", 2}, {"mc-c", 1}};
  std::vector<HostSpec> after = before;
  auto a = ketama().build(before, {});
  auto b = ketama().build(after, {});
  for (uint32_t k = 0; k < 20000; ++k) {
    const uint64_t h = test::keyHash(KeyHash::kCrc32, k);
    ASSERT_EQ(a->pick(h, 0), b->pick(h, 0));
    ASSERT_EQ(a->pick(h, 1), b->pick(h, 1));
  }
}

TEST(KetamaTest, UsesOnlyLow32BitsOfKeyHash) {
  auto table = ketama().build(test::makeHosts(8), {});
  for (uint32_t k = 0; k < 1000; ++k) {
    const uint64_t h = test::keyHash(KeyHash::kCrc32, k);
    ASSERT_EQ(table->pick(h | (uint64_t{0xABCD} << 32), 0), table->pick(h, 0));
  }
}

TEST(KetamaTest, DuplicateHashKeysStillYieldEveryHostInTheWalk) {
  // Bad input (the loader rejects it): the second host's points all collide with the first's
  // and are dropped, as nginx drops them. The walk must still end and reach it.
  std::vector<HostSpec> hosts = {{"same:1", 1}, {"same:1", 1}, {"other:1", 1}};
  auto table = ketama().build(hosts, {});
  for (uint32_t k = 0; k < 200; ++k) {
    const uint64_t h = test::keyHash(KeyHash::kCrc32, k);
    std::vector<uint32_t> seen;
    for (uint32_t a = 0; a < 3; ++a) seen.push_back(table->pick(h, a));
    std::sort(seen.begin(), seen.end());
    ASSERT_EQ(seen, (std::vector<uint32_t>{0, 1, 2}));
    ASSERT_NE(table->pick(h, 0), 1u);
  }
}

}  // namespace
}  // namespace lb
