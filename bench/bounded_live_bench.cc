// Bounded-load pick through the proxy's own ClusterLoads (the shared per-backend counters and
// the cluster's running total), as a request pays for it: pick with reservation, then the
// release when the request ends. 10, 100 and 1000 hosts, ring_hash and maglev, F = 125, every
// host carrying the same steady load so each pick is admitted by its owner.
//
//   make bench BENCH_ARGS=--benchmark_filter=BoundedLive
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

void boundedLiveBench(benchmark::State& state, const char* selector) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const SelectorInfo* info = findSelector(selector);
  std::vector<HostSpec> hosts;
  for (uint32_t i = 0; i < n; ++i) hosts.push_back({"cache-" + std::to_string(i), 1});
  const auto table = info->build(hosts, {});
  const BoundedLoad bounded(hosts, 125);
  StateRegistry registry(1);
  std::vector<BackendSnapshot> backends(n);
  for (uint32_t i = 0; i < n; ++i) {
    backends[i].state = registry.backend("c", hosts[i].hash_key);
    for (int k = 0; k < 3; ++k) backends[i].state->addLive();   // steady, even load
  }
  const ClusterLoads loads(&backends, registry.clusterLoad("c"));
  std::vector<uint64_t> hashes;
  for (size_t i = 0; i < 4096; ++i)
    hashes.push_back(hashKeyBytes(info->key_hash, "/objects/" + std::to_string(i * 7919)));
  size_t i = 0;
  for (auto _ : state) {
    const Pick p = bounded.pick(*table, hashes[i++ & 4095], loads, 0, Reserve::kYes);
    if (p.reserved)
      backends[p.host].state->dropLive();
    benchmark::DoNotOptimize(p);
  }
}

const bool registered = [] {
  for (const char* s : {"ring_hash", "maglev"})
    benchmark::RegisterBenchmark((std::string("BoundedLive/") + s).c_str(), boundedLiveBench, s)
        ->Arg(10)->Arg(100)->Arg(1000);
  return true;
}();

}  // namespace
}  // namespace lb
