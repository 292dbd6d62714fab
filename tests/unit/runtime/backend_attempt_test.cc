// BackendAttempt, the pick-and-retry walk every protocol's session uses: keyed walks follow
// the selector's preference order and never try a host twice, retries stop at the cluster's
// `retries`, the live load is held exactly from pick to release, picks are counted by reason,
// and keyless round_robin rotates over the hosts in table order, per worker, skipping hosts
// that are down. No sockets: only the picking half (connect is covered by the TCP and HTTP
// session tests).
#include "lb/runtime/backend_attempt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/runtime/worker_env.h"
#include "tests/support/pick_test_config.h"

namespace lb {
namespace {

Config attemptConfig(size_t backends, uint32_t retries, OnMissingKey on_missing_key) {
  Config c = pickTestConfig(backends);
  c.clusters[0].retries = retries;
  c.listeners[0].on_missing_key = on_missing_key;
  return c;
}

class BackendAttemptTest : public ::testing::Test {
 protected:
  void build(size_t backends, uint32_t retries,
             OnMissingKey on_missing_key = OnMissingKey::kRoundRobin) {
    auto r = buildSnapshot(attemptConfig(backends, retries, on_missing_key), registry_, 1);
    ASSERT_TRUE(r.ok()) << r.errors().front().format();
    snap_ = r.value();
  }
  const ClusterSnapshot& cluster() const { return snap_->clusters[0]; }
  const ListenerSnapshot& listener() const { return snap_->listeners[0]; }
  BackendState& state(uint32_t host) const { return *cluster().backends[host].state; }
  uint32_t hostOf(const BackendAttempt& a) const {
    return static_cast<uint32_t>(a.backend() - cluster().backends.data());
  }
  uint64_t picks(uint32_t host, PickReason reason, unsigned worker = 0) const {
    return state(host).per_worker[worker].picks[static_cast<int>(reason)].get();
  }

  // Hosts of n keyless requests on `env`, each released before the next.
  std::vector<uint32_t> rotate(WorkerEnv& env, int n) {
    std::vector<uint32_t> out;
    BackendAttempt a;
    for (int i = 0; i < n; ++i) {
      a.beginKeyless(env, listener(), cluster());
      EXPECT_TRUE(a.pickFirst());
      out.push_back(hostOf(a));
      a.release();
    }
    return out;
  }

  StateRegistry registry_{2};
  std::shared_ptr<const Snapshot> snap_;
  ProtocolTable protocols_{};
  uv_loop_t* no_loop_ = nullptr;   // picking never touches the loop
  WorkerEnv env0_{no_loop_, 0, protocols_};
  WorkerEnv env1_{no_loop_, 1, protocols_};
};

TEST_F(BackendAttemptTest, KeyedWalkFollowsThePreferenceOrderUntilTheRetriesAreSpent) {
  build(4, 2);
  const uint64_t hash = 0x1234abcd5678ef90ull;
  BackendAttempt a;
  a.begin(env0_, listener(), cluster(), hash);
  ASSERT_TRUE(a.pickFirst());
  EXPECT_EQ(hostOf(a), cluster().table->pick(hash, 0));
  ASSERT_TRUE(a.pickNext());
  EXPECT_EQ(hostOf(a), cluster().table->pick(hash, 1));
  ASSERT_TRUE(a.pickNext());
  EXPECT_EQ(hostOf(a), cluster().table->pick(hash, 2));
  EXPECT_EQ(a.retriesUsed(), 2u);
  EXPECT_FALSE(a.pickNext()) << "retries = 2: three attempts in all";
  EXPECT_EQ(picks(cluster().table->pick(hash, 0), PickReason::kOwner), 1u);
  EXPECT_EQ(picks(cluster().table->pick(hash, 1), PickReason::kFailover), 1u);
  EXPECT_EQ(picks(cluster().table->pick(hash, 2), PickReason::kFailover), 1u);
}

TEST_F(BackendAttemptTest, RetriesNeverTryAHostTwice) {
  build(2, 5);
  BackendAttempt a;
  a.begin(env0_, listener(), cluster(), 42);
  ASSERT_TRUE(a.pickFirst());
  const uint32_t first = hostOf(a);
  ASSERT_TRUE(a.pickNext());
  EXPECT_NE(hostOf(a), first);
  EXPECT_FALSE(a.pickNext()) << "two hosts, both tried: nothing left despite retries = 5";
}

TEST_F(BackendAttemptTest, RetriesSkipADownHostWithoutSpendingAnAttemptOnIt) {
  build(3, 1);
  const uint64_t hash = 7;
  state(cluster().table->pick(hash, 1)).healthy.store(false);
  BackendAttempt a;
  a.begin(env0_, listener(), cluster(), hash);
  ASSERT_TRUE(a.pickFirst());
  EXPECT_EQ(hostOf(a), cluster().table->pick(hash, 0));
  ASSERT_TRUE(a.pickNext());
  EXPECT_EQ(hostOf(a), cluster().table->pick(hash, 2));
}

TEST_F(BackendAttemptTest, LiveLoadIsHeldFromPickToRelease) {
  build(3, 2);
  BackendAttempt a;
  a.begin(env0_, listener(), cluster(), 99);
  ASSERT_TRUE(a.pickFirst());
  const uint32_t first = hostOf(a);
  EXPECT_EQ(state(first).live.load(), 1);
  ASSERT_TRUE(a.pickNext());
  EXPECT_EQ(state(first).live.load(), 0) << "a failed attempt gives its unit back";
  EXPECT_EQ(state(hostOf(a)).live.load(), 1);
  a.pickSameAgain();   // held already: no second unit
  EXPECT_EQ(state(hostOf(a)).live.load(), 1);
  a.release();
  a.release();
  EXPECT_EQ(state(hostOf(a)).live.load(), 0);
  a.pickSameAgain();   // the same host once more, not a new pick
  EXPECT_EQ(state(hostOf(a)).live.load(), 1);
  EXPECT_EQ(picks(hostOf(a), PickReason::kFailover), 1u);
}

TEST_F(BackendAttemptTest, NoUsableHostMeansNoPickAndNoLoad) {
  build(2, 2);
  state(0).healthy.store(false);
  state(1).healthy.store(false);
  BackendAttempt a;
  a.begin(env0_, listener(), cluster(), 5);
  EXPECT_FALSE(a.pickFirst());
  EXPECT_EQ(a.backend(), nullptr);
  EXPECT_EQ(state(0).live.load() + state(1).live.load(), 0);
}

TEST_F(BackendAttemptTest, RoundRobinVisitsTheHostsInTableOrder) {
  build(3, 2);
  EXPECT_EQ(rotate(env0_, 7), (std::vector<uint32_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(picks(0, PickReason::kOwner), 3u);
  EXPECT_EQ(picks(1, PickReason::kOwner), 2u);
}

TEST_F(BackendAttemptTest, RoundRobinSkipsADownHostSoTheOthersAlternate) {
  build(3, 2);
  state(1).healthy.store(false);
  EXPECT_EQ(rotate(env0_, 6), (std::vector<uint32_t>{0, 2, 0, 2, 0, 2}));
}

TEST_F(BackendAttemptTest, RoundRobinRetryTakesTheNextHostAndTheRotationGoesOnAfterIt) {
  build(3, 2);
  BackendAttempt a;
  a.beginKeyless(env0_, listener(), cluster());
  ASSERT_TRUE(a.pickFirst());
  EXPECT_EQ(hostOf(a), 0u);
  ASSERT_TRUE(a.pickNext());   // host 0 refused
  EXPECT_EQ(hostOf(a), 1u);
  a.release();
  EXPECT_EQ(rotate(env0_, 2), (std::vector<uint32_t>{2, 0}));
}

TEST_F(BackendAttemptTest, EachWorkerRotatesOnItsOwn) {
  build(3, 2);
  std::vector<uint32_t> w0, w1;
  for (int i = 0; i < 3; ++i) {
    w0.push_back(rotate(env0_, 1)[0]);
    w1.push_back(rotate(env1_, 1)[0]);
  }
  EXPECT_EQ(w0, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(w1, (std::vector<uint32_t>{0, 1, 2}));
}

TEST_F(BackendAttemptTest, RandomKeylessRequestsReachEveryHost) {
  build(3, 2, OnMissingKey::kRandom);
  std::vector<int> seen(3, 0);
  BackendAttempt a;
  for (int i = 0; i < 300; ++i) {
    a.beginKeyless(env0_, listener(), cluster());
    ASSERT_TRUE(a.pickFirst());
    ++seen[hostOf(a)];
  }
  a.release();
  for (int h = 0; h < 3; ++h) EXPECT_GT(seen[h], 50) << "host " << h;
}

}  // namespace
}  // namespace lb
