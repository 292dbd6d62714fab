// Bounded loads through the proxy: one hot key under 64 concurrent slow requests, with
// hash_balance_factor = 125. lb's own admin /backends (each backend's live load and cap) is
// sampled after every new request while the load only grows (a completion lowers the total
// and every cap with it, which is not what the invariant is about): no backend is ever over
// its cap, and the hot key spills over the fleet. When the clients go away, every live count
// returns to zero.
//
// workers = 1: each worker checks "load < cap" and then increments, so N workers picking at
// the same instant may overshoot a cap by up to N - 1 (no CAS loop on the request path).
#include <gtest/gtest.h>


#include "tests/support/backend_loads.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

using Load = BackendLoad;

TEST(HttpBoundedLoadTest, HotKeyNeverPutsABackendOverItsCap) {
  ProxyHarness h;
  for (const char* n : {"a", "b", "c", "d"}) {
    std::string why;
    ASSERT_TRUE(h.startOrigin(n, &why)) << why;
  }
  std::string why;
  ASSERT_TRUE(h.startLb("[lb]\nworkers = 1\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                        "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
                        "hash = [ { header = \"x-key\" } ]\n"
                        "timeouts = { idle = \"60s\" }\n"
                        "[clusters.c]\nselector = \"ring_hash\"\nhash_balance_factor = 125\n" +
                            h.backendsToml({"a", "b", "c", "d"}),
                        &why))
      << why;
  constexpr int kRequests = 64;
  std::vector<std::unique_ptr<TcpClient>> held;
  int samples = 0;
  auto check = [&](const std::map<std::string, Load>& s) {
    ++samples;
    ASSERT_EQ(s.size(), 4u);
    for (const auto& [name, l] : s) {
      ASSERT_GE(l.cap, 0) << "no cap with hash_balance_factor set";
      EXPECT_LE(l.load, l.cap) << name << " over its cap";
    }
  };
  for (int i = 0; i < kRequests; ++i) {
    held.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(held.back()->connect(h.port()));
    ASSERT_TRUE(held.back()->send(httpRequest("GET", "/?delay_ms=30000", "x-key: hot\r\n")));
    check(backendLoads(h.adminPort()));
    if (HasFailure()) return;
  }
  std::map<std::string, Load> last;
  long total = 0;
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < deadline;) {
    last = backendLoads(h.adminPort());
    check(last);
    total = 0;
    for (const auto& [_, l] : last) total += l.load;
    if (total == kRequests) break;
  }
  EXPECT_EQ(total, kRequests);
  int busy = 0;
  for (const auto& [_, l] : last) busy += l.load > 0;
  EXPECT_GE(busy, 3) << "one hot key must spread past its owner";

  // Clients leave with their requests still waiting on the origins: lb abandons them and
  // every live count returns to zero.
  held.clear();
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       std::chrono::steady_clock::now() < deadline;) {
    total = 0;
    for (const auto& [_, l] : backendLoads(h.adminPort())) total += l.load;
    if (total == 0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(total, 0) << "live counts leaked after clients went away";
}

}  // namespace
}  // namespace lb::test
