// memcached behind a tcp listener: the text protocol over raw sockets, half-close, and a
// refused backend failing over to the next host.
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cache_server.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

// A tcp listener on `port` over `backends` (name -> address), keyed by five-tuple.
std::string memcachedConfig(uint16_t port, const std::vector<std::pair<std::string, std::string>>& backends,
                            uint32_t retries, const std::string& access_log) {
  std::string list;
  for (const auto& [name, address] : backends)
    list += "  { name = \"" + name + "\", address = \"" + address + "\" },\n";
  return "[lb]\nworkers = 1\naccess_log = \"" + access_log + "\"\n[admin]\nlisten = \"127.0.0.1:" +
         std::to_string(freePort()) + "\"\n[listeners.mc]\nlisten = \"127.0.0.1:" +
         std::to_string(port) +
         "\"\nprotocol = \"tcp\"\ncluster = \"mc\"\nhash = [ { five_tuple = true } ]\n"
         "timeouts = { connect = \"1s\", idle = \"10s\" }\n"
         "[clusters.mc]\nselector = \"maglev\"\nretries = " + std::to_string(retries) +
         "\nbackends = [\n" + list + "]\n";
}

TEST(TcpMemcachedTest, SetThenGetThroughLb) {
  CacheServer mc(CacheServer::kMemcached);
  ASSERT_TRUE(mc.ok()) << mc.output();
  LbProcess lb;
  uint16_t port = freePort();
  ASSERT_TRUE(lb.start(memcachedConfig(port, {{"mc-a", mc.address()}}, 2, ""), {port}))
      << lb.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  ASSERT_TRUE(c.send("set greeting 0 0 5\r\nhello\r\n"));
  ASSERT_TRUE(c.readUntil("\r\n")) << c.buffer();
  EXPECT_EQ(c.take(c.buffer().size()), "STORED\r\n");
  ASSERT_TRUE(c.send("get greeting\r\n"));
  ASSERT_TRUE(c.readUntil("END\r\n")) << c.buffer();
  EXPECT_EQ(c.buffer(), "VALUE greeting 0 5\r\nhello\r\nEND\r\n");
}

TEST(TcpMemcachedTest, ClientHalfCloseStillReceivesTheReply) {
  CacheServer mc(CacheServer::kMemcached);
  ASSERT_TRUE(mc.ok()) << mc.output();
  LbProcess lb;
  uint16_t port = freePort();
  ASSERT_TRUE(lb.start(memcachedConfig(port, {{"mc-a", mc.address()}}, 2, ""), {port}))
      << lb.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  // Write the request, then shut our write side: memcached sees EOF only after the command,
  // answers it, and closes; lb must carry the answer back before the close.
  ASSERT_TRUE(c.send("set k 0 0 1\r\nx\r\nget k\r\n"));
  c.shutdownWrite();
  EXPECT_TRUE(c.waitClosed(5s));
  EXPECT_EQ(c.buffer(), "STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n");
  EXPECT_FALSE(c.sawReset());
}

TEST(TcpMemcachedTest, RefusedBackendFailsOverToTheNextHost) {
  // Two hosts, one refusing: about half the connections are owned by the dead one and must
  // fail over (P(none is) = 2^-20).
  CacheServer mc(CacheServer::kMemcached);
  ASSERT_TRUE(mc.ok()) << mc.output();
  LbProcess lb;
  uint16_t port = freePort();
  std::string dead = "127.0.0.1:" + std::to_string(freePort());
  ASSERT_TRUE(lb.start(memcachedConfig(port, {{"mc-dead", dead}, {"mc-live", mc.address()}}, 1,
                                       lb.accessLogPath()),
                       {port}))
      << lb.output();
  constexpr int kConnections = 20;
  for (int i = 0; i < kConnections; ++i) {
    TcpClient c;
    ASSERT_TRUE(c.connect(port));
    ASSERT_TRUE(c.send("version\r\n"));
    ASSERT_TRUE(c.readUntil("\r\n")) << "connection " << i;
    EXPECT_EQ(c.buffer().rfind("VERSION ", 0), 0u) << c.buffer();
  }
  ASSERT_TRUE(lb.waitAccessLines(kConnections)) << lb.accessLog();
  for (const auto& line : lines(lb.accessLog())) {
    EXPECT_EQ(logField(line, "backend"), "mc-live") << line;
    EXPECT_EQ(logField(line, "status"), "ok") << line;
  }
}

TEST(TcpMemcachedTest, NoRetriesLeftClosesTheClient) {
  LbProcess lb;
  uint16_t port = freePort();
  std::string dead = "127.0.0.1:" + std::to_string(freePort());
  ASSERT_TRUE(lb.start(memcachedConfig(port, {{"mc-dead", dead}}, 0, lb.accessLogPath()), {port}))
      << lb.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  EXPECT_TRUE(c.waitClosed(5s));
  EXPECT_EQ(c.buffer(), "");
  // Nothing was sent, so wait for this connection's line by its status.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (countOf(lb.accessLog(), "status=connect_failed") < 2 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  ASSERT_EQ(countOf(lb.accessLog(), "status=connect_failed"), 2u) << lb.accessLog();
  for (const auto& line : lines(lb.accessLog(), true))   // the probe's and ours
    EXPECT_EQ(logField(line, "status"), "connect_failed") << line;
}

}  // namespace
}  // namespace lb::test
