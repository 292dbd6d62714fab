// lb's HTTP server, close and cancel edge cases: stop() with a request half read, a timer
// pending, a write in flight (UV_ECANCELED) or a stream running; a client that resets mid
// answer; a handler that throws. The fixture's teardown proves, each time, that every handle
// closed (uv_loop_close() == 0) and every handler was freed.
#include <gtest/gtest.h>

#include "tests/support/http_server_fixture.h"

namespace lb::testing {
namespace {

using test::readHttpResponse;
using test::TcpClient;

TEST_F(HttpServerTest, StopClosesAConnectionWithHalfARequest) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("GET /x HTTP/1.1\r\nHo"));
  ASSERT_TRUE(loop_.waitFor([this] { return server_->connectionCount() == 1; }));
  stopServer();
  EXPECT_TRUE(c.waitClosed());
  EXPECT_TRUE(loop_.waitFor([this] { return closed_.load(); }));
}

TEST_F(HttpServerTest, StopCancelsAPendingHandlerTimer) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(get("/slow")));
  ASSERT_TRUE(loop_.waitFor([this] { return counters_.requests == 1; }));
  stopServer();   // the 50 ms timer is pending: closed, its callback never runs
  EXPECT_TRUE(c.waitClosed());
  EXPECT_EQ(c.buffer(), "");
}

TEST_F(HttpServerTest, StopCancelsAWriteInFlight) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(get("/big")));   // and never read: the write stays queued
  ASSERT_TRUE(loop_.waitFor([this] { return counters_.requests == 1; }));
  stopServer();   // the write callback comes back with UV_ECANCELED
  EXPECT_TRUE(loop_.waitFor([this] { return closed_.load(); }));
}

TEST_F(HttpServerTest, StopEndsAStreamInProgress) {
  start();
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(get("/stream")));
  ASSERT_TRUE(c.readAtLeast(200000));
  stopServer();
  EXPECT_TRUE(c.waitClosed());
  EXPECT_TRUE(loop_.waitFor([this] { return closed_.load(); }));
}

TEST_F(HttpServerTest, AClientResetMidAnswerFreesTheConnection) {
  start();
  {
    TcpClient c;
    ASSERT_TRUE(c.connect(port_));
    ASSERT_TRUE(c.send(get("/stream")));
    ASSERT_TRUE(c.readAtLeast(200000));
    c.close(/*reset=*/true);
  }
  EXPECT_TRUE(loop_.waitFor([this] { return server_->connectionCount() == 0; }));
  EXPECT_EQ(counters_.handlers_alive, 0);
}

TEST_F(HttpServerTest, AHandlerThatThrowsCutsItsConnectionOnly) {
  start();
  TcpClient bad;
  ASSERT_TRUE(bad.connect(port_));
  ASSERT_TRUE(bad.send(get("/throw")));
  EXPECT_TRUE(bad.waitClosed());
  EXPECT_TRUE(bad.sawReset());
  TcpClient good;
  ASSERT_TRUE(good.connect(port_));
  ASSERT_TRUE(good.send(get("/fine")));
  auto r = readHttpResponse(good);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.body, "/fine #1");
}

TEST_F(HttpServerTest, AFactoryThatRefusesClosesTheConnection) {
  // No fixture server: one whose factory makes no handler.
  HttpServer* s = loop_.run([this] {
    sockaddr_storage address;
    socklen_t len = 0;
    std::string error;
    EXPECT_TRUE(parseAddress("127.0.0.1:0", &address, &len, &error, PortZero::kAllow));
    return HttpServer::start(
        loop_.loop(), address, {}, [](HttpServerConn&) { return std::unique_ptr<HttpHandler>(); },
        [this] { closed_ = true; }, &error);
  });
  ASSERT_NE(s, nullptr);
  server_ = s;
  TcpClient c;
  ASSERT_TRUE(c.connect(static_cast<uint16_t>(loop_.run([s] { return s->port(); }))));
  EXPECT_TRUE(c.waitClosed());
  EXPECT_TRUE(loop_.waitFor([s] { return s->connectionCount() == 0; }));
}

TEST(HttpServerStartTest, FailsWhenThePortIsTaken) {
  LoopThread loop;
  sockaddr_storage address;
  socklen_t len = 0;
  std::string error;
  ASSERT_TRUE(parseAddress("127.0.0.1:0", &address, &len, &error, PortZero::kAllow));
  HttpServer* first =
      loop.run([&] { return HttpServer::start(loop.loop(), address, {}, {}, {}, &error); });
  ASSERT_NE(first, nullptr) << error;
  std::string taken = loop.run([&] { return first->address(); });
  ASSERT_TRUE(parseAddress(taken, &address, &len, &error));
  HttpServer* second =
      loop.run([&] { return HttpServer::start(loop.loop(), address, {}, {}, {}, &error); });
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(error, "cannot listen on " + taken + ": Address already in use");
  loop.run([&] { first->stop(); });
  EXPECT_TRUE(loop.stop());
}

}  // namespace
}  // namespace lb::testing
