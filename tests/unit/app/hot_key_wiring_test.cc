// Hot keys wired into lb: the per-worker hand-over (HotKeyState), the main
// thread's monitor asking real worker threads through their mailboxes, /hotkeys' JSON and
// the lb_hotkey_* metrics. The summary and the tracker themselves are tested on their own
// (space_saving_test.cc, hot_keys_test.cc); here they are taken as they are.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "lb/admin/hotkeys_route.h"
#include "lb/admin/metrics.h"
#include "lb/admin/routes.h"
#include "lb/app/hot_key_monitor.h"
#include "lb/app/worker_group.h"
#include "lb/core/hash.h"
#include "tests/support/http_client.h"
#include "tests/support/json_reader.h"
#include "tests/support/metrics_test_snapshot.h"
#include "tests/support/process.h"

namespace lb {
namespace {

using namespace std::chrono_literals;
using testing::JsonReader;
using testing::JsonValue;

uint64_t hashOf(const ClusterSnapshot& c, std::string_view key) {
  return hashKeyBytes(c.selector->key_hash, key);
}

void countN(HotKeyState& s, unsigned worker, uint64_t hash, std::string_view key, int n) {
  for (int i = 0; i < n; ++i) s.count(worker, hash, key);
}

uint64_t countOf(const SpaceSaving& s, uint64_t hash) {
  for (const HotKeyCounter& c : s.counters())
    if (c.hash == hash) return c.count;
  return 0;
}

TEST(HotKeyStateTest, CollectMergesWhatEveryWorkerHandedOver) {
  HotKeyState s(2);
  countN(s, 0, 11, "a", 30);
  countN(s, 1, 11, "a", 20);
  countN(s, 1, 22, "b", 5);
  s.handOver(0);
  s.handOver(1);
  unsigned in = 0;
  const SpaceSaving& m = s.collect(&in);
  EXPECT_EQ(in, 2u);
  EXPECT_EQ(m.total(), 55u);
  EXPECT_EQ(countOf(m, 11), 50u);
  EXPECT_EQ(countOf(m, 22), 5u);
}

TEST(HotKeyStateTest, CountsBeforeAHandOverWaitForTheNextOne) {
  HotKeyState s(1);
  countN(s, 0, 11, "a", 7);
  EXPECT_EQ(s.collect().total(), 0u);   // not handed over: the worker still holds them
  s.handOver(0);
  EXPECT_EQ(s.collect().total(), 7u);
  EXPECT_EQ(s.collect().total(), 0u);   // taken once, and the worker's summary was cleared
  s.handOver(0);
  EXPECT_EQ(s.collect().total(), 0u);
}

TEST(HotKeyStateTest, TwoHandOversBeforeACollectLoseNothing) {
  HotKeyState s(1);
  countN(s, 0, 11, "a", 4);
  s.handOver(0);
  countN(s, 0, 11, "a", 6);
  s.handOver(0);   // the main thread was late: this window joins the one not taken yet
  unsigned in = 0;
  const SpaceSaving& m = s.collect(&in);
  EXPECT_EQ(in, 1u);
  EXPECT_EQ(countOf(m, 11), 10u);
}

TEST(HotKeyStateTest, AWorkerItWasNotMadeForCountsNothing) {
  HotKeyState s(1);
  countN(s, 3, 11, "a", 5);
  s.handOver(3);
  s.handOver(0);
  EXPECT_EQ(s.collect().total(), 0u);
}

// Requests through two real worker threads, keyed by a header: the monitor's ask reaches
// each worker's mailbox, its collect merges and the tracker applies the cluster's policy.
Config headerKeyed(uint16_t port, double threshold) {
  Config c;
  c.workers = 2;
  ClusterConfig cluster;
  cluster.name = "c";
  cluster.hot_keys.threshold = threshold;
  BackendConfig b;
  b.name = "a";
  b.address = "127.0.0.1:" + std::to_string(test::freePort());   // nobody listens: 502
  cluster.backends.push_back(b);
  c.clusters.push_back(cluster);
  ListenerConfig l;
  l.name = "web";
  l.listen = "127.0.0.1:" + std::to_string(port);
  l.cluster = "c";
  HashPolicy h;
  h.kind = "header";
  h.name = "x-key";
  l.hash.push_back(h);
  c.listeners.push_back(l);
  return c;
}

const HotKey* findKey(const HotSet& set, std::string_view key) {
  for (const HotKey& k : set.keys)
    if (k.key == key) return &k;
  return nullptr;
}

TEST(HotKeyMonitorTest, RequestsOnTheWorkersReachTheClustersHotSet) {
  const uint16_t port = test::freePort();
  WorkerGroup server(2);
  auto snap = buildSnapshot(headerKeyed(port, 0.5), server.registry(), 1);
  ASSERT_TRUE(snap.ok());
  std::string error;
  ASSERT_TRUE(server.start(snap.value(), &error)) << error;
  // 30 of 40 requests for "hot" (share 0.75, above 0.5), 10 for "warm" (0.25, below).
  for (int i = 0; i < 40; ++i) {
    auto r = test::httpExchange(
        port, test::httpRequest("GET", "/", i % 4 == 3 ? "X-Key: warm\r\n" : "X-Key: hot\r\n"));
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.status, 502);
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  HotKeyMonitor monitor(&loop, server);
  const ClusterSnapshot& c = snap.value()->clusters[0];
  HotKeyState& state = c.state->hot_keys;
  // One ask: each worker answers its mailbox on its own thread, whenever it gets to it.
  // Collect (bounded) until both workers' counts are in, as one window.
  monitor.ask();
  SpaceSaving window;
  unsigned handed = 0;
  for (auto end = std::chrono::steady_clock::now() + 5s;
       window.total() < 40 && std::chrono::steady_clock::now() < end;) {
    std::this_thread::sleep_for(10ms);
    unsigned in = 0;
    window.merge(state.collect(&in));
    handed += in;
  }
  ASSERT_EQ(window.total(), 40u) << "the requests never reached the hand-over";
  EXPECT_LE(handed, 2u);   // one hand-over per worker: none counted twice
  EXPECT_EQ(countOf(window, hashOf(c, "hot")), 30u);
  EXPECT_EQ(countOf(window, hashOf(c, "warm")), 10u);
  // The tracker, with the cluster's policy as the monitor sets it.
  state.tracker().setPolicy({0.5, std::chrono::milliseconds(10000)});
  state.tracker().observe(window, 1.0, 1'000'000);
  const HotKeyTracker& tracker = state.tracker();
  const HotKey* hot = findKey(tracker.hotSet(), "hot");
  ASSERT_NE(hot, nullptr);
  EXPECT_NEAR(hot->share, 0.75, 1e-9);
  EXPECT_TRUE(hot->hot);
  EXPECT_EQ(hot->hash, hashOf(c, "hot"));
  const HotKey* warm = findKey(tracker.hotSet(), "warm");
  ASSERT_NE(warm, nullptr);
  EXPECT_NEAR(warm->share, 0.25, 1e-9);
  EXPECT_FALSE(warm->hot);
  EXPECT_EQ(tracker.activeCount(), 1u);
  EXPECT_EQ(tracker.detections(), 1u);
  server.stop();
  uv_loop_close(&loop);
}

// Asks and collects until the tracker has seen traffic (bounded), as the timer would. With
// one worker, the first window with traffic holds all of it.
void collectUntilSeen(HotKeyMonitor& monitor, const HotKeyTracker& tracker) {
  for (auto end = std::chrono::steady_clock::now() + 5s;
       std::chrono::steady_clock::now() < end && tracker.hotSet().total_rps == 0;) {
    monitor.ask();
    std::this_thread::sleep_for(100ms);
    monitor.collect(1.0, 1'000'000);
  }
}

void sendKeyed(uint16_t port, const char* key, int n) {
  for (int i = 0; i < n; ++i) {
    auto r = test::httpExchange(port,
                                test::httpRequest("GET", "/", std::string("X-Key: ") + key + "\r\n"));
    ASSERT_TRUE(r.ok) << r.error;
  }
}

TEST(HotKeyMonitorTest, AReloadKeepsTheCountsAndAppliesTheNewThreshold) {
  const uint16_t port = test::freePort();
  WorkerGroup server(1);   // one worker: each ask's hand-over is the whole window
  auto first = buildSnapshot(headerKeyed(port, 0.5), server.registry(), 1);
  ASSERT_TRUE(first.ok());
  std::string error;
  ASSERT_TRUE(server.start(first.value(), &error)) << error;
  sendKeyed(port, "hot", 15);   // counted under the first snapshot, not handed over yet
  auto second = buildSnapshot(headerKeyed(port, 0.9), server.registry(), 2);
  ASSERT_TRUE(second.ok());
  server.applySnapshot(second.value());
  // The same state: what the workers counted carries over.
  ASSERT_EQ(first.value()->clusters[0].state, second.value()->clusters[0].state);
  sendKeyed(port, "hot", 15);
  sendKeyed(port, "warm", 10);
  uv_loop_t loop;
  uv_loop_init(&loop);
  HotKeyMonitor monitor(&loop, server);
  const HotKeyTracker& tracker = second.value()->clusters[0].state->hot_keys.tracker();
  collectUntilSeen(monitor, tracker);
  const HotKey* hot = findKey(tracker.hotSet(), "hot");
  ASSERT_NE(hot, nullptr);
  EXPECT_NEAR(hot->share, 0.75, 0.05);   // both snapshots' requests
  EXPECT_FALSE(hot->hot);                // 0.75 is under the reloaded threshold, 0.9
  server.stop();
  uv_loop_close(&loop);
}

TEST(HotKeyMonitorTest, TcpConnectionsCountOncePerConnectionByAddress) {
  const uint16_t port = test::freePort();
  Config c = headerKeyed(port, 0.5);
  c.listeners[0].protocol = Protocol::kTcp;
  c.listeners[0].hash[0].kind = "source_ip";
  c.listeners[0].hash[0].name.clear();
  WorkerGroup server(1);
  auto snap = buildSnapshot(std::move(c), server.registry(), 1);
  ASSERT_TRUE(snap.ok()) << snap.errors().front().format();
  std::string error;
  ASSERT_TRUE(server.start(snap.value(), &error)) << error;
  for (int i = 0; i < 5; ++i) {
    test::TcpClient client;
    ASSERT_TRUE(client.connect(port));
    ASSERT_TRUE(client.send("some bytes, not counted"));
    EXPECT_TRUE(client.waitClosed());   // no backend listens: lb closes it
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  HotKeyMonitor monitor(&loop, server);
  const HotKeyTracker& tracker = snap.value()->clusters[0].state->hot_keys.tracker();
  collectUntilSeen(monitor, tracker);
  const HotKey* k = findKey(tracker.hotSet(), "127.0.0.1");
  ASSERT_NE(k, nullptr);
  EXPECT_NEAR(k->share, 1.0, 1e-9);
  server.stop();
  uv_loop_close(&loop);
}

TEST(HotKeyMonitorTest, TheTimerClosesAndLeavesTheLoopClean) {
  WorkerGroup server(1);
  uv_loop_t loop;
  uv_loop_init(&loop);
  HotKeyMonitor monitor(&loop, server);
  monitor.start();
  // Unreferenced: the loop does not wait for it.
  EXPECT_EQ(uv_run(&loop, UV_RUN_NOWAIT), 0);
  monitor.stop();
  monitor.stop();   // idempotent
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

// A snapshot whose "cache" cluster has seen one window of traffic: user:1 at 600/s (hot),
// "q\"uote\n" at 300/s, and 100 other keys at 1/s each.
class HotKeysRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snap_ = testing::buildTestSnapshot(registry_);
    ASSERT_TRUE(snap_);
    const ClusterSnapshot& c = *snap_->findCluster("cache");
    HotKeyState& s = c.state->hot_keys;
    countN(s, 0, hashOf(c, "user:1"), "user:1", 400);
    countN(s, 1, hashOf(c, "user:1"), "user:1", 200);
    countN(s, 1, hashOf(c, "q\"uote\n"), "q\"uote\n", 300);
    for (int i = 0; i < 100; ++i) {
      std::string k = "cold:" + std::to_string(i);
      s.count(0, hashOf(c, k), k);
    }
    s.handOver(0);
    s.handOver(1);
    s.tracker().observe(s.collect(), 1.0, kNowMs);
  }
  static constexpr int64_t kNowMs = 1764658862345;   // 2025-12-02T07:01:02.345Z
  StateRegistry registry_{2};
  std::shared_ptr<const Snapshot> snap_;
};

TEST_F(HotKeysRouteTest, OneClusterAsDesignMdShowsIt) {
  AdminResponse r = hotKeysResponse(*snap_, "cluster=cache");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  JsonValue doc = JsonReader::parse(r.body);
  EXPECT_EQ(doc["cluster"].asString(), "cache");
  EXPECT_EQ(doc["window_s"].asNumber(), 1.0);
  EXPECT_TRUE(doc["floor_rps"].isNumber());
  EXPECT_GT(doc["total_rps"].asNumber(), 0);
  EXPECT_EQ(doc["summary_size"].asNumber(), static_cast<double>(SpaceSaving::kCapacity));
  const auto& keys = doc["keys"].items();
  ASSERT_GE(keys.size(), 2u);
  const JsonValue& top = keys[0];
  EXPECT_EQ(top["key"].asString(), "user:1");
  const ClusterSnapshot& c = *snap_->findCluster("cache");
  char hex[24];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hashOf(c, "user:1")));
  EXPECT_EQ(top["hash_hex"].asString(), hex);
  EXPECT_GT(top["rps"].asNumber(), 0);
  EXPECT_LE(top["rps_lower"].asNumber(), top["rps"].asNumber());
  EXPECT_NEAR(top["share"].asNumber(), 600.0 / 1000.0, 1e-9);
  EXPECT_TRUE(top["hot"].asBool());
  EXPECT_EQ(top["hot_since"].asString(), "2025-12-02T07:01:02.345Z");
  // The owner is the table's, as /ring shows it for the same key.
  JsonValue ring = JsonReader::parse(ringResponse(*snap_, "cluster=cache&key=user:1").body);
  EXPECT_EQ(top["owner"].asString(), ring["owner"].asString());
  ASSERT_EQ(top["serving"].items().size(), 1u);
  EXPECT_EQ(top["serving"][0].asString(), ring["owner"].asString());
  // Escaped as JSON, read back as the bytes lb saw.
  EXPECT_EQ(keys[1]["key"].asString(), "q\"uote\n");
  EXPECT_TRUE(keys[1]["hot"].asBool());   // 0.3 >= the default threshold 0.02
  for (size_t i = 1; i < keys.size(); ++i)
    EXPECT_LE(keys[i]["rps"].asNumber(), keys[i - 1]["rps"].asNumber()) << i;
  // A cold key: tracked, shown, not hot, no hot_since.
  bool saw_cold = false;
  for (const auto& k : keys) {
    if (k["key"].asString().rfind("cold:", 0) != 0) continue;
    saw_cold = true;
    EXPECT_FALSE(k["hot"].asBool());
    EXPECT_TRUE(k["hot_since"].isNull());
  }
  EXPECT_TRUE(saw_cold);
}

// "serving" says where a key's requests go now: past an owner at its bounded-load cap, the
// host a request would spill to; past a down owner, its failover alone.
TEST_F(HotKeysRouteTest, ServingNamesTheSpillPastAnOwnerAtItsCap) {
  const ClusterSnapshot& c = *snap_->findCluster("cache");
  const uint64_t h = hashOf(c, "user:1");
  const uint32_t owner = c.table->pick(h, 0);
  const std::string owner_name = c.backends[owner].config->name;
  auto servingOf = [&] {
    JsonValue doc = JsonReader::parse(hotKeysResponse(*snap_, "cluster=cache").body);
    std::vector<std::string> out;
    for (const auto& k : doc["keys"].items())
      if (k["key"].asString() == "user:1")
        for (const auto& s : k["serving"].items()) out.push_back(s.asString());
    return out;
  };
  ASSERT_EQ(servingOf(), std::vector<std::string>{owner_name});
  // Ten requests in flight on the owner and none elsewhere: over its cap of
  // ceil(ceil(11 * 1.25) * w / 4) (4 or 7), so the next request of the key spills.
  BackendState& st = *c.backends[owner].state;
  for (int i = 0; i < 10; ++i) st.addLive();
  const Pick spill = c.bounded->pick(*c.table, h, *c.loads, 0, Reserve::kNo);
  ASSERT_NE(spill.host, owner);
  ASSERT_EQ(spill.reason, PickReason::kBounded);
  EXPECT_EQ(servingOf(),
            (std::vector<std::string>{owner_name, c.backends[spill.host].config->name}));
  st.dropLive(10);
  EXPECT_EQ(servingOf(), std::vector<std::string>{owner_name});
  // A down owner serves nothing: its failover alone.
  st.healthy = false;
  const Pick failover = c.bounded->pick(*c.table, h, *c.loads, 0, Reserve::kNo);
  ASSERT_NE(failover.host, owner);
  EXPECT_EQ(servingOf(), std::vector<std::string>{c.backends[failover.host].config->name});
  st.healthy = true;
}

TEST_F(HotKeysRouteTest, WithoutAClusterEveryClusterInConfigOrder) {
  AdminResponse r = hotKeysResponse(*snap_, "");
  ASSERT_EQ(r.status, 200);
  JsonValue doc = JsonReader::parse(r.body);
  const auto& clusters = doc["clusters"].items();
  ASSERT_EQ(clusters.size(), 2u);
  EXPECT_EQ(clusters[0]["cluster"].asString(), "cache");
  EXPECT_EQ(clusters[1]["cluster"].asString(), "plain");
  EXPECT_TRUE(clusters[1]["keys"].items().empty());   // no traffic, nothing tracked
  EXPECT_EQ(clusters[1]["total_rps"].asNumber(), 0);
}

TEST_F(HotKeysRouteTest, AnUnknownClusterIs404NamingTheKnownOnes) {
  AdminResponse r = hotKeysResponse(*snap_, "cluster=nope");
  EXPECT_EQ(r.status, 404);
  JsonValue doc = JsonReader::parse(r.body);
  EXPECT_NE(doc["error"].asString().find("nope"), std::string::npos);
  ASSERT_EQ(doc["clusters"].items().size(), 2u);
  EXPECT_EQ(doc["clusters"][0].asString(), "cache");
  EXPECT_EQ(doc["clusters"][1].asString(), "plain");
  EXPECT_EQ(hotKeysResponse(*snap_, "cluster=%zz").status, 400);
}

TEST_F(HotKeysRouteTest, MetricsShowRanksAndCountsNeverKeys) {
  auto families = collectSnapshotMetrics(*snap_);
  auto active = testing::findSample(families, "lb_hotkeys_active", {{"cluster", "cache"}});
  ASSERT_NE(active, nullptr);
  EXPECT_EQ(active->gauge.value, 2);   // user:1 and the quote key
  auto detections =
      testing::findSample(families, "lb_hotkey_detections_total", {{"cluster", "cache"}});
  ASSERT_NE(detections, nullptr);
  EXPECT_EQ(detections->counter.value, 2);
  auto rank1 = testing::findSample(families, "lb_hotkey_share_ratio",
                                   {{"cluster", "cache"}, {"rank", "1"}});
  ASSERT_NE(rank1, nullptr);
  EXPECT_NEAR(rank1->gauge.value, 0.6, 1e-9);
  for (int rank = 1; rank <= 10; ++rank) {
    auto plain = testing::findSample(families, "lb_hotkey_share_ratio",
                                     {{"cluster", "plain"}, {"rank", std::to_string(rank)}});
    ASSERT_NE(plain, nullptr) << rank;
    EXPECT_EQ(plain->gauge.value, 0) << rank;   // nothing tracked: 0, not absent
  }
  EXPECT_EQ(testing::findSample(families, "lb_hotkey_share_ratio",
                                {{"cluster", "cache"}, {"rank", "11"}}),
            nullptr);
  for (const auto& f : families)
    for (const auto& m : f.metric)
      for (const auto& l : m.label) {
        EXPECT_NE(l.value, "user:1") << f.name;
        EXPECT_NE(l.name, "key") << f.name;
      }
}

}  // namespace
}  // namespace lb
