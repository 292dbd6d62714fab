// Values of any size through the cache listeners, both ways: a value is set and read back
// byte-exact whatever its size against the server's own limit (memcached -I 16m, Redis with
// proto-max-bulk-len raised and lb's limits.max_request_bytes to match), alone, pipelined
// and from several clients at once, while a small client's commands on the same server
// connection are answered throughout. A value larger than one writev (32 pool blocks, about
// 2 MiB) once stalled both ways: the rest was never written.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/cache_fleet.h"

namespace lb::test {
namespace {

// Bytes that tell a shifted or truncated copy from the original.
std::string valueOf(size_t size, char salt) {
  std::string v(size, '\0');
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<char>('A' + (i * 7 + salt) % 26);
  return v;
}

const std::vector<size_t> kSizes = {1, 64 << 10, 1 << 20, 2 << 20, (2 << 20) + 1, 5 << 20,
                                     15 << 20};

std::string mcSet(const std::string& key, const std::string& v) {
  return "set " + key + " 5 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n";
}
std::string mcValue(const std::string& key, const std::string& v) {
  return "VALUE " + key + " 5 " + std::to_string(v.size()) + "\r\n" + v + "\r\nEND\r\n";
}

// Reads exactly want.size() bytes and says whether they are `want` (no substring search
// over megabytes at every read).
bool readExactly(TcpClient& c, const std::string& want, Millis timeout = 60s) {
  if (!c.readAtLeast(want.size(), timeout)) return false;
  return c.take(want.size()) == want;
}

class MemcachedValueSizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // memcached takes items up to -I; its memory must be at least twice that.
    fleet_.setServerArgs({"-m", "128", "-I", "16m"});
    ASSERT_TRUE(fleet_.start("limits = { max_request_bytes = 33554432 }\n"
                             "timeouts = { connect = \"10s\", response = \"20s\" }"))
        << fleet_.output();
  }
  CacheFleet fleet_{CacheServer::kMemcached, 2, 1};
};

TEST_F(MemcachedValueSizeTest, EverySizeUpToTheServersLimitRoundTripsByteExact) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  for (size_t size : kSizes) {
    const std::string key = "v" + std::to_string(size);
    const std::string v = valueOf(size, 1);
    ASSERT_TRUE(c.send(mcSet(key, v), 60s)) << size;
    ASSERT_TRUE(readExactly(c, "STORED\r\n")) << size << ": " << c.buffer().substr(0, 200);
    ASSERT_TRUE(c.send("get " + key + "\r\n")) << size;
    EXPECT_TRUE(readExactly(c, mcValue(key, v))) << size;
  }
}

TEST_F(MemcachedValueSizeTest, PipelinedLargeValuesComeBackInOrder) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::string sets, gets, stored, values;
  for (size_t size : kSizes) {
    const std::string key = "p" + std::to_string(size);
    const std::string v = valueOf(size, 2);
    sets += mcSet(key, v);
    gets += "get " + key + "\r\n";
    stored += "STORED\r\n";
    values += mcValue(key, v);
  }
  // Everything in one go, sets then gets, without reading in between.
  std::thread writer([&] { c.send(sets + gets, 120s); });
  const bool ok = readExactly(c, stored + values, 120s);
  writer.join();
  EXPECT_TRUE(ok) << c.buffer().substr(0, 200);
}

// Three clients move 5 MiB values at once while a fourth sets and gets small ones on the same
// server connections (one worker): the small ones are answered throughout, and every large
// value arrives whole.
TEST_F(MemcachedValueSizeTest, SeveralClientsAtOnceAndASmallClientIsAnsweredThroughout) {
  std::atomic<int> bad{0};
  std::atomic<int> finished{0};
  std::vector<std::thread> movers;
  for (int t = 0; t < 3; ++t) {
    movers.emplace_back([&, t] {
      TcpClient c;
      if (c.connect(fleet_.port())) {
        for (int i = 0; i < 4; ++i) {
          const std::string key = "m" + std::to_string(t) + "-" + std::to_string(i);
          const std::string v = valueOf(5 << 20, static_cast<char>(t * 4 + i));
          if (!c.send(mcSet(key, v) + "get " + key + "\r\n", 60s) ||
              !readExactly(c, "STORED\r\n" + mcValue(key, v)))
            ++bad;
        }
      } else {
        ++bad;
      }
      ++finished;
    });
  }
  TcpClient victim;
  ASSERT_TRUE(victim.connect(fleet_.port()));
  int answered = 0;
  bool victim_ok = true;
  // Each exchange is bounded (10 s); the movers end within theirs.
  while (victim_ok && (finished < 3 || answered < 20)) {
    const std::string key = "small" + std::to_string(answered % 50);
    const std::string v = "v" + std::to_string(answered);
    victim_ok = victim.send(mcSet(key, v) + "get " + key + "\r\n") &&
                readExactly(victim, "STORED\r\n" + mcValue(key, v), 10s);
    if (victim_ok) ++answered;
  }
  for (auto& m : movers) m.join();
  EXPECT_TRUE(victim_ok) << answered << ": " << victim.buffer();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(answered, 20);
}

// An item over memcached's own limit gets memcached's own answer, and nothing else happens:
// the next command on the connection is answered.
TEST(MemcachedValueLimitTest, AnItemOverTheServersLimitGetsTheServersOwnError) {
  CacheFleet fleet(CacheServer::kMemcached, 2, 1);   // memcached's default -I 1m
  ASSERT_TRUE(fleet.start("limits = { max_request_bytes = 33554432 }\n"
                          "timeouts = { connect = \"10s\", response = \"10s\" }"))
      << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  const std::string v = valueOf(3000000, 3);
  ASSERT_TRUE(c.send(mcSet("toolarge", v) + "set after 0 0 2\r\nok\r\nget after\r\n", 30s));
  EXPECT_TRUE(readExactly(c, "SERVER_ERROR object too large for cache\r\nSTORED\r\n"
                             "VALUE after 0 2\r\nok\r\nEND\r\n"))
      << c.buffer().substr(0, 200);
}

class RedisValueSizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_.setServerArgs({"--proto-max-bulk-len", "128mb", "--client-query-buffer-limit", "256mb"});
    ASSERT_TRUE(fleet_.start("limits = { max_request_bytes = 134217728 }\n"
                             "timeouts = { connect = \"10s\", response = \"30s\" }"))
        << fleet_.output();
  }
  CacheFleet fleet_{CacheServer::kRedis, 2, 1};
};

std::string bulk(const std::string& v) {
  return "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n";
}

TEST_F(RedisValueSizeTest, EverySizeUpTo64MiBRoundTripsByteExactAloneAndPipelined) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::vector<size_t> sizes = kSizes;
  sizes.push_back(64 << 20);
  std::string pipeline, expect;
  for (size_t size : sizes) {
    const std::string key = "r" + std::to_string(size);
    const std::string v = valueOf(size, 4);
    ASSERT_TRUE(c.send(redisEncode({"SET", key, v}), 60s)) << size;
    ASSERT_TRUE(readExactly(c, "+OK\r\n")) << size << ": " << c.buffer().substr(0, 200);
    ASSERT_TRUE(c.send(redisEncode({"GET", key}))) << size;
    EXPECT_TRUE(readExactly(c, bulk(v))) << size;
    pipeline += redisEncode({"SET", key + "p", v}) + redisEncode({"GET", key + "p"});
    expect += "+OK\r\n" + bulk(v);
  }
  std::thread writer([&] { c.send(pipeline, 120s); });
  const bool ok = readExactly(c, expect, 120s);
  writer.join();
  EXPECT_TRUE(ok) << c.buffer().substr(0, 200);
}

// Three clients move 5 MiB values at once while a fourth sets and gets small ones on the same
// server connections (one worker): the small ones are answered throughout.
TEST_F(RedisValueSizeTest, SeveralClientsAtOnceAndASmallClientIsAnsweredThroughout) {
  std::atomic<int> bad{0};
  std::atomic<int> finished{0};
  std::vector<std::thread> movers;
  for (int t = 0; t < 3; ++t) {
    movers.emplace_back([&, t] {
      TcpClient c;
      if (c.connect(fleet_.port())) {
        for (int i = 0; i < 4; ++i) {
          const std::string key = "m" + std::to_string(t) + "-" + std::to_string(i);
          const std::string v = valueOf(5 << 20, static_cast<char>(t * 4 + i));
          if (!c.send(redisEncode({"SET", key, v}) + redisEncode({"GET", key}), 60s) ||
              !readExactly(c, "+OK\r\n" + bulk(v)))
            ++bad;
        }
      } else {
        ++bad;
      }
      ++finished;
    });
  }
  TcpClient victim;
  ASSERT_TRUE(victim.connect(fleet_.port()));
  int answered = 0;
  bool victim_ok = true;
  while (victim_ok && (finished < 3 || answered < 20)) {   // each exchange bounded (10 s)
    const std::string key = "small" + std::to_string(answered % 50);
    const std::string v = "v" + std::to_string(answered);
    victim_ok = victim.send(redisEncode({"SET", key, v}) + redisEncode({"GET", key})) &&
                readExactly(victim, "+OK\r\n" + bulk(v), 10s);
    if (victim_ok) ++answered;
  }
  for (auto& m : movers) m.join();
  EXPECT_TRUE(victim_ok) << answered << ": " << victim.buffer();
  EXPECT_EQ(bad.load(), 0);
}

// twemproxy's own suite sets five 16 MiB values with one MSET and reads them with one MGET
// (test_mget_large_binary); split over two servers, merged in order.
TEST_F(RedisValueSizeTest, MsetAndMgetOfFiveSixteenMiBValuesSplitAcrossServers) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::vector<std::string> keys, values;
  std::string mset = "*11\r\n$4\r\nMSET\r\n", mget = "*6\r\n$4\r\nMGET\r\n", want = "*5\r\n";
  for (int i = 0; i < 5; ++i) {
    keys.push_back("big" + std::to_string(i));
    values.push_back(valueOf(16 << 20, static_cast<char>(i)));
    mset += bulk(keys.back()) + bulk(values.back());
    mget += bulk(keys.back());
    want += bulk(values.back());
  }
  std::thread writer([&] { c.send(mset + mget, 120s); });
  const bool ok = readExactly(c, "+OK\r\n" + want, 120s);
  writer.join();
  EXPECT_TRUE(ok) << c.buffer().substr(0, 200);
}

}  // namespace
}  // namespace lb::test
