// The cost of a scrape (the goal: rendering /metrics with 100 backends takes under 5 ms), and
// the cost the request path pays for statistics: one relaxed load plus one relaxed store per
// counter update (lb/core/stats.h), against an atomic fetch_add for comparison.
#include <benchmark/benchmark.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <sstream>

#include "lb/admin/routes.h"
#include "lb/admin/metrics.h"
#include "lb/routing/snapshot.h"

namespace lb {
namespace {

constexpr unsigned kWorkers = 4;

// One cluster of `backends` hosts with bounded loads on, and one HTTP listener; every counter
// non-zero so the text has its real width.
std::shared_ptr<const Snapshot> benchSnapshot(StateRegistry& registry, int backends) {
  Config c;
  ClusterConfig cluster;
  cluster.name = "cache";
  cluster.selector = "maglev";
  cluster.hash_balance_factor = 125;
  for (int i = 0; i < backends; ++i)
    cluster.backends.push_back({"cache-" + std::to_string(i),
                                "10.0." + std::to_string(i / 250) + "." +
                                    std::to_string(i % 250 + 1) + ":11211",
                                1u + static_cast<uint32_t>(i % 3), "", "", {}});
  c.clusters.push_back(cluster);
  ListenerConfig web;
  web.name = "web";
  web.listen = "127.0.0.1:8080";
  web.cluster = "cache";
  c.listeners.push_back(web);
  auto snap = buildSnapshot(std::move(c), registry, 1);
  if (!snap.ok()) return nullptr;
  for (const auto& b : snap.value()->clusters[0].backends) {
    b.state->live.store(17);
    for (unsigned w = 0; w < kWorkers; ++w) {
      auto& s = b.state->per_worker[w];
      for (auto& r : s.requests) r.add(123456789);
      for (auto& p : s.picks) p.add(98765);
      s.bytes_rx.add(1ull << 40);
      s.bytes_tx.add(1ull << 36);
      for (auto& l : s.latency_le) l.add(4321);
      s.latency_count.add(4321 * kLatencyBuckets.size());
      s.latency_sum_us.add(987654321);
      s.connections.add(8);
    }
  }
  return snap.value();
}

void BM_CollectSnapshot(benchmark::State& state) {
  StateRegistry registry(kWorkers);
  auto snap = benchSnapshot(registry, static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(collectSnapshotMetrics(*snap));
  state.counters["backends"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_CollectSnapshot)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

// What GET /metrics does: every family (registry, snapshot, process from /proc) to text.
void BM_RenderMetrics(benchmark::State& state) {
  StateRegistry registry(kWorkers);
  auto snap = benchSnapshot(registry, static_cast<int>(state.range(0)));
  Metrics metrics([snap] { return snap; }, 0);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = metrics.render();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["backends"] = static_cast<double>(state.range(0));
  state.counters["body_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderMetrics)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_BackendsJson(benchmark::State& state) {
  StateRegistry registry(kWorkers);
  auto snap = benchSnapshot(registry, static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(backendsResponse(*snap));
  state.counters["backends"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_BackendsJson)->Arg(100)->Unit(benchmark::kMicrosecond);

// The request path's statistics update: a single-writer slot (relaxed load + store) ...
void BM_StatCounterAdd(benchmark::State& state) {
  StatCounter c;
  for (auto _ : state) {
    c.add();
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(c.get());
}
BENCHMARK(BM_StatCounterAdd);

// ... against the atomic read-modify-write it avoids (uncontended here; contended across
// workers it also bounces the cache line).
void BM_AtomicFetchAdd(benchmark::State& state) {
  std::atomic<uint64_t> c{0};
  for (auto _ : state) {
    c.fetch_add(1, std::memory_order_relaxed);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(c.load());
}
BENCHMARK(BM_AtomicFetchAdd);

}  // namespace
}  // namespace lb
