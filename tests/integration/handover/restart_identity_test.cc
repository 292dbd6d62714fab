// A cache server that restarts quicker than health can see (fall = 20 checks of 200 ms; the
// restart takes tens of milliseconds) is known by its new identity: with a handover, the
// checks read Redis' run_id (INFO server) or memcached's pid and start time (stats), and
// another process answering, with no down between, is logged, counted
// (lb_backend_restarts_total) and opens the backend's return window.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cache_fleet.h"
#include "tests/support/health_harness.h"

namespace lb::test {
namespace {

class RestartIdentityTest : public ::testing::TestWithParam<CacheServer::Kind> {};

TEST_P(RestartIdentityTest, ARestartQuickerThanFallIsSeenByTheServersNewIdentity) {
  const bool redis = GetParam() == CacheServer::kRedis;
  CacheFleet fleet(GetParam(), 3);
  ASSERT_TRUE(fleet.start("", std::string("handover = { window = \"60s\" }\n") +
                                  "health = { type = \"" + (redis ? "redis" : "memcached") +
                                  "\", interval = \"200ms\", timeout = \"100ms\", rise = 2, "
                                  "fall = 20 }"))
      << fleet.output();
  const std::string s1 = "backend=\"s1\",cluster=\"fleet\"";
  // Two passes at least, so that the first identity is known before the restart.
  ASSERT_TRUE(waitUntil(
      [&] {
        return metricSample(fleet.adminPort(), "lb_backend_health_checks_total",
                            s1 + ",result=\"ok\"") >= 2;
      },
      10s))
      << fleet.output();
  EXPECT_EQ(metricSample(fleet.adminPort(), "lb_backend_restarts_total", s1), 0);
  EXPECT_EQ(metricSample(fleet.adminPort(), "lb_handover_active", "cluster=\"fleet\""), 0);
  ASSERT_TRUE(fleet.server(0).restart());
  EXPECT_TRUE(waitUntil(
      [&] { return metricSample(fleet.adminPort(), "lb_backend_restarts_total", s1) == 1; },
      10s))
      << fleet.output();
  EXPECT_TRUE(fleet.lb().process().waitForOutput("restarted between two checks", 5s))
      << fleet.output();
  EXPECT_EQ(metricSample(fleet.adminPort(), "lb_backend_health_transitions_total",
                         s1 + ",to=\"down\""),
            0)
      << "health never took it down";
  EXPECT_GT(metricSample(fleet.adminPort(), "lb_handover_active", "cluster=\"fleet\""), 0)
      << "the restart opened the return window";
}

INSTANTIATE_TEST_SUITE_P(Kinds, RestartIdentityTest,
                         ::testing::Values(CacheServer::kRedis, CacheServer::kMemcached),
                         [](const auto& info) {
                           return info.param == CacheServer::kRedis ? "redis" : "memcached";
                         });

}  // namespace
}  // namespace lb::test
