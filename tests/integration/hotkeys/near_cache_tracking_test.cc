// The near cache's Redis CLIENT TRACKING (lb/proxy/redis/redis_tracking.h): a
// SET sent straight to a backend, which lb never sees, is seen through lb
// within 50 ms; killing the tracking connections flushes the backend's entries, and caching
// comes back once they reconnect. The ttl is 30 s, so that it cannot be what made a write
// visible.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/support/near_cache_fleet.h"

namespace lb::test {
namespace {

constexpr const char* kPassword = "near-s3cret";

// With requirepass on every server and the cluster's password, so that the tracking
// connection must AUTH before anything else (the data connections always did).
class NearCacheTrackingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_.setServerArgs({"--requirepass", kPassword});
    ASSERT_TRUE(fleet_.start("", std::string("password = \"") + kPassword +
                                     "\"\nhot_keys = { near_cache = { items = 64, ttl = \"30s\" } }"))
        << fleet_.output();
  }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }

  double path(const char* p) { return nearMetric(fleet_, "lb_hotkey_requests_total", "path", p); }
  double invalidations(const char* r) {
    return nearMetric(fleet_, "lb_near_cache_invalidations_total", "reason", r);
  }
  std::string get(TcpClient& c, const std::string& key) {
    return nearRespExchange(c, redisEncode({"GET", key}));
  }
  static std::string bulk(const std::string& v) {
    return "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n";
  }
  static bool auth(TcpClient& c) {
    return nearRespExchange(c, redisEncode({"AUTH", kPassword})) == "+OK\r\n";
  }
  int ownerOf(const std::string& key) {
    for (int i = 0; i < fleet_.size(); ++i) {
      TcpClient c;
      if (c.connect(fleet_.server(i).port()) && auth(c) && get(c, key) != "$-1\r\n") return i;
    }
    return -1;
  }
  // Until a GET of `key` through c is a near-cache hit (the key hot, tracking up, the entry
  // filled); false after 15 s.
  bool cachedVia(TcpClient& c, const std::string& key) {
    if (!nearWarm(fleet_, [&] { return !get(c, key).empty(); })) return false;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (std::chrono::steady_clock::now() < deadline) {
      get(c, key);
      const double before = path("near_hit");
      get(c, key);
      if (path("near_hit") > before) return true;
    }
    return false;
  }

  CacheFleet fleet_{CacheServer::kRedis, 3};
};

TEST_F(NearCacheTrackingTest, ASetStraightToTheBackendIsSeenWithin50ms) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", "near:t", "v0"})), "+OK\r\n");
  const int owner = ownerOf("near:t");
  ASSERT_GE(owner, 0);
  TcpClient direct;
  ASSERT_TRUE(direct.connect(fleet_.server(owner).port()));
  ASSERT_TRUE(auth(direct));
  long long worst = 0;
  for (int round = 1; round <= 5; ++round) {
    ASSERT_TRUE(cachedVia(c, "near:t")) << "round " << round << ": never served from the cache";
    const std::string v = "v" + std::to_string(round);
    ASSERT_EQ(nearRespExchange(direct, redisEncode({"SET", "near:t", v})), "+OK\r\n");
    const std::optional<long long> ms = nearMsUntil([&] { return get(c, "near:t") == bulk(v); });
    ASSERT_TRUE(ms.has_value()) << "round " << round
                                << ": the direct SET was not seen within 5 s";
    worst = *ms > worst ? *ms : worst;
  }
  EXPECT_LE(worst, 50) << "a direct SET took " << worst << " ms to be seen through lb";
  printf("[ near cache ] a SET straight to the backend was seen through lb within %lld ms\n",
         worst);
  EXPECT_GT(invalidations("tracking"), 0);
}

TEST_F(NearCacheTrackingTest, KillingTheTrackingConnectionsFlushesTheBackendsEntries) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", "near:f", "a"})), "+OK\r\n");
  const int owner = ownerOf("near:f");
  ASSERT_GE(owner, 0);
  ASSERT_TRUE(cachedVia(c, "near:f"));
  const double flushed = invalidations("flush");
  TcpClient direct;
  ASSERT_TRUE(direct.connect(fleet_.server(owner).port()));
  ASSERT_TRUE(auth(direct));
  // The tracking connections are the backend's only pub/sub clients.
  const std::string killed = nearRespExchange(direct, redisEncode({"CLIENT", "KILL", "TYPE", "pubsub"}));
  ASSERT_EQ(killed.substr(0, 1), ":") << killed;
  ASSERT_NE(killed, ":0\r\n");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (invalidations("flush") <= flushed && std::chrono::steady_clock::now() < deadline) {
  }
  ASSERT_GT(invalidations("flush"), flushed) << "the lost tracking connection flushed nothing";
  // The entry is gone: the next read goes to the server (a miss, or no cache use at all
  // while tracking is down), never a hit.
  const double hits = path("near_hit");
  EXPECT_EQ(get(c, "near:f"), bulk("a"));
  EXPECT_EQ(path("near_hit"), hits);
  // The tracking connection comes back and caching with it; a direct write is then seen.
  ASSERT_TRUE(cachedVia(c, "near:f")) << "caching did not resume after the reconnect";
  ASSERT_EQ(nearRespExchange(direct, redisEncode({"SET", "near:f", "b"})), "+OK\r\n");
  const auto sent = std::chrono::steady_clock::now();
  while (get(c, "near:f") != bulk("b") && std::chrono::steady_clock::now() - sent < 5s) {
  }
  EXPECT_EQ(get(c, "near:f"), bulk("b"));
}

}  // namespace
}  // namespace lb::test
