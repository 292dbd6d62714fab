#include "lb/admin/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <ostream>
#include <streambuf>

#include "lb/admin/metric_families.h"

namespace lb {

using namespace metrics_detail;

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr int kCommandResults = static_cast<int>(CommandResult::kCount);
constexpr size_t kHotKeyRanks = 10;   // lb_hotkey_share_ratio's ranks

// One backend's per-worker slots summed. Each slot is read once, so a scrape racing the
// workers sees every counter at some value it really had; counters only grow, so sums do too.
struct BackendTotals {
  uint64_t requests[kCodeClasses] = {};
  uint64_t picks[kPickReasonCount] = {};
  uint64_t bytes_rx = 0, bytes_tx = 0;
  uint64_t latency_le[kLatencyBuckets.size()] = {};
  uint64_t latency_count = 0, latency_sum_us = 0;
  int64_t connections = 0;
  uint64_t commands[kCommandResults] = {};
  uint64_t failures[kBackendFailureKinds] = {};
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
    for (int r = 0; r < kCommandResults; ++r) t.commands[r] += ws.commands[r].get();
    for (int k = 0; k < kBackendFailureKinds; ++k) t.failures[k] += ws.failures[k].get();
  }
  return t;
}

// The histogram from non-cumulative bucket counts. The overflow above the last bound is
// latency_count minus the buckets; a scrape can read a bucket that already counts a request
// whose latency_count increment it does not see yet, so the total is the larger of the two,
// which keeps +Inf >= every bucket and each series monotonic.
void addHistogram(MetricFamily& f, Labels labels,
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
                              "(owner unhealthy), fallback (no eligible host), spread (a hot "
                              "key spread), local_zone (a key's copy in lb's zone).",
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

  MetricFamily commands = family("lb_backend_commands_total",
                                 "Redis and memcached commands sent to the backend, by result: "
                                 "ok (answered), error (an error reply, or the connection "
                                 "failed), timeout (no answer within timeouts.response).",
                                 MetricType::Counter, n * kCommandResults);
  // Clusters behind a redis or memcached listener: only they carry commands.
  std::vector<bool> cache_cluster(snap.clusters.size(), false);
  for (const ListenerSnapshot& l : snap.listeners)
    if (isCacheProtocol(l.config->protocol) && l.cluster < cache_cluster.size())
      cache_cluster[l.cluster] = true;
  MetricFamily connect_failures = family("lb_backend_connect_failures_total",
                                         "Connections to the backend that failed, by reason: "
                                         "refused, timeout (timeouts.connect), reset (closed "
                                         "before the backend sent anything).",
                                         MetricType::Counter, n * kConnectFailureKinds);
  MetricFamily checks = family("lb_backend_health_checks_total",
                               "Active health checks of the backend by result: ok, fail, "
                               "timeout.",
                               MetricType::Counter, n * kCheckResults);
  MetricFamily transitions = family("lb_backend_health_transitions_total",
                                    "Times the backend went up (picked again) or down (skipped) "
                                    "by active checks or outlier ejection.",
                                    MetricType::Counter, n * 2);
  MetricFamily restarts = family("lb_backend_restarts_total",
                                 "Times the backend's checks found another server process "
                                 "answering (a new Redis run_id, memcached pid) with no down "
                                 "between: a restart quicker than fall, counted as a return.",
                                 MetricType::Counter, n);
  MetricFamily ejections = family("lb_backend_ejections_total",
                                  "Times outlier detection ejected the backend.",
                                  MetricType::Counter, n);
  MetricFamily panic = family("lb_cluster_panic",
                              "1 while fewer than panic_threshold percent of the cluster's "
                              "backends are healthy and picks ignore health.",
                              MetricType::Gauge, snap.clusters.size());

  const size_t nc = snap.clusters.size();
  MetricFamily fingerprint = family("lb_cluster_table_fingerprint",
                                    "48 bits of a hash of the cluster's built table (its "
                                    "backends and where keys go): instances showing the same "
                                    "number route every key alike; 0 with no backend.",
                                    MetricType::Gauge, nc);
  MetricFamily handover_active = family("lb_handover_active",
                                        "Seconds left in the cluster's handover window; 0 when "
                                        "none is open.",
                                        MetricType::Gauge, nc);
  MetricFamily handover_moved = family("lb_handover_moved_ratio",
                                       "Share of the key space whose owner changed at the open "
                                       "handover window's change; 0 when none is open.",
                                       MetricType::Gauge, nc);
  MetricFamily handover_ramp = family("lb_handover_ramp_ratio",
                                      "Share of the moved keys already served by their new "
                                      "owner in the open window's ramp; 1 when none is open.",
                                      MetricType::Gauge, nc);
  MetricFamily handover_leaving = family("lb_handover_leaving_backends",
                                         "Backends a change removed that lb still contacts "
                                         "until the handover window ends (they answer handover "
                                         "reads and take deletes); 0 after it.",
                                         MetricType::Gauge, nc);
  MetricFamily handover_reads = family("lb_handover_reads_total",
                                       "Misses at a moved key's new owner read from the host "
                                       "that served it before, by result: hit, miss, "
                                       "error (that host failed: the client got the miss).",
                                       MetricType::Counter, nc * 3);
  MetricFamily handover_copies = family("lb_handover_copies_total",
                                        "Handover hits copied to the new owner without "
                                        "overwriting, by result: stored, not_stored (the owner "
                                        "had the key by then), error.",
                                        MetricType::Counter, nc * 3);
  MetricFamily handover_deletes = family("lb_handover_deletes_total",
                                         "Deletes at the previous host that follow a write of "
                                         "a moved key through lb, by result: ok, error.",
                                         MetricType::Counter, nc * 2);
  MetricFamily revision = family("lb_membership_revision",
                                 "The etcd mod_revision of the membership the cluster serves; 0 "
                                 "while it serves its file's backends.",
                                 MetricType::Gauge, nc);
  MetricFamily updates = family("lb_membership_updates_total",
                                "Membership revisions judged, by result: applied (built and "
                                "live), rejected (the old table kept serving).",
                                MetricType::Counter, nc * 2);
  MetricFamily last_sync = family("lb_membership_last_sync_timestamp_seconds",
                                  "When etcd last answered the cluster's membership source (a "
                                  "Range or a watch message), in seconds since the epoch; 0 "
                                  "before it ever did.",
                                  MetricType::Gauge, nc);
  MetricFamily watch_up = family("lb_membership_watch_up",
                                 "1 while the cluster's watch on its etcd key runs, 0 otherwise.",
                                 MetricType::Gauge, nc);
  // Hot keys (docs/metrics.md): never a key as a label, only ranks.
  MetricFamily hot_active = family("lb_hotkeys_active",
                                   "Keys in the cluster's hot set (their share of its requests "
                                   "reached hot_keys.threshold, and the hold has not ended).",
                                   MetricType::Gauge, nc);
  MetricFamily hot_share = family("lb_hotkey_share_ratio",
                                  "Share of the cluster's requests of its rank-th most requested "
                                  "tracked key (rank 1..10; 0 when fewer are tracked).",
                                  MetricType::Gauge, nc * kHotKeyRanks);
  MetricFamily hot_detections = family("lb_hotkey_detections_total",
                                       "Times a key entered the cluster's hot set.",
                                       MetricType::Counter, nc);
  // The near cache (hot_keys.near_cache), for the clusters that have one.
  MetricFamily hot_requests = family(
      "lb_hotkey_requests_total",
      "Requests for a hot key, by what became of them: spread (an HTTP GET or HEAD sent to the "
      "least loaded of the key's first hot_keys.spread hosts), near_hit (a redis or memcached "
      "read answered from the near cache), near_miss (sent to the backend, its reply filling "
      "the cache), bypass (a hot key's command the near cache cannot serve).",
      MetricType::Counter, nc * (kHotKeyPaths + 3));
  MetricFamily near_items = family("lb_near_cache_items",
                                   "Items in the cluster's near caches (all workers).",
                                   MetricType::Gauge, nc);
  MetricFamily near_bytes = family("lb_near_cache_bytes",
                                   "Key and reply bytes in the cluster's near caches (all "
                                   "workers).",
                                   MetricType::Gauge, nc);
  MetricFamily near_invalidations = family(
      "lb_near_cache_invalidations_total",
      "Near-cache items dropped before their time, by reason: write (a command through lb "
      "that may change the key), tracking (Redis CLIENT TRACKING), flush (a tracking "
      "connection lost), ttl (hot_keys.near_cache.ttl ran out).",
      MetricType::Counter, nc * 4);

  std::vector<int64_t> live;
  for (size_t ci = 0; ci < snap.clusters.size(); ++ci) {
    const ClusterSnapshot& c = snap.clusters[ci];
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
      if (c.bounded && i < c.hostCount())   // a leaving backend has no cap: nothing routes to it
        addGauge(cap, labels(), static_cast<double>(c.bounded->cap(i, total)));
      if (cache_cluster[ci])
        for (int r = 0; r < kCommandResults; ++r)
          addCounter(commands, labels3("result", commandResultName(static_cast<CommandResult>(r))),
                     static_cast<double>(t.commands[r]));
      for (int k = 0; k < kConnectFailureKinds; ++k)
        addCounter(connect_failures,
                   labels3("reason", connectFailureLabel(static_cast<BackendFailure>(k))),
                   static_cast<double>(t.failures[k]));
      const HealthRecord& h = s.health;
      if (c.config->health)
        for (int r = 0; r < kCheckResults; ++r)
          addCounter(checks, labels3("result", checkResultName(static_cast<CheckResult>(r))),
                     static_cast<double>(h.checks[r].get()));
      if (c.config->health || c.config->outlier) {
        addCounter(transitions, labels3("to", "up"), static_cast<double>(h.transitions[0].get()));
        addCounter(transitions, labels3("to", "down"),
                   static_cast<double>(h.transitions[1].get()));
      }
      if (c.config->outlier)
        addCounter(ejections, labels(), static_cast<double>(h.ejections.get()));
      if (c.config->health && c.config->handover &&
          (c.config->health->type == HealthCheckType::kRedis ||
           c.config->health->type == HealthCheckType::kMemcached))
        addCounter(restarts, labels(), static_cast<double>(h.restarts.get()));
    }
    const bool in_panic = c.state && c.state->panic.load(std::memory_order_relaxed);
    addGauge(panic, {{"cluster", cluster}}, in_panic ? 1 : 0);
    addGauge(fingerprint, {{"cluster", cluster}}, static_cast<double>(c.fingerprint));
    if (c.config->handover) {
      const int64_t now = wallClockMs();
      const HandoverWindow* w = c.handover && now < c.handover->until_ms ? c.handover.get()
                                                                          : nullptr;
      // The membership window, or a backend's return window, whichever ends last.
      int64_t until = w ? w->until_ms : 0;
      if (c.state) until = std::max(until, c.state->returns_until_ms.load(std::memory_order_relaxed));
      addGauge(handover_active, {{"cluster", cluster}},
               until > now ? static_cast<double>(until - now) / 1000.0 : 0);
      addGauge(handover_moved, {{"cluster", cluster}}, w ? w->moved_ratio : 0);
      addGauge(handover_ramp, {{"cluster", cluster}}, w ? w->rampRatioAt(now) : 1);
      addGauge(handover_leaving, {{"cluster", cluster}},
               static_cast<double>(c.backends.size() - std::min<size_t>(c.backends.size(), c.hostCount())));
      if (c.state) {
        // Each worker's single-writer counters, summed.
        const HandoverStats& hs = c.state->handover;
        uint64_t reads[static_cast<int>(HandoverRead::kCount)] = {};
        uint64_t copies[static_cast<int>(HandoverCopy::kCount)] = {};
        uint64_t deletes[static_cast<int>(HandoverDelete::kCount)] = {};
        for (unsigned i = 0; i < hs.workers(); ++i) {
          const HandoverWorkerStats& ws = hs.at(i);
          for (int r = 0; r < static_cast<int>(HandoverRead::kCount); ++r) reads[r] += ws.reads[r].get();
          for (int r = 0; r < static_cast<int>(HandoverCopy::kCount); ++r) copies[r] += ws.copies[r].get();
          for (int r = 0; r < static_cast<int>(HandoverDelete::kCount); ++r)
            deletes[r] += ws.deletes[r].get();
        }
        for (int r = 0; r < static_cast<int>(HandoverRead::kCount); ++r)
          addCounter(handover_reads,
                     {{"cluster", cluster}, {"result", handoverReadName(static_cast<HandoverRead>(r))}},
                     static_cast<double>(reads[r]));
        for (int r = 0; r < static_cast<int>(HandoverCopy::kCount); ++r)
          addCounter(handover_copies,
                     {{"cluster", cluster}, {"result", handoverCopyName(static_cast<HandoverCopy>(r))}},
                     static_cast<double>(copies[r]));
        for (int r = 0; r < static_cast<int>(HandoverDelete::kCount); ++r)
          addCounter(handover_deletes,
                     {{"cluster", cluster},
                      {"result", handoverDeleteName(static_cast<HandoverDelete>(r))}},
                     static_cast<double>(deletes[r]));
      }
    }
    if (c.config->membership && c.state) {
      // Main-thread fields: /metrics is served on the main loop (lb/routing/membership_status.h).
      const MembershipStatus& m = c.state->membership;
      addGauge(revision, {{"cluster", cluster}}, static_cast<double>(c.revision));
      addCounter(updates, {{"cluster", cluster}, {"result", "applied"}},
                 static_cast<double>(m.applied));
      addCounter(updates, {{"cluster", cluster}, {"result", "rejected"}},
                 static_cast<double>(m.rejected));
      addGauge(last_sync, {{"cluster", cluster}}, m.last_sync);
      addGauge(watch_up, {{"cluster", cluster}}, m.watch_up ? 1 : 0);
    }
    if (c.state) {
      // Main-thread state too: the tracker is the hot-key monitor's, on the main loop.
      const HotKeyTracker& t = c.state->hot_keys.tracker();
      const HotSet& set = t.hotSet();
      addGauge(hot_active, {{"cluster", cluster}}, static_cast<double>(t.activeCount()));
      for (size_t r = 0; r < kHotKeyRanks; ++r)
        addGauge(hot_share, {{"cluster", cluster}, {"rank", std::to_string(r + 1)}},
                 r < set.keys.size() ? set.keys[r].share : 0.0);
      addCounter(hot_detections, {{"cluster", cluster}}, static_cast<double>(t.detections()));
      // Workers' single-writer slots, summed here; only where a path can be taken.
      if (c.config->hot_keys.spread > 0)
        addCounter(hot_requests, {{"cluster", cluster}, {"path", "spread"}},
                   static_cast<double>(c.state->hot_keys.pathCount(HotKeyPath::kSpread)));
    }
    if (c.state && c.config->hot_keys.near_cache) {
      // Each worker's single-writer counters, summed.
      const NearCacheState& n = c.state->near_cache;
      uint64_t paths[static_cast<int>(NearPath::kCount)] = {};
      uint64_t why[static_cast<int>(NearInvalidation::kCount)] = {};
      int64_t items = 0;
      int64_t bytes_held = 0;
      for (unsigned w = 0; w < n.workers(); ++w) {
        const NearCacheWorkerStats& ws = n.worker(w);
        for (int p = 0; p < static_cast<int>(NearPath::kCount); ++p) paths[p] += ws.paths[p].get();
        for (int r = 0; r < static_cast<int>(NearInvalidation::kCount); ++r)
          why[r] += ws.invalidations[r].get();
        items += ws.items.get();
        bytes_held += ws.bytes.get();
      }
      for (int p = 0; p < static_cast<int>(NearPath::kCount); ++p)
        addCounter(hot_requests,
                   {{"cluster", cluster}, {"path", nearPathName(static_cast<NearPath>(p))}},
                   static_cast<double>(paths[p]));
      addGauge(near_items, {{"cluster", cluster}}, static_cast<double>(std::max<int64_t>(items, 0)));
      addGauge(near_bytes, {{"cluster", cluster}},
               static_cast<double>(std::max<int64_t>(bytes_held, 0)));
      for (int r = 0; r < static_cast<int>(NearInvalidation::kCount); ++r)
        addCounter(near_invalidations,
                   {{"cluster", cluster},
                    {"reason", nearInvalidationName(static_cast<NearInvalidation>(r))}},
                   static_cast<double>(why[r]));
    }
  }

  std::vector<MetricFamily> out;
  out.reserve(40);
  for (MetricFamily* f : {&active, &conns, &requests, &picks, &bytes, &latency, &healthy, &weight,
                          &share, &cap, &commands, &connect_failures, &checks, &transitions, &restarts,
                          &ejections, &panic, &fingerprint, &handover_active, &handover_moved,
                          &handover_ramp, &handover_leaving, &handover_reads, &handover_copies, &handover_deletes,
                          &revision, &updates, &last_sync,
                          &watch_up, &hot_active, &hot_share, &hot_detections, &hot_requests,
                          &near_items, &near_bytes, &near_invalidations})
    if (!f->metric.empty()) out.push_back(std::move(*f));
  appendListenerMetrics(snap, &out);
  appendTlsMetrics(snap, &out);
  appendH2Metrics(snap, &out);
  appendZoneMetrics(snap, &out);
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
