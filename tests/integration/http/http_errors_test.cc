// Every status lb answers itself, each from a real trigger: 400 malformed and smuggling
// attempts, 400 missing key, 408 slowloris, 413, 431, 502, 503, 504.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/support/metrics_fleet.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

class HttpErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* n : {"a", "b"}) {
      std::string why;
      ASSERT_TRUE(h_.startOrigin(n, &why)) << why;
    }
    // web: the normal listener with short timeouts and a small header limit.
    // limited: one connection at most. reject: no key means 400. dead: backends that
    // refuse connections (ports nobody listens on).
    std::string why;
    ASSERT_TRUE(h_.startLb(
        "[lb]\nworkers = 1\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
        "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
        "hash = [ { header = \"x-key\" } ]\n"
        "timeouts = { connect = \"1s\", header = \"300ms\", idle = \"500ms\" }\n"
        "limits = { max_header_bytes = 4096 }\n"
        "[listeners.limited]\nlisten = \"127.0.0.1:{PORT1}\"\ncluster = \"c\"\n"
        "limits = { max_connections = 1 }\n"
        "[listeners.reject]\nlisten = \"127.0.0.1:{PORT2}\"\ncluster = \"c\"\n"
        "hash = [ { header = \"x-key\" } ]\non_missing_key = \"reject\"\n"
        "[listeners.dead]\nlisten = \"127.0.0.1:{PORT3}\"\ncluster = \"dead\"\n"
        "[clusters.c]\n" + h_.backendsToml({"a", "b"}) +
        "[clusters.dead]\nretries = 1\nbackends = [ { name = \"x\", address = \"127.0.0.1:{PORT4}\" },"
        " { name = \"y\", address = \"127.0.0.1:{PORT5}\" } ]\n",
        &why))
        << why;
  }

  long servedByOrigins() {
    return originStat(h_.originPort("a"), "requests_served") +
           originStat(h_.originPort("b"), "requests_served");
  }

  // Sends raw bytes, reads one response, and checks lb closed the connection after it.
  HttpResponse exchangeExpectClose(uint16_t port, const std::string& raw) {
    TcpClient c;
    EXPECT_TRUE(c.connect(port));
    c.send(raw);
    auto r = readHttpResponse(c);
    if (r.ok) {
      EXPECT_EQ(r.header("connection").value_or(""), "close");
      EXPECT_TRUE(c.waitClosed(3s)) << "lb must close after an error it answers";
    }
    return r;
  }

  ProxyHarness h_;
};

TEST_F(HttpErrorsTest, MalformedRequestLineIs400) {
  auto r = exchangeExpectClose(h_.port(), "GARBAGE\r\n\r\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 400);
}

TEST_F(HttpErrorsTest, ContentLengthWithTransferEncodingIs400AndNeverReachesABackend) {
  const long before = servedByOrigins();
  auto r = exchangeExpectClose(h_.port(),
                               "POST / HTTP/1.1\r\nHost: x\r\nx-key: k\r\nContent-Length: 6\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n"
                               "Host: x\r\n\r\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 400);
  // The two /stats probes are the only requests the origins saw in between.
  EXPECT_EQ(servedByOrigins(), before + 2);
}

TEST_F(HttpErrorsTest, DuplicateHostIs400AndNeverReachesABackend) {
  const long before = servedByOrigins();
  auto r = exchangeExpectClose(h_.port(), "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nx-key: k\r\n\r\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(servedByOrigins(), before + 2);
}

TEST_F(HttpErrorsTest, SlowlorisHeadIs408) {
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: x\r\n"));
  // A header byte every 50 ms keeps the connection busy but never completes the head; the
  // header timeout (300 ms) runs from the first byte, not from the last.
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (c.buffer().empty() && !c.closedByPeer() && std::chrono::steady_clock::now() < deadline) {
    if (!c.send("X")) break;
    c.readAtLeast(1, 50ms);
  }
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 408);
}

TEST_F(HttpErrorsTest, HeadOverMaxHeaderBytesIs431) {
  auto r = exchangeExpectClose(
      h_.port(), "GET / HTTP/1.1\r\nHost: x\r\nx-key: k\r\nX-Big: " + std::string(5000, 'b') +
                     "\r\n\r\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 431);
}

TEST_F(HttpErrorsTest, ContentLengthOfATebibyteIs413) {
  auto r = exchangeExpectClose(
      h_.port(), "POST / HTTP/1.1\r\nHost: x\r\nx-key: k\r\nContent-Length: 1099511627776\r\n\r\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 413);
}

TEST_F(HttpErrorsTest, BackendsThatRefuseConnectionsGive502) {
  auto r = exchangeExpectClose(h_.extraPort(3), httpRequest("GET", "/"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 502);
}

TEST_F(HttpErrorsTest, BackendThatResetsEveryAttemptGives502) {
  auto r = exchangeExpectClose(h_.port(), httpRequest("GET", "/?close=1", "x-key: k\r\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 502);
}

TEST_F(HttpErrorsTest, ResponseCutShortClosesTheClientConnection) {
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=100000&close_after_headers=1", "x-key: k\r\n")));
  auto r = readHttpResponse(c);
  EXPECT_FALSE(r.ok) << "a truncated body must not look complete";
  EXPECT_TRUE(c.waitClosed(3s));
}

TEST_F(HttpErrorsTest, ListenerAtMaxConnectionsGives503) {
  TcpClient first;
  ASSERT_TRUE(first.connect(h_.extraPort(1)));
  EXPECT_NE(backendFor(first, "/", ""), "");   // the one allowed connection works
  auto r = exchangeExpectClose(h_.extraPort(1), httpRequest("GET", "/"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 503);
  // Counted as load shed, not as a fleet with no backend: every backend is up.
  auto m = httpGetLocal(h_.adminPort(), "/metrics");
  ASSERT_TRUE(m.ok) << m.error;
  auto reasons = byLabel(parseExposition(m.body), "lb_http_errors_total", "reason",
                         {{"listener", "limited"}});
  EXPECT_EQ(reasons["over_limit"], 1);
  EXPECT_EQ(reasons["no_backend"], 0);
  EXPECT_EQ(byLabel(parseExposition(m.body), "lb_downstream_connections_over_limit_total",
                    "listener")["limited"], 1);
}

TEST_F(HttpErrorsTest, BackendSilentPastTheTimeoutGives504) {
  auto r = exchangeExpectClose(h_.port(), httpRequest("GET", "/?delay_ms=3000", "x-key: k\r\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 504);
}

TEST_F(HttpErrorsTest, MissingKeyWithRejectIs400) {
  auto r = exchangeExpectClose(h_.extraPort(2), httpRequest("GET", "/"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 400);
  auto ok = httpExchange(h_.extraPort(2), httpRequest("GET", "/", "x-key: k\r\n"));
  ASSERT_TRUE(ok.ok) << ok.error;
  EXPECT_EQ(ok.status, 200);
}

TEST_F(HttpErrorsTest, IdleKeepAliveConnectionIsClosedQuietly) {
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  EXPECT_NE(backendFor(c, "/", "x-key: k\r\n"), "");
  EXPECT_TRUE(c.waitClosed(3s));   // idle = 500ms
  EXPECT_TRUE(c.buffer().empty()) << "no 408 for a connection between requests";
}

}  // namespace
}  // namespace lb::test
