// The TLS families of /metrics (docs/metrics.md, "TLS"), both sides: what the listeners'
// handshakes did, when their certificates expire, and what lb's own handshakes with the
// backends did. Summed over the workers' TlsWorkerStats slots at scrape time.
#include <string>

#include "lb/admin/metric_families.h"

namespace lb {

using namespace metrics_detail;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

constexpr int kTlsReasons = static_cast<int>(TlsErrorReason::kCount);

// A listener's or a backend's TLS slots summed over the workers.
struct TlsTotals {
  uint64_t done[2][2] = {};   // [version][resumed]
  uint64_t failed[kTlsReasons] = {};
  void add(const TlsWorkerStats& ts) {
    for (int v = 0; v < 2; ++v)
      for (int r = 0; r < 2; ++r) done[v][r] += ts.handshakes[v][r].get();
    for (int r = 0; r < kTlsReasons; ++r) failed[r] += ts.errors[r].get();
  }
};

}  // namespace

void appendTlsMetrics(const Snapshot& snap, std::vector<MetricFamily>* out) {
  const size_t nl = snap.listeners.size();
  // TLS listeners only (lb/tls): no all-zero series for plain ones.
  MetricFamily tls_handshakes = family("lb_tls_handshakes_total",
                                       "TLS handshakes completed on the listener, by protocol "
                                       "version and whether the session was resumed.",
                                       MetricType::Counter, nl * 4);
  MetricFamily tls_errors = family("lb_tls_handshake_errors_total",
                                   "TLS handshakes that failed, by reason (plaintext, protocol, "
                                   "timeout, closed).",
                                   MetricType::Counter, nl * 4);
  MetricFamily tls_expiry = family("lb_tls_certificate_expiry_timestamp_seconds",
                                   "When each of the listener's certificates expires (notAfter, "
                                   "seconds since the epoch).",
                                   MetricType::Gauge, nl);
  for (const ListenerSnapshot& l : snap.listeners) {
    if (l.tls == nullptr) continue;
    const std::string& name = l.config->name;
    TlsTotals t;
    for (unsigned w = 0; w < l.state->workers; ++w) t.add(l.state->per_worker[w].tls);
    const auto& done = t.done;
    const auto& failed = t.failed;
    for (int v = 0; v < 2; ++v)
      for (int r = 0; r < 2; ++r)
        addCounter(tls_handshakes,
                   {{"listener", name}, {"resumed", r == 1 ? "true" : "false"},
                    {"version", v == 1 ? "1.3" : "1.2"}},
                   static_cast<double>(done[v][r]));
    for (int r = 0; r < kTlsReasons; ++r) {
      const auto reason = static_cast<TlsErrorReason>(r);
      if (reason == TlsErrorReason::kVerify) continue;   // lb asks clients for no certificate
      addCounter(tls_errors, {{"listener", name}, {"reason", tlsErrorReasonName(reason)}},
                 static_cast<double>(failed[r]));
    }
    for (const auto& c : l.tls_expiry)
      addGauge(tls_expiry, {{"listener", name}, {"name", c.name}}, c.not_after);
  }

  // Clusters with `tls` only: each backend's handshakes from the workers' connections.
  MetricFamily up_handshakes = family("lb_upstream_tls_handshakes_total",
                                      "TLS handshakes lb completed with the backend (its data "
                                      "connections), by version and whether lb resumed a "
                                      "session.",
                                      MetricType::Counter, 16);
  MetricFamily up_errors = family("lb_upstream_tls_handshake_errors_total",
                                  "TLS handshakes with the backend that failed, by reason "
                                  "(verify: its certificate, protocol, timeout, closed).",
                                  MetricType::Counter, 16);
  for (const ClusterSnapshot& c : snap.clusters) {
    for (const BackendSnapshot& b : c.backends) {
      if (b.tls == nullptr) continue;
      TlsTotals t;
      for (unsigned w = 0; w < b.state->workers; ++w) t.add(b.state->per_worker[w].tls);
      const auto& done = t.done;
      const auto& failed = t.failed;
      const std::string& cluster = c.config->name;
      const std::string& backend = b.config->name;
      for (int v = 0; v < 2; ++v)
        for (int r = 0; r < 2; ++r)
          addCounter(up_handshakes,
                     {{"backend", backend}, {"cluster", cluster},
                      {"resumed", r == 1 ? "true" : "false"}, {"version", v == 1 ? "1.3" : "1.2"}},
                     static_cast<double>(done[v][r]));
      for (int r = 0; r < kTlsReasons; ++r) {
        const auto reason = static_cast<TlsErrorReason>(r);
        if (reason == TlsErrorReason::kPlaintext) continue;   // a client's mistake, not a backend's
        addCounter(up_errors,
                   {{"backend", backend}, {"cluster", cluster},
                    {"reason", tlsErrorReasonName(reason)}},
                   static_cast<double>(failed[r]));
      }
    }
  }

  for (MetricFamily* f : {&tls_handshakes, &tls_errors, &tls_expiry, &up_handshakes, &up_errors})
    if (!f->metric.empty()) out->push_back(std::move(*f));
}

}  // namespace lb
