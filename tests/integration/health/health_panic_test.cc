// Panic mode with real lb-origin backends: three of four fail their HTTP checks (they answer
// everything with 503 through lb-origin's set_status switch, so they still say who they
// are). With two down the cluster routes around them; with three down (25% healthy, under
// panic_threshold 50) every key goes to its table owner again and lb_cluster_panic is 1; one
// back (50%) ends the panic.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/health_harness.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

constexpr int kKeys = 100;

class HealthPanicTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(startKeyedFleet(h_,
                              "[clusters.c]\nselector = \"maglev\"\npanic_threshold = 50\n"
                              "health = { type = \"http\", interval = \"100ms\", "
                              "timeout = \"50ms\", rise = 1, fall = 1 }\n"),
              "");
    for (int i = 0; i < kKeys; ++i) {
      std::string k = "k" + std::to_string(i);
      orders_[k] = ringOrder(h_.adminPort(), "c", k);
      ASSERT_EQ(orders_[k].size(), 4u);
    }
  }

  bool healthy(const std::string& b) { return backendHealth(h_.adminPort(), "c", b).healthy; }
  double panicGauge() {
    return metricSample(h_.adminPort(), "lb_cluster_panic", "cluster=\"c\"");
  }

  // Which backend answers each key now.
  std::map<std::string, std::string> whereKeysGo() {
    std::map<std::string, std::string> out;
    TcpClient c;
    if (!c.connect(h_.port())) return out;
    for (const auto& [k, _] : orders_) {
      if (!c.send(httpRequest("GET", "/", "x-key: " + k + "\r\n"))) break;
      auto r = readHttpResponse(c, false, 5s);
      out[k] = r.ok ? r.header("x-backend").value_or("?") : "(failed)";
    }
    return out;
  }

  // Where each key should go with `up` healthy and health honoured.
  std::string firstUp(const std::string& key, const std::set<std::string>& up) {
    for (const auto& b : orders_[key])
      if (up.count(b)) return b;
    return "";
  }

  ProxyHarness h_;
  std::map<std::string, std::vector<std::string>> orders_;
};

TEST_F(HealthPanicTest, UnderTheThresholdKeysRouteByTheTableAndThePanicGaugeSaysSo) {
  ASSERT_TRUE(waitUntil([&] { return panicGauge() == 0; }, 5s));

  // Two of four down: 50% healthy is not under 50, health is honoured.
  ASSERT_TRUE(setOriginStatus(h_, "a", 503));
  ASSERT_TRUE(setOriginStatus(h_, "b", 503));
  ASSERT_TRUE(waitUntil([&] { return !healthy("a") && !healthy("b"); }, 5s)) << h_.lb().output();
  EXPECT_EQ(clusterPanic(h_.adminPort(), "c"), std::optional<bool>(false));
  EXPECT_EQ(panicGauge(), 0);
  for (const auto& [k, b] : whereKeysGo()) EXPECT_EQ(b, firstUp(k, {"c", "d"})) << k;

  // Three of four: 25%, panic. Every key goes to its table owner, down or not.
  ASSERT_TRUE(setOriginStatus(h_, "c", 503));
  ASSERT_TRUE(waitUntil([&] { return !healthy("c"); }, 5s)) << h_.lb().output();
  EXPECT_EQ(clusterPanic(h_.adminPort(), "c"), std::optional<bool>(true));
  EXPECT_EQ(panicGauge(), 1);
  std::set<std::string> owners;
  for (const auto& [k, b] : whereKeysGo()) {
    EXPECT_EQ(b, orders_[k][0]) << k << " must go to its table owner in panic";
    owners.insert(b);
  }
  EXPECT_EQ(owners.size(), 4u) << "the key space spreads over the whole table, not onto d";
  auto ring = adminJson(h_.adminPort(), "/ring?cluster=c&key=k0");
  ASSERT_TRUE(ring);
  EXPECT_EQ((*ring)["pick"].asString(), (*ring)["owner"].asString());
  EXPECT_NE(h_.lb().output().find("cluster c in panic: 1 of 4 backends healthy, under "
                                  "panic_threshold 50%: routing by the table"),
            std::string::npos)
      << h_.lb().output();

  // One back: 2 of 4, the panic is over and health counts again.
  ASSERT_TRUE(setOriginStatus(h_, "a", 0));
  ASSERT_TRUE(waitUntil([&] { return healthy("a"); }, 5s)) << h_.lb().output();
  EXPECT_EQ(clusterPanic(h_.adminPort(), "c"), std::optional<bool>(false));
  EXPECT_EQ(panicGauge(), 0);
  for (const auto& [k, b] : whereKeysGo()) EXPECT_EQ(b, firstUp(k, {"a", "d"})) << k;
  EXPECT_NE(h_.lb().output().find("cluster c out of panic: 2 of 4 backends healthy"),
            std::string::npos);
  for (const char* n : {"b", "c"}) ASSERT_TRUE(setOriginStatus(h_, n, 0));
}

}  // namespace
}  // namespace lb::test
