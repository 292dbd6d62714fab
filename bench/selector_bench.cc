// Selector microbenchmarks: pick() (owner and first retry), table build, and bounded-load pick
// at 8 (docs/selectors.md's small fleet), 10, 100 and 1000 hosts for every registered
// selector, with memory per host as a counter; plus one-shot quality runs (balance,
// movement) whose counters bench/RESULTS.md quotes.
//
//   make bench BENCH_ARGS=--benchmark_filter=Selector
//
// Goals on the reference machine (bench/RESULTS.md): maglev pick < 15 ns and ring_hash pick
// < 60 ns at 1000 hosts; maglev build at 100 hosts, M = 65537, < 3 ms.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "lb/core/hash.h"
#include "plugins/builtin.h"
#include "plugins/selectors/bounded_load.h"

namespace lb {
namespace {

constexpr size_t kHashes = 4096;   // cycled through so the branch predictor cannot learn a key

std::vector<HostSpec> hostsFor(const SelectorInfo& info, uint32_t n) {
  std::vector<HostSpec> hosts;
  for (uint32_t i = 0; i < n; ++i)
    // nginx-style server strings for ketama, names for the others.
    hosts.push_back({info.key_hash == KeyHash::kCrc32
                         ? "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) +
                               ":11211"
                         : "cache-" + std::to_string(i),
                     1});
  return hosts;
}

std::array<uint64_t, kHashes> keyHashes(KeyHash kind) {
  std::array<uint64_t, kHashes> out;
  for (size_t i = 0; i < kHashes; ++i)
    out[i] = hashKeyBytes(kind, "/objects/" + std::to_string(i * 7919));
  return out;
}

void pickBench(benchmark::State& state, const SelectorInfo* info, uint32_t attempt) {
  const auto hosts = hostsFor(*info, static_cast<uint32_t>(state.range(0)));
  const auto table = info->build(hosts, {});
  const auto hashes = keyHashes(info->key_hash);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(table->pick(hashes[i++ & (kHashes - 1)], attempt));
  }
  state.counters["mem_per_host"] =
      static_cast<double>(table->memoryBytes()) / static_cast<double>(hosts.size());
}

void buildBench(benchmark::State& state, const SelectorInfo* info) {
  const auto hosts = hostsFor(*info, static_cast<uint32_t>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    auto table = info->build(hosts, {});
    bytes = table->memoryBytes();
    benchmark::DoNotOptimize(table.get());
  }
  state.counters["mem_per_host"] =
      static_cast<double>(bytes) / static_cast<double>(hosts.size());
}

// Loads as the proxy sees them: plain counters, all even, so every pick stays on the owner
// (the common case the cap check must not make slow).
class EvenLoads final : public LoadView {
 public:
  explicit EvenLoads(size_t n) : loads_(n, 3) {}
  uint64_t load(uint32_t host) const noexcept override { return loads_[host]; }
  uint64_t totalLoad() const noexcept override { return 3 * loads_.size(); }

 private:
  std::vector<uint64_t> loads_;
};

void boundedBench(benchmark::State& state, const SelectorInfo* info) {
  const auto hosts = hostsFor(*info, static_cast<uint32_t>(state.range(0)));
  const auto table = info->build(hosts, {});
  const auto hashes = keyHashes(info->key_hash);
  const BoundedLoad bounded(hosts, 125);
  const EvenLoads loads(hosts.size());
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(bounded.pick(*table, hashes[i++ & (kHashes - 1)], loads));
  }
}

// One-shot quality figures at 100 hosts and 200k keys: max/mean balance, and the fractions
// of keys moved when the last host is removed or a 101st is added (collateral: moved between
// two hosts present before and after).
void qualityBench(benchmark::State& state, const SelectorInfo* info) {
  constexpr uint32_t kKeys = 200000;
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  auto owners = [&](const std::vector<HostSpec>& hosts) {
    auto table = info->build(hosts, {});
    std::vector<std::string> out;
    for (uint32_t k = 0; k < kKeys; ++k)
      out.push_back(hosts[table->pick(hashKeyBytes(info->key_hash, "key:" + std::to_string(k)),
                                      0)].hash_key);
    return out;
  };
  for (auto _ : state) {
    auto hosts = hostsFor(*info, n);
    const auto base = owners(hosts);
    std::map<std::string, uint32_t> count;
    for (const auto& o : base) ++count[o];
    uint32_t max = 0;
    for (const auto& [host, c] : count) max = std::max(max, c);
    state.counters["max_over_mean"] = max / (static_cast<double>(kKeys) / n);

    auto fewer = hosts;
    fewer.pop_back();
    auto more = hosts;
    more.push_back({info->key_hash == KeyHash::kCrc32 ? "10.9.9.9:11211" : "cache-new", 1});
    const auto removed = owners(fewer);
    const auto added = owners(more);
    uint32_t rm_moved = 0, rm_collateral = 0, add_moved = 0, add_collateral = 0;
    for (uint32_t k = 0; k < kKeys; ++k) {
      if (removed[k] != base[k]) {
        ++rm_moved;
        rm_collateral += base[k] != hosts.back().hash_key;
      }
      if (added[k] != base[k]) {
        ++add_moved;
        add_collateral += added[k] != more.back().hash_key;
      }
    }
    state.counters["rm_moved"] = static_cast<double>(rm_moved) / kKeys;
    state.counters["rm_collateral"] = static_cast<double>(rm_collateral) / kKeys;
    state.counters["add_moved"] = static_cast<double>(add_moved) / kKeys;
    state.counters["add_collateral"] = static_cast<double>(add_collateral) / kKeys;
    state.counters["ideal"] = 1.0 / (n + 1);
  }
}

// Registered at start-up from the plugin registry, so a new selector is benchmarked without
// touching this file.
const bool kRegistered = [] {
  for (const SelectorInfo& info : allSelectors()) {
    const std::string name(info.name);
    benchmark::RegisterBenchmark(("SelectorPick/" + name).c_str(), pickBench, &info, 0u)
        ->Arg(8)->Arg(10)->Arg(100)->Arg(1000);
    benchmark::RegisterBenchmark(("SelectorPickRetry/" + name).c_str(), pickBench, &info, 1u)
        ->Arg(8)->Arg(10)->Arg(100)->Arg(1000);
    benchmark::RegisterBenchmark(("SelectorBuild/" + name).c_str(), buildBench, &info)
        ->Arg(8)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("SelectorBoundedPick/" + name).c_str(), boundedBench, &info)
        ->Arg(100);
    benchmark::RegisterBenchmark(("SelectorQuality/" + name).c_str(), qualityBench, &info)
        ->Arg(100)->Iterations(1)->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace lb
