// lb's HTTP server on real loopback sockets: keep-alive, pipelining in order, the body as it
// arrives (and held while paused), upgrades, and the limits: head size (431 with a lingering
// close), connections, request time. Close and cancel edge cases are in
// http_server_close_test.cc.
#include <gtest/gtest.h>

#include "tests/support/http_server_fixture.h"

namespace lb::testing {
namespace {

using test::readHttpResponse;
using test::TcpClient;

TEST_F(HttpServerTest, KeepsTheConnectionAliveAcrossRequests) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(c.send(get("/k")));
    auto r = readHttpResponse(c);
    ASSERT_TRUE(r) << r.error;
    EXPECT_EQ(r.body, "/k #" + std::to_string(i));
    EXPECT_TRUE(r.keep_alive);
  }
  EXPECT_EQ(connections(), 1u);
}

TEST_F(HttpServerTest, AnswersPipelinedRequestsInOrderEvenWhenTheFirstIsLate) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(get("/slow") + "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" +
                     get("/c", "Connection: close\r\n")));
  for (const char* want : {"/slow #1", "/b #2", "/c #3"}) {
    auto r = readHttpResponse(c);
    ASSERT_TRUE(r) << want << ": " << r.error;
    EXPECT_EQ(r.body, want);
  }
  EXPECT_TRUE(c.waitClosed());
  EXPECT_FALSE(c.sawReset());
}

TEST_F(HttpServerTest, ClosesAfterAnAnswerToConnectionClose) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(get("/x", "Connection: close\r\n")));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(c.waitClosed());
  EXPECT_FALSE(c.sawReset());
}

TEST_F(HttpServerTest, AnswersAClientThatHalfClosedAfterItsRequest) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(get("/slow")));
  c.shutdownWrite();   // EOF reaches the server before its answer is due
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.body, "/slow #1");
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(c.waitClosed());
}

TEST_F(HttpServerTest, HoldsTheBodyWhilePaused) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("POST /pause HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(counters_.body_bytes_at_resume, 0u);   // nothing reached the handler before resume
  EXPECT_EQ(r.body, "5");
}

TEST_F(HttpServerTest, TunnelsRawBytesAfterAnUpgrade) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(get("/tunnel", "Upgrade: echo\r\nConnection: Upgrade\r\n") + "early"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.status, 101);
  ASSERT_TRUE(c.readAtLeast(5));
  EXPECT_EQ(c.take(5), "early");   // sent with the request, after its head
  ASSERT_TRUE(c.send("GET / HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(c.readUntil("\r\n\r\n"));
  EXPECT_EQ(c.buffer(), "GET / HTTP/1.1\r\n\r\n");   // raw, no longer parsed
}

TEST_F(HttpServerTest, RefusesAnOversizedHeadWith431AndLingersSoTheClientReadsIt) {
  HttpServerOptions o;
  o.max_head_bytes = 1024;
  o.error_headers = "X-Server: test\r\n";
  start(o);
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  // Far more than the server reads before it answers: closing at once with these bytes
  // unread would send an RST that can destroy the 431 before the client reads it.
  ASSERT_TRUE(c.send(get("/x", "X-Big: " + std::string(2000, 'a') + "\r\n") +
                     std::string(256 * 1024, 'z')));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.status, 431);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_EQ(r.header("x-server"), "test");
  EXPECT_TRUE(c.waitClosed());
  EXPECT_FALSE(c.sawReset());
  EXPECT_EQ(counters_.requests, 0);
}

TEST_F(HttpServerTest, RefusesAMalformedRequestWith400) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("NOT HTTP\r\n\r\n"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "bad request\n");
  EXPECT_TRUE(c.waitClosed());
  EXPECT_FALSE(c.sawReset());
}

TEST_F(HttpServerTest, ClosesConnectionsBeyondTheLimit) {
  HttpServerOptions o;
  o.max_connections = 1;
  start(o);
  TcpClient first, extra;
  ASSERT_TRUE(first.connect(port_));
  ASSERT_TRUE(loop_.waitFor([this] { return server_->connectionCount() == 1; }));
  ASSERT_TRUE(extra.connect(port_));
  EXPECT_TRUE(extra.waitClosed());
  EXPECT_EQ(extra.buffer(), "");
  ASSERT_TRUE(first.send(get("/still")));   // the one within the limit still works
  auto r = readHttpResponse(first);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.body, "/still #1");
}

TEST_F(HttpServerTest, ClosesAConnectionWhoseHeadDoesNotArriveInTime) {
  HttpServerOptions o;
  o.request_timeout_ms = 50;
  start(o);
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("GET /x HTTP/1.1\r\nHost:"));   // and never the rest
  EXPECT_TRUE(c.waitClosed());
  EXPECT_TRUE(loop_.waitFor([this] { return server_->connectionCount() == 0; }));
}

}  // namespace
}  // namespace lb::testing
