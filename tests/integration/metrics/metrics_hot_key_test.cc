// During a hot-key test with hash_balance_factor, every sample of
// /metrics shows each backend's live load at or under its lb_backend_load_cap. One key, many
// requests held in flight by the origins (delay_ms), /metrics sampled after every new request
// while the load only grows (a completion lowers the total and with it every cap, which is
// not what the invariant is about).
//
// Waits on the proxy: skips with that reason until lb and lb-origin land on main.
#include <gtest/gtest.h>

#include <thread>

#include "tests/support/metrics_fleet.h"

namespace lb::test {
namespace {

struct LoadSample {
  std::map<std::string, double> active, cap;
  double total() const {
    double t = 0;
    for (const auto& [_, v] : active) t += v;
    return t;
  }
};

LoadSample sampleLoads(uint16_t admin_port) {
  auto r = httpGetLocal(admin_port, "/metrics");
  EXPECT_TRUE(r) << r.error;
  auto samples = parseExposition(r.body);
  return {byLabel(samples, "lb_backend_active_requests", "backend", {{"cluster", "cache"}}),
          byLabel(samples, "lb_backend_load_cap", "backend", {{"cluster", "cache"}})};
}

TEST(MetricsHotKeyTest, LiveLoadNeverExceedsTheCapInAnySample) {
  Fleet fleet;
  bool skip = false;
  std::string why = fleet.start(4, 125, &skip);
  if (skip) GTEST_SKIP() << "waiting for the proxy to land on main: " << why;
  ASSERT_EQ(why, "");

  constexpr int kRequests = 24;
  std::vector<std::unique_ptr<TcpClient>> held;
  int samples = 0;
  auto check = [&](const LoadSample& s) {
    ++samples;
    ASSERT_EQ(s.cap.size(), 4u) << "lb_backend_load_cap missing with hash_balance_factor set";
    for (const auto& [backend, load] : s.active)
      EXPECT_LE(load, s.cap.at(backend)) << backend << " over its cap at total " << s.total();
  };
  for (int i = 0; i < kRequests; ++i) {
    held.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(held.back()->connect(fleet.webPort()));
    ASSERT_TRUE(held.back()->send(
        httpRequest("GET", "/?delay_ms=60000", "x-cache-key: the-hot-key\r\n")));
    check(sampleLoads(fleet.adminPort()));
    if (HasFailure()) return;
  }
  // Every request reaches a backend; keep sampling until the plateau.
  LoadSample last;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    last = sampleLoads(fleet.adminPort());
    check(last);
    if (last.total() == kRequests) break;
  }
  EXPECT_EQ(last.total(), kRequests);
  // Not vacuous: the hot key spilled past its owner, which stayed at its cap.
  int busy = 0;
  for (const auto& [_, v] : last.active) busy += v > 0;
  EXPECT_GE(busy, 3) << "bounded loads should spread one hot key over the fleet";
  auto text = httpGetLocal(fleet.adminPort(), "/metrics").body;
  auto bounded = byLabel(parseExposition(text), "lb_backend_picks_total", "reason",
                         {{"cluster", "cache"}});
  EXPECT_GT(bounded["bounded"], 0);
  EXPECT_GE(samples, kRequests);
  held.clear();
}

}  // namespace
}  // namespace lb::test
