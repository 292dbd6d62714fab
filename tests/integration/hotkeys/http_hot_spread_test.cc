// HTTP spread (hot_keys.spread): lb with an HTTP listener keyed by a header, 2
// workers, 8 lb-origin backends.
//
// 1. One key hammered with GETs becomes hot (GET /hotkeys says so); from then on its GETs,
//    sent concurrently so that live loads differ, reach exactly the `spread` hosts /hotkeys
//    lists as serving it (the first 3 of its preference order, the owner first), the workers
//    count them (lb_hotkey_requests_total{path="spread"}, lb_backend_picks_total{reason=
//    "spread"}): that is the hot set published to the workers, seen on their request path.
//    POSTs of the same key, just as concurrent, all stay on the owner.
// 2. Zipf(1.2) over 10,000 keys from 48 concurrent clients, counted at the backends (each
//    origin's requests_served): the busiest backend over the mean, spread off, then on. Both
//    figures are printed (at this test's writing, ring_hash and these key names: off 2.40,
//    the top key's owner serving 30% of all requests; on 1.23 to 1.25; under the sanitizers up to 1.31); "on" must be at most 1.4, well below
//    "off".
//
// Origins answer after 2 ms (delay_ms) so that requests overlap: spreading goes to the least
// loaded of the key's hosts, and with no request in flight every tie goes to the owner.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/support/json_reader.h"
#include "tests/support/metrics_fleet.h"
#include "tests/support/origin_fleet.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

using lb::testing::JsonReader;
using lb::testing::JsonValue;

constexpr int kOrigins = 8;
constexpr uint32_t kSpread = 3;

// threshold 0.01: Zipf(1.2) over 10,000 keys puts ranks 1-11 above 1%; at the default 2%
// only ranks 1-7 would spread and ranks 8-15 (1.7% to 0.8% each, a tenth of a backend's fair
// share apiece) would stay where the ring put them, lumps the ratio would show.
std::string spreadConfig(const OriginFleet& fleet, uint32_t spread) {
  return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
         "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
         "hash = [ { header = \"x-key\" } ]\ntimeouts = { idle = \"60s\" }\n"
         "[clusters.c]\nselector = \"ring_hash\"\n"
         "hot_keys = { threshold = 0.01, hold = \"10s\", spread = " +
         std::to_string(spread) + " }\nbackends = [\n" + fleet.backends(kOrigins) + "]\n";
}

// /hotkeys?cluster=c's entry for `key`, when it is there and hot.
std::optional<JsonValue> hotEntry(uint16_t admin, const std::string& key) {
  auto r = httpGetLocal(admin, "/hotkeys?cluster=c", 2s);
  if (!r || r.status != 200) return std::nullopt;
  JsonValue doc = JsonReader::parse(r.body);
  for (const JsonValue& k : doc["keys"].items())
    if (k["key"].asString() == key && k["hot"].asBool()) return k;
  return std::nullopt;
}

// Sends `n` sequential GETs of `key` over one keep-alive connection; false on any failure.
bool hammer(uint16_t port, const std::string& key, int n) {
  TcpClient c;
  if (!c.connect(port)) return false;
  for (int i = 0; i < n; ++i)
    if (backendFor(c, "/", "x-key: " + key + "\r\n").empty()) return false;
  return true;
}

// `n` requests of `method` for `key`, all in flight at once (each on its own connection, the
// origins holding each for `delay_ms`); the X-Backend of each answer ("" for a failure).
std::vector<std::string> concurrently(uint16_t port, const std::string& method,
                                      const std::string& key, int n, int delay_ms) {
  std::vector<std::unique_ptr<TcpClient>> conns;
  const std::string target = "/?delay_ms=" + std::to_string(delay_ms);
  const std::string body = method == "POST" ? "payload" : "";
  for (int i = 0; i < n; ++i) {
    conns.push_back(std::make_unique<TcpClient>());
    if (!conns.back()->connect(port) ||
        !conns.back()->send(httpRequest(method, target, "x-key: " + key + "\r\n", body)))
      conns.back()->close();
  }
  std::vector<std::string> out;
  for (auto& c : conns) {
    auto r = readHttpResponse(*c, false, 10s);
    out.push_back(r.ok && r.status == 200 ? r.header("x-backend").value_or("") : "");
  }
  return out;
}

class HttpHotSpreadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.ok()) << fleet_.error();
    ASSERT_EQ(fleet_.size(), static_cast<size_t>(kOrigins));
  }
  OriginFleet fleet_{kOrigins};
};

TEST_F(HttpHotSpreadTest, HotKeyGetsReachItsSpreadHostsAndPostsStayOnTheOwner) {
  ProxyHarness h;
  std::string why;
  ASSERT_TRUE(h.startLb(spreadConfig(fleet_, kSpread), &why)) << why;
  const std::string key = "user:42";

  // Until /hotkeys shows the key hot: bounded rounds of real requests.
  std::optional<JsonValue> entry;
  for (auto end = std::chrono::steady_clock::now() + 15s;
       !entry && std::chrono::steady_clock::now() < end;) {
    ASSERT_TRUE(hammer(h.port(), key, 50));
    entry = hotEntry(h.adminPort(), key);
  }
  ASSERT_TRUE(entry) << "the key never showed as hot in /hotkeys";
  std::vector<std::string> serving;
  for (const JsonValue& s : (*entry)["serving"].items()) serving.push_back(s.asString());
  const std::string owner = (*entry)["owner"].asString();
  ASSERT_EQ(serving.size(), kSpread) << "a hot key of a spread cluster is served by 3 hosts";
  EXPECT_EQ(serving.front(), owner);
  const std::set<std::string> spread_set(serving.begin(), serving.end());
  EXPECT_EQ(spread_set.size(), kSpread);

  // Concurrent GETs: the owner holds one, so the next goes to the second host, and so on.
  // The workers adopt the hot set just after /hotkeys shows it: a round or two may still go
  // to the owner alone, so rounds repeat (bounded) until all three hosts were reached.
  std::set<std::string> reached;
  for (int round = 0; round < 20 && reached.size() < kSpread; ++round) {
    for (const std::string& b : concurrently(h.port(), "GET", key, 12, 100)) {
      ASSERT_FALSE(b.empty()) << "a GET failed";
      EXPECT_TRUE(spread_set.count(b)) << b << " is not one of the key's first 3 hosts";
      reached.insert(b);
    }
  }
  EXPECT_EQ(reached, spread_set) << "the hot key's GETs did not reach all of its 3 hosts";

  // POST of the same key, as concurrent: every one on the owner.
  for (const std::string& b : concurrently(h.port(), "POST", key, 12, 100)) {
    ASSERT_FALSE(b.empty()) << "a POST failed";
    EXPECT_EQ(b, owner) << "a POST of a hot key must keep the owner";
  }

  // The workers counted what they spread, per cluster and per backend.
  auto samples = parseExposition(httpGetLocal(h.adminPort(), "/metrics").body);
  auto paths = byLabel(samples, "lb_hotkey_requests_total", "path", {{"cluster", "c"}});
  EXPECT_GT(paths["spread"], 0) << "no spread counted";
  auto reasons = byLabel(samples, "lb_backend_picks_total", "reason", {{"cluster", "c"}});
  EXPECT_EQ(reasons["spread"], paths["spread"]) << "each spread request is one spread pick";
  auto spread_picks =
      byLabel(samples, "lb_backend_picks_total", "backend", {{"cluster", "c"}, {"reason", "spread"}});
  for (const auto& [backend, n] : spread_picks) {
    if (n > 0) {
      EXPECT_TRUE(spread_set.count(backend)) << backend;
    }
  }
}

// Zipf(alpha) over kZipfKeys keys, drawn from a fixed seed: key "z<rank>".
constexpr int kZipfKeys = 10000;
constexpr double kZipfAlpha = 1.2;
// Enough connections that each backend has a few requests in flight: "least loaded" compares
// live loads, and with one or none in flight everywhere most picks tie and go to the owner.
constexpr int kZipfClients = 48;

class SpreadZipfClients {
 public:
  SpreadZipfClients() {
    cdf_.resize(kZipfKeys);
    double sum = 0;
    for (int k = 1; k <= kZipfKeys; ++k) cdf_[k - 1] = (sum += std::pow(k, -kZipfAlpha));
    for (double& c : cdf_) c /= sum;
  }

  // `total` requests from kZipfClients threads, each a keep-alive connection sending its
  // share back to back; false when any failed.
  bool run(uint16_t port, int total, uint64_t seed) {
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kZipfClients; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(seed * 131 + static_cast<uint64_t>(t));
        std::uniform_real_distribution<double> u(0, 1);
        TcpClient c;
        if (!c.connect(port)) {
          failures.fetch_add(1);
          return;
        }
        for (int i = 0; i < total / kZipfClients; ++i) {
          const int rank = static_cast<int>(
              std::lower_bound(cdf_.begin(), cdf_.end(), u(rng)) - cdf_.begin()) + 1;
          if (backendFor(c, "/?delay_ms=2", "x-key: z" + std::to_string(rank) + "\r\n")
                  .empty()) {
            failures.fetch_add(1);
            return;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    return failures.load() == 0;
  }

 private:
  std::vector<double> cdf_;
};

// Requests each origin served since `before` (its /stats request excluded).
std::vector<long> servedSince(const OriginFleet& fleet, const std::vector<long>& before) {
  std::vector<long> out;
  for (size_t i = 0; i < fleet.size(); ++i)
    out.push_back(fleet.requestsServed(i) - before[i] - 1);
  return out;
}

std::vector<long> servedNow(const OriginFleet& fleet) {
  std::vector<long> out;
  for (size_t i = 0; i < fleet.size(); ++i) out.push_back(fleet.requestsServed(i));
  return out;
}

double busiestOverMean(const std::vector<long>& served) {
  double sum = 0, most = 0;
  for (long s : served) {
    sum += static_cast<double>(s);
    most = std::max(most, static_cast<double>(s));
  }
  return sum > 0 ? most / (sum / static_cast<double>(served.size())) : 0;
}

std::string describe(const std::vector<long>& served) {
  std::string s;
  for (long v : served) s += (s.empty() ? "" : " ") + std::to_string(v);
  return s;
}

TEST_F(HttpHotSpreadTest, ZipfBusiestBackendOverMeanDropsWithSpread) {
  constexpr int kMeasured = 10000;
  SpreadZipfClients load;
  double off = 0, on = 0;
  {
    ProxyHarness h;
    std::string why;
    ASSERT_TRUE(h.startLb(spreadConfig(fleet_, 0), &why)) << why;
    const auto before = servedNow(fleet_);
    ASSERT_TRUE(load.run(h.port(), kMeasured, 1));
    const auto served = servedSince(fleet_, before);
    off = busiestOverMean(served);
    std::printf("[ spread off ] busiest/mean %.3f (requests per backend: %s)\n", off,
                describe(served).c_str());
  }
  {
    ProxyHarness h;
    std::string why;
    ASSERT_TRUE(h.startLb(spreadConfig(fleet_, kSpread), &why)) << why;
    // Warm up until the hottest keys are hot (bounded), then measure a fresh load.
    bool hot = false;
    for (auto end = std::chrono::steady_clock::now() + 20s;
         !hot && std::chrono::steady_clock::now() < end;) {
      ASSERT_TRUE(load.run(h.port(), 2000, 7));
      hot = hotEntry(h.adminPort(), "z1") && hotEntry(h.adminPort(), "z3");
    }
    ASSERT_TRUE(hot) << "the top Zipf keys never showed as hot";
    const auto before = servedNow(fleet_);
    ASSERT_TRUE(load.run(h.port(), kMeasured, 1));
    const auto served = servedSince(fleet_, before);
    on = busiestOverMean(served);
    std::printf("[ spread 3   ] busiest/mean %.3f (requests per backend: %s)\n", on,
                describe(served).c_str());
    {
      auto r = httpGetLocal(h.adminPort(), "/hotkeys?cluster=c", 2s);
      JsonValue doc = JsonReader::parse(r.body);
      for (const JsonValue& k : doc["keys"].items()) {
        if (!k["hot"].asBool()) continue;
        std::string s;
        for (const JsonValue& b : k["serving"].items()) s += b.asString() + " ";
        std::printf("[ spread 3   ] hot %s share %.3f serving %s\n", k["key"].asString().c_str(),
                    k["share"].asNumber(), s.c_str());
      }
    }
    auto samples = parseExposition(httpGetLocal(h.adminPort(), "/metrics").body);
    EXPECT_GT(byLabel(samples, "lb_hotkey_requests_total", "path", {{"cluster", "c"}})["spread"],
              0);
  }
  RecordProperty("busiest_over_mean_off", std::to_string(off));
  RecordProperty("busiest_over_mean_on", std::to_string(on));
  EXPECT_GT(off, 1.8) << "Zipf 1.2 without spread should overload the top key's owner";
  EXPECT_LE(on, 1.4) << "with spread 3 the busiest backend should be within 1.4 of the mean";
  EXPECT_LT(on, off);
}

}  // namespace
}  // namespace lb::test
