// Passive outlier detection against real lb-origin backends that answer every request with
// 503 (lb-origin's set_status switch): ejected after consecutive_failures, back when
// base_ejection is up, ejected for twice as long the next time; and never more than
// max_ejected_percent of the cluster out at once, however many backends fail. No active
// checks here: only the traffic tells.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/health_harness.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

class HealthOutlierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(startKeyedFleet(h_,
                              "[clusters.c]\nselector = \"ring_hash\"\n"
                              "outlier = { consecutive_failures = 3, base_ejection = \"1s\", "
                              "max_ejection = \"10s\", max_ejected_percent = 50 }\n"),
              "");
    for (int i = 0; i < 200; ++i) {
      std::string k = "user:" + std::to_string(i);
      orders_[k] = ringOrder(h_.adminPort(), "c", k);
      ASSERT_EQ(orders_[k].size(), 4u);
      keys_of_[orders_[k][0]].push_back(k);
    }
    for (const char* n : {"a", "b", "c", "d"}) ASSERT_GE(keys_of_[n].size(), 3u) << n;
  }

  // One request for `key` on a fresh connection: {status, X-Backend}.
  std::pair<int, std::string> get(const std::string& key) {
    auto r = httpExchange(h_.port(), httpRequest("GET", "/", "x-key: " + key + "\r\n"), 5s);
    return {r.ok ? r.status : -1, r.header("x-backend").value_or("")};
  }

  std::string health(const std::string& b) { return backendHealth(h_.adminPort(), "c", b).health; }

  ProxyHarness h_;
  std::map<std::string, std::vector<std::string>> orders_;
  std::map<std::string, std::vector<std::string>> keys_of_;
};

TEST_F(HealthOutlierTest, A503BackendIsEjectedForBaseEjectionThenForTwiceAsLong) {
  ASSERT_TRUE(setOriginStatus(h_, "b", 503));
  const auto& b_keys = keys_of_["b"];
  for (int round = 1; round <= 2; ++round) {
    // Three failures in a row (b is in: each request reaches it and gets its 503).
    for (int i = 0; i < 3; ++i) {
      auto [status, backend] = get(b_keys[i]);
      EXPECT_EQ(status, 503);
      EXPECT_EQ(backend, "b");
    }
    ASSERT_TRUE(waitUntil([&] { return health("b") == "ejected"; }, 3s)) << h_.lb().output();
    const auto ejected_at = Clock::now();
    auto view = backendHealth(h_.adminPort(), "c", "b");
    EXPECT_FALSE(view.healthy);
    EXPECT_EQ(view.ejections, round);
    EXPECT_EQ(view.ejection_ms, 1000 * round) << "each repeat doubles the ejection";
    EXPECT_EQ(view.reason, "ejected for " + std::to_string(round) +
                               "s after 3 consecutive failures (3 5xx)");

    // While b is out its keys are answered by the next host of their own order.
    for (size_t i = 0; i < 5 && i < b_keys.size(); ++i) {
      auto [status, backend] = get(b_keys[i]);
      EXPECT_EQ(status, 200);
      EXPECT_EQ(backend, orders_[b_keys[i]][1]) << b_keys[i];
    }
    ASSERT_TRUE(waitUntil([&] { return health("b") == "up"; }, 5s, 5ms)) << h_.lb().output();
    const double out_ms = msSince(ejected_at);
    RecordProperty("ejection_" + std::to_string(round) + "_observed_ms", static_cast<int>(out_ms));
    // It cannot come back early; the poll may see the ejection a few ms late.
    EXPECT_GE(out_ms, 1000.0 * round - 50) << "back before its ejection was over";
    EXPECT_EQ(backendHealth(h_.adminPort(), "c", "b").reason,
              "ejection of " + std::to_string(round) + "s ended");
  }
  const std::string out = h_.lb().output();
  EXPECT_NE(out.find("backend b down: ejected for 1s after 3 consecutive failures (3 5xx) "
                     "(cluster c)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("backend b down: ejected for 2s after 3 consecutive failures"),
            std::string::npos);
  EXPECT_NE(out.find("backend b up: ejection of 2s ended (cluster c)"), std::string::npos);
  EXPECT_EQ(metricSample(h_.adminPort(), "lb_backend_ejections_total",
                         "backend=\"b\",cluster=\"c\""),
            2);
  for (const char* other : {"a", "c", "d"})
    EXPECT_EQ(metricSample(h_.adminPort(), "lb_backend_ejections_total",
                           "backend=\"" + std::string(other) + "\",cluster=\"c\""),
              0);
  ASSERT_TRUE(setOriginStatus(h_, "b", 0));
}

TEST_F(HealthOutlierTest, NeverMoreThanMaxEjectedPercentOfTheClusterIsOut) {
  for (const char* n : {"b", "c", "d"}) ASSERT_TRUE(setOriginStatus(h_, n, 503));
  // Three of four backends fail everything; 50% of 4 is 2. Traffic to every failing
  // backend's keys for three seconds (three ejection lengths), counting who is out at each
  // step.
  size_t most_out = 0;
  const auto until = Clock::now() + 3s;
  for (int round = 0; Clock::now() < until; ++round) {
    for (const char* n : {"b", "c", "d"})
      get(keys_of_[n][static_cast<size_t>(round) % keys_of_[n].size()]);
    auto doc = adminJson(h_.adminPort(), "/backends");
    ASSERT_TRUE(doc);
    size_t out = 0;
    for (const auto& b : (*doc)["clusters"][0]["backends"].items())
      out += b["health"].asString() == "ejected";
    EXPECT_LE(out, 2u) << "round " << round;
    EXPECT_FALSE((*doc)["clusters"][0]["panic"].asBool()) << "2 of 4 healthy is not a panic";
    most_out = std::max(most_out, out);
  }
  EXPECT_EQ(most_out, 2u);
  EXPECT_NE(h_.lb().output().find("backends are ejected already (max_ejected_percent 50): "
                                  "kept in (cluster c)"),
            std::string::npos)
      << h_.lb().output();
  EXPECT_EQ(health("a"), "up");
  for (const char* n : {"b", "c", "d"}) ASSERT_TRUE(setOriginStatus(h_, n, 0));
}

}  // namespace
}  // namespace lb::test
