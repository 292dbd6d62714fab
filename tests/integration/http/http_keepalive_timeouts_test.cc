// The header and idle timeouts on a kept-alive connection, after requests have been served:
// the session arms its timer at every phase (header, response, idle) but leaves a running
// timer that fires no later than the new deadline as it is (HttpSession::armTimer), so these
// pin what that must not change. The two timeouts are far apart (header 200 ms, idle 2 s) so
// that a timer left at the wrong deadline shows on a loaded machine.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

using Clock = std::chrono::steady_clock;

class HttpKeepAliveTimeoutsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(h_.startOrigin("a", &why)) << why;
    ASSERT_TRUE(h_.startLb(
        "[lb]\nworkers = 1\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
        "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
        "hash = [ { header = \"x-key\" } ]\n"
        "timeouts = { connect = \"1s\", header = \"200ms\", idle = \"2s\" }\n"
        "[clusters.c]\n" + h_.backendsToml({"a"}),
        &why))
        << why;
  }

  ProxyHarness h_;
};

// The timer ran at the idle timeout after the last response; the next head's first byte
// must bring the deadline forward to the header timeout, not leave it at the idle one.
TEST_F(HttpKeepAliveTimeoutsTest, AStalledSecondHeadIs408AtTheHeaderTimeout) {
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  for (int i = 0; i < 3; ++i) ASSERT_NE(backendFor(c, "/", "x-key: k\r\n"), "");
  const auto start = Clock::now();
  ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: x\r\n"));   // never completed
  auto r = readHttpResponse(c, false, 5s);
  const auto took = Clock::now() - start;
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 408);
  EXPECT_GE(took, 190ms);
  EXPECT_LT(took, 1500ms) << "the header timeout is 200 ms; 2 s is the idle one";
}

// Between requests the connection waits the idle timeout, counted from the last response,
// however many earlier (and shorter) deadlines the timer passed through.
TEST_F(HttpKeepAliveTimeoutsTest, AKeptAliveConnectionClosesAtTheIdleTimeoutNotBefore) {
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  for (int i = 0; i < 3; ++i) ASSERT_NE(backendFor(c, "/", "x-key: k\r\n"), "");
  const auto start = Clock::now();
  ASSERT_TRUE(c.waitClosed(6s));
  const auto took = Clock::now() - start;
  EXPECT_TRUE(c.buffer().empty()) << "no 408 for a connection between requests";
  EXPECT_GE(took, 1900ms) << "closed before the idle timeout (2 s)";
  EXPECT_LT(took, 4500ms);
}

// Requests spaced by more than the header timeout and less than the idle one: each waits
// between them under the idle timeout, and each head completes at once, so none is a 408 and
// the connection stays open throughout.
TEST_F(HttpKeepAliveTimeoutsTest, RequestsSpacedPastTheHeaderTimeoutKeepTheConnection) {
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  for (int i = 0; i < 4; ++i) {
    int status = 0;
    ASSERT_NE(backendFor(c, "/", "x-key: k\r\n", &status), "") << "request " << i << ": " << status;
    ASSERT_FALSE(c.readAtLeast(1, 400ms)) << "lb sent or closed something between requests";
    ASSERT_FALSE(c.closedByPeer());
  }
}

// A response slower than the header timeout (and faster than the idle one, which bounds the
// wait for an answer) arrives: the header timeout no longer applies once the head is whole.
TEST_F(HttpKeepAliveTimeoutsTest, AResponseSlowerThanTheHeaderTimeoutArrives) {
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  ASSERT_NE(backendFor(c, "/", "x-key: k\r\n"), "");
  int status = 0;
  EXPECT_NE(backendFor(c, "/?delay_ms=600", "x-key: k\r\n", &status), "") << status;
  EXPECT_NE(backendFor(c, "/", "x-key: k\r\n"), "");
}

}  // namespace
}  // namespace lb::test
