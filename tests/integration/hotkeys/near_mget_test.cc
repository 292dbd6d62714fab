// MGET with the near cache, redis-servers behind lb (hot_keys.near_cache): an MGET
// of hot and cold keys across backends is byte for byte what the servers say (a missing key
// and a list both nil, as MGET answers them); hot keys the near cache holds do not reach
// their backends (INFO commandstats); a SET through lb, or straight to the backend (CLIENT
// TRACKING), is seen by the next MGETs; and a reader hammering MGET of a hot key while a
// writer writes it through lb never sees a value older than the last acknowledged write.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/near_cache_fleet.h"

namespace lb::test {
namespace {

class NearMgetRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.start("", "hot_keys = { near_cache = { items = 256, ttl = \"30s\" } }"))
        << fleet_.output();
  }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }

  double path(const char* p) { return nearMetric(fleet_, "lb_hotkey_requests_total", "path", p); }

  static std::string mget(const std::vector<std::string>& keys) {
    // RESP by hand: redisEncode takes a fixed list.
    std::string out = "*" + std::to_string(keys.size() + 1) + "\r\n$4\r\nMGET\r\n";
    for (const std::string& k : keys) out += bulk(k);
    return out;
  }
  static std::string bulk(const std::string& v) {
    return "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n";
  }

  // Until every one of `keys` is hot on c's worker: one MGET of them all moves the near
  // cache's hit and miss counters by one per key (only hot keys are counted there).
  bool warm(TcpClient& c, const std::vector<std::string>& keys) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    const std::string req = mget(keys);
    while (std::chrono::steady_clock::now() < deadline) {
      for (int i = 0; i < 200; ++i)
        if (nearRespExchange(c, req).empty()) return false;
      const double before = path("near_hit") + path("near_miss");
      if (nearRespExchange(c, req).empty()) return false;
      if (path("near_hit") + path("near_miss") - before >= static_cast<double>(keys.size()))
        return true;
    }
    return false;
  }

  // The element a server's own MGET gives `key`: its owner's (the one server with a value),
  // or nil when none has one.
  std::string directElement(const std::string& key) {
    for (int i = 0; i < fleet_.size(); ++i) {
      TcpClient c;
      if (!c.connect(fleet_.server(i).port())) continue;
      const std::string raw = nearRespExchange(c, mget({key}));
      if (raw.rfind("*1\r\n", 0) == 0 && raw != "*1\r\n$-1\r\n") return raw.substr(4);
    }
    return "$-1\r\n";
  }
  std::string directMget(const std::vector<std::string>& keys) {
    std::string out = "*" + std::to_string(keys.size()) + "\r\n";
    for (const std::string& k : keys) out += directElement(k);
    return out;
  }

  // cmdstat_<name> calls on server i (0 when it has none yet).
  long calls(int i, const std::string& name) {
    TcpClient c;
    if (!c.connect(fleet_.server(i).port())) return -1;
    const std::string raw = nearRespExchange(c, redisEncode({"INFO", "commandstats"}));
    const std::string tag = "cmdstat_" + name + ":calls=";
    const size_t at = raw.find(tag);
    return at == std::string::npos ? 0 : std::stol(raw.substr(at + tag.size()));
  }
  long totalCalls(const std::string& name) {
    long sum = 0;
    for (int i = 0; i < fleet_.size(); ++i) sum += calls(i, name);
    return sum;
  }
  int ownerOf(const std::string& key) {
    for (int i = 0; i < fleet_.size(); ++i) {
      TcpClient c;
      if (c.connect(fleet_.server(i).port()) &&
          nearRespExchange(c, redisEncode({"GET", key})) != "$-1\r\n")
        return i;
    }
    return -1;
  }

  CacheFleet fleet_{CacheServer::kRedis, 3};
};

TEST_F(NearMgetRedisTest, HotAndColdKeysAcrossBackendsAreWhatRedisSays) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::string value = "bin\r\n\0ary ";
  value.push_back('\0');
  for (int i = 0; i < 30; ++i) value += static_cast<char>(i * 11);
  ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", "mg:hot1", value})), "+OK\r\n");
  ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", "mg:hot2", ""})), "+OK\r\n");
  ASSERT_EQ(nearRespExchange(c, redisEncode({"RPUSH", "mg:list", "a"})), ":1\r\n");
  std::vector<std::string> cold;
  for (int i = 0; i < 12; ++i) {
    cold.push_back("mg:cold" + std::to_string(i));
    ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", cold.back(), "c" + std::to_string(i)})),
              "+OK\r\n");
  }
  // Hot: two strings, a list (nil to MGET, WRONGTYPE to GET) and a key that does not exist.
  const std::vector<std::string> hot{"mg:hot1", "mg:hot2", "mg:list", "mg:none"};
  ASSERT_TRUE(warm(c, hot)) << "the keys did not become hot";
  // A GET of the missing key caches its nil; a GET of the list is WRONGTYPE, never cached.
  ASSERT_EQ(nearRespExchange(c, redisEncode({"GET", "mg:none"})), "$-1\r\n");
  ASSERT_EQ(nearRespExchange(c, redisEncode({"GET", "mg:list"})).rfind("-WRONGTYPE", 0), 0u);
  std::vector<std::string> keys;
  for (size_t i = 0; i < cold.size(); ++i) {
    keys.push_back(cold[i]);
    if (i % 3 == 0) keys.push_back(hot[(i / 3) % hot.size()]);
  }
  keys.push_back("mg:hot1");   // twice in one command
  const std::string direct = directMget(keys);
  const double hits_before = path("near_hit");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(nearRespExchange(c, mget(keys)), direct) << "round " << i;
  EXPECT_GE(path("near_hit") - hits_before, 5 * 3) << "the near cache served no element";
  EXPECT_EQ(nearRespExchange(c, mget(hot)), directMget(hot));
  // The list is still a list: MGET's nil was not cached as the GET reply.
  EXPECT_EQ(nearRespExchange(c, redisEncode({"GET", "mg:list"})).rfind("-WRONGTYPE", 0), 0u);
}

TEST_F(NearMgetRedisTest, CachedElementsDoNotReachTheirBackends) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  const std::vector<std::string> hot{"mg:a", "mg:b", "mg:c"};
  for (const std::string& k : hot)
    ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", k, "v" + k})), "+OK\r\n");
  ASSERT_TRUE(warm(c, hot)) << "the keys did not become hot";
  const std::string expect = directMget(hot);
  ASSERT_EQ(nearRespExchange(c, mget(hot)), expect);   // fills what warming left unfilled
  const long mgets = totalCalls("mget");
  const long gets = totalCalls("get");
  const double hits = path("near_hit");
  for (int i = 0; i < 20; ++i) ASSERT_EQ(nearRespExchange(c, mget(hot)), expect);
  EXPECT_EQ(totalCalls("mget"), mgets) << "an MGET of cached hot keys reached a backend";
  EXPECT_EQ(totalCalls("get"), gets);
  EXPECT_GE(path("near_hit") - hits, 60);
  // One cold key with them: only its owner is asked, and only for it.
  ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", "mg:cold", "x"})), "+OK\r\n");
  const int owner = ownerOf("mg:cold");
  ASSERT_GE(owner, 0);
  const std::vector<std::string> mixed{"mg:a", "mg:cold", "mg:b", "mg:c"};
  const std::string direct = directMget(mixed);   // MGETs of its own, before counting
  std::vector<long> before;
  for (int i = 0; i < fleet_.size(); ++i) before.push_back(calls(i, "mget"));
  EXPECT_EQ(nearRespExchange(c, mget(mixed)), direct);
  for (int i = 0; i < fleet_.size(); ++i)
    EXPECT_EQ(calls(i, "mget") - before[static_cast<size_t>(i)], i == owner ? 1 : 0)
        << "server " << i << (i == owner ? " (the cold key's owner)" : "");
}

TEST_F(NearMgetRedisTest, WritesThroughLbAndStraightToTheBackendAreSeen) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  const std::vector<std::string> hot{"mg:w", "mg:x"};
  ASSERT_EQ(nearRespExchange(c, redisEncode({"MSET", "mg:w", "w0", "mg:x", "x0"})), "+OK\r\n");
  ASSERT_TRUE(warm(c, hot)) << "the keys did not become hot";
  const int owner = ownerOf("mg:w");
  ASSERT_GE(owner, 0);
  TcpClient direct;
  ASSERT_TRUE(direct.connect(fleet_.server(owner).port()));
  long long worst = 0;
  for (int round = 1; round <= 5; ++round) {
    // Cached: two MGETs in a row, the second answered from the near cache.
    nearRespExchange(c, mget(hot));
    const double hits = path("near_hit");
    ASSERT_FALSE(nearRespExchange(c, mget(hot)).empty());
    ASSERT_GE(path("near_hit") - hits, 2) << "round " << round << ": not served from the cache";
    // Through lb: the very next MGET.
    const std::string v = "lb" + std::to_string(round);
    ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", "mg:w", v})), "+OK\r\n");
    ASSERT_EQ(nearRespExchange(c, mget(hot)), "*2\r\n" + bulk(v) + bulk("x0")) << round;
    nearRespExchange(c, mget(hot));   // cached again
    // Straight to the backend: within 50 ms, by tracking.
    const std::string d = "direct" + std::to_string(round);
    ASSERT_EQ(nearRespExchange(direct, redisEncode({"SET", "mg:w", d})), "+OK\r\n");
    const std::optional<long long> ms = nearMsUntil(
        [&] { return nearRespExchange(c, mget(hot)) == "*2\r\n" + bulk(d) + bulk("x0"); });
    ASSERT_TRUE(ms.has_value()) << "round " << round
                                << ": the direct SET was not seen within 5 s";
    worst = *ms > worst ? *ms : worst;
  }
  EXPECT_LE(worst, 50) << "a direct SET took " << worst << " ms to be seen by MGET through lb";
  printf("[ near mget ] a SET straight to the backend was seen by MGET within %lld ms\n", worst);
}

// Readers on both workers hammer MGET of a hot key (with a second hot key on another
// position) while a writer writes increasing values through lb; each read must return the
// last value acknowledged before it was sent, or a later one.
TEST_F(NearMgetRedisTest, HammeredMgetNeverGoesBehindAnAcknowledgedWrite) {
  TcpClient setup;
  ASSERT_TRUE(setup.connect(fleet_.port()));
  ASSERT_EQ(nearRespExchange(setup, redisEncode({"MSET", "mg:h", "0", "mg:o", "o"})), "+OK\r\n");
  const std::vector<std::string> keys{"mg:o", "mg:h"};
  std::atomic<long> acked{0};
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0};
  std::atomic<long> stale{0};
  std::atomic<long> broken{0};
  std::string first_stale;
  std::vector<TcpClient> conns(4);
  for (auto& c : conns) {
    ASSERT_TRUE(c.connect(fleet_.port()));
    ASSERT_TRUE(warm(c, keys));
  }
  const double before = path("near_hit");
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r)
    readers.emplace_back([&, r] {
      TcpClient& c = conns[static_cast<size_t>(r)];
      while (!stop.load()) {
        const long floor = acked.load();
        const std::string raw = nearRespExchange(c, mget(keys));
        RespValue v;
        if (raw.empty() || parseResp(raw, 0, &v) == std::string::npos || v.type != '*' ||
            v.items.size() != 2 || v.items[0].text != "o" || v.items[1].type != '$') {
          ++broken;
          return;
        }
        ++reads;
        if (std::stol(v.items[1].text) < floor && stale++ == 0 && r == 0)
          first_stale = "read " + v.items[1].text + " after " + std::to_string(floor) + " was acked";
      }
    });
  TcpClient writer;
  ASSERT_TRUE(writer.connect(fleet_.port()));
  const auto end = std::chrono::steady_clock::now() + 2s;
  long v = 0;
  while (std::chrono::steady_clock::now() < end) {
    ++v;
    ASSERT_EQ(nearRespExchange(writer, redisEncode({"SET", "mg:h", std::to_string(v)})), "+OK\r\n");
    acked.store(v);
    for (int i = 0; i < 3; ++i) ASSERT_FALSE(nearRespExchange(writer, mget(keys)).empty());
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(broken.load(), 0);
  EXPECT_EQ(stale.load(), 0) << first_stale;
  EXPECT_GT(reads.load(), 1000);
  EXPECT_GT(v, 100);
  const double served = path("near_hit") - before;
  EXPECT_GT(served, 100) << "the near cache served too few elements for the test to mean anything";
  printf("[ near mget ] %ld writes, %ld MGETs by 4 readers, %.0f near hits\n", v, reads.load(),
         served);
}

}  // namespace
}  // namespace lb::test
