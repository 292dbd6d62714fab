// lb's Prometheus metrics (docs/architecture.md, "Metrics"). Workers keep plain single-writer counters
// (lb/core/stats.h); at scrape time SnapshotCollector reads the live snapshot and sums every
// worker's slot into prometheus-cpp MetricFamily objects, so counting costs the request path
// no atomic read-modify-write: this file only loads.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lb/admin/process_metrics.h"
#include "lb/routing/snapshot.h"

namespace lb {

using SnapshotSource = std::function<std::shared_ptr<const Snapshot>()>;

// The Content-Type of the text exposition format this renders.
inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// Every lb_backend_*, lb_cluster_* and listener family of docs/metrics.md, from one snapshot.
// Backends appear in config order, clusters and listeners too; lb_backend_load_cap only for
// clusters with bounded loads on, lb_backend_health_checks_total only for clusters with
// active checks, lb_backend_ejections_total only with outlier detection, and
// lb_backend_health_transitions_total with either; lb_cluster_table_fingerprint for every
// cluster and the lb_membership_* families for membership clusters; lb_hotkeys_active,
// lb_hotkey_share_ratio (ranks 1..10) and lb_hotkey_detections_total for every cluster.
// Reads the shared counters with relaxed loads; the membership and hot-key families read
// main-thread state, so while lb runs only the main thread (the admin server's) may call it.
std::vector<prometheus::MetricFamily> collectSnapshotMetrics(const Snapshot& snapshot);

// Collectable over whatever snapshot is live when Prometheus scrapes. A null snapshot yields
// no families.
class SnapshotCollector final : public prometheus::Collectable {
 public:
  explicit SnapshotCollector(SnapshotSource source) : source_(std::move(source)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  SnapshotSource source_;
};

// Everything /metrics serves: the snapshot families, the process_* families, and a
// prometheus::Registry for what the main thread itself records (lb_build_info, reloads,
// host-name re-resolution).
// Main thread only (noteReload and render are called from the admin loop).
class Metrics {
 public:
  // start_seconds: the time the first config was loaded, the initial value of
  // lb_config_last_reload_success_timestamp_seconds (as Prometheus' own metric starts).
  Metrics(SnapshotSource source, double start_seconds);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Records one reload attempt at `now_seconds` (seconds since the epoch).
  void noteReload(bool ok, double now_seconds);
  // Counts one round of host-name re-resolution (lb_dns_resolutions_total{result}).
  void noteDnsResolutions(uint64_t ok, uint64_t changed, uint64_t failed);

  // All families, registry first, then snapshot, then process.
  std::vector<prometheus::MetricFamily> collect() const;
  // The text exposition format 0.0.4 of collect().
  std::string render() const;

 private:
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>& reloads_;
  prometheus::Counter& reload_success_;
  prometheus::Counter& reload_failure_;
  prometheus::Gauge& last_success_;
  prometheus::Family<prometheus::Counter>& dns_;
  prometheus::Counter& dns_ok_;
  prometheus::Counter& dns_changed_;
  prometheus::Counter& dns_failed_;
  SnapshotCollector snapshot_;
  ProcessCollector process_;
  mutable size_t last_size_ = 0;   // the previous body's size: the next one's reservation
};

// The seconds since the epoch, from the realtime clock.
double wallClockSeconds();

}  // namespace lb
