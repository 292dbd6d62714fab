// A redis-server removed from the cluster while it keeps running (an operator draining it,
// lb/routing/handover.h): for the handover window it stays as `leaving`, its keys still hit
// through lb (read from it, copied to their new owners), a write through lb deletes there,
// /backends says until when, and health checks it. When the window ends lb lets it go:
// its connections close, idle clients or not, and the metrics say so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"
#include "tests/support/handover_metrics.h"
#include "tests/support/health_harness.h"
#include "tests/support/redis_keys.h"

namespace lb::test {
namespace {

// A window long enough to read every key under a sanitizer on a loaded machine, short
// enough to wait out; checks fast enough to have run a few times in it.
constexpr const char* kCluster =
    "handover = { window = \"12s\", copy_ttl = \"10m\" }\n"
    "health = { type = \"redis\", interval = \"500ms\", timeout = \"500ms\", rise = 1, fall = 3 }";

// The server's count of connected clients (INFO clients), -1 when it does not answer.
int connectedClients(TcpClient& direct) {
  const auto info = redisCall(direct, {"INFO", "clients"});
  if (!info) return -1;
  const std::string field = "connected_clients:";
  const size_t at = info->find(field);
  return at == std::string::npos ? -1 : std::stoi(info->substr(at + field.size()));
}

TEST(LeavingBackendTest, ARemovedServerAnswersThroughTheWindowAndIsLetGoAfter) {
  constexpr int kKeys = 2000;
  CacheFleet fleet(CacheServer::kRedis, 5);
  ASSERT_TRUE(fleet.start("", kCluster)) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_TRUE(setKeys(c, kKeys));
  const std::vector<int> leaving = keysOwnedBy(fleet, kKeys, "s5");
  ASSERT_GE(leaving.size(), 100u);

  // s5 leaves the cluster; its process keeps running. An idle client stays connected
  // through it all, holding what it was routed by.
  TcpClient idle;
  ASSERT_TRUE(idle.connect(fleet.port()));
  EXPECT_EQ(redisCall(idle, {"GET", keyOf(leaving[0])}), valueOf(leaving[0]));
  ASSERT_TRUE(fleet.remove(4)) << fleet.output();
  auto backends = adminJson(fleet.adminPort(), "/backends");
  ASSERT_TRUE(backends);
  const auto& cluster = (*backends)["clusters"].items()[0];
  ASSERT_EQ(cluster["backends"].items().size(), 5u);
  const auto& s5 = cluster["backends"].items()[4];
  EXPECT_EQ(s5["name"].asString(), "s5");
  ASSERT_TRUE(s5.has("leaving_until")) << "leaving, until the window's end";
  EXPECT_FALSE(s5["leaving_until"].asString().empty());
  EXPECT_FALSE(cluster["backends"].items()[3].has("leaving_until")) << "a member";
  EXPECT_EQ(cluster["handover"]["leaving"].items()[0].asString(), "s5");
  EXPECT_EQ(metricSample(fleet.adminPort(), "lb_handover_leaving_backends", "cluster=\"fleet\""),
            1);

  // Every key reads once: those s5 owned too, read from it and copied to their new owner.
  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  const int hits = hitsOf(after, kKeys);
  EXPECT_GE(hits, kKeys * 999 / 1000) << hits << " of " << kKeys;
  RecordProperty("hits", hits);
  RecordProperty("keys_of_the_leaving_server", static_cast<int>(leaving.size()));
  const std::string m = handoverSettled(fleet);
  EXPECT_GE(handoverCount(m, "reads", "hit"), static_cast<double>(leaving.size()) * 0.999) << m;
  // A write through lb deletes at the leaving server, so no later read copies the old value.
  EXPECT_EQ(redisCall(after, {"SET", keyOf(leaving[1]), "rewritten"}), "OK");
  TcpClient direct;
  ASSERT_TRUE(direct.connect(fleet.server(4).port()));
  EXPECT_TRUE(waitUntil(
      [&] { return !redisCall(direct, {"GET", keyOf(leaving[1])}).has_value(); }, 10s))
      << "the leaving server still holds the key written through lb";
  // Checked like any backend while it leaves.
  const std::string s5_ok = "backend=\"s5\",cluster=\"fleet\",result=\"ok\"";
  const double checks = metricSample(fleet.adminPort(), "lb_backend_health_checks_total", s5_ok);
  EXPECT_TRUE(waitUntil(
      [&] {
        return metricSample(fleet.adminPort(), "lb_backend_health_checks_total", s5_ok) > checks;
      },
      10s));
  EXPECT_GT(connectedClients(direct), 1) << "lb holds connections to it";

  // The window ends: lb lets it go. Only this test's own connection is left at the server,
  // though the idle client has sent nothing since.
  EXPECT_TRUE(waitUntil(
      [&] {
        return metricSample(fleet.adminPort(), "lb_handover_leaving_backends",
                            "cluster=\"fleet\"") == 0;
      },
      30s))
      << fleet.output();
  EXPECT_TRUE(fleet.lb().process().waitForOutput("leaving backend s5 is no longer contacted", 5s))
      << fleet.output();
  EXPECT_TRUE(waitUntil([&] { return connectedClients(direct) == 1; }, 10s))
      << connectedClients(direct) << " clients at the server that left";
  backends = adminJson(fleet.adminPort(), "/backends");
  ASSERT_TRUE(backends);
  EXPECT_EQ((*backends)["clusters"].items()[0]["backends"].items().size(), 4u);
  EXPECT_EQ(metricSample(fleet.adminPort(), "lb_backend_active_connections",
                         "backend=\"s5\",cluster=\"fleet\""),
            -1)
      << "its series are gone with it";
  // The idle client goes on, by the cluster without s5: the keys copied over still hit.
  EXPECT_EQ(redisCall(idle, {"GET", keyOf(leaving[2])}), valueOf(leaving[2]));
}

}  // namespace
}  // namespace lb::test
