// BackendAttempt with hot_keys.spread: a key in the hot set the worker adopted spreads its
// first pick over the least loaded of its first R hosts (reason kSpread, counted once in
// lb_hotkey_requests_total), a cold key or a worker that has not adopted the set keeps the
// owner, a retry walks on from the spread pick's position, and with bounded loads a spread
// host at its cap is skipped. No sockets: the picking half only.
#include <gtest/gtest.h>

#include "lb/runtime/backend_attempt.h"
#include "lb/runtime/worker_env.h"
#include "tests/support/pick_test_config.h"

namespace lb {
namespace {

class BackendAttemptSpreadTest : public ::testing::Test {
 protected:
  void build(uint32_t spread, uint32_t balance_factor = 0) {
    Config c = pickTestConfig(6);
    c.clusters[0].retries = 2;
    c.clusters[0].hot_keys.spread = spread;
    c.clusters[0].hash_balance_factor = balance_factor;
    auto r = buildSnapshot(c, registry_, 1);
    ASSERT_TRUE(r.ok()) << r.errors().front().format();
    snap_ = r.value();
  }
  const ClusterSnapshot& cluster() const { return snap_->clusters[0]; }
  const ListenerSnapshot& listener() const { return snap_->listeners[0]; }
  HotKeyState& hotKeys() const { return cluster().state->hot_keys; }
  BackendState& state(uint32_t host) const { return *cluster().backends[host].state; }
  uint32_t order(uint32_t attempt) const { return cluster().table->pick(kHot, attempt); }
  uint32_t hostOf(const BackendAttempt& a) const {
    return static_cast<uint32_t>(a.backend() - cluster().backends.data());
  }
  uint64_t picks(uint32_t host, PickReason reason) const {
    return state(host).per_worker[0].picks[static_cast<int>(reason)].get();
  }
  // kHot becomes hot in the tracker, is published, and worker 0 (this thread) adopts it.
  void makeHotForWorker0() {
    SpaceSaving s;
    for (int i = 0; i < 500; ++i) s.add(kHot, "hot");
    for (uint64_t i = 0; i < 100; ++i) s.add(kCold + i, "cold");
    hotKeys().tracker().observe(s, 1.0, 1000);
    ASSERT_TRUE(hotKeys().publishHotSet());
    hotKeys().adoptHotSet(0);
  }

  static constexpr uint64_t kHot = 0x5eed00001234abcdull;
  static constexpr uint64_t kCold = 0x0c01d00000000000ull;
  StateRegistry registry_{2};
  std::shared_ptr<const Snapshot> snap_;
  ProtocolTable protocols_{};
  uv_loop_t* no_loop_ = nullptr;   // picking never touches the loop
  WorkerEnv env0_{no_loop_, 0, protocols_};
};

TEST_F(BackendAttemptSpreadTest, OnlyAHotKeyOnAWorkerThatAdoptedTheSetSpreads) {
  build(3);
  EXPECT_EQ(cluster().spreadFor(0, kHot), 0u) << "nothing hot yet";
  makeHotForWorker0();
  EXPECT_EQ(cluster().spreadFor(0, kHot), 3u);
  EXPECT_EQ(cluster().spreadFor(0, kCold), 0u);
  EXPECT_EQ(cluster().spreadFor(1, kHot), 0u) << "worker 1 has not adopted the set";
  build(0);   // the same cluster state, spread off: hot, but nothing spreads
  EXPECT_TRUE(hotKeys().isHot(0, kHot));
  EXPECT_EQ(cluster().spreadFor(0, kHot), 0u);
}

TEST_F(BackendAttemptSpreadTest, TheLeastLoadedOfTheFirstThreeThenRetriesWalkOn) {
  build(3);
  makeHotForWorker0();
  // The owner and the second host each carry a request: the third of the order is idle.
  state(order(0)).addLive();
  state(order(1)).addLive();
  BackendAttempt a;
  a.begin(env0_, listener(), cluster(), kHot, cluster().spreadFor(0, kHot));
  ASSERT_TRUE(a.pickFirst());
  EXPECT_EQ(hostOf(a), order(2));
  EXPECT_EQ(picks(order(2), PickReason::kSpread), 1u);
  EXPECT_EQ(hotKeys().pathCount(HotKeyPath::kSpread), 1u);
  EXPECT_EQ(state(order(2)).live.load(), 1) << "the pick holds one unit";
  // Its connect fails: the retry is the next host of the same order, not a spread again.
  ASSERT_TRUE(a.pickNext());
  EXPECT_EQ(hostOf(a), order(3));
  EXPECT_EQ(picks(order(3), PickReason::kFailover), 1u);
  EXPECT_EQ(state(order(2)).live.load(), 0);
  EXPECT_EQ(hotKeys().pathCount(HotKeyPath::kSpread), 1u) << "a retry is not another spread";
  a.release();
  // An idle fleet: every tie goes to the owner, still counted as a spread pick.
  state(order(0)).dropLive();
  state(order(1)).dropLive();
  a.begin(env0_, listener(), cluster(), kHot, cluster().spreadFor(0, kHot));
  ASSERT_TRUE(a.pickFirst());
  EXPECT_EQ(hostOf(a), order(0));
  EXPECT_EQ(picks(order(0), PickReason::kSpread), 1u);
  a.release();
  // Without a spread (a POST: the session passes 0) the owner, however loaded.
  state(order(0)).addLive();
  a.begin(env0_, listener(), cluster(), kHot, 0);
  ASSERT_TRUE(a.pickFirst());
  EXPECT_EQ(hostOf(a), order(0));
  EXPECT_EQ(picks(order(0), PickReason::kOwner), 1u);
  a.release();
  state(order(0)).dropLive();
}

TEST_F(BackendAttemptSpreadTest, BoundedLoadsSkipASpreadHostAtItsCap) {
  build(2, 125);
  makeHotForWorker0();
  // Six hosts, 5 in flight: slots ceil(6 * 1.25) = 8, each cap ceil(8 / 6) = 2. The owner
  // at 2 (its cap) and the second host at 1: the second takes it, under its cap.
  state(order(0)).addLive();
  state(order(0)).addLive();
  state(order(1)).addLive();
  state(order(4)).addLive();
  state(order(5)).addLive();
  BackendAttempt a;
  a.begin(env0_, listener(), cluster(), kHot, cluster().spreadFor(0, kHot));
  ASSERT_TRUE(a.pickFirst());
  EXPECT_EQ(hostOf(a), order(1));
  EXPECT_EQ(picks(order(1), PickReason::kSpread), 1u);
  EXPECT_EQ(state(order(1)).live.load(), 2) << "reserved under the cap, not added twice";
  a.release();
  // Both spread hosts at their cap: the ordinary bounded pick walks past them.
  state(order(1)).addLive();   // 2 and 2; 6 in flight: caps ceil(ceil(7 * 1.25) / 6) = 2
  a.begin(env0_, listener(), cluster(), kHot, cluster().spreadFor(0, kHot));
  ASSERT_TRUE(a.pickFirst());
  EXPECT_EQ(hostOf(a), order(2));
  EXPECT_EQ(picks(order(2), PickReason::kBounded), 1u);
  EXPECT_EQ(hotKeys().pathCount(HotKeyPath::kSpread), 1u);
  a.release();
}

}  // namespace
}  // namespace lb
