// A response's Content-Length body of kSpliceMin (32 KiB) or more is spliced origin to client
// (lb/proxy/http/http_session_splice.cc): real lb (one worker), real lb-origin /bytes bodies
// checked byte for byte on one keep-alive connection with pipelined requests, and an origin of
// the test's own that cuts or stalls a body it promised, so the client must see a truncated
// response closed, never a hang.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tests/support/proxy_harness.h"
#include "tests/support/splice_test_util.h"

namespace lb::test {
namespace {

using Clock = std::chrono::steady_clock;

bool isBytesPattern(const std::string& body, size_t n) {
  if (body.size() != n) return false;
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i)
    if (body[i] != kHex[i % 16]) return false;
  return true;
}

// Answers any request with a head promising `promised` bytes, then `sent` bytes of 'x', then
// closes (hold = false) or keeps the connection silent (hold = true) until the peer closes.
class CuttingOrigin {
 public:
  CuttingOrigin(size_t promised, size_t sent, bool hold)
      : promised_(promised), sent_(sent), hold_(hold) {}
  uint16_t port() const { return server_.port(); }

 private:
  void serve(int c, const std::atomic<bool>& stop) {
    std::string req;
    char buf[4096];
    while (req.find("\r\n\r\n") == std::string::npos) {
      ssize_t k = ::recv(c, buf, sizeof buf, 0);
      if (k <= 0) break;
      req.append(buf, static_cast<size_t>(k));
    }
    std::string out = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(promised_) +
                      "\r\n\r\n" + std::string(sent_, 'x');
    for (size_t at = 0; at < out.size();) {
      ssize_t k = ::send(c, out.data() + at, out.size() - at, MSG_NOSIGNAL);
      if (k <= 0) break;
      at += static_cast<size_t>(k);
    }
    while (hold_ && !stop) {
      pollfd q{c, POLLIN, 0};
      if (::poll(&q, 1, 100) > 0 && ::recv(c, buf, sizeof buf, 0) <= 0) break;
    }
  }

  size_t promised_, sent_;
  bool hold_;
  LoopbackOrigin server_{[this](int c, const std::atomic<bool>& stop) { serve(c, stop); }};
};

class HttpSpliceTest : public SpliceTest {};

TEST_F(HttpSpliceTest, LargeBodiesArriveIdenticalOnOneKeepAliveConnectionWithPipelining) {
  ASSERT_TRUE(startWithOrigin());
  // Three requests at once: the bytes of the next request wait in lb while a body is spliced.
  const size_t sizes[] = {1 << 20, 300000, 64 << 20, 1000};
  std::string reqs;
  for (size_t n : sizes)
    reqs += httpRequest("GET", "/bytes?n=" + std::to_string(n), "x-key: k\r\n");
  ASSERT_TRUE(c.send(reqs));
  for (size_t n : sizes) {
    auto r = readHttpResponse(c, false, 20s);
    ASSERT_TRUE(r.ok) << n << ": " << r.error;
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(isBytesPattern(r.body, n)) << n << " bytes: body differs (size " << r.body.size()
                                           << ")";
    EXPECT_TRUE(r.keep_alive);
  }
}

// lb_spliced_bytes_total counts a large body's spliced bytes (all but what came with its head)
// and nothing of a small one; the pipe is back in the pool once the body is out.
TEST_F(HttpSpliceTest, MetricsCountTheSplicedBodyBytesAndThePipeComesBack) {
  ASSERT_TRUE(startWithOrigin());
  EXPECT_EQ(metric("lb_spliced_bytes_total", "listener", "web"), 0);
  const size_t n = 4 << 20;
  ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=" + std::to_string(n), "x-key: k\r\n")));
  auto r = readHttpResponse(c, false, 20s);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(isBytesPattern(r.body, n));
  const double spliced = metric("lb_spliced_bytes_total", "listener", "web");
  // The head's read (at most 16 KiB) brings the body's first bytes through user space.
  EXPECT_LE(spliced, static_cast<double>(n));
  EXPECT_GE(spliced, static_cast<double>(n - (16 << 10)));
  ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=1000", "x-key: k\r\n")));
  auto small = readHttpResponse(c, false, 10s);
  ASSERT_TRUE(small.ok) << small.error;
  EXPECT_EQ(metric("lb_spliced_bytes_total", "listener", "web"), spliced) << "1000 bytes spliced";
  EXPECT_EQ(metric("lb_splice_pipes", "state", "in_use"), 0);
  EXPECT_GE(metric("lb_splice_pipes", "state", "pooled"), 1);
}

TEST_F(HttpSpliceTest, AnOriginThatClosesMidBodyGivesTheClientATruncatedResponseClosed) {
  CuttingOrigin origin(8 << 20, 1 << 20, /*hold=*/false);
  ASSERT_TRUE(startLb(origin.port()));
  ASSERT_TRUE(c.send(httpRequest("GET", "/", "x-key: k\r\n")));
  auto t0 = Clock::now();
  ASSERT_TRUE(c.waitClosed(5s)) << "lb kept the client waiting for bytes that never come";
  EXPECT_LT(Clock::now() - t0, 5s);
  const std::string& got = c.buffer();
  size_t body_at = got.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  EXPECT_NE(got.find("Content-Length: 8388608"), std::string::npos) << got.substr(0, body_at);
  EXPECT_EQ(got.size() - body_at - 4, size_t{1} << 20) << "every byte the origin sent arrives";
}

TEST_F(HttpSpliceTest, TheIdleTimeoutEndsAStalledSplicedBody) {
  CuttingOrigin origin(8 << 20, 1 << 20, /*hold=*/true);
  ASSERT_TRUE(startLb(origin.port(), SpliceLb().idle("1s")));
  ASSERT_TRUE(c.send(httpRequest("GET", "/", "x-key: k\r\n")));
  auto t0 = Clock::now();
  ASSERT_TRUE(c.waitClosed(6s)) << "a stalled spliced body was never timed out";
  auto took = Clock::now() - t0;
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 4s);
  const std::string& got = c.buffer();
  size_t body_at = got.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  EXPECT_EQ(got.size() - body_at - 4, size_t{1} << 20);
}

}  // namespace
}  // namespace lb::test
