// The socket error a cache listener's client is told, in strerror's form ("Connection
// refused"), as nutcracker and redis clients say it and scripts match it: a backend address
// where nothing listens, behind a redis and a memcached listener.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cache_server.h"
#include "tests/support/lb_fixture.h"

namespace lb::test {
namespace {

// lb with one `protocol` listener in front of one backend at a port nothing listens on.
void startInFrontOfAClosedPort(LbProcess& lb, const char* protocol, uint16_t* port) {
  *port = freePort();
  const uint16_t closed = freePort();
  const std::string toml =
      "[lb]\nworkers = 1\naccess_log = \"\"\n[listeners.cache]\nlisten = \"127.0.0.1:" +
      std::to_string(*port) + "\"\nprotocol = \"" + protocol +
      "\"\ncluster = \"fleet\"\n[clusters.fleet]\nbackends = [ { name = \"s1\", address = "
      "\"127.0.0.1:" + std::to_string(closed) + "\" } ]\n";
  ASSERT_TRUE(lb.start(toml, {*port})) << lb.output();
}

TEST(CacheErrorTextTest, RedisClientIsToldConnectionRefusedAsStrerrorSaysIt) {
  LbProcess lb;
  uint16_t port = 0;
  startInFrontOfAClosedPort(lb, "redis", &port);
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  EXPECT_EQ(redisCall(c, {"GET", "k"}), "-ERR lb: backend s1: connect failed: Connection refused");
  EXPECT_EQ(lb.process().stop(15, 10s), std::optional<int>(0)) << lb.output();
}

TEST(CacheErrorTextTest, MemcachedClientIsToldConnectionRefusedAsStrerrorSaysIt) {
  LbProcess lb;
  uint16_t port = 0;
  startInFrontOfAClosedPort(lb, "memcached", &port);
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  ASSERT_TRUE(c.send("get k\r\n"));
  ASSERT_TRUE(c.readUntil("\r\n", 5s)) << c.buffer();
  EXPECT_EQ(c.buffer(), "SERVER_ERROR lb: backend s1: connect failed: Connection refused\r\n");
  EXPECT_EQ(lb.process().stop(15, 10s), std::optional<int>(0)) << lb.output();
}

}  // namespace
}  // namespace lb::test
