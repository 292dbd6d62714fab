// The near cache with redis-server behind lb (hot_keys.near_cache):
// a hit is the server's reply byte for byte, a write through lb is seen by the next read on
// any connection (either worker), and a reader hammering a key while another client writes
// it never sees a value older than the last write acknowledged before its read was sent.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/hot_keys_load.h"
#include "tests/support/near_cache_fleet.h"

namespace lb::test {
namespace {

class NearCacheRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.start("", "hot_keys = { near_cache = { items = 256, ttl = \"1s\" } }"))
        << fleet_.output();
  }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }

  double hits() { return nearMetric(fleet_, "lb_hotkey_requests_total", "path", "near_hit"); }

  // Until `key` is hot on c's worker (only hot keys use the near cache).
  void warm(TcpClient& c, const std::string& key) {
    ASSERT_TRUE(nearWarm(fleet_, [&] {
      return !nearRespExchange(c, redisEncode({"GET", key})).empty();
    })) << key << " did not become hot";
  }

  // The key's bytes as its owner answers a GET on a direct connection (the one server that
  // has it; "" when none does).
  std::string directGet(const std::string& key) {
    for (int i = 0; i < fleet_.size(); ++i) {
      TcpClient c;
      if (!c.connect(fleet_.server(i).port())) continue;
      const std::string raw = nearRespExchange(c, redisEncode({"GET", key}));
      if (raw != "$-1\r\n" && !raw.empty()) return raw;
    }
    return "";
  }

  CacheFleet fleet_{CacheServer::kRedis, 3};
};

TEST_F(NearCacheRedisTest, HitsAreTheServersReplyByteForByte) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::string value = "binary\r\n\0value ";
  value.push_back('\0');
  for (int i = 0; i < 40; ++i) value += static_cast<char>(i * 7);
  ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", "near:bytes", value})), "+OK\r\n");
  const std::string direct = directGet("near:bytes");
  ASSERT_FALSE(direct.empty());
  warm(c, "near:bytes");
  warm(c, "near:none");
  const double before = hits();
  EXPECT_EQ(nearRespExchange(c, redisEncode({"GET", "near:bytes"})), direct);   // fills
  EXPECT_EQ(nearRespExchange(c, redisEncode({"GET", "near:bytes"})), direct);   // a hit
  EXPECT_EQ(nearRespExchange(c, "GET near:bytes\r\n"), direct);                  // inline too
  // A key that does not exist: nil, cached as such, still nil.
  EXPECT_EQ(nearRespExchange(c, redisEncode({"GET", "near:none"})), "$-1\r\n");
  EXPECT_EQ(nearRespExchange(c, redisEncode({"GET", "near:none"})), "$-1\r\n");
  EXPECT_GE(hits() - before, 3) << "the near cache answered nothing";
  // An error is never cached: GET of a list is WRONGTYPE every time, from the server.
  ASSERT_EQ(nearRespExchange(c, redisEncode({"RPUSH", "near:list", "a"})), ":1\r\n");
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(nearRespExchange(c, redisEncode({"GET", "near:list"})).rfind("-WRONGTYPE", 0), 0u);
  EXPECT_GT(nearMetric(fleet_, "lb_near_cache_items", "", ""), 0);
  EXPECT_GT(nearMetric(fleet_, "lb_near_cache_bytes", "", ""), 0);
}

// Eight clients land on both workers; each round every one reads (so both workers' caches
// hold the key), one writes, and every next read must see the write, whichever worker it is
// on and whatever command wrote it.
TEST_F(NearCacheRedisTest, AWriteThroughLbIsSeenByTheNextReadOnAnyConnection) {
  constexpr int kClients = 8;
  std::vector<TcpClient> clients(kClients);
  for (auto& c : clients) ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(nearRespExchange(clients[0], redisEncode({"SET", "near:k", "0"})), "+OK\r\n");
  for (auto& c : clients) warm(c, "near:k");
  const double before = hits();
  for (int round = 1; round <= 60; ++round) {
    for (auto& c : clients) ASSERT_FALSE(nearRespExchange(c, redisEncode({"GET", "near:k"})).empty());
    TcpClient& writer = clients[static_cast<size_t>(round % kClients)];
    const std::string v = std::to_string(round);
    std::string expect = "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n";
    switch (round % 5) {
      case 0:
        ASSERT_EQ(nearRespExchange(writer, redisEncode({"SET", "near:k", v})), "+OK\r\n");
        break;
      case 1:   // INCR from the last value
        ASSERT_EQ(nearRespExchange(writer, redisEncode({"SET", "near:k", std::to_string(round - 1)})),
                  "+OK\r\n");
        ASSERT_EQ(nearRespExchange(writer, redisEncode({"INCR", "near:k"})), ":" + v + "\r\n");
        break;
      case 2:   // MSET, split by owner with another key
        ASSERT_EQ(nearRespExchange(writer, redisEncode({"MSET", "near:other", "x", "near:k", v})),
                  "+OK\r\n");
        break;
      case 3:   // DEL: the next read is nil
        ASSERT_EQ(nearRespExchange(writer, redisEncode({"DEL", "near:k", "near:other"})).substr(0, 1),
                  ":");
        expect = "$-1\r\n";
        break;
      case 4:   // EVAL with the key declared
        ASSERT_EQ(nearRespExchange(writer, redisEncode({"EVAL", "return redis.call('SET', KEYS[1], ARGV[1])",
                                                        "1", "near:k", v})),
                  "+OK\r\n");
        break;
    }
    for (size_t i = 0; i < clients.size(); ++i)
      ASSERT_EQ(nearRespExchange(clients[i], redisEncode({"GET", "near:k"})), expect)
          << "round " << round << " client " << i;
  }
  EXPECT_GT(hits() - before, 100) << "the reads were not served from the near cache";
  EXPECT_GT(nearMetric(fleet_, "lb_near_cache_invalidations_total", "reason", "write"), 0);
}

// Readers on both workers hammer one key while a writer writes increasing values through lb.
// Before each read a reader notes the last value whose SET was acknowledged; the read must
// return that value or a later one.
TEST_F(NearCacheRedisTest, HammeredReadsNeverGoBehindAnAcknowledgedWrite) {
  TcpClient setup;
  ASSERT_TRUE(setup.connect(fleet_.port()));
  ASSERT_EQ(nearRespExchange(setup, redisEncode({"SET", "near:hammer", "0"})), "+OK\r\n");
  std::atomic<long> acked{0};
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0};
  std::atomic<long> stale{0};
  std::atomic<long> broken{0};
  std::string first_stale;
  std::vector<std::thread> readers;
  std::vector<TcpClient> conns(4);
  for (auto& c : conns) {
    ASSERT_TRUE(c.connect(fleet_.port()));
    warm(c, "near:hammer");
  }
  const double before = hits();
  for (int r = 0; r < 4; ++r)
    readers.emplace_back([&, r] {
      TcpClient& c = conns[static_cast<size_t>(r)];
      while (!stop.load()) {
        const long floor = acked.load();
        const std::string raw = nearRespExchange(c, redisEncode({"GET", "near:hammer"}));
        RespValue v;
        if (raw.empty() || parseResp(raw, 0, &v) == std::string::npos || v.type != '$') {
          ++broken;
          return;
        }
        ++reads;
        if (std::stol(v.text) < floor && stale++ == 0 && r == 0)
          first_stale = "read " + v.text + " after " + std::to_string(floor) + " was acked";
      }
    });
  TcpClient writer;
  ASSERT_TRUE(writer.connect(fleet_.port()));
  const auto end = std::chrono::steady_clock::now() + 2s;
  long v = 0;
  while (std::chrono::steady_clock::now() < end) {
    ++v;
    ASSERT_EQ(nearRespExchange(writer, redisEncode({"SET", "near:hammer", std::to_string(v)})),
              "+OK\r\n");
    acked.store(v);
    // A few reads between writes, so that the cache has something to serve.
    for (int i = 0; i < 3; ++i)
      ASSERT_FALSE(nearRespExchange(writer, redisEncode({"GET", "near:hammer"})).empty());
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(broken.load(), 0);
  EXPECT_EQ(stale.load(), 0) << first_stale;
  EXPECT_GT(reads.load(), 1000);
  EXPECT_GT(v, 100);
  const double served = hits() - before;
  EXPECT_GT(served, 100) << "the near cache served too few reads for the test to mean anything";
  printf("[ near cache ] %ld writes, %ld reads by 4 readers, %.0f near hits\n", v, reads.load(),
         served);
}

// The near-hit fast path: a hit with nothing of its client queued ahead goes to the output at
// once, with no command made. Pipelined with reads that go to a backend, a slow one among
// them (EVAL spinning in Lua), every reply must still come back in the order of its command:
// a hit behind a miss waits for it; a miss behind hits follows them. The hits are counted
// (near_hit) and still count for hot-key detection (/hotkeys keeps the key with its rate).
TEST_F(NearCacheRedisTest, PipelinedHitsAndMissesComeBackInTheirOrder) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", "near:order", "hot"})), "+OK\r\n");
  warm(c, "near:order");
  const std::string hit = redisEncode({"GET", "near:order"});
  const std::string hit_reply = "$3\r\nhot\r\n";
  constexpr int kRounds = 8;
  double hits_sent = 0;
  const double before = hits();
  for (int round = 0; round < kRounds; ++round) {
    std::string cold[3];
    for (int i = 0; i < 3; ++i) {
      cold[i] = "near:cold:" + std::to_string(round) + ":" + std::to_string(i);
      ASSERT_EQ(nearRespExchange(c, redisEncode({"SET", cold[i], "v" + cold[i]})), "+OK\r\n");
    }
    // Fills the entry again should the ttl have dropped it: the round's hits are then hits.
    ASSERT_EQ(nearRespExchange(c, hit), hit_reply);
    std::string req, want;
    auto add = [&](const std::string& cmd, const std::string& reply) {
      req += cmd;
      want += reply;
    };
    auto value = [](const std::string& key) {
      const std::string v = "v" + key;
      return "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n";
    };
    add(hit, hit_reply);                                        // a hit first, then a miss
    add(redisEncode({"GET", cold[0]}), value(cold[0]));
    add(redisEncode({"EVAL",
                     "local i = 0 while i < 1000000 do i = i + 1 end "
                     "return redis.call('GET', KEYS[1])",
                     "1", cold[1]}),
        value(cold[1]));                                        // a slow miss, then hits
    add(hit, hit_reply);
    add(hit, hit_reply);
    add(redisEncode({"GET", cold[2]}), value(cold[2]));
    add(hit, hit_reply);
    add("GET near:order\r\n", hit_reply);                      // inline: the general parse
    add(hit, hit_reply);
    hits_sent += 6;
    ASSERT_TRUE(c.send(req));
    ASSERT_TRUE(c.readAtLeast(want.size(), 10s)) << "round " << round << ": " << c.buffer();
    EXPECT_EQ(c.take(want.size()), want) << "round " << round;
    EXPECT_TRUE(c.buffer().empty()) << c.buffer();
  }
  EXPECT_GE(hits() - before, hits_sent) << "the near cache did not answer the pipelined hits";

  // Hits only: the key must stay on /hotkeys, its rate climbing past 200/s, though only
  // the near cache serves it. Bursts go on until /hotkeys shows that rate (the monitor's
  // smoothing takes a few of its ticks, longer on a loaded machine), for 20 s at most.
  const std::string burst = [&] {
    std::string b;
    for (int i = 0; i < 200; ++i) b += hit;
    return b;
  }();
  std::string burst_reply;
  for (int i = 0; i < 200; ++i) burst_reply += hit_reply;
  double rps = 0;
  bool listed = true;
  const auto end = std::chrono::steady_clock::now() + 20s;
  for (int i = 0; i < 50000 && rps <= 200 && std::chrono::steady_clock::now() < end; ++i) {
    ASSERT_TRUE(c.send(burst));
    ASSERT_TRUE(c.readAtLeast(burst_reply.size()));
    ASSERT_EQ(c.take(burst_reply.size()), burst_reply);
    if (i % 10 != 9) continue;
    const auto doc = fetchHotKeys(fleet_.adminPort(), "fleet");
    ASSERT_TRUE(doc.has_value());
    const testjson::Value* k = findHotKey(*doc, "near:order");
    listed = listed && k != nullptr;
    if (k != nullptr) rps = (*k)["rps"].number;
  }
  EXPECT_TRUE(listed) << "near:order left /hotkeys while only the near cache served it";
  EXPECT_GT(rps, 200) << "the near cache's hits were not counted for hot-key detection";
}

}  // namespace
}  // namespace lb::test
