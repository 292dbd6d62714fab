// A backend killed mid-run: its keys move to the next host of their own preference order
// (as `lb analyze` computes it from the same config), every other key stays where it was,
// and no request that was safe to retry fails, not even those in flight at the kill.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

constexpr int kKeys = 300;

std::string keyName(int i) { return "user:" + std::to_string(i); }

// key -> preference order, from `lb analyze --config FILE --cluster c --key ...`.
std::map<std::string, std::vector<std::string>> preferenceOrders(const std::string& config) {
  std::vector<std::string> argv = {builtBinary("lb"), "analyze", "--config", config,
                                   "--cluster", "c"};
  for (int i = 0; i < kKeys; ++i) {
    argv.push_back("--key");
    argv.push_back(keyName(i));
  }
  auto r = runCommand(argv);
  std::map<std::string, std::vector<std::string>> out;
  size_t pos = 0;
  while ((pos = r.out.find("{\"key\": \"", pos)) != std::string::npos) {
    size_t kb = pos + 9, ke = r.out.find('"', kb);
    std::string key = r.out.substr(kb, ke - kb);
    size_t ob = r.out.find("\"order\": [", ke) + 10, oe = r.out.find(']', ob);
    std::vector<std::string> order;
    for (size_t q = r.out.find('"', ob); q != std::string::npos && q < oe;) {
      size_t q2 = r.out.find('"', q + 1);
      order.push_back(r.out.substr(q + 1, q2 - q - 1));
      q = r.out.find('"', q2 + 1);
    }
    out[key] = order;
    pos = oe;
  }
  return out;
}

TEST(HttpFailoverTest, KilledBackendsKeysMoveToTheirNextHostAndNothingElseMoves) {
  ProxyHarness h;
  for (const char* n : {"a", "b", "c"}) {
    std::string why;
    ASSERT_TRUE(h.startOrigin(n, &why)) << why;
  }
  std::string why;
  ASSERT_TRUE(h.startLb("[lb]\nworkers = 2\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                        "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
                        "hash = [ { header = \"x-key\" } ]\n"
                        "[clusters.c]\nselector = \"maglev\"\nretries = 2\n" +
                            h.backendsToml({"a", "b", "c"}),
                        &why))
      << why;
  auto orders = preferenceOrders(h.configPath());
  ASSERT_EQ(orders.size(), static_cast<size_t>(kKeys));

  std::map<std::string, std::string> before;
  {
    TcpClient c;
    ASSERT_TRUE(c.connect(h.port()));
    for (int i = 0; i < kKeys; ++i) {
      std::string k = keyName(i);
      before[k] = backendFor(c, "/", "x-key: " + k + "\r\n");
      ASSERT_EQ(before[k], orders[k][0]) << k << ": lb and lb analyze disagree on the owner";
    }
  }

  // Clients keep going through the kill on keep-alive connections (so lb's pooled upstream
  // connections to b are in use when b dies).
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, done{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      TcpClient c;
      if (!c.connect(h.port())) {
        ++failures;
        return;
      }
      for (int i = t; !stop.load(); i = (i + 4) % kKeys) {
        int status = 0;
        if (backendFor(c, "/", "x-key: " + keyName(i) + "\r\n", &status).empty()) ++failures;
        ++done;
      }
    });
  }
  auto waitDone = [&](int n) {   // bounded: a stuck client fails the test, not the suite
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (done.load() < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    return done.load() >= n;
  };
  EXPECT_TRUE(waitDone(200));
  h.killOrigin("b");
  const int at_kill = done.load();
  EXPECT_TRUE(waitDone(at_kill + 600));
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0) << "safe (GET) requests failed across the kill";

  TcpClient c;
  ASSERT_TRUE(c.connect(h.port()));
  int moved = 0;
  for (int i = 0; i < kKeys; ++i) {
    std::string k = keyName(i);
    std::string now = backendFor(c, "/", "x-key: " + k + "\r\n");
    if (before[k] == "b") {
      EXPECT_EQ(now, orders[k][1]) << k << " must go to the next host of its own order";
      ++moved;
    } else {
      EXPECT_EQ(now, before[k]) << k << " did not belong to b and must not move";
    }
  }
  EXPECT_GT(moved, 0);
}

}  // namespace
}  // namespace lb::test
