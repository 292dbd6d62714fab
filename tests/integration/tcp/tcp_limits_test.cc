// limits.max_connections on a tcp listener, against a real lb with one worker (which then
// enforces the whole limit): two connections are held open, the third is closed at once
// without lb ever connecting to a backend, and a new one is served again once one closes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/support/metrics_fleet.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

class TcpLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(h_.startOrigin("a", &why)) << why;
    ASSERT_TRUE(h_.startLb("[lb]\nworkers = 1\naccess_log = \"\"\n"
                           "[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                           "[listeners.pipe]\nlisten = \"127.0.0.1:{PORT}\"\nprotocol = \"tcp\"\n"
                           "cluster = \"c\"\non_missing_key = \"round_robin\"\n"
                           "limits = { max_connections = 2 }\n"
                           "[clusters.c]\n" + h_.backendsToml({"a"}),
                           &why))
        << why;
    // The harness' readiness probe was a connection too: wait until lb has closed it.
    ASSERT_TRUE(waitActive(0)) << h_.lb().output();
  }

  // A sample of lb's /metrics for the listener, or -1 when it cannot be read.
  double listenerMetric(const std::string& name) {
    auto r = httpGetLocal(h_.adminPort(), "/metrics");
    if (!r.ok) return -1;
    auto by = byLabel(parseExposition(r.body), name, "listener");
    return by.count("pipe") ? by["pipe"] : -1;
  }

  bool waitActive(double n) {
    for (auto end = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < end;) {
      if (listenerMetric("lb_downstream_connections_active") == n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  // One request through the tcp listener to the origin on an open connection: the origin's
  // name when it answered.
  static std::string askOrigin(TcpClient& c) {
    if (!c.send(httpRequest("GET", "/"))) return "";
    auto r = readHttpResponse(c);
    return r.ok ? r.header("x-backend").value_or("") : "";
  }

  long originConnections() { return originStat(h_.originPort("a"), "connections_accepted"); }

  ProxyHarness h_;
};

TEST_F(TcpLimitsTest, TheConnectionPastTheLimitIsClosedWithoutReachingABackend) {
  TcpClient c1, c2, c3;
  ASSERT_TRUE(c1.connect(h_.port()));
  ASSERT_EQ(askOrigin(c1), "a");
  ASSERT_TRUE(c2.connect(h_.port()));
  ASSERT_EQ(askOrigin(c2), "a");
  // Each /stats probe is a connection of its own: count before and after, minus the probe.
  const long before = originConnections();
  ASSERT_TRUE(c3.connect(h_.port()));
  EXPECT_TRUE(c3.waitClosed(5s)) << "lb must close the third connection at once";
  EXPECT_EQ(c3.buffer(), "");
  EXPECT_EQ(originConnections(), before + 1) << "the refused connection reached the backend";
  EXPECT_EQ(listenerMetric("lb_downstream_connections_over_limit_total"), 1);
  // The two held connections are untouched.
  EXPECT_EQ(askOrigin(c1), "a");
  EXPECT_EQ(askOrigin(c2), "a");
}

TEST_F(TcpLimitsTest, ANewConnectionIsServedAgainOnceOneCloses) {
  TcpClient c1, c2;
  ASSERT_TRUE(c1.connect(h_.port()));
  ASSERT_EQ(askOrigin(c1), "a");
  ASSERT_TRUE(c2.connect(h_.port()));
  ASSERT_EQ(askOrigin(c2), "a");
  {
    TcpClient over;
    ASSERT_TRUE(over.connect(h_.port()));
    ASSERT_TRUE(over.waitClosed(5s)) << "the limit is not enforced";
  }
  c1.close();
  ASSERT_TRUE(waitActive(1)) << h_.lb().output();
  TcpClient c3;
  ASSERT_TRUE(c3.connect(h_.port()));
  EXPECT_EQ(askOrigin(c3), "a");
  EXPECT_EQ(askOrigin(c2), "a");
}

}  // namespace
}  // namespace lb::test
