// Cost of deriving a key per request: each key plugin on a realistic request head, and a
// three-policy chain. These run on every request, so they must stay in the tens of
// nanoseconds and never allocate.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>

#include <memory>
#include <string>
#include <vector>

#include "plugins/builtin.h"
#include "plugins/keys/key_chain.h"

namespace {

using namespace lb;

struct Fixture {
  std::vector<HttpHeader> headers = {
      {"Host", "cache.example.com"},
      {"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36"},
      {"Accept", "*/*"},
      {"Accept-Encoding", "gzip, deflate, br"},
      {"Cookie", "_ga=GA1.2.1234567890.1234567890; theme=dark; lb=5f2c9a7e0d1b4c3a8e6f7d9c0b1a2e3f"},
      {"X-Cache-Key", "user:1234567:profile"},
  };
  HttpRequestView request{"GET", "/images/2026/11/cat.jpg?w=640&user=alice&v=3", headers};
  sockaddr_in peer{}, local{};
  KeyContext ctx;

  Fixture() {
    peer.sin_family = local.sin_family = AF_INET;
    inet_pton(AF_INET, "10.1.2.3", &peer.sin_addr);
    inet_pton(AF_INET, "10.0.0.1", &local.sin_addr);
    peer.sin_port = htons(40123);
    local.sin_port = htons(8080);
    ctx.peer = reinterpret_cast<sockaddr*>(&peer);
    ctx.local = reinterpret_cast<sockaddr*>(&local);
    ctx.request = &request;
  }
};

void BM_KeyPlugin(benchmark::State& state, const char* kind, const char* name) {
  Fixture f;
  HashPolicy p;
  p.kind = kind;
  p.name = name;
  auto plugin = findKeyPlugin(kind)->build(p);
  uint64_t h = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(plugin->extract(f.ctx, KeyHash::kXxh64, &h));
    benchmark::DoNotOptimize(h);
  }
}
BENCHMARK_CAPTURE(BM_KeyPlugin, header, "header", "x-cache-key");
BENCHMARK_CAPTURE(BM_KeyPlugin, cookie, "cookie", "lb");
BENCHMARK_CAPTURE(BM_KeyPlugin, source_ip, "source_ip", "");
BENCHMARK_CAPTURE(BM_KeyPlugin, five_tuple, "five_tuple", "");
BENCHMARK_CAPTURE(BM_KeyPlugin, query, "query", "user");
BENCHMARK_CAPTURE(BM_KeyPlugin, path, "path", "");

// A fresh cookie for a client that has none: the per-thread PRNG plus the hash.
void BM_CookieGenerate(benchmark::State& state) {
  Fixture f;
  f.headers.erase(f.headers.begin() + 4);
  f.request.headers = f.headers;
  HashPolicy p;
  p.kind = "cookie";
  p.name = "lb";
  p.ttl = Duration(3600000);
  auto plugin = findKeyPlugin("cookie")->build(p);
  uint64_t h = 0;
  for (auto _ : state) {
    GeneratedCookie out;
    f.ctx.cookie_out = &out;
    benchmark::DoNotOptimize(plugin->extract(f.ctx, KeyHash::kXxh64, &h));
    benchmark::DoNotOptimize(out.value[0]);
  }
}
BENCHMARK(BM_CookieGenerate);

// header (missing here), then cookie, then source_ip: the combination a config would list.
void BM_KeyChainThreePolicies(benchmark::State& state) {
  Fixture f;
  HashPolicy a, b, c;
  a.kind = "header";
  a.name = "x-missing";
  b.kind = "cookie";
  b.name = "lb";
  c.kind = "source_ip";
  auto chain = KeyChain::build(std::vector<HashPolicy>{a, b, c}, "http");
  uint64_t h = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(chain.value().compute(f.ctx, KeyHash::kXxh64, &h));
    benchmark::DoNotOptimize(h);
  }
}
BENCHMARK(BM_KeyChainThreePolicies);

}  // namespace
