// What health looks like from the admin listener: /backends' health fields and the cluster's
// panic flag, and the health families on /metrics, present exactly for the clusters whose
// config asks for them. Fed by the HealthTracker, as in the running process.
#include <gtest/gtest.h>

#include "lb/admin/metrics.h"
#include "lb/admin/routes.h"
#include "lb/health/health_tracker.h"
#include "tests/support/json_reader.h"
#include "tests/support/metrics_test_snapshot.h"

namespace lb {
namespace {

using testing::JsonReader;
using testing::JsonValue;

class HealthAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Config config = testing::metricsTestConfig();
    HealthConfig h;
    h.type = HealthCheckType::kHttp;
    h.timeout = Duration(200);
    config.clusters[0].health = h;               // cache: checks
    config.clusters[1].outlier = OutlierConfig{};   // plain: ejection
    snap_ = testing::buildTestSnapshot(registry_, config);
    ASSERT_NE(snap_, nullptr);
    tracker_.reconcile(snap_);
  }
  BackendState& state(const char* cluster, const char* backend) {
    return testing::backendState(*snap_, cluster, backend);
  }

  StateRegistry registry_{2};
  std::shared_ptr<const Snapshot> snap_;
  HealthTracker tracker_;
};

TEST_F(HealthAdminTest, BackendsShowsStateReasonLastCheckAndEjections) {
  JsonValue before = JsonReader::parse(backendsResponse(*snap_).body);
  const JsonValue& fresh = before["clusters"][0]["backends"][1];
  EXPECT_EQ(fresh["health"].asString(), "up");
  EXPECT_TRUE(fresh["reason"].isNull());
  EXPECT_TRUE(fresh["last_check"].isNull());
  EXPECT_EQ(fresh["ejections"].asNumber(), 0);
  EXPECT_EQ(before["clusters"][0]["panic_threshold"].asNumber(), 50);
  EXPECT_FALSE(before["clusters"][0]["panic"].asBool());

  for (int i = 0; i < 3; ++i)
    tracker_.recordCheck(&state("cache", "cache-b"), CheckResult::kTimeout, "no reply", 0.2,
                         1700000000.5);
  JsonValue doc = JsonReader::parse(backendsResponse(*snap_).body);
  const JsonValue& b = doc["clusters"][0]["backends"][1];
  EXPECT_FALSE(b["healthy"].asBool());
  EXPECT_EQ(b["health"].asString(), "down");
  EXPECT_EQ(b["reason"].asString(), "3 checks timed out after 200ms");
  EXPECT_EQ(b["last_check"]["result"].asString(), "timeout");
  EXPECT_DOUBLE_EQ(b["last_check"]["at"].asNumber(), 1700000000.5);
  EXPECT_DOUBLE_EQ(b["last_check"]["latency_ms"].asNumber(), 200);

  // plain: two backends at max_ejected_percent 50: one may be out ((0 + 1) x 100 <= 50 x 2).
  for (int i = 0; i < 5; ++i)
    noteBackendFailure(state("plain", "p-0").per_worker[1], BackendFailure::kConnectRefused);
  tracker_.sweep(1000);
  doc = JsonReader::parse(backendsResponse(*snap_).body);
  const JsonValue& p0 = doc["clusters"][1]["backends"][0];
  EXPECT_EQ(p0["health"].asString(), "ejected");
  EXPECT_EQ(p0["ejections"].asNumber(), 1);
  EXPECT_EQ(p0["ejection_ms"].asNumber(), 30000);
  EXPECT_EQ(p0["reason"].asString(),
            "ejected for 30s after 5 consecutive failures (5 connect refused)");
  EXPECT_FALSE(doc["clusters"][1]["panic"].asBool()) << "1 of 2 healthy is 50%: not under 50";
}

TEST_F(HealthAdminTest, HealthFamiliesExistForTheClustersThatAskForThem) {
  noteBackendFailure(state("cache", "cache-a").per_worker[0], BackendFailure::kConnectTimeout);
  noteBackendFailure(state("plain", "p-1").per_worker[1], BackendFailure::kConnectReset);
  tracker_.recordCheck(&state("cache", "cache-a"), CheckResult::kOk, "status 200", 0.001, 1);
  auto f = collectSnapshotMetrics(*snap_);
  using testing::findFamily;
  using testing::findSample;
  ASSERT_NE(findFamily(f, "lb_backend_connect_failures_total"), nullptr);
  EXPECT_EQ(findFamily(f, "lb_backend_connect_failures_total")->metric.size(), 5u * 3);
  EXPECT_EQ(findSample(f, "lb_backend_connect_failures_total",
                       {{"cluster", "cache"}, {"backend", "cache-a"}, {"reason", "timeout"}})
                ->counter.value,
            1);
  EXPECT_EQ(findSample(f, "lb_backend_connect_failures_total",
                       {{"cluster", "plain"}, {"backend", "p-1"}, {"reason", "reset"}})
                ->counter.value,
            1);
  // Checks: cache only. Ejections: plain only. Transitions: both.
  EXPECT_EQ(findFamily(f, "lb_backend_health_checks_total")->metric.size(), 3u * 3);
  EXPECT_EQ(findSample(f, "lb_backend_health_checks_total",
                       {{"cluster", "cache"}, {"backend", "cache-a"}, {"result", "ok"}})
                ->counter.value,
            1);
  EXPECT_EQ(findFamily(f, "lb_backend_ejections_total")->metric.size(), 2u);
  EXPECT_EQ(findSample(f, "lb_backend_ejections_total", {{"cluster", "cache"}, {"backend", "cache-a"}}),
            nullptr);
  EXPECT_EQ(findFamily(f, "lb_backend_health_transitions_total")->metric.size(), 5u * 2);
  EXPECT_EQ(findFamily(f, "lb_cluster_panic")->metric.size(), 2u);
  EXPECT_EQ(findSample(f, "lb_cluster_panic", {{"cluster", "cache"}})->gauge.value, 0);
}

TEST_F(HealthAdminTest, PanicShowsOnTheGaugeAndInBackends) {
  for (const char* b : {"cache-a", "cache-b"})
    for (int i = 0; i < 3; ++i)
      tracker_.recordCheck(&state("cache", b), CheckResult::kFail, "connect: refused", 0, 1);
  auto f = collectSnapshotMetrics(*snap_);
  EXPECT_EQ(testing::findSample(f, "lb_cluster_panic", {{"cluster", "cache"}})->gauge.value, 1);
  EXPECT_EQ(testing::findSample(f, "lb_backend_healthy", {{"cluster", "cache"}, {"backend", "cache-a"}})
                ->gauge.value,
            0);
  JsonValue doc = JsonReader::parse(backendsResponse(*snap_).body);
  EXPECT_TRUE(doc["clusters"][0]["panic"].asBool());
  // /ring's pick follows the table in panic.
  JsonValue ring = JsonReader::parse(ringResponse(*snap_, "cluster=cache&key=k").body);
  EXPECT_EQ(ring["pick"].asString(), ring["owner"].asString());
}

}  // namespace
}  // namespace lb
