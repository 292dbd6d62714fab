// CommandPicks, the cache commands' admission: each host a command's keys land on carries one
// unit of live load from the pick, the same compare-and-swap as BackendAttempt's, every key's
// pick is counted, a host the command already holds takes its later keys without a second
// unit, and release() gives back the units no fragment took. No sockets: the server
// connection's half (the fragment's unit back when it leaves the queue) is covered by
// tests/integration/cache/cache_bounded_cap_test.cc.
#include "lb/runtime/backend_attempt.h"

#include <gtest/gtest.h>

#include <string>

#include "lb/runtime/worker_env.h"
#include "tests/support/pick_test_config.h"

namespace lb {
namespace {

Config picksConfig(size_t backends, uint32_t hash_balance_factor) {
  Config c = pickTestConfig(backends);
  c.clusters[0].hash_balance_factor = hash_balance_factor;
  return c;
}

class CommandPicksTest : public ::testing::Test {
 protected:
  void build(size_t backends, uint32_t hash_balance_factor) {
    auto r = buildSnapshot(picksConfig(backends, hash_balance_factor), registry_, 1);
    ASSERT_TRUE(r.ok()) << r.errors().front().format();
    snap_ = r.value();
    picks_.reserveHosts(backends);
  }
  const ClusterSnapshot& cluster() const { return snap_->clusters[0]; }
  int64_t live(uint32_t host) const { return cluster().backends[host].state->live.load(); }
  uint64_t picked(uint32_t host, PickReason reason) const {
    return cluster().backends[host].state->per_worker[0].picks[static_cast<int>(reason)].get();
  }
  // Two hashes whose owners differ.
  void twoOwners(uint64_t* a, uint64_t* b) const {
    *a = 0x1234abcd5678ef90ull;
    const uint32_t owner = cluster().table->pick(*a, 0);
    for (uint64_t h = 1;; ++h) {
      if (cluster().table->pick(h, 0) != owner) {
        *b = h;
        return;
      }
    }
  }

  StateRegistry registry_{1};
  std::shared_ptr<const Snapshot> snap_;
  ProtocolTable protocols_{};
  uv_loop_t* no_loop_ = nullptr;   // picking never touches the loop
  WorkerEnv env_{no_loop_, 0, protocols_};
  CommandPicks picks_;
};

TEST_F(CommandPicksTest, AHostHeldByTheCommandTakesItsLaterKeysWithoutASecondUnit) {
  build(4, 125);
  picks_.begin(env_, *snap_->listeners[0].config, cluster());
  uint32_t first = 0, again = 0;
  ASSERT_TRUE(picks_.pickForKey(0x1234abcd5678ef90ull, &first));
  ASSERT_TRUE(picks_.pickForKey(0x1234abcd5678ef90ull, &again));
  EXPECT_EQ(again, first) << "the command's own unit must not push its next key elsewhere";
  EXPECT_EQ(live(first), 1);
  EXPECT_EQ(picked(first, PickReason::kOwner), 2u) << "every key's pick is counted";
  EXPECT_TRUE(picks_.handOver(first));
  EXPECT_FALSE(picks_.handOver(first)) << "one unit, one fragment";
  picks_.release();
  EXPECT_EQ(live(first), 1) << "the fragment's unit is the server connection's to give back";
  cluster().backends[first].state->dropLive();
}

TEST_F(CommandPicksTest, UnitsNoFragmentTookGoBackAtRelease) {
  build(4, 0);
  uint64_t a = 0, b = 0;
  twoOwners(&a, &b);
  picks_.begin(env_, *snap_->listeners[0].config, cluster());
  uint32_t ha = 0, hb = 0;
  ASSERT_TRUE(picks_.pickForKey(a, &ha));
  ASSERT_TRUE(picks_.pickForKey(b, &hb));
  ASSERT_NE(ha, hb);
  EXPECT_EQ(live(ha), 1);
  EXPECT_EQ(live(hb), 1);
  EXPECT_TRUE(picks_.handOver(ha));
  picks_.release();   // the command was refused after its picks (CROSSSLOT, say)
  EXPECT_EQ(live(ha), 1);
  EXPECT_EQ(live(hb), 0);
  EXPECT_EQ(cluster().loads->totalLoad(), 1u);
  picks_.release();   // idempotent
  EXPECT_EQ(live(ha), 1);
  cluster().backends[ha].state->dropLive();
}

TEST_F(CommandPicksTest, AHostAtItsCapSendsTheKeyOnAsBounded) {
  build(4, 125);
  const uint64_t hash = 0x1234abcd5678ef90ull;
  const uint32_t owner = cluster().table->pick(hash, 0);
  // total 3, all on the owner: its cap is ceil(ceil(4 * 1.25) / 4) = 2, so it is over.
  for (int i = 0; i < 3; ++i) cluster().backends[owner].state->addLive();
  picks_.begin(env_, *snap_->listeners[0].config, cluster());
  uint32_t host = 0;
  ASSERT_TRUE(picks_.pickForKey(hash, &host));
  EXPECT_NE(host, owner);
  EXPECT_EQ(live(host), 1);
  EXPECT_EQ(picked(host, PickReason::kBounded), 1u);
  picks_.release();
  EXPECT_EQ(live(host), 0);
  cluster().backends[owner].state->dropLive(3);
}

}  // namespace
}  // namespace lb
