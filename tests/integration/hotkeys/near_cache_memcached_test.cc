// The near cache with memcached behind lb (hot_keys.near_cache): a
// hit is the server's get reply byte for byte, every storage command through lb (noreply
// too) is seen by the next get on any connection, gat is never answered from the cache, and a
// set sent straight to the backend (which lb cannot see: memcached has no invalidation) is
// seen through lb within the ttl.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/near_cache_fleet.h"

namespace lb::test {
namespace {

constexpr int kTtlMs = 300;

class NearCacheMemcachedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.start("", "hot_keys = { near_cache = { items = 256, ttl = \"" +
                                     std::to_string(kTtlMs) + "ms\" } }"))
        << fleet_.output();
  }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }

  double hits() { return nearMetric(fleet_, "lb_hotkey_requests_total", "path", "near_hit"); }

  // Until `key` is hot on c's worker (only hot keys use the near cache).
  void warm(TcpClient& c, const std::string& key) {
    ASSERT_TRUE(nearWarm(fleet_, [&] { return !get(c, key).empty(); }))
        << key << " did not become hot";
  }

  static std::string get(TcpClient& c, const std::string& key) {
    return nearMcExchange(c, "get " + key + "\r\n", "END\r\n");
  }
  static std::string item(const std::string& key, const std::string& value, int flags = 0) {
    return "VALUE " + key + " " + std::to_string(flags) + " " + std::to_string(value.size()) +
           "\r\n" + value + "\r\nEND\r\n";
  }

  // The server holding `key` (by asking each), or -1.
  int ownerOf(const std::string& key) {
    for (int i = 0; i < fleet_.size(); ++i) {
      TcpClient c;
      if (c.connect(fleet_.server(i).port()) && get(c, key) != "END\r\n") return i;
    }
    return -1;
  }

  CacheFleet fleet_{CacheServer::kMemcached, 3};
};

TEST_F(NearCacheMemcachedTest, HitsAreTheServersReplyByteForByte) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  // CR LF and NUL inside (not "END" after a CR LF: the test reads a reply up to that).
  std::string value("bin\r\nEN\0xyz\r\nq", 14);
  ASSERT_EQ(nearMcExchange(c, "set near:b 42 0 " + std::to_string(value.size()) + "\r\n" + value +
                                  "\r\n",
                           "\r\n"),
            "STORED\r\n");
  const int owner = ownerOf("near:b");
  ASSERT_GE(owner, 0);
  TcpClient direct;
  ASSERT_TRUE(direct.connect(fleet_.server(owner).port()));
  const std::string raw = get(direct, "near:b");
  ASSERT_EQ(raw, item("near:b", value, 42));
  warm(c, "near:b");
  warm(c, "near:absent");
  const double before = hits();
  EXPECT_EQ(get(c, "near:b"), raw);   // fills
  EXPECT_EQ(get(c, "near:b"), raw);   // a hit
  EXPECT_EQ(get(c, "near:absent"), "END\r\n");
  EXPECT_EQ(get(c, "near:absent"), "END\r\n");
  EXPECT_GE(hits() - before, 2);
  // gets carries the cas unique: always the server's, never a cached get's bytes.
  const std::string gets = nearMcExchange(c, "gets near:b\r\n", "END\r\n");
  EXPECT_EQ(gets.rfind("VALUE near:b 42 14 ", 0), 0u) << gets;
}

TEST_F(NearCacheMemcachedTest, EveryWriteThroughLbIsSeenByTheNextGetOnAnyConnection) {
  constexpr int kClients = 6;
  std::vector<TcpClient> clients(kClients);
  for (auto& c : clients) ASSERT_TRUE(c.connect(fleet_.port()));
  TcpClient& w = clients[0];
  ASSERT_EQ(nearMcExchange(w, "set near:k 0 0 1\r\n0\r\n", "\r\n"), "STORED\r\n");
  for (auto& c : clients) warm(c, "near:k");
  const double before = hits();
  struct Step {
    std::string request;   // sent by a client, its reply read up to "\r\n" (none for noreply)
    std::string reply;
    std::string expect;    // what every get returns afterwards
  };
  const std::vector<Step> steps = {
      {"set near:k 0 0 2\r\n10\r\n", "STORED\r\n", item("near:k", "10")},
      {"incr near:k 5\r\n", "15\r\n", item("near:k", "15")},
      {"append near:k 0 0 1\r\nx\r\n", "STORED\r\n", item("near:k", "15x")},
      {"prepend near:k 0 0 1\r\ny\r\n", "STORED\r\n", item("near:k", "y15x")},
      {"replace near:k 3 0 1\r\nr\r\n", "STORED\r\n", item("near:k", "r", 3)},
      {"set near:k 0 0 1 noreply\r\nn\r\n", "", item("near:k", "n")},
      {"delete near:k\r\n", "DELETED\r\n", "END\r\n"},
      {"add near:k 0 0 1\r\na\r\n", "STORED\r\n", item("near:k", "a")},
      {"ms near:k 1\r\nm\r\n", "HD\r\n", item("near:k", "m")},
      {"md near:k q\r\n", "", "END\r\n"},
      {"set near:k 0 0 1\r\n5\r\n", "STORED\r\n", item("near:k", "5")},
      {"decr near:k 2\r\n", "3\r\n", item("near:k", "3")},
      {"touch near:k -1\r\n", "TOUCHED\r\n", "END\r\n"},   // expired at once
  };
  for (size_t s = 0; s < steps.size(); ++s) {
    for (auto& c : clients) ASSERT_FALSE(get(c, "near:k").empty());   // every cache holds it
    TcpClient& writer = clients[s % kClients];
    if (steps[s].reply.empty()) {
      ASSERT_TRUE(writer.send(steps[s].request));
      // A noreply write sends nothing back: mn, answered in order after it, says it is done.
      ASSERT_EQ(nearMcExchange(writer, "mn\r\n", "MN\r\n"), "MN\r\n");
    } else {
      ASSERT_EQ(nearMcExchange(writer, steps[s].request, "\r\n"), steps[s].reply) << s;
    }
    for (size_t i = 0; i < clients.size(); ++i)
      ASSERT_EQ(get(clients[i], "near:k"), steps[s].expect)
          << "after " << steps[s].request << " on client " << i;
  }
  EXPECT_GT(hits() - before, 20) << "the gets were not served from the near cache";
}

// gat sets the item's exptime: it always goes to the server, and a gat that expires the item
// leaves no cached copy behind.
TEST_F(NearCacheMemcachedTest, GatGoesToTheServerAndInvalidates) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(nearMcExchange(c, "set near:g 0 0 1\r\ng\r\n", "\r\n"), "STORED\r\n");
  warm(c, "near:g");
  EXPECT_EQ(get(c, "near:g"), item("near:g", "g"));
  EXPECT_EQ(get(c, "near:g"), item("near:g", "g"));   // cached now
  EXPECT_EQ(nearMcExchange(c, "gat -1 near:g\r\n", "END\r\n"), item("near:g", "g"));
  EXPECT_EQ(get(c, "near:g"), "END\r\n");   // expired by the gat, not served from the cache
  EXPECT_GT(nearMetric(fleet_, "lb_hotkey_requests_total", "path", "bypass"), 0);
}

// memcached cannot tell lb about a write that did not come through it: the ttl bounds how
// long lb may answer with the old value. Right after the direct set lb still has the old one
// (the cache is in use), and within the ttl (plus a loop turn's slack) it has the new one.
// A key that is not hot is not cached at all.
TEST_F(NearCacheMemcachedTest, ASetStraightToTheBackendIsSeenWithinTheTtl) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(nearMcExchange(c, "set near:d 0 0 3\r\nold\r\n", "\r\n"), "STORED\r\n");
  const int owner = ownerOf("near:d");
  ASSERT_GE(owner, 0);
  TcpClient direct;
  ASSERT_TRUE(direct.connect(fleet_.server(owner).port()));
  warm(c, "near:d");
  // Let any entry filled before now expire, then fill afresh.
  const auto wait_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTtlMs);
  while (std::chrono::steady_clock::now() < wait_until) std::this_thread::yield();
  ASSERT_EQ(get(c, "near:d"), item("near:d", "old"));
  const auto filled = std::chrono::steady_clock::now();
  ASSERT_EQ(nearMcExchange(direct, "set near:d 0 0 3\r\nnew\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(get(c, "near:d"), item("near:d", "old")) << "the near cache was not in use";
  std::chrono::steady_clock::duration seen_after{};
  bool seen = false;
  while (std::chrono::steady_clock::now() - filled < std::chrono::milliseconds(kTtlMs + 500)) {
    if (get(c, "near:d") == item("near:d", "new")) {
      seen_after = std::chrono::steady_clock::now() - filled;
      seen = true;
      break;
    }
  }
  ASSERT_TRUE(seen) << "the direct set was not seen within the ttl and 500 ms";
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(seen_after).count();
  EXPECT_LE(ms, kTtlMs + 50) << "seen after " << ms << " ms";
  printf("[ near cache ] a direct set was seen through lb %lld ms after the fill (ttl %d ms)\n",
         static_cast<long long>(ms), kTtlMs);
  EXPECT_GT(nearMetric(fleet_, "lb_near_cache_invalidations_total", "reason", "ttl"), 0);

  // A key read twice among hundreds of reads of near:d is not hot: never cached, so a direct
  // set is seen at once.
  ASSERT_EQ(nearMcExchange(c, "set near:cold 0 0 1\r\na\r\n", "\r\n"), "STORED\r\n");
  const int cold_owner = ownerOf("near:cold");
  ASSERT_GE(cold_owner, 0);
  TcpClient cold_direct;
  ASSERT_TRUE(cold_direct.connect(fleet_.server(cold_owner).port()));
  ASSERT_EQ(get(c, "near:cold"), item("near:cold", "a"));
  ASSERT_EQ(nearMcExchange(cold_direct, "set near:cold 0 0 1\r\nb\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(get(c, "near:cold"), item("near:cold", "b"));
}

}  // namespace
}  // namespace lb::test
