// A fixture for lb's HTTP server (lb/http/server.h) on a real loopback socket: the server
// runs on a LoopThread with a test handler whose behaviour the request path picks, and every
// test ends by stopping it and proving that every handle closed (uv_loop_close() == 0) and
// that the server freed itself.
//
// The test handler, by path:
//   /slow     answers after a 50 ms timer (a late answer in a pipelined batch)
//   /pause    pauses the body for 50 ms, answers with the body size it then read
//   /big      16 MiB in one write (stays in flight while the client does not read)
//   /stream   64 KiB per drained write, without end (until the client goes away)
//   /tunnel   101, then echoes raw bytes
//   /throw    throws from onRequest
//   any other "<path> #<request number on this connection>", after the whole request
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>

#include "lb/core/address.h"
#include "lb/http/server.h"
#include "tests/support/http_client.h"
#include "tests/support/loop_thread.h"

namespace lb::testing {

struct ServerCounters {
  std::atomic<int> requests{0};
  std::atomic<int> handlers_alive{0};
  std::atomic<size_t> body_bytes_at_resume{0};
};

class TestHandler final : public HttpHandler {
 public:
  explicit TestHandler(ServerCounters* counters) : c_(counters) { ++c_->handlers_alive; }
  ~TestHandler() override { --c_->handlers_alive; }

  void onRequest(HttpServerConn& conn, const HttpRequestHead& head) override {
    ++c_->requests;
    ++number_;
    path_ = head.target();
    body_ = 0;
    if (path_ == "/throw") throw std::runtime_error("boom");
    if (path_ == "/slow" || path_ == "/pause") {
      if (path_ == "/pause") conn.pause();
      conn.startTimer(50);
    } else if (path_ == "/big") {
      answer(conn, std::string(16 << 20, 'x'));
    } else if (path_ == "/stream") {
      conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      onWritten(conn);
    } else if (path_ == "/tunnel") {
      conn.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n");
      conn.startTunnel();
    }
  }
  void onBody(HttpServerConn&, std::string_view data) override { body_ += data.size(); }
  void onRequestComplete(HttpServerConn& conn) override {
    if (path_ == "/pause") {
      answer(conn, std::to_string(body_));
    } else if (path_ != "/slow" && path_ != "/big" && path_ != "/stream" && path_ != "/tunnel") {
      answer(conn, path_ + " #" + std::to_string(number_));
    }
  }
  void onTimer(HttpServerConn& conn) override {
    if (path_ == "/pause") {
      c_->body_bytes_at_resume = body_;
      conn.resume();
    } else {
      answer(conn, path_ + " #" + std::to_string(number_));
    }
  }
  void onWritten(HttpServerConn& conn) override {
    if (path_ == "/stream") conn.write("10000\r\n", kChunk, "\r\n");
  }
  void onTunnelData(HttpServerConn& conn, std::string_view data) override {
    conn.write(std::string(data));
  }

  static void answer(HttpServerConn& conn, const std::string& body) {
    conn.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
               (conn.keepAlive() ? "" : "Connection: close\r\n") + "\r\n" + body);
    conn.finish();
  }

 private:
  static inline const std::string kChunk = std::string(0x10000, 'c');
  ServerCounters* c_;
  int number_ = 0;
  std::string path_;
  size_t body_ = 0;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions options = {}) {
    server_ = loop_.run([&] {
      sockaddr_storage address;
      socklen_t len = 0;
      std::string error;
      EXPECT_TRUE(parseAddress("127.0.0.1:0", &address, &len, &error, PortZero::kAllow));
      HttpServer* s = HttpServer::start(
          loop_.loop(), address, options,
          [this](HttpServerConn&) { return std::make_unique<TestHandler>(&counters_); },
          [this] { closed_ = true; }, &error);
      EXPECT_NE(s, nullptr) << error;
      return s;
    });
    ASSERT_NE(server_, nullptr);
    port_ = static_cast<uint16_t>(loop_.run([this] { return server_->port(); }));
  }

  // Stops the server now (the test goes on without it).
  void stopServer() {
    loop_.run([this] { server_->stop(); });
    server_ = nullptr;   // freed itself, or will once its close callbacks ran
  }

  void TearDown() override {
    if (server_ != nullptr) stopServer();
    EXPECT_TRUE(loop_.stop()) << "a handle was left open";
    EXPECT_TRUE(closed_) << "the server did not free itself";
    EXPECT_EQ(counters_.handlers_alive, 0) << "a handler was not freed";
  }

  size_t connections() {
    return loop_.run([this] { return server_->connectionCount(); });
  }

  static std::string get(const std::string& path, const std::string& extra = "") {
    return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n";
  }

  LoopThread loop_;
  HttpServer* server_ = nullptr;
  uint16_t port_ = 0;
  ServerCounters counters_;
  std::atomic<bool> closed_{false};
};

}  // namespace lb::testing
