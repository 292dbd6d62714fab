// The zones-and-replicas families of /metrics (docs/metrics.md, "Zones and replicas"): how a
// replicated cluster's reads were answered, which copies of its writes failed, and how many
// picks crossed from lb's zone into another. Summed at scrape time from counters the request
// path keeps anyway: the reads' per-worker slots (lb/routing/handover_stats.h), each
// backend's per-worker slot, and each backend's picks, so that counting costs the request
// path nothing more.
#include <string>

#include "lb/admin/metric_families.h"
#include "lb/routing/backend_state.h"

namespace lb {

using namespace metrics_detail;
using prometheus::MetricFamily;
using prometheus::MetricType;

void appendZoneMetrics(const Snapshot& snap, std::vector<MetricFamily>* out) {
  const size_t nc = snap.clusters.size();
  MetricFamily reads = family("lb_replica_reads_total",
                              "Reads of a replicated cluster's keys, by where they were "
                              "answered: primary (the first copy read), replica (it missed or "
                              "failed and the next copy had the value), miss, error.",
                              MetricType::Counter, nc * 4);
  MetricFamily write_failures = family("lb_replica_write_failures_total",
                                       "Copies of writes that failed at the backend while the "
                                       "client's reply came from another copy.",
                                       MetricType::Counter, 0);
  MetricFamily cross_zone = family("lb_cross_zone_requests_total",
                                   "Picks of a backend in another zone than lb's own ([lb] "
                                   "zone), when both name one.",
                                   MetricType::Counter, nc);
  constexpr int kResults = static_cast<int>(ReplicaReadResult::kCount);
  for (const ClusterSnapshot& c : snap.clusters) {
    if (!c.state) continue;
    const std::string& cluster = c.config->name;
    if (c.replicas > 1) {
      uint64_t totals[kResults] = {};
      const HandoverStats& h = c.state->handover;
      for (unsigned w = 0; w < h.workers(); ++w)
        for (int r = 0; r < kResults; ++r) totals[r] += h.at(w).replica_reads[r].get();
      for (int r = 0; r < kResults; ++r)
        addCounter(reads,
                   {{"cluster", cluster},
                    {"result", replicaReadName(static_cast<ReplicaReadResult>(r))}},
                   static_cast<double>(totals[r]));
      for (const BackendSnapshot& b : c.backends) {
        uint64_t failed = 0;
        for (unsigned w = 0; w < b.state->workers; ++w)
          failed += b.state->per_worker[w].replica_write_failures.get();
        addCounter(write_failures, {{"backend", b.config->name}, {"cluster", cluster}},
                   static_cast<double>(failed));
      }
    }
    bool zoned = false;
    uint64_t crossed = 0;
    for (const BackendSnapshot& b : c.backends) {
      if (!b.other_zone && !b.local_zone) continue;
      zoned = true;
      if (!b.other_zone) continue;
      for (unsigned w = 0; w < b.state->workers; ++w)
        for (const StatCounter& picks : b.state->per_worker[w].picks) crossed += picks.get();
    }
    if (zoned) addCounter(cross_zone, {{"cluster", cluster}}, static_cast<double>(crossed));
  }
  for (MetricFamily* f : {&reads, &write_failures, &cross_zone})
    if (!f->metric.empty()) out->push_back(std::move(*f));
}

}  // namespace lb
