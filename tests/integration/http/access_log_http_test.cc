// The access log of a real lb: one logfmt line per HTTP request, with the fields
// docs/operations.md promises, flushed to the file without a request having to wait for it.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin_fleet.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

// One worker, an http listener on `port` keyed by x-cache-key over the fleet's first origin,
// the access log in lb's file.
std::string webConfig(const LbProcess& lb, const OriginFleet& fleet, uint16_t port) {
  return "[lb]\nworkers = 1\naccess_log = \"" + lb.accessLogPath() +
         "\"\n[admin]\nlisten = \"127.0.0.1:" + std::to_string(freePort()) +
         "\"\n[listeners.web]\nlisten = \"127.0.0.1:" + std::to_string(port) +
         "\"\nprotocol = \"http\"\ncluster = \"origins\"\n"
         "hash = [ { header = \"x-cache-key\" } ]\n"
         "[clusters.origins]\nselector = \"ring_hash\"\nbackends = [\n" +
         fleet.backends(1) + "]\n";
}

TEST(AccessLogHttpTest, OneLinePerRequestWithListenerKeyBackendStatusBytesAndPath) {
  OriginFleet fleet(1);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  LbProcess lb;
  uint16_t port = freePort();
  ASSERT_TRUE(lb.start(webConfig(lb, fleet, port), {port})) << lb.output();
  for (int i = 0; i < 3; ++i) {
    HttpResponse r = httpExchange(port, httpRequest("GET", "/img/" + std::to_string(i) + "?v=1",
                                                    "x-cache-key: k" + std::to_string(i) + "\r\n"));
    ASSERT_EQ(r.status, 200) << r.error;
  }
  ASSERT_TRUE(lb.waitAccessLines(3)) << lb.accessLog();
  auto got = lines(lb.accessLog());
  ASSERT_EQ(got.size(), 3u) << lb.accessLog();
  for (int i = 0; i < 3; ++i) {
    const std::string& line = got[i];
    EXPECT_EQ(line.rfind("ts=", 0), 0u) << line;
    EXPECT_EQ(logField(line, "listener"), "web") << line;
    EXPECT_EQ(logField(line, "proto"), "http") << line;
    EXPECT_EQ(logField(line, "client").rfind("127.0.0.1:", 0), 0u) << line;
    EXPECT_EQ(logField(line, "key").size(), 16u) << line;
    EXPECT_EQ(logField(line, "backend"), "origin-a") << line;
    EXPECT_EQ(logField(line, "status"), "200") << line;
    EXPECT_GT(std::stoul(logField(line, "bytes_in")), 0u) << line;
    EXPECT_GT(std::stoul(logField(line, "bytes_out")), 0u) << line;
    EXPECT_EQ(logField(line, "method"), "GET") << line;
    EXPECT_EQ(logField(line, "path"), "\"/img/" + std::to_string(i) + "?v=1\"") << line;
  }
}

// An error lb answers before a request's head is complete belongs to that request alone: on a
// keep-alive connection its line must not repeat the previous request's key, method, path or
// bytes.
TEST(AccessLogHttpTest, ErrorAfterAKeepAliveRequestIsLoggedAsItsOwnRequest) {
  OriginFleet fleet(1);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  LbProcess lb;
  uint16_t port = freePort();
  ASSERT_TRUE(lb.start(webConfig(lb, fleet, port), {port})) << lb.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  ASSERT_TRUE(c.send(httpRequest("GET", "/first", "x-cache-key: k\r\n")));
  HttpResponse first = readHttpResponse(c);
  ASSERT_EQ(first.status, 200) << first.error;
  ASSERT_TRUE(first.keep_alive);
  ASSERT_TRUE(c.buffer().empty());
  ASSERT_TRUE(c.send("GARBAGE\r\n\r\n"));
  ASSERT_TRUE(c.waitClosed(3s));
  const size_t error_bytes = c.buffer().size();   // the whole 400 answer, nothing else
  ASSERT_EQ(readHttpResponse(c).status, 400);

  // Two lines: the 200 and the 400 (the port probe sent no request, so it left none).
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (lines(lb.accessLog(), true).size() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  auto got = lines(lb.accessLog(), true);
  ASSERT_EQ(got.size(), 2u) << lb.accessLog();
  EXPECT_EQ(logField(got[0], "status"), "200") << got[0];
  EXPECT_EQ(logField(got[0], "method"), "GET") << got[0];
  const std::string& line = got[1];
  EXPECT_EQ(logField(line, "status"), "400") << line;
  EXPECT_EQ(logField(line, "key"), "-") << line;
  EXPECT_EQ(logField(line, "backend"), "-") << line;
  EXPECT_EQ(logField(line, "method"), "-") << line;
  EXPECT_EQ(logField(line, "path"), "\"\"") << line;
  EXPECT_EQ(logField(line, "bytes_out"), std::to_string(error_bytes)) << line;
}

}  // namespace
}  // namespace lb::test
