// Bounded-load pick through the proxy's own ClusterLoads (the shared per-backend counters and
// the cluster's running total), as a request pays for it: pick with reservation, then the
// release when the request ends. 10, 100 and 1000 hosts, ring_hash and maglev, F = 125, every
// host carrying the same steady load so each pick is admitted by its owner.
//
//   make bench BENCH_ARGS=--benchmark_filter='BoundedLive|OnePick'
//
// OnePick: the same through ClusterSnapshot::pick and admit, with bounded loads and without,
// what every HTTP request, TCP connection and cache key pays for its backend.
//
// Goal (bench/RESULTS.md): <= 100 ns per pick at 1000 hosts, i.e. independent of the host
// count (the total used to be summed over every host on each pick).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "lb/core/hash.h"
#include "lb/routing/backend_state.h"
#include "lb/routing/snapshot.h"
#include "plugins/builtin.h"
#include "plugins/selectors/bounded_load.h"

namespace lb {
namespace {

// A cluster of n hosts as a worker's snapshot holds it, every host carrying the same steady
// load, with bounded loads (F = 125) or without.
struct LiveCluster {
  LiveCluster(const char* selector, uint32_t n, bool bounded) : registry(1) {
    const SelectorInfo* info = findSelector(selector);
    for (uint32_t i = 0; i < n; ++i) hosts.push_back({"cache-" + std::to_string(i), 1});
    c.selector = info;
    c.table = info->build(hosts, {});
    if (bounded) c.bounded.emplace(hosts, 125);
    c.backends.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      c.backends[i].state = registry.backend("c", hosts[i].hash_key);
      for (int k = 0; k < 3; ++k) c.backends[i].state->addLive();   // steady, even load
    }
    c.loads = std::make_unique<ClusterLoads>(&c.backends, registry.clusterLoad("c"));
    for (size_t i = 0; i < 4096; ++i)
      hashes.push_back(hashKeyBytes(info->key_hash, "/objects/" + std::to_string(i * 7919)));
  }
  StateRegistry registry;
  std::vector<HostSpec> hosts;
  ClusterSnapshot c;
  std::vector<uint64_t> hashes;
};

// BoundedLoad::pick alone, over the proxy's ClusterLoads.
void boundedLiveBench(benchmark::State& state, const char* selector) {
  LiveCluster lc(selector, static_cast<uint32_t>(state.range(0)), true);
  size_t i = 0;
  for (auto _ : state) {
    const Pick p = lc.c.bounded->pick(*lc.c.table, lc.hashes[i++ & 4095], *lc.c.loads, 0,
                                      Reserve::kYes);
    if (p.reserved)
      lc.c.backends[p.host].state->dropLive();
    benchmark::DoNotOptimize(p);
  }
}

// The whole admission a request pays for: the one pick (ClusterSnapshot::pick, its steps
// in order), admit (the pick counted, the unit taken when the pick did not reserve it) and
// the release when the request ends.
void onePickBench(benchmark::State& state, const char* selector, bool bounded) {
  LiveCluster lc(selector, static_cast<uint32_t>(state.range(0)), bounded);
  PickContext ctx;
  ctx.reserve = Reserve::kYes;
  size_t i = 0;
  for (auto _ : state) {
    Pick p;
    if (lc.c.pick(lc.hashes[i++ & 4095], ctx, &p)) {
      lc.c.admit(0, p);
      lc.c.backends[p.host].state->dropLive();
    }
    benchmark::DoNotOptimize(p);
  }
}

const bool registered = [] {
  for (const char* s : {"ring_hash", "maglev"}) {
    benchmark::RegisterBenchmark((std::string("BoundedLive/") + s).c_str(), boundedLiveBench, s)
        ->Arg(10)->Arg(100)->Arg(1000);
    benchmark::RegisterBenchmark((std::string("OnePick/bounded/") + s).c_str(), onePickBench, s,
                                 true)
        ->Arg(10)->Arg(1000);
    benchmark::RegisterBenchmark((std::string("OnePick/plain/") + s).c_str(), onePickBench, s,
                                 false)
        ->Arg(10)->Arg(1000);
  }
  return true;
}();

}  // namespace
}  // namespace lb
