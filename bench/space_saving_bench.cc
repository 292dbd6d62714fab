// Cost of counting a key in the worker's hot-key summary (lb/hotkeys/space_saving.h), which
// every routed request pays: SpaceSaving::add on Zipf streams (alpha 1.2, the skewed cache
// workload; 0.99, YCSB's default) and on a uniform one, where nearly every key is untracked
// and goes through the filter; plus the main thread's merge of eight workers' summaries.
// The streams are drawn before the loop, so the loop does nothing but add().
//
//   make bench BENCH_ARGS=--benchmark_filter=SpaceSaving
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "lb/core/hash.h"
#include "lb/hotkeys/space_saving.h"

namespace lb {
namespace {

constexpr size_t kKeys = 100000;
constexpr size_t kStream = 1 << 16;   // cycled through, a power of two for the mask

struct Draw {
  uint64_t hash;          // XXH64 of the key, as the pick computes it
  std::string_view key;   // the bytes a tracked entry copies
};

// The stream laid out in draw order, the key bytes too (each draw's own copy, one after the
// other), so that reading it is sequential: a request has its key and hash in cache already,
// and the benchmark should not charge add() for a cache miss on bytes scattered over 100k
// strings (which was 60% of the uniform case's time before).
struct KeyStream {
  std::string bytes;   // every draw's "user:N", back to back
  std::vector<Draw> draws;
};

// Ranks by inverting the Zipf CDF (alpha 0: uniform), on a fixed seed.
const KeyStream& keyStream(double alpha) {
  static std::vector<std::pair<double, std::unique_ptr<KeyStream>>> made;
  for (const auto& [a, s] : made)
    if (a == alpha) return *s;
  auto s = std::make_unique<KeyStream>();
  std::vector<double> cdf(kKeys);
  double sum = 0;
  for (size_t r = 0; r < kKeys; ++r) cdf[r] = sum += 1.0 / std::pow(static_cast<double>(r + 1), alpha);
  std::vector<std::pair<size_t, size_t>> spans;   // offset, length in bytes
  std::mt19937_64 rng(12345);
  for (size_t i = 0; i < kStream; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * sum;
    const size_t r = static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    const std::string key = "user:" + std::to_string(std::min(r, kKeys - 1));
    spans.emplace_back(s->bytes.size(), key.size());
    s->bytes += key;
    s->draws.push_back({hashKeyBytes(KeyHash::kXxh64, key), {}});
  }
  for (size_t i = 0; i < kStream; ++i)
    s->draws[i].key = std::string_view(s->bytes).substr(spans[i].first, spans[i].second);
  made.emplace_back(alpha, std::move(s));
  return *made.back().second;
}

void BM_SpaceSavingAdd(benchmark::State& state, double alpha) {
  const KeyStream& ks = keyStream(alpha);
  SpaceSaving summary;
  size_t i = 0;
  for (auto _ : state) {
    const Draw& d = ks.draws[i++ & (kStream - 1)];
    summary.add(d.hash, d.key);
  }
  benchmark::DoNotOptimize(summary.total());
  state.counters["floor"] = static_cast<double>(summary.floor());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_SpaceSavingAdd, zipf_1_2, 1.2);
BENCHMARK_CAPTURE(BM_SpaceSavingAdd, zipf_0_99, 0.99);
BENCHMARK_CAPTURE(BM_SpaceSavingAdd, uniform, 0.0);

// The main thread's window: eight workers' full summaries merged into one.
void BM_SpaceSavingMerge8(benchmark::State& state) {
  const KeyStream& ks = keyStream(0.99);
  std::vector<std::unique_ptr<SpaceSaving>> workers;
  for (size_t w = 0; w < 8; ++w) {
    workers.push_back(std::make_unique<SpaceSaving>());
    for (size_t i = w; i < kStream; i += 8) workers[w]->add(ks.draws[i].hash, ks.draws[i].key);
  }
  SpaceSaving merged;
  for (auto _ : state) {
    merged.copyFrom(*workers[0]);
    for (size_t w = 1; w < workers.size(); ++w) merged.merge(*workers[w]);
    benchmark::DoNotOptimize(merged.floor());
  }
}
BENCHMARK(BM_SpaceSavingMerge8)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lb
