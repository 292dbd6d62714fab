// The admin HTTP/1.1 server on real loopback sockets: routing to the handler, methods,
// keep-alive and close, pipelining, size and connection limits, idle timeout, and a stop()
// that closes every handle (the loop closes cleanly afterwards).
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "lb/admin/admin_http.h"
#include "tests/support/admin_test_support.h"

namespace lb {
namespace {

using testing::HttpClient;
using testing::httpGet;
using testing::LoopThread;

// Larger than any socket buffer, so its write stays in flight until the client reads.
constexpr size_t kBigBody = 16 << 20;

class AdminHttpTest : public ::testing::Test {
 protected:
  void start(AdminLimits limits = {}) {
    server_ = loop_.run([&] {
      std::string error;
      auto* s = startAdminHttp(
          loop_.loop(), "127.0.0.1:0",
          [this](const AdminRequest& r) {
            ++requests_;
            if (r.path == "/throw") throw std::runtime_error("boom");
            AdminResponse resp;
            resp.status = r.path == "/missing" ? 404 : 200;
            resp.body = r.path == "/big" ? std::string(kBigBody, 'x')
                                         : r.method + " " + r.path + " ?" + r.query;
            return resp;
          },
          [this] { closed_ = true; }, &error, limits);
      EXPECT_NE(s, nullptr) << error;
      return s;
    });
    ASSERT_NE(server_, nullptr);
    port_ = loop_.run([this] { return server_->port(); });
  }

  void TearDown() override {
    if (server_ != nullptr) loop_.run([this] { server_->stop(); });
    EXPECT_TRUE(loop_.stop()) << "a handle was left open";
    if (server_ != nullptr) {
      EXPECT_TRUE(closed_);
    }
  }

  size_t connections() {
    return loop_.run([this] { return server_->connectionCount(); });
  }

  LoopThread loop_;
  HttpServer* server_ = nullptr;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<bool> closed_{false};
};

TEST_F(AdminHttpTest, AnswersGetWithHandlerBodyAndLength) {
  start();
  auto r = httpGet(port_, "/metrics?x=1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "GET /metrics ?x=1");
  EXPECT_EQ(r->header("content-length"), std::to_string(r->body.size()));
  EXPECT_EQ(r->header("connection"), "close");
}

TEST_F(AdminHttpTest, PassesHandlerStatusThrough) {
  start();
  auto r = httpGet(port_, "/missing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(AdminHttpTest, RejectsPostWith405AndAllow) {
  start();
  HttpClient c(port_);
  c.send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->header("allow"), "GET, HEAD");
  EXPECT_EQ(requests_, 0);
}

TEST_F(AdminHttpTest, HeadSendsHeadersWithoutBody) {
  start();
  HttpClient c(port_);
  c.expectNoBody();
  c.send("HEAD /ready HTTP/1.1\r\nHost: x\r\n\r\nGET /again HTTP/1.1\r\nHost: x\r\n\r\n");
  auto head = c.read();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->header("content-length"), std::to_string(std::string("HEAD /ready ?").size()));
  // The next bytes on the wire are the second response's status line, not a body.
  auto next = c.read();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

TEST_F(AdminHttpTest, KeepsConnectionAliveAcrossRequests) {
  start();
  HttpClient c(port_);
  for (int i = 0; i < 3; ++i) {
    c.send("GET /n" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    auto r = c.read();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->body, "GET /n" + std::to_string(i) + " ?");
    EXPECT_EQ(r->header("connection"), "keep-alive");
  }
  EXPECT_EQ(requests_, 3);
}

TEST_F(AdminHttpTest, AnswersPipelinedRequestsInOrder) {
  start();
  HttpClient c(port_);
  c.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"
         "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  for (const char* want : {"GET /a ?", "GET /b ?", "GET /c ?"}) {
    auto r = c.read();
    ASSERT_TRUE(r) << want;
    EXPECT_EQ(r->body, want);
  }
  EXPECT_TRUE(c.closedByPeer());
}

TEST_F(AdminHttpTest, ClosesAfterConnectionClose) {
  start();
  HttpClient c(port_);
  c.send("GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(c.read());
  EXPECT_TRUE(c.closedByPeer());
}

TEST_F(AdminHttpTest, ClosesAfterHttp10Request) {
  start();
  HttpClient c(port_);
  c.send("GET /x HTTP/1.0\r\n\r\n");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header("connection"), "close");
  EXPECT_TRUE(c.closedByPeer());
}

TEST_F(AdminHttpTest, AnswersMalformedRequestWith400AndCloses) {
  start();
  HttpClient c(port_);
  c.send("GARBAGE\r\n\r\n");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(c.closedByPeer());
}

TEST_F(AdminHttpTest, AnswersOversizedRequestWith431AndCloses) {
  AdminLimits limits;
  limits.max_request_bytes = 1024;
  start(limits);
  HttpClient c(port_);
  c.send("GET /x HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_TRUE(c.closedByPeer());
  EXPECT_EQ(requests_, 0);
}

TEST_F(AdminHttpTest, AnswersHandlerExceptionWith500) {
  start();
  auto r = httpGet(port_, "/throw");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
}

TEST_F(AdminHttpTest, ClosesConnectionsBeyondTheLimit) {
  AdminLimits limits;
  limits.max_connections = 2;
  start(limits);
  HttpClient a(port_), b(port_);
  ASSERT_TRUE(loop_.waitFor([this] { return server_->connectionCount() == 2; }));
  HttpClient extra(port_);
  EXPECT_TRUE(extra.closedByPeer());
  // The two within the limit still work.
  a.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(a.read());
}

TEST_F(AdminHttpTest, ClosesIdleConnectionAfterTimeout) {
  AdminLimits limits;
  limits.idle_timeout_ms = 50;
  start(limits);
  HttpClient c(port_);
  EXPECT_TRUE(c.closedByPeer());   // bounded by the client's 5 s receive timeout
  EXPECT_TRUE(loop_.waitFor([this] { return server_->connectionCount() == 0; }));
}

TEST_F(AdminHttpTest, StopClosesOpenConnections) {
  start();
  HttpClient idle(port_);
  ASSERT_TRUE(loop_.waitFor([this] { return server_->connectionCount() == 1; }));
  loop_.run([this] { server_->stop(); });
  server_ = nullptr;   // freed itself
  EXPECT_TRUE(idle.closedByPeer());
  EXPECT_TRUE(loop_.waitFor([this] { return closed_.load(); }));
}

TEST_F(AdminHttpTest, StopCancelsAWriteInFlight) {
  start();
  HttpClient slow(port_);
  slow.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");   // and never read the answer
  ASSERT_TRUE(loop_.waitFor([this] { return requests_ == 1; }));
  loop_.run([this] { server_->stop(); });
  server_ = nullptr;
  EXPECT_TRUE(loop_.waitFor([this] { return closed_.load(); }));
}

TEST(AdminHttpStartTest, FailsOnUnparsableAddress) {
  LoopThread loop;
  std::string error;
  auto* s =
      loop.run([&] { return startAdminHttp(loop.loop(), "nonsense", nullptr, nullptr, &error); });
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(error.find("nonsense"), std::string::npos);
  EXPECT_TRUE(loop.stop());
}

TEST(AdminHttpStartTest, FailsWhenPortIsTaken) {
  LoopThread loop;
  HttpServer* first = loop.run([&] {
    std::string e;
    return startAdminHttp(loop.loop(), "127.0.0.1:0", nullptr, nullptr, &e);
  });
  ASSERT_NE(first, nullptr);
  int port = loop.run([&] { return first->port(); });
  std::string error;
  auto* second = loop.run([&] {
    return startAdminHttp(loop.loop(), "127.0.0.1:" + std::to_string(port), nullptr, nullptr,
                          &error);
  });
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(error.find("cannot listen"), std::string::npos) << error;
  loop.run([&] { first->stop(); });
  EXPECT_TRUE(loop.stop());
}

}  // namespace
}  // namespace lb
