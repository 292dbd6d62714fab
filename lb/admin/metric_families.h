// Building a /metrics family, shared by the files that fill collectSnapshotMetrics
// (metrics.cc: backends and clusters; listener_metrics.cc, tls_metrics.cc, h2_metrics.cc,
// zone_metrics.cc: the listeners, TLS on both sides, HTTP/2, zones): a family
// with room for its series, and one series added with its labels and value.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "lb/routing/snapshot.h"

namespace lb {
namespace metrics_detail {

using Labels = std::vector<prometheus::ClientMetric::Label>;

// The `code` label's values, by code class index (codeClassIndex).
inline constexpr const char* kCodeNames[kCodeClasses] = {"1xx", "2xx", "3xx", "4xx", "5xx"};

inline prometheus::MetricFamily family(const char* name, const char* help,
                                       prometheus::MetricType type, size_t reserve) {
  prometheus::MetricFamily f{name, help, type, {}};
  f.metric.reserve(reserve);
  return f;
}

inline prometheus::ClientMetric& add(prometheus::MetricFamily& f, Labels labels) {
  prometheus::ClientMetric& m = f.metric.emplace_back();
  m.label = std::move(labels);
  return m;
}

inline void addGauge(prometheus::MetricFamily& f, Labels labels, double v) {
  add(f, std::move(labels)).gauge.value = v;
}

inline void addCounter(prometheus::MetricFamily& f, Labels labels, double v) {
  add(f, std::move(labels)).counter.value = v;
}

}  // namespace metrics_detail

// The listener families (listener_metrics.cc): connections, responses by code class, lb's
// own HTTP and cache errors, spliced bytes and the splice pipes; appended to `out`, each
// only when it has a series.
void appendListenerMetrics(const Snapshot& snapshot, std::vector<prometheus::MetricFamily>* out);

// The TLS families (docs/metrics.md): the listeners' handshakes, failures and certificate
// expiry, and lb's handshakes with the backends of clusters with `tls`; appended to `out`,
// each only when it has a series (no all-zero series for plain listeners or clusters).
void appendTlsMetrics(const Snapshot& snapshot, std::vector<prometheus::MetricFamily>* out);

// The HTTP/2 families (h2_metrics.cc): HTTP/2 connections, streams and the GOAWAYs lb sent
// by reason, for every http listener; appended to `out`.
void appendH2Metrics(const Snapshot& snapshot, std::vector<prometheus::MetricFamily>* out);

// The zones-and-replicas families (zone_metrics.cc): replica reads by result and replica
// write failures for clusters with replicas, cross-zone picks for clusters whose backends and
// lb name zones; appended to `out`, each only when it has a series.
void appendZoneMetrics(const Snapshot& snapshot, std::vector<prometheus::MetricFamily>* out);

}  // namespace lb
