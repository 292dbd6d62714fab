// The listener families of /metrics (docs/metrics.md, "Listeners"): client connections
// open and turned away, responses by code class, the errors lb answered itself (HTTP and
// cache protocols), bytes moved by splice, and the process's splice pipes. Summed over the
// workers' ListenerWorkerStats slots at scrape time.
#include <algorithm>
#include <string>

#include "lb/admin/metric_families.h"
#include "lb/net/splice_pump.h"

namespace lb {

using namespace metrics_detail;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {
constexpr int kHttpErrorReasons = static_cast<int>(HttpErrorReason::kCount);
constexpr int kCacheErrorReasons = static_cast<int>(CacheErrorReason::kCount);
}  // namespace

void appendListenerMetrics(const Snapshot& snap, std::vector<MetricFamily>* out) {
  const size_t nl = snap.listeners.size();
  MetricFamily down_conns = family("lb_downstream_connections_active",
                                   "Client connections open on the listener.", MetricType::Gauge,
                                   nl);
  MetricFamily over_limit = family("lb_downstream_connections_over_limit_total",
                                   "Client connections turned away past limits.max_connections "
                                   "(http: answered 503; tcp: closed at once).",
                                   MetricType::Counter, nl);
  MetricFamily down_requests = family("lb_downstream_requests_total",
                                      "Responses sent to clients by status code class, "
                                      "including the ones lb answered itself.",
                                      MetricType::Counter, nl * kCodeClasses);
  MetricFamily errors = family("lb_http_errors_total",
                               "HTTP errors lb answered itself, by reason.", MetricType::Counter,
                               nl * kHttpErrorReasons);
  MetricFamily cache_errors = family("lb_cache_errors_total",
                                     "Redis and memcached commands lb answered with an error "
                                     "of its own, by reason.",
                                     MetricType::Counter, nl * kCacheErrorReasons);
  MetricFamily spliced = family("lb_spliced_bytes_total",
                                "Bytes the listener's connections moved by splice(2), kernel to "
                                "kernel, both directions (the rest were copied through user "
                                "space).",
                                MetricType::Counter, nl);
  for (const ListenerSnapshot& l : snap.listeners) {
    const std::string& name = l.config->name;
    const ListenerState& s = *l.state;
    int64_t open = 0;
    uint64_t refused = 0, spliced_bytes = 0;
    uint64_t codes[kCodeClasses] = {};
    uint64_t reasons[kHttpErrorReasons] = {};
    uint64_t cache_reasons[kCacheErrorReasons] = {};
    for (unsigned w = 0; w < s.workers; ++w) {
      const ListenerWorkerStats& ws = s.per_worker[w];
      open += ws.connections_active.get();
      refused += ws.connections_over_limit.get();
      spliced_bytes += ws.spliced_bytes.get();
      for (int k = 0; k < kCodeClasses; ++k) codes[k] += ws.requests[k].get();
      for (int r = 0; r < kHttpErrorReasons; ++r) reasons[r] += ws.http_errors[r].get();
      for (int r = 0; r < kCacheErrorReasons; ++r) cache_reasons[r] += ws.cache_errors[r].get();
    }
    addGauge(down_conns, {{"listener", name}}, static_cast<double>(std::max<int64_t>(open, 0)));
    addCounter(over_limit, {{"listener", name}}, static_cast<double>(refused));
    // Only http and tcp listeners splice (redis and memcached parse every byte).
    if (l.config->protocol == Protocol::kHttp || l.config->protocol == Protocol::kTcp)
      addCounter(spliced, {{"listener", name}}, static_cast<double>(spliced_bytes));
    for (int k = 0; k < kCodeClasses; ++k)
      addCounter(down_requests, {{"code", kCodeNames[k]}, {"listener", name}},
                 static_cast<double>(codes[k]));
    if (isCacheProtocol(l.config->protocol))
      for (int r = 0; r < kCacheErrorReasons; ++r)
        addCounter(cache_errors,
                   {{"listener", name},
                    {"reason", cacheErrorReasonName(static_cast<CacheErrorReason>(r))}},
                   static_cast<double>(cache_reasons[r]));
    // Only HTTP listeners answer HTTP errors: no all-zero series for the others.
    if (l.config->protocol != Protocol::kHttp) continue;
    for (int r = 0; r < kHttpErrorReasons; ++r)
      addCounter(errors,
                 {{"listener", name},
                  {"reason", httpErrorReasonName(static_cast<HttpErrorReason>(r))}},
                 static_cast<double>(reasons[r]));
  }

  // The process's splice pipes (lb/net/splice_pump.h), every worker's.
  MetricFamily pipes = family("lb_splice_pipes",
                              "splice(2) pipes: in_use (a body or a connection has bytes in "
                              "one), pooled (empty, kept for the next).",
                              MetricType::Gauge, 2);
  addGauge(pipes, {{"state", "in_use"}},
           static_cast<double>(std::max<int64_t>(SplicePump::pipesInUse(), 0)));
  addGauge(pipes, {{"state", "pooled"}},
           static_cast<double>(std::max<int64_t>(SplicePump::pipesPooled(), 0)));

  for (MetricFamily* f : {&down_conns, &over_limit, &spliced, &down_requests, &errors,
                          &cache_errors, &pipes})
    if (!f->metric.empty()) out->push_back(std::move(*f));
}

}  // namespace lb
