// on_missing_key = "round_robin" means the same on http and tcp listeners: keyless requests
// (http) and connections (tcp) visit the cluster's backends in table order, one after the
// other, and a backend that is down is skipped rather than doubling its neighbour's share.
// Real lb (one worker, so there is one rotation to watch) and three lb-origin backends; the
// tcp listener pipes to the same origins, so an HTTP request sent through it names the
// backend its connection reached.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

constexpr int kRounds = 9;

class RoundRobinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* n : {"a", "b", "c"}) {
      std::string why;
      ASSERT_TRUE(h_.startOrigin(n, &why)) << why;
    }
    std::string why;
    ASSERT_TRUE(h_.startLb("[lb]\nworkers = 1\naccess_log = \"\"\n"
                           "[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                           "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\nprotocol = \"http\"\n"
                           "cluster = \"c\"\non_missing_key = \"round_robin\"\n"
                           "[listeners.pipe]\nlisten = \"127.0.0.1:{PORT1}\"\nprotocol = \"tcp\"\n"
                           "cluster = \"c\"\non_missing_key = \"round_robin\"\n"
                           "[clusters.c]\nselector = \"ring_hash\"\n" +
                               h_.backendsToml({"a", "b", "c"}),
                           &why))
        << why;
  }

  // Backends that served n keyless HTTP requests on one keep-alive connection, in order.
  std::vector<std::string> httpVisits(int n) {
    std::vector<std::string> out;
    TcpClient c;
    EXPECT_TRUE(c.connect(h_.port()));
    for (int i = 0; i < n; ++i) out.push_back(backendFor(c, "/", ""));
    return out;
  }

  // Backends that n tcp connections reached, in order (one request on each, then closed).
  std::vector<std::string> tcpVisits(int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
      TcpClient c;
      EXPECT_TRUE(c.connect(h_.extraPort(1)));
      out.push_back(backendFor(c, "/", ""));
    }
    return out;
  }

  ProxyHarness h_;
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + (x.empty() ? std::string("?") : x);
  return s;
}

// True when each visit is the backend after the previous one in `order`, wrapping around.
bool isRotation(const std::vector<std::string>& visits, const std::vector<std::string>& order) {
  auto at = [&](const std::string& name) {
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i] == name) return static_cast<int>(i);
    return -1;
  };
  for (size_t i = 0; i < visits.size(); ++i) {
    if (at(visits[i]) < 0) return false;
    if (i > 0 && at(visits[i]) != (at(visits[i - 1]) + 1) % static_cast<int>(order.size()))
      return false;
  }
  return true;
}

std::map<std::string, int> counts(const std::vector<std::string>& visits) {
  std::map<std::string, int> out;
  for (const auto& v : visits) ++out[v];
  return out;
}

TEST_F(RoundRobinTest, HttpAndTcpVisitTheBackendsInTableOrder) {
  const std::map<std::string, int> even = {{"a", kRounds / 3}, {"b", kRounds / 3},
                                           {"c", kRounds / 3}};
  auto http = httpVisits(kRounds);
  EXPECT_TRUE(isRotation(http, {"a", "b", "c"})) << "http: " << joined(http);
  EXPECT_EQ(counts(http), even) << "http: " << joined(http);
  auto tcp = tcpVisits(kRounds);
  EXPECT_TRUE(isRotation(tcp, {"a", "b", "c"})) << "tcp: " << joined(tcp);
  EXPECT_EQ(counts(tcp), even) << "tcp: " << joined(tcp);
}

TEST_F(RoundRobinTest, HttpAndTcpSkipADownBackendAndShareItsTurnEvenly) {
  h_.killOrigin("b");   // its port now refuses: every attempt on it fails over
  constexpr int kVisits = 8;
  const std::map<std::string, int> even = {{"a", kVisits / 2}, {"c", kVisits / 2}};
  auto http = httpVisits(kVisits);
  EXPECT_TRUE(isRotation(http, {"a", "c"})) << "http: " << joined(http);
  EXPECT_EQ(counts(http), even) << "http: " << joined(http);
  auto tcp = tcpVisits(kVisits);
  EXPECT_TRUE(isRotation(tcp, {"a", "c"})) << "tcp: " << joined(tcp);
  EXPECT_EQ(counts(tcp), even) << "tcp: " << joined(tcp);
}

}  // namespace
}  // namespace lb::test
