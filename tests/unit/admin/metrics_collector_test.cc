// The snapshot collector: every family of docs/architecture.md's metrics table, summed over workers, with the
// labels and values the per-worker slots and shared counters hold.
#include <gtest/gtest.h>

#include <set>

#include "lb/admin/metrics.h"
#include "tests/support/metrics_test_snapshot.h"

namespace lb {
namespace {

using testing::backendState;
using testing::buildTestSnapshot;
using testing::findFamily;
using testing::findSample;

class MetricsCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snap_ = buildTestSnapshot(registry_);
    ASSERT_NE(snap_, nullptr);
  }
  std::vector<prometheus::MetricFamily> collect() { return collectSnapshotMetrics(*snap_); }
  BackendState& state(const std::string& c, const std::string& b) {
    return backendState(*snap_, c, b);
  }

  StateRegistry registry_{2};
  std::shared_ptr<const Snapshot> snap_;
};

TEST_F(MetricsCollectorTest, SumsRequestsOverWorkersByCodeClass) {
  BackendState& a = state("cache", "cache-a");
  a.per_worker[0].requests[codeClassIndex(200)].add(3);
  a.per_worker[1].requests[codeClassIndex(204)].add(4);
  a.per_worker[1].requests[codeClassIndex(503)].add(1);
  auto f = collect();
  auto* ok = findSample(f, "lb_backend_requests_total",
                        {{"cluster", "cache"}, {"backend", "cache-a"}, {"code", "2xx"}});
  auto* bad = findSample(f, "lb_backend_requests_total",
                         {{"cluster", "cache"}, {"backend", "cache-a"}, {"code", "5xx"}});
  ASSERT_TRUE(ok && bad);
  EXPECT_EQ(ok->counter.value, 7);
  EXPECT_EQ(bad->counter.value, 1);
  EXPECT_EQ(findFamily(f, "lb_backend_requests_total")->type, prometheus::MetricType::Counter);
}

TEST_F(MetricsCollectorTest, EmitsEveryCodeClassForEveryBackend) {
  auto f = collect();
  // 5 backends x 5 classes, zeros included, so rate() sees a series from the start.
  EXPECT_EQ(findFamily(f, "lb_backend_requests_total")->metric.size(), 25u);
}

TEST_F(MetricsCollectorTest, ActiveRequestsIsTheSharedLiveCounter) {
  state("cache", "cache-b").live.store(5);
  auto f = collect();
  auto* m = findSample(f, "lb_backend_active_requests",
                       {{"cluster", "cache"}, {"backend", "cache-b"}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->gauge.value, 5);
}

TEST_F(MetricsCollectorTest, ActiveConnectionsSumsWorkerGauges) {
  BackendState& p = state("plain", "p-1");
  p.per_worker[0].connections.add(3);
  p.per_worker[1].connections.add(2);
  p.per_worker[1].connections.add(-1);
  auto f = collect();
  auto* m = findSample(f, "lb_backend_active_connections",
                       {{"cluster", "plain"}, {"backend", "p-1"}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->gauge.value, 4);
}

TEST_F(MetricsCollectorTest, NamesPicksByReason) {
  BackendState& a = state("cache", "cache-a");
  a.per_worker[0].picks[static_cast<int>(PickReason::kOwner)].add(10);
  a.per_worker[1].picks[static_cast<int>(PickReason::kBounded)].add(2);
  a.per_worker[1].picks[static_cast<int>(PickReason::kFailover)].add(1);
  a.per_worker[0].picks[static_cast<int>(PickReason::kSpread)].add(4);
  auto f = collect();
  std::map<std::string, double> got;
  for (const char* reason : {"owner", "bounded", "failover", "fallback", "spread"}) {
    auto* m = findSample(f, "lb_backend_picks_total",
                         {{"cluster", "cache"}, {"backend", "cache-a"}, {"reason", reason}});
    ASSERT_TRUE(m) << reason;
    got[reason] = m->counter.value;
  }
  EXPECT_EQ(got, (std::map<std::string, double>{
                     {"owner", 10}, {"bounded", 2}, {"failover", 1}, {"fallback", 0},
                     {"spread", 4}}));
}

TEST_F(MetricsCollectorTest, SplitsBytesByDirection) {
  BackendState& a = state("cache", "cache-a");
  a.per_worker[0].bytes_rx.add(100);
  a.per_worker[1].bytes_rx.add(50);
  a.per_worker[1].bytes_tx.add(7);
  auto f = collect();
  auto* rx = findSample(f, "lb_backend_bytes_total",
                        {{"cluster", "cache"}, {"backend", "cache-a"}, {"direction", "rx"}});
  auto* tx = findSample(f, "lb_backend_bytes_total",
                        {{"cluster", "cache"}, {"backend", "cache-a"}, {"direction", "tx"}});
  ASSERT_TRUE(rx && tx);
  EXPECT_EQ(rx->counter.value, 150);
  EXPECT_EQ(tx->counter.value, 7);
}

TEST_F(MetricsCollectorTest, CumulatesLatencyBucketsOverWorkers) {
  BackendState& a = state("cache", "cache-a");
  a.per_worker[0].latency_le[0].add(2);   // <= 0.5 ms
  a.per_worker[1].latency_le[2].add(3);   // <= 2.5 ms
  a.per_worker[1].latency_count.add(6);   // one above the last bound (10 s)
  a.per_worker[0].latency_sum_us.add(1500000);
  auto f = collect();
  auto* m = findSample(f, "lb_backend_response_seconds",
                       {{"cluster", "cache"}, {"backend", "cache-a"}});
  ASSERT_TRUE(m);
  const auto& h = m->histogram;
  ASSERT_EQ(h.bucket.size(), kLatencyBuckets.size());
  EXPECT_EQ(h.bucket[0].upper_bound, 0.0005);
  EXPECT_EQ(h.bucket[0].cumulative_count, 2u);
  EXPECT_EQ(h.bucket[1].cumulative_count, 2u);
  EXPECT_EQ(h.bucket[2].cumulative_count, 5u);
  EXPECT_EQ(h.bucket.back().cumulative_count, 5u);
  EXPECT_EQ(h.sample_count, 6u);   // the +Inf bucket
  EXPECT_DOUBLE_EQ(h.sample_sum, 1.5);
}

TEST_F(MetricsCollectorTest, HistogramCountNeverTrailsItsBuckets) {
  // A scrape between a worker's bucket increment and its count increment.
  BackendState& a = state("cache", "cache-a");
  a.per_worker[0].latency_le[4].add(3);
  a.per_worker[0].latency_count.add(2);
  auto f = collect();
  auto* m = findSample(f, "lb_backend_response_seconds",
                       {{"cluster", "cache"}, {"backend", "cache-a"}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->histogram.sample_count, 3u);
}

TEST_F(MetricsCollectorTest, ReportsHealthWeightAndKeyspaceShare) {
  state("cache", "cache-b").healthy.store(false);
  auto f = collect();
  auto at = [&](const char* name, const char* b) {
    return findSample(f, name, {{"cluster", "cache"}, {"backend", b}})->gauge.value;
  };
  EXPECT_EQ(at("lb_backend_healthy", "cache-a"), 1);
  EXPECT_EQ(at("lb_backend_healthy", "cache-b"), 0);
  EXPECT_EQ(at("lb_backend_weight", "cache-c"), 2);
  const auto& c = *snap_->findCluster("cache");
  double sum = 0;
  for (const auto& b : c.backends) {
    EXPECT_DOUBLE_EQ(at("lb_backend_keyspace_share", b.config->name.c_str()), b.keyspace_share);
    sum += b.keyspace_share;
  }
  EXPECT_NEAR(sum, 1.0, 1e-9);
}

TEST_F(MetricsCollectorTest, LoadCapIsTheCapTheNextRequestFaces) {
  state("cache", "cache-a").live.store(3);
  state("cache", "cache-b").live.store(1);
  const auto& c = *snap_->findCluster("cache");
  ASSERT_TRUE(c.bounded);
  auto f = collect();
  for (uint32_t i = 0; i < c.backends.size(); ++i) {
    auto* m = findSample(f, "lb_backend_load_cap",
                         {{"cluster", "cache"}, {"backend", c.backends[i].config->name}});
    ASSERT_TRUE(m) << i;
    EXPECT_EQ(m->gauge.value, static_cast<double>(c.bounded->cap(i, 4))) << i;
  }
}

TEST_F(MetricsCollectorTest, OmitsLoadCapWhenBoundedLoadsAreOff) {
  auto f = collect();
  for (const auto& m : findFamily(f, "lb_backend_load_cap")->metric) {
    for (const auto& l : m.label) {
      if (l.name == "cluster") {
        EXPECT_EQ(l.value, "cache");
      }
    }
  }
  EXPECT_EQ(findFamily(f, "lb_backend_load_cap")->metric.size(), 3u);
}

TEST_F(MetricsCollectorTest, SumsListenerCountersOverWorkers) {
  ListenerState& web = *snap_->findListener("web")->state;
  web.per_worker[0].connections_active.add(2);
  web.per_worker[1].connections_active.add(1);
  web.per_worker[0].requests[codeClassIndex(200)].add(9);
  web.per_worker[1].http_errors[static_cast<int>(HttpErrorReason::kNoBackend)].add(4);
  auto f = collect();
  EXPECT_EQ(findSample(f, "lb_downstream_connections_active", {{"listener", "web"}})->gauge.value,
            3);
  EXPECT_EQ(findSample(f, "lb_downstream_requests_total", {{"listener", "web"}, {"code", "2xx"}})
                ->counter.value,
            9);
  EXPECT_EQ(findSample(f, "lb_http_errors_total", {{"listener", "web"}, {"reason", "no_backend"}})
                ->counter.value,
            4);
}

TEST_F(MetricsCollectorTest, HttpErrorsOnlyForHttpListeners) {
  std::set<std::string> listeners;
  auto f = collect();
  for (const auto& m : findFamily(f, "lb_http_errors_total")->metric)
    for (const auto& l : m.label)
      if (l.name == "listener") listeners.insert(l.value);
  EXPECT_EQ(listeners, std::set<std::string>{"web"});
}

TEST_F(MetricsCollectorTest, EveryFamilyHasHelp) {
  for (const auto& f : collect()) EXPECT_FALSE(f.help.empty()) << f.name;
}

TEST(SnapshotCollectorTest, EmitsNothingWithoutASnapshot) {
  SnapshotCollector c([] { return std::shared_ptr<const Snapshot>(); });
  EXPECT_TRUE(c.Collect().empty());
}

TEST(MetricsTest, CountsReloadsByResult) {
  Metrics m(nullptr, 1000);
  m.noteReload(true, 2000);
  m.noteReload(false, 3000);
  m.noteReload(false, 4000);
  auto f = m.collect();
  EXPECT_EQ(findSample(f, "lb_config_reloads_total", {{"result", "success"}})->counter.value, 1);
  EXPECT_EQ(findSample(f, "lb_config_reloads_total", {{"result", "failure"}})->counter.value, 2);
  // Only a successful reload moves the timestamp.
  EXPECT_EQ(
      findSample(f, "lb_config_last_reload_success_timestamp_seconds", {})->gauge.value, 2000);
}

TEST(MetricsTest, StartsWithZeroReloadsAndTheStartTime) {
  Metrics m(nullptr, 1234);
  auto f = m.collect();
  EXPECT_EQ(findSample(f, "lb_config_reloads_total", {{"result", "failure"}})->counter.value, 0);
  EXPECT_EQ(
      findSample(f, "lb_config_last_reload_success_timestamp_seconds", {})->gauge.value, 1234);
}

TEST(MetricsTest, ExportsBuildInfoWithVersion) {
  Metrics m(nullptr, 0);
  auto f = m.collect();
  auto* s = findSample(f, "lb_build_info", {{"version", LB_VERSION}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->gauge.value, 1);
}

}  // namespace
}  // namespace lb
