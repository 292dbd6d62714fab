// The handover ramp, live: four origins behind lb (ring_hash over an x-key header, handover
// window 6 s), a fifth added by a reload, and a steady keyed load over 2,000 keys through the
// window. A moved key moves at its own moment: at every pass the share of the moved keys
// served by their new owner follows the window's elapsed share (lb_handover_active says how
// much is left), no key goes back to its previous owner once it has moved, and at the end all
// have moved and /backends shows no window.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/json_reader.h"
#include "tests/support/metrics_fleet.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

using lb::testing::JsonReader;
using lb::testing::JsonValue;

constexpr double kWindowS = 6;
constexpr int kKeys = 2000;

std::string config(const std::string& backends) {
  return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
         "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
         "hash = [ { header = \"x-key\" } ]\n"
         "[clusters.c]\nselector = \"ring_hash\"\nhandover = { window = \"6s\" }\n" +
         backends;
}

// Rewrites lb's config file with `text` (its {PORT} and {ADMIN} filled in as at the start),
// sends SIGHUP and waits for lb to say it reloaded.
bool reload(ProxyHarness& h, std::string text) {
  for (const auto& [tag, port] : {std::pair<std::string, uint16_t>{"{PORT}", h.port()},
                                  {"{ADMIN}", h.adminPort()}})
    for (size_t at; (at = text.find(tag)) != std::string::npos;)
      text.replace(at, tag.size(), std::to_string(port));
  std::ofstream(h.configPath()) << text;
  kill(h.lb().pid(), SIGHUP);
  return h.lb().waitForOutput("reloaded", 10s);
}

// lb_handover_active{cluster="c"}: seconds left in the window; -1 when not scraped.
double secondsLeft(uint16_t admin) {
  auto r = httpGetLocal(admin, "/metrics", 2s);
  if (!r || r.status != 200) return -1;
  const std::string name = "lb_handover_active{cluster=\"c\"} ";
  const size_t at = r.body.find(name);
  return at == std::string::npos ? -1 : atof(r.body.c_str() + at + name.size());
}

// /backends' "healthy" of backend `name` of cluster c: 1, 0, or -1 when not found.
int healthyOf(uint16_t admin, const std::string& name) {
  auto r = httpGetLocal(admin, "/backends", 2s);
  if (!r || r.status != 200) return -1;
  const JsonValue doc = JsonReader::parse(r.body);
  for (const JsonValue& b : doc["clusters"][0]["backends"].items())
    if (b["name"].asString() == name) return b["healthy"].asBool() ? 1 : 0;
  return -1;
}

// Every key once over one keep-alive connection: the backend each reached.
std::vector<std::string> servedBy(TcpClient& c) {
  std::vector<std::string> out;
  for (int k = 0; k < kKeys; ++k)
    out.push_back(backendFor(c, "/", "x-key: key-" + std::to_string(k) + "\r\n"));
  return out;
}

TEST(HandoverRampLiveTest, MovedKeysFollowTheWindowAndNeverGoBack) {
  ProxyHarness h;
  std::string why;
  const std::vector<std::string> four = {"a", "b", "c", "d"};
  for (const auto& n : four) ASSERT_TRUE(h.startOrigin(n, &why)) << why;
  ASSERT_TRUE(h.startOrigin("e", &why)) << why;
  ASSERT_TRUE(h.startLb(config(h.backendsToml(four)), &why)) << why;

  TcpClient c;
  ASSERT_TRUE(c.connect(h.port()));
  const std::vector<std::string> before = servedBy(c);
  for (int k = 0; k < kKeys; ++k) ASSERT_FALSE(before[k].empty()) << "key " << k;
  EXPECT_EQ(secondsLeft(h.adminPort()), 0) << "no window before the change";

  // The fifth origin joins: the config file rewritten, then SIGHUP.
  ASSERT_TRUE(reload(h, config(h.backendsToml({"a", "b", "c", "d", "e"})))) << h.lb().output();

  // Passes through the window: the backend of every key, with the progress around each pass.
  struct Pass {
    double progress_lo, progress_hi;
    std::vector<std::string> served;
  };
  std::vector<Pass> passes;
  for (auto end = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < end;) {
    const double left_before = secondsLeft(h.adminPort());
    ASSERT_GE(left_before, 0) << "the reload opened no window";
    std::vector<std::string> served = servedBy(c);
    const double left_after = secondsLeft(h.adminPort());
    passes.push_back({1 - left_before / kWindowS, 1 - left_after / kWindowS, std::move(served)});
    if (left_before == 0) break;   // a whole pass after the window closed
  }
  ASSERT_GE(passes.size(), 4u) << "too few passes inside the window to see a ramp";
  const std::vector<std::string>& after = passes.back().served;
  EXPECT_EQ(passes.back().progress_lo, 1);

  std::vector<int> moved;
  for (int k = 0; k < kKeys; ++k) {
    ASSERT_FALSE(after[k].empty()) << "key " << k;
    if (after[k] != before[k]) {
      moved.push_back(k);
      EXPECT_EQ(after[k], "e") << "only the new origin takes keys";
    }
  }
  ASSERT_GT(moved.size(), kKeys / 10) << "adding a fifth host moves about a fifth of the keys";
  std::vector<bool> arrived(kKeys, false);
  for (size_t p = 0; p < passes.size(); ++p) {
    size_t at_new = 0;
    for (const int k : moved) {
      const std::string& s = passes[p].served[k];
      ASSERT_TRUE(s == before[k] || s == after[k]) << "key " << k << " went to " << s;
      const bool is_new = s == after[k];
      EXPECT_FALSE(arrived[k] && !is_new) << "key " << k << " went back in pass " << p;
      arrived[k] = is_new;
      at_new += is_new;
    }
    const double share = static_cast<double>(at_new) / static_cast<double>(moved.size());
    EXPECT_GE(share, passes[p].progress_lo - 0.10) << "pass " << p;
    EXPECT_LE(share, passes[p].progress_hi + 0.10) << "pass " << p;
  }

  auto b = httpGetLocal(h.adminPort(), "/backends", 2s);
  ASSERT_TRUE(b && b.status == 200);
  const JsonValue doc = JsonReader::parse(b.body);
  EXPECT_TRUE(doc["clusters"][0]["handover"].isNull()) << b.body;
}

// An origin killed, taken down by health checks, and started again on its port: its keys
// come back to it over the window that its return opens, each at its own moment, from the
// hosts that served them while it was down, and never go back to those.
TEST(HandoverRampLiveTest, ARestartedOriginGetsItsKeysBackOverTheWindow) {
  ProxyHarness h;
  std::string why;
  const std::vector<std::string> four = {"a", "b", "c", "d"};
  for (const auto& n : four) ASSERT_TRUE(h.startOrigin(n, &why)) << why;
  ASSERT_TRUE(h.startLb(config("health = { interval = \"200ms\", timeout = \"200ms\", "
                               "fall = 2, rise = 1 }\n" + h.backendsToml(four)),
                        &why))
      << why;
  TcpClient c;
  ASSERT_TRUE(c.connect(h.port()));
  const std::vector<std::string> before = servedBy(c);
  std::vector<int> owned;   // b's keys
  for (int k = 0; k < kKeys; ++k)
    if (before[k] == "b") owned.push_back(k);
  ASSERT_GT(owned.size(), kKeys / 10u);

  h.killOrigin("b");
  bool down = false;
  for (auto end = std::chrono::steady_clock::now() + 10s;
       !down && std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(50ms))
    down = healthyOf(h.adminPort(), "b") == 0;
  ASSERT_TRUE(down) << "health never took b down";
  const std::vector<std::string> meanwhile = servedBy(c);
  for (const int k : owned) ASSERT_NE(meanwhile[k], "b") << "key " << k;

  ASSERT_TRUE(h.restartOrigin("b", &why)) << why;
  double left = 0;
  for (auto end = std::chrono::steady_clock::now() + 10s;
       left <= 0 && std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(50ms))
    left = secondsLeft(h.adminPort());
  ASSERT_GT(left, 0) << "b's return opened no window";

  std::vector<bool> back(kKeys, false);
  int passes = 0, mid = 0;
  for (auto end = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < end; ++passes) {
    const double left_before = secondsLeft(h.adminPort());
    const std::vector<std::string> served = servedBy(c);
    const double left_after = secondsLeft(h.adminPort());
    size_t at_b = 0;
    for (const int k : owned) {
      ASSERT_TRUE(served[k] == "b" || served[k] == meanwhile[k])
          << "key " << k << " went to " << served[k];
      EXPECT_FALSE(back[k] && served[k] != "b") << "key " << k << " left b again";
      back[k] = served[k] == "b";
      at_b += back[k];
    }
    const double share = static_cast<double>(at_b) / static_cast<double>(owned.size());
    EXPECT_GE(share, 1 - left_before / kWindowS - 0.10) << "pass " << passes;
    EXPECT_LE(share, 1 - left_after / kWindowS + 0.10) << "pass " << passes;
    if (share > 0.1 && share < 0.9) ++mid;
    if (left_before == 0) break;
  }
  EXPECT_GT(mid, 0) << "no pass saw the keys under way back";
  for (const int k : owned) EXPECT_TRUE(back[k]) << "key " << k << " never came back";
}

// Inside the window /backends shows it: since, until, the previous table's fingerprint and
// the moved share; a removed origin is listed as leaving and none of its keys waits for it.
TEST(HandoverRampLiveTest, BackendsShowsTheWindowAndWhoIsLeaving) {
  ProxyHarness h;
  std::string why;
  const std::vector<std::string> four = {"a", "b", "c", "d"};
  for (const auto& n : four) ASSERT_TRUE(h.startOrigin(n, &why)) << why;
  ASSERT_TRUE(h.startLb(config(h.backendsToml(four)), &why)) << why;
  auto first = httpGetLocal(h.adminPort(), "/backends", 2s);
  ASSERT_TRUE(first && first.status == 200);
  const std::string fingerprint =
      JsonReader::parse(first.body)["clusters"][0]["membership"]["fingerprint"].asString();

  ASSERT_TRUE(reload(h, config(h.backendsToml({"a", "b", "c"})))) << h.lb().output();

  auto r = httpGetLocal(h.adminPort(), "/backends", 2s);
  ASSERT_TRUE(r && r.status == 200);
  const JsonValue doc = JsonReader::parse(r.body);
  const JsonValue& w = doc["clusters"][0]["handover"];
  ASSERT_TRUE(w.isObject()) << r.body;
  EXPECT_EQ(w["from_fingerprint"].asString(), fingerprint);
  EXPECT_NEAR(w["moved_ratio"].asNumber(), 0.25, 0.08);
  ASSERT_EQ(w["leaving"].items().size(), 1u);
  EXPECT_EQ(w["leaving"][0].asString(), "d");
  EXPECT_LT(w["since"].asString(), w["until"].asString());
  TcpClient c;
  ASSERT_TRUE(c.connect(h.port()));
  for (int k = 0; k < 400; ++k)
    EXPECT_NE(backendFor(c, "/", "x-key: key-" + std::to_string(k) + "\r\n"), "d") << k;
}

}  // namespace
}  // namespace lb::test
