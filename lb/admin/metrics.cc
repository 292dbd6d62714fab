#include "lb/admin/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <ostream>
#include <streambuf>

namespace lb {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr const char* kCodeNames[kCodeClasses] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
constexpr int kHttpErrorReasons = static_cast<int>(HttpErrorReason::kCount);

// One backend's per-worker slots summed. Each slot is read once, so a scrape racing the
// workers sees every counter at some value it really had; counters only grow, so sums do too.
struct BackendTotals {
  uint64_t requests[kCodeClasses] = {};
  uint64_t picks[kPickReasonCount] = {};
  uint64_t bytes_rx = 0, bytes_tx = 0;
  uint64_t latency_le[kLatencyBuckets.size()] = {};
  uint64_t latency_count = 0, latency_sum_us = 0;
  int64_t connections = 0;
};

BackendTotals sumBackend(const BackendState& s) {
  BackendTotals t;
  for (unsigned w = 0; w < s.workers; ++w) {
    const BackendWorkerStats& ws = s.per_worker[w];
    for (int c = 0; c < kCodeClasses; ++c) t.requests[c] += ws.requests[c].get();
    for (int r = 0; r < kPickReasonCount; ++r) t.picks[r] += ws.picks[r].get();
    t.bytes_rx += ws.bytes_rx.get();
    t.bytes_tx += ws.bytes_tx.get();
    for (size_t b = 0; b < kLatencyBuckets.size(); ++b) t.latency_le[b] += ws.latency_le[b].get();
    t.latency_count += ws.latency_count.get();
    t.latency_sum_us += ws.latency_sum_us.get();
    t.connections += ws.connections.get();
  }
  return t;
}

MetricFamily family(const char* name, const char* help, MetricType type, size_t reserve) {
  MetricFamily f{name, help, type, {}};
  f.metric.reserve(reserve);
  return f;
}

ClientMetric& add(MetricFamily& f, std::vector<ClientMetric::Label> labels) {
  ClientMetric& m = f.metric.emplace_back();
  m.label = std::move(labels);
  return m;
}

void addGauge(MetricFamily& f, std::vector<ClientMetric::Label> labels, double v) {
  add(f, std::move(labels)).gauge.value = v;
}

void addCounter(MetricFamily& f, std::vector<ClientMetric::Label> labels, double v) {
  add(f, std::move(labels)).counter.value = v;
}

// The histogram from non-cumulative bucket counts. The overflow above the last bound is
// latency_count minus the buckets; a scrape can read a bucket that already counts a request
// whose latency_count increment it does not see yet, so the total is the larger of the two,
// which keeps +Inf >= every bucket and each series monotonic.
void addHistogram(MetricFamily& f, std::vector<ClientMetric::Label> labels,
                  const BackendTotals& t) {
  ClientMetric& m = add(f, std::move(labels));
  auto& h = m.histogram;
  h.bucket.reserve(kLatencyBuckets.size());
  uint64_t cumulative = 0;
  for (size_t b = 0; b < kLatencyBuckets.size(); ++b) {
    cumulative += t.latency_le[b];
    h.bucket.push_back({cumulative, kLatencyBuckets[b]});
  }
  h.sample_count = std::max(cumulative, t.latency_count);   // the serializer's +Inf bucket
  h.sample_sum = static_cast<double>(t.latency_sum_us) / 1e6;
}

size_t backendCount(const Snapshot& s) {
  size_t n = 0;
  for (const auto& c : s.clusters) n += c.backends.size();
  return n;
}

}  // namespace

std::vector<MetricFamily> collectSnapshotMetrics(const Snapshot& snap) {
  const size_t n = backendCount(snap);
  MetricFamily active = family("lb_backend_active_requests",
                               "In-flight requests (HTTP) plus open connections (TCP) per "
                               "backend: the live load bounded loads see.",
                               MetricType::Gauge, n);
  MetricFamily conns = family("lb_backend_active_connections",
                              "Upstream connections lb holds open to the backend.",
                              MetricType::Gauge, n);
  MetricFamily requests = family("lb_backend_requests_total",
                                 "Responses from the backend by status code class.",
                                 MetricType::Counter, n * kCodeClasses);
  MetricFamily picks = family("lb_backend_picks_total",
                              "Times the selector picked the backend, by reason: owner (the "
                              "key's owner), bounded (owner over its load cap), failover "
                              "(owner unhealthy), fallback (no eligible host).",
                              MetricType::Counter, n * kPickReasonCount);
  MetricFamily bytes = family("lb_backend_bytes_total",
                              "Bytes exchanged with the backend: rx from it, tx to it.",
                              MetricType::Counter, n * 2);
  MetricFamily latency = family("lb_backend_response_seconds",
                                "Time from sending the request to the backend to the end of "
                                "its response.",
                                MetricType::Histogram, n);
  MetricFamily healthy = family("lb_backend_healthy",
                                "1 when the backend is healthy, 0 when it is skipped.",
                                MetricType::Gauge, n);
  MetricFamily weight = family("lb_backend_weight", "The backend's configured weight.",
                               MetricType::Gauge, n);
  MetricFamily share = family("lb_backend_keyspace_share",
                              "Fraction of the key space the backend owns in its cluster's "
                              "selector table.",
                              MetricType::Gauge, n);
  MetricFamily cap = family("lb_backend_load_cap",
                            "The live load the backend may carry with one more request under "
                            "bounded loads (hash_balance_factor); absent when off.",
                            MetricType::Gauge, n);

  std::vector<int64_t> live;
  for (const ClusterSnapshot& c : snap.clusters) {
    const std::string& cluster = c.config->name;
    // Each live counter is read once, and the caps come from the sum of exactly those reads,
    // so within one scrape the loads and caps agree (a second read for the total could see
    // requests the per-backend reads did not).
    live.clear();
    uint64_t total = 0;
    for (const BackendSnapshot& b : c.backends) {
      live.push_back(b.state->live.load(std::memory_order_relaxed));
      total += static_cast<uint64_t>(std::max<int64_t>(live.back(), 0));
    }
    for (uint32_t i = 0; i < c.backends.size(); ++i) {
      const BackendSnapshot& b = c.backends[i];
      const BackendState& s = *b.state;
      const std::string& backend = b.config->name;
      const BackendTotals t = sumBackend(s);
      auto labels = [&]() -> std::vector<ClientMetric::Label> {
        return {{"backend", backend}, {"cluster", cluster}};
      };
      auto labels3 = [&](const char* name, const char* value) -> std::vector<ClientMetric::Label> {
        return {{"backend", backend}, {"cluster", cluster}, {name, value}};
      };
      addGauge(active, labels(), static_cast<double>(live[i]));
      addGauge(conns, labels(), static_cast<double>(std::max<int64_t>(t.connections, 0)));
      for (int k = 0; k < kCodeClasses; ++k)
        addCounter(requests, labels3("code", kCodeNames[k]), static_cast<double>(t.requests[k]));
      for (int r = 0; r < kPickReasonCount; ++r)
        addCounter(picks, labels3("reason", pickReasonName(static_cast<PickReason>(r))),
                   static_cast<double>(t.picks[r]));
      addCounter(bytes, labels3("direction", "rx"), static_cast<double>(t.bytes_rx));
      addCounter(bytes, labels3("direction", "tx"), static_cast<double>(t.bytes_tx));
      addHistogram(latency, labels(), t);
      addGauge(healthy, labels(), s.healthy.load(std::memory_order_relaxed) ? 1 : 0);
      addGauge(weight, labels(), b.config->weight);
      addGauge(share, labels(), b.keyspace_share);
      if (c.bounded) addGauge(cap, labels(), static_cast<double>(c.bounded->cap(i, total)));
    }
  }

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
  for (const ListenerSnapshot& l : snap.listeners) {
    const std::string& name = l.config->name;
    const ListenerState& s = *l.state;
    int64_t open = 0;
    uint64_t refused = 0;
    uint64_t codes[kCodeClasses] = {};
    uint64_t reasons[kHttpErrorReasons] = {};
    for (unsigned w = 0; w < s.workers; ++w) {
      const ListenerWorkerStats& ws = s.per_worker[w];
      open += ws.connections_active.get();
      refused += ws.connections_over_limit.get();
      for (int k = 0; k < kCodeClasses; ++k) codes[k] += ws.requests[k].get();
      for (int r = 0; r < kHttpErrorReasons; ++r) reasons[r] += ws.http_errors[r].get();
    }
    addGauge(down_conns, {{"listener", name}}, static_cast<double>(std::max<int64_t>(open, 0)));
    addCounter(over_limit, {{"listener", name}}, static_cast<double>(refused));
    for (int k = 0; k < kCodeClasses; ++k)
      addCounter(down_requests, {{"code", kCodeNames[k]}, {"listener", name}},
                 static_cast<double>(codes[k]));
    // TCP listeners answer no HTTP errors: no all-zero series for them.
    if (l.config->protocol != Protocol::kHttp) continue;
    for (int r = 0; r < kHttpErrorReasons; ++r)
      addCounter(errors,
                 {{"listener", name},
                  {"reason", httpErrorReasonName(static_cast<HttpErrorReason>(r))}},
                 static_cast<double>(reasons[r]));
  }

  std::vector<MetricFamily> out;
  out.reserve(14);
  for (MetricFamily* f : {&active, &conns, &requests, &picks, &bytes, &latency, &healthy, &weight,
                          &share, &cap, &down_conns, &over_limit, &down_requests, &errors})
    if (!f->metric.empty()) out.push_back(std::move(*f));
  return out;
}

std::vector<MetricFamily> SnapshotCollector::Collect() const {
  auto snap = source_ ? source_() : nullptr;
  if (!snap) return {};
  return collectSnapshotMetrics(*snap);
}

Metrics::Metrics(SnapshotSource source, double start_seconds)
    : reloads_(prometheus::BuildCounter()
                   .Name("lb_config_reloads_total")
                   .Help("Config reload attempts (SIGHUP) by result.")
                   .Register(registry_)),
      reload_success_(reloads_.Add({{"result", "success"}})),
      reload_failure_(reloads_.Add({{"result", "failure"}})),
      last_success_(prometheus::BuildGauge()
                        .Name("lb_config_last_reload_success_timestamp_seconds")
                        .Help("When the running config was loaded, in seconds since the "
                              "epoch.")
                        .Register(registry_)
                        .Add({})),
      dns_(prometheus::BuildCounter()
               .Name("lb_dns_resolutions_total")
               .Help("Backend host names looked up again (resolve_interval), by result: ok "
                     "(same address), changed (backends moved to a new address), failed "
                     "(kept their last address).")
               .Register(registry_)),
      dns_ok_(dns_.Add({{"result", "ok"}})),
      dns_changed_(dns_.Add({{"result", "changed"}})),
      dns_failed_(dns_.Add({{"result", "failed"}})),
      snapshot_(std::move(source)) {
  last_success_.Set(start_seconds);
  prometheus::BuildGauge()
      .Name("lb_build_info")
      .Help("Always 1; the version label says which lb is running.")
      .Register(registry_)
      .Add({{"version", LB_VERSION}})
      .Set(1);
}

void Metrics::noteReload(bool ok, double now_seconds) {
  if (ok) {
    reload_success_.Increment();
    last_success_.Set(now_seconds);
  } else {
    reload_failure_.Increment();
  }
}

void Metrics::noteDnsResolutions(uint64_t ok, uint64_t changed, uint64_t failed) {
  dns_ok_.Increment(static_cast<double>(ok));
  dns_changed_.Increment(static_cast<double>(changed));
  dns_failed_.Increment(static_cast<double>(failed));
}

std::vector<MetricFamily> Metrics::collect() const {
  std::vector<MetricFamily> out = registry_.Collect();
  for (auto* c : {static_cast<const prometheus::Collectable*>(&snapshot_),
                  static_cast<const prometheus::Collectable*>(&process_)}) {
    auto more = c->Collect();
    std::move(more.begin(), more.end(), std::back_inserter(out));
  }
  return out;
}

namespace {

// An ostream target that appends to a string reserved up front: ostringstream would grow by
// doubling and then copy the whole body out again in str().
class StringSink final : public std::streambuf {
 public:
  explicit StringSink(std::string* s) : s_(s) {}

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) s_->push_back(static_cast<char>(c));
    return c;
  }
  std::streamsize xsputn(const char* p, std::streamsize n) override {
    s_->append(p, static_cast<size_t>(n));
    return n;
  }

 private:
  std::string* s_;
};

}  // namespace

std::string Metrics::render() const {
  std::string text;
  text.reserve(last_size_ + last_size_ / 8 + 4096);
  StringSink sink(&text);
  std::ostream out(&sink);
  prometheus::TextSerializer().Serialize(out, collect());
  last_size_ = text.size();
  return text;
}

double wallClockSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace lb
