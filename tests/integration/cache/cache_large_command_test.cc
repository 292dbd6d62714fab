// Commands larger than a buffer block on the cache listeners: a huge MGET or get is read,
// routed and answered whole; one over limits.max_request_bytes is answered with the
// protocol's "too large" error after everything the client sent before it, and the
// connection then ends with an orderly close that the client can read up to, not a reset.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"

namespace lb::test {
namespace {

std::string key(int i) {   // 40 bytes, as in the MGET of the hostile-input run
  std::string k = "large-command-key:" + std::to_string(i);
  k.resize(40, 'x');
  return k;
}

// The whole rest of the stream up to the peer's close; false when it did not close in time.
bool readToClose(TcpClient& c, Millis timeout = 10s) { return c.waitClosed(timeout); }

std::string encode(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

TEST(CacheLargeCommandTest, MgetOfTenThousandKeysOnThreeServersComesBackWholeAndInOrder) {
  CacheFleet fleet(CacheServer::kRedis, 3, 1);
  ASSERT_TRUE(fleet.start()) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  std::vector<std::string> mset = {"MSET"};
  for (int i = 0; i < 10000; i += 2) {   // every other key is a miss
    mset.push_back(key(i));
    mset.push_back("v" + std::to_string(i));
  }
  ASSERT_TRUE(c.send(encode(mset)));
  auto ok = readResp(c, 30s);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->text, "OK");
  std::vector<std::string> mget = {"MGET"};
  for (int i = 0; i < 10000; ++i) mget.push_back(key(i));
  const std::string request = encode(mget);
  ASSERT_GT(request.size(), 400000u);   // many times a 64 KiB block
  ASSERT_TRUE(c.send(request, 30s));
  auto v = readResp(c, 30s);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->type, '*');
  ASSERT_EQ(v->items.size(), 10000u);
  for (int i = 0; i < 10000; ++i) {
    const RespValue& item = v->items[static_cast<size_t>(i)];
    if (i % 2 == 0)
      EXPECT_EQ(item.text, "v" + std::to_string(i)) << i;
    else
      EXPECT_TRUE(item.nil) << i;
  }
  // The connection is still in step: the next command gets its own answer.
  ASSERT_TRUE(c.send(redisEncode({"PING"})));
  auto pong = readResp(c);
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->text, "PONG");
}

TEST(CacheLargeCommandTest, MemcachedGetOfTenThousandKeysComesBackWholeUnderOneEnd) {
  CacheFleet fleet(CacheServer::kMemcached, 2, 1);
  ASSERT_TRUE(fleet.start()) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  std::string sets;
  for (int i = 0; i < 10000; i += 2)
    sets += "set " + key(i) + " 0 0 " + std::to_string(std::to_string(i).size()) +
            " noreply\r\n" + std::to_string(i) + "\r\n";
  ASSERT_TRUE(c.send(sets, 30s));
  std::string get = "get";
  std::string expect;
  for (int i = 0; i < 10000; ++i) {
    get += " " + key(i);
    if (i % 2 == 0)
      expect += "VALUE " + key(i) + " 0 " + std::to_string(std::to_string(i).size()) + "\r\n" +
                std::to_string(i) + "\r\n";
  }
  get += "\r\n";
  ASSERT_GT(get.size(), 400000u);
  ASSERT_TRUE(c.send(get, 30s));
  ASSERT_TRUE(c.readUntil("END\r\n", 30s)) << c.buffer().substr(0, 200);
  EXPECT_EQ(c.take(c.buffer().size()), expect + "END\r\n");
}

// A command whose parts are each under the limit but whose whole is far over it: lb cannot
// hold it, so the client hears why, after the answer to the command it sent first.
TEST(CacheLargeCommandTest, RedisCommandOverMaxRequestBytesGetsTooLargeThenAnOrderlyClose) {
  CacheFleet fleet(CacheServer::kRedis, 1, 1);
  ASSERT_TRUE(fleet.start("limits = { max_request_bytes = 4096 }")) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  std::vector<std::string> mget = {"MGET"};
  for (int i = 0; i < 20000; ++i) mget.push_back(key(i));   // ~1 MB of small arguments
  ASSERT_TRUE(c.send(redisEncode({"SET", "before", "1"}) + encode(mget), 30s));
  ASSERT_TRUE(readToClose(c, 15s)) << c.buffer().substr(0, 200);
  EXPECT_FALSE(c.sawReset());
  EXPECT_EQ(c.buffer(), "+OK\r\n-ERR lb: request too large (over limits.max_request_bytes)\r\n");
}

// One bulk string over the limit: refused as soon as its length is read.
TEST(CacheLargeCommandTest, RedisBulkOverMaxRequestBytesGetsTooLargeThenAnOrderlyClose) {
  CacheFleet fleet(CacheServer::kRedis, 1, 1);
  ASSERT_TRUE(fleet.start("limits = { max_request_bytes = 4096 }")) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_TRUE(c.send(redisEncode({"SET", "big", std::string(300000, 'v')}), 30s));
  ASSERT_TRUE(readToClose(c, 15s)) << c.buffer().substr(0, 200);
  EXPECT_FALSE(c.sawReset());
  EXPECT_EQ(c.buffer(), "-ERR lb: request too large (over limits.max_request_bytes)\r\n");
}

}  // namespace
}  // namespace lb::test
