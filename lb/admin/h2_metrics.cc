// The HTTP/2 families of /metrics (docs/metrics.md, "HTTP/2"): per http listener, the client
// connections speaking HTTP/2 now, the streams they began, and the connections lb ended with
// a GOAWAY of its own by reason (floods, bombs, protocol errors, stalls). Summed over the
// workers' ListenerWorkerStats slots at scrape time. Every http listener has the series (a
// listener that has never seen HTTP/2 shows zeros: an alert on a reason needs the series to
// exist before the first attack).
#include <string>

#include "lb/admin/metric_families.h"

namespace lb {

using namespace metrics_detail;
using prometheus::MetricFamily;
using prometheus::MetricType;

void appendH2Metrics(const Snapshot& snap, std::vector<MetricFamily>* out) {
  constexpr int kReasons = static_cast<int>(H2GoawayReason::kCount);
  const size_t nl = snap.listeners.size();
  MetricFamily conns = family("lb_h2_connections_active",
                              "Client connections speaking HTTP/2 on the listener now (also "
                              "counted in lb_downstream_connections_active).",
                              MetricType::Gauge, nl);
  MetricFamily streams = family("lb_h2_streams_total",
                                "HTTP/2 streams clients began on the listener; each is a "
                                "request of its own in lb_downstream_requests_total.",
                                MetricType::Counter, nl);
  MetricFamily goaways = family("lb_h2_goaways_total",
                                "HTTP/2 connections lb ended with GOAWAY and an error, by "
                                "reason (rapid_reset, continuation_flood, settings_flood, "
                                "ping_flood, empty_frames, header_list, protocol_error, stall).",
                                MetricType::Counter, nl * kReasons);
  for (const ListenerSnapshot& l : snap.listeners) {
    if (l.config->protocol != Protocol::kHttp) continue;
    const std::string& name = l.config->name;
    int64_t active = 0;
    uint64_t begun = 0;
    uint64_t ended[kReasons] = {};
    for (unsigned w = 0; w < l.state->workers; ++w) {
      const ListenerWorkerStats& ws = l.state->per_worker[w];
      active += ws.h2_connections_active.get();
      begun += ws.h2_streams.get();
      for (int r = 0; r < kReasons; ++r) ended[r] += ws.h2_goaways[r].get();
    }
    addGauge(conns, {{"listener", name}}, static_cast<double>(active));
    addCounter(streams, {{"listener", name}}, static_cast<double>(begun));
    for (int r = 0; r < kReasons; ++r)
      addCounter(goaways,
                 {{"listener", name}, {"reason", h2GoawayReasonName(static_cast<H2GoawayReason>(r))}},
                 static_cast<double>(ended[r]));
  }
  for (MetricFamily* f : {&conns, &streams, &goaways})
    if (!f->metric.empty()) out->push_back(std::move(*f));
}

}  // namespace lb
