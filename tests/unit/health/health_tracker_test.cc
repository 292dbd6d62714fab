// HealthTracker with a fake clock: check results and worker failure reports in, flags out.
// Checks take a backend down after `fall` and bring it back after `rise`; a down backend's keys
// walk on to the next host of their own order and no other key moves; ejections double and
// stop at max_ejected_percent; an ejection's end waits for `rise` passes when the cluster has
// checks; below panic_threshold every pick routes by the table; a reload keeps it all.
#include "lb/health/health_tracker.h"

#include <gtest/gtest.h>

#include <string>

namespace lb {
namespace {

Config trackerConfig(size_t backends, bool health, bool outlier, uint32_t panic = 50) {
  Config c;
  ClusterConfig cluster;
  cluster.name = "cache";
  cluster.selector = "ring_hash";
  cluster.panic_threshold = panic;
  for (size_t i = 0; i < backends; ++i)
    cluster.backends.push_back({"b" + std::to_string(i),
                                "127.0.0.1:" + std::to_string(9001 + i), 1, "", "", {}});
  if (health) {
    HealthConfig h;
    h.type = HealthCheckType::kHttp;
    h.interval = Duration(200);
    h.timeout = Duration(100);
    h.rise = 2;
    h.fall = 3;
    cluster.health = h;
  }
  if (outlier) {
    OutlierConfig o;
    o.consecutive_failures = 3;
    o.base_ejection = Duration(1000);
    o.max_ejection = Duration(10000);
    o.max_ejected_percent = 50;
    cluster.outlier = o;
  }
  c.clusters.push_back(cluster);
  return c;
}

class HealthTrackerTest : public ::testing::Test {
 protected:
  void build(size_t backends, bool health, bool outlier, uint32_t panic = 50) {
    auto r = buildSnapshot(trackerConfig(backends, health, outlier, panic), registry_, ++gen_);
    ASSERT_TRUE(r.ok()) << r.errors().front().format();
    snap_ = r.value();
    tracker_.reconcile(snap_);
  }
  // The same with checks and a one-minute handover window.
  void buildWithHandover(size_t backends) {
    Config config = trackerConfig(backends, true, false);
    HandoverConfig h;
    h.window = Duration(60000);
    config.clusters[0].handover = h;
    auto r = buildSnapshot(config, registry_, ++gen_);
    ASSERT_TRUE(r.ok());
    snap_ = r.value();
    tracker_.reconcile(snap_);
  }
  // `backends` members, then one fewer: a cluster behind a redis listener (it reads
  // through) with checks, a one-minute handover window and panic_threshold `panic`, whose
  // removed backend stays as leaving (lb/routing/handover.h).
  void buildLeaving(size_t backends, uint32_t panic) {
    std::shared_ptr<const Snapshot> was;
    for (size_t n : {backends, backends - 1}) {
      Config config = trackerConfig(n, true, false, panic);
      HandoverConfig h;
      h.window = Duration(60000);
      config.clusters[0].handover = h;
      ListenerConfig l;
      l.name = "cache";
      l.listen = "127.0.0.1:6379";
      l.cluster = "cache";
      l.protocol = Protocol::kRedis;
      config.listeners.push_back(l);
      auto r = buildSnapshot(config, registry_, ++gen_, nullptr, nullptr, was.get());
      ASSERT_TRUE(r.ok());
      was = r.value();
    }
    snap_ = was;
    tracker_.reconcile(snap_);
  }
  const ClusterSnapshot& cluster() const { return snap_->clusters[0]; }
  BackendState& state(size_t i) const { return *cluster().backends[i].state; }
  void check(size_t i, CheckResult r, int times = 1) {
    for (int k = 0; k < times; ++k) tracker_.recordCheck(&state(i), r, "detail", 0.001, 1.0);
  }
  // Failures reported by worker `w` for backend i, as a session would.
  void fail(size_t i, int times, unsigned w = 0) {
    for (int k = 0; k < times; ++k)
      noteBackendFailure(state(i).per_worker[w], BackendFailure::kServerError);
  }
  bool healthy(size_t i) const { return state(i).healthy.load(); }
  bool panic() const { return cluster().state->panic.load(); }

  StateRegistry registry_{2};
  uint64_t gen_ = 0;
  std::shared_ptr<const Snapshot> snap_;
  HealthTracker tracker_;
};

// Where the next request for the key hashing to `h` goes, as the proxy picks it.
Pick pickOf(const ClusterSnapshot& c, uint64_t h) {
  Pick p;
  c.pick(h, PickContext{}, &p);
  return p;
}

TEST_F(HealthTrackerTest, ChecksTakeABackendDownAfterFallAndBringItBackAfterRise) {
  build(4, true, false);
  check(1, CheckResult::kTimeout, 2);
  EXPECT_TRUE(healthy(1));
  EXPECT_TRUE(tracker_.takeCheckedDown().empty());
  check(1, CheckResult::kTimeout);
  EXPECT_FALSE(healthy(1));
  EXPECT_EQ(state(1).health.status, HealthStatus::kDown);
  EXPECT_EQ(state(1).health.reason, "3 checks timed out after 100ms");
  EXPECT_EQ(state(1).health.transitions[1].get(), 1u);
  EXPECT_EQ(state(1).health.checks[static_cast<int>(CheckResult::kTimeout)].get(), 3u);
  auto down = tracker_.takeCheckedDown();
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].get(), &state(1));

  check(1, CheckResult::kOk);
  EXPECT_FALSE(healthy(1));
  check(1, CheckResult::kOk);
  EXPECT_TRUE(healthy(1));
  EXPECT_EQ(state(1).health.reason, "2 checks passed");
  EXPECT_EQ(state(1).health.transitions[0].get(), 1u);
  EXPECT_TRUE(state(1).health.checked);
  EXPECT_EQ(state(1).health.last_result, CheckResult::kOk);
}

// With a handover window a return is a change of owners: the backend's keys come back to it
// over the window (the pick's return step), so right after the return they stay with the
// host that served them meanwhile. Without one, nothing is stamped and they return at once.
TEST_F(HealthTrackerTest, AReturnWithAHandoverWindowRampsTheBackendsKeysBack) {
  ASSERT_NO_FATAL_FAILURE(buildWithHandover(4));
  check(1, CheckResult::kTimeout, 3);
  ASSERT_FALSE(healthy(1));
  EXPECT_EQ(state(1).returned_at_ms.load(), 0) << "going down is not a return";
  check(1, CheckResult::kOk, 2);
  ASSERT_TRUE(healthy(1));
  const int64_t back = state(1).returned_at_ms.load();
  EXPECT_NEAR(static_cast<double>(back), static_cast<double>(wallClockMs()), 5000);
  EXPECT_EQ(cluster().state->returns_until_ms.load(), back + 60000);
  int owned = 0, held = 0;
  for (uint64_t k = 0; k < 4000; ++k) {
    const uint64_t hash = k * 0x9e3779b97f4a7c15ULL;
    if (cluster().hostAt(hash, 0) != 1) {
      EXPECT_EQ(pickOf(cluster(), hash).host, cluster().hostAt(hash, 0)) << "not its key";
      continue;
    }
    ++owned;
    const Pick p = pickOf(cluster(), hash);
    if (p.host != 1) {
      ++held;
      EXPECT_EQ(p.host, cluster().hostAt(hash, 1)) << "the host that served it meanwhile";
    }
  }
  ASSERT_GT(owned, 500);
  EXPECT_GT(held, owned * 9 / 10) << "seconds into a minute's window, nearly all still held";

  // The window over: every key at its owner again, and the cluster's mark cleared.
  state(1).returned_at_ms.store(back - 120000);
  cluster().state->returns_until_ms.store(back - 60000);
  for (uint64_t k = 0; k < 400; ++k) {
    const uint64_t hash = k * 0x9e3779b97f4a7c15ULL;
    EXPECT_EQ(pickOf(cluster(), hash).host, cluster().hostAt(hash, 0));
  }
  EXPECT_EQ(cluster().state->returns_until_ms.load(), 0);
}

TEST_F(HealthTrackerTest, AReturnWithoutAHandoverWindowStampsNothing) {
  build(4, true, false);
  check(1, CheckResult::kTimeout, 3);
  check(1, CheckResult::kOk, 2);
  ASSERT_TRUE(healthy(1));
  EXPECT_EQ(state(1).returned_at_ms.load(), 0);
  EXPECT_EQ(cluster().state->returns_until_ms.load(), 0);
}

// A check that learns the server's identity: another process answering while the backend
// stayed up is a restart its checks did not see (quicker than fall): counted, and with a
// handover a return. The first identity, and the same one again, are not.
TEST_F(HealthTrackerTest, ANewIdentityWithoutADownIsARestartAndAReturn) {
  ASSERT_NO_FATAL_FAILURE(buildWithHandover(4));
  auto identified = [&](const char* identity) {
    tracker_.recordCheck(&state(1), CheckResult::kOk, "stats", 0.001, 1.0, identity);
  };
  identified("pid 10 started 1000");
  identified("pid 10 started 1000");
  EXPECT_EQ(state(1).health.restarts.get(), 0u);
  EXPECT_EQ(state(1).returned_at_ms.load(), 0);
  check(1, CheckResult::kTimeout, 1);   // one failure: still up (fall is 3)
  identified("pid 11 started 1030");
  ASSERT_TRUE(healthy(1));
  EXPECT_EQ(state(1).health.restarts.get(), 1u);
  EXPECT_NEAR(static_cast<double>(state(1).returned_at_ms.load()),
              static_cast<double>(wallClockMs()), 5000);
  EXPECT_GT(cluster().state->returns_until_ms.load(), wallClockMs());
  EXPECT_EQ(state(1).health.transitions[1].get(), 0u) << "it never went down";
  // A check without an identity (another check type, an INFO refused) changes nothing.
  tracker_.recordCheck(&state(1), CheckResult::kOk, "+PONG", 0.001, 1.0, "");
  identified("pid 11 started 1030");
  EXPECT_EQ(state(1).health.restarts.get(), 1u);
}

TEST_F(HealthTrackerTest, AMixedRunOfFailuresNamesTheLastOne) {
  build(4, true, false);
  check(2, CheckResult::kTimeout);
  tracker_.recordCheck(&state(2), CheckResult::kFail, "status 503, expected 200", 0.001, 1.0);
  tracker_.recordCheck(&state(2), CheckResult::kFail, "status 503, expected 200", 0.001, 1.0);
  EXPECT_FALSE(healthy(2));
  EXPECT_EQ(state(2).health.reason, "3 checks failed (last: status 503, expected 200)");
}

TEST_F(HealthTrackerTest, ADownBackendMovesOnlyItsOwnKeysToTheNextHostOfTheirOrder) {
  build(4, true, false);
  const ClusterSnapshot& c = cluster();
  std::vector<uint32_t> before;
  for (uint64_t k = 0; k < 5000; ++k) before.push_back(pickOf(c, k * 0x9E3779B97F4A7C15ull).host);
  check(1, CheckResult::kTimeout, 3);
  ASSERT_FALSE(healthy(1));
  for (uint64_t k = 0; k < 5000; ++k) {
    const uint64_t h = k * 0x9E3779B97F4A7C15ull;
    const uint32_t now = pickOf(c, h).host;
    if (before[k] != 1)
      EXPECT_EQ(now, before[k]) << "a key of a healthy host moved";
    else
      EXPECT_EQ(now, c.table->pick(h, 1)) << "a down host's key goes to its next host";
  }
  check(1, CheckResult::kOk, 2);
  for (uint64_t k = 0; k < 5000; ++k)
    EXPECT_EQ(pickOf(c, k * 0x9E3779B97F4A7C15ull).host, before[k]) << "every key is back";
}

TEST_F(HealthTrackerTest, UnderThePanicThresholdEveryPickRoutesByTheTable) {
  build(4, true, false);
  const ClusterSnapshot& c = cluster();
  check(0, CheckResult::kFail, 3);
  check(1, CheckResult::kFail, 3);
  EXPECT_FALSE(panic()) << "2 of 4 healthy is 50%: not under 50";
  EXPECT_EQ(tracker_.takeCheckedDown().size(), 2u);
  check(2, CheckResult::kFail, 3);
  EXPECT_TRUE(panic()) << "1 of 4 is 25%";
  EXPECT_TRUE(tracker_.takeCheckedDown().empty()) << "in panic the down host is still used";
  for (uint64_t k = 0; k < 2000; ++k) {
    const uint64_t h = k * 0x9E3779B97F4A7C15ull;
    const Pick p = pickOf(c, h);
    EXPECT_EQ(p.host, c.table->pick(h, 0));
    EXPECT_EQ(p.reason, PickReason::kOwner);
  }
  check(2, CheckResult::kOk, 2);
  EXPECT_FALSE(panic());
  for (uint64_t k = 0; k < 2000; ++k) {
    const uint64_t h = k * 0x9E3779B97F4A7C15ull;
    const uint32_t host = pickOf(c, h).host;
    EXPECT_TRUE(host == 2 || host == 3) << "out of panic, health counts again";
  }
}

// A leaving backend is checked, but the members alone say whether the cluster is in panic,
// and its coming back is no return: no key of the table is its.
TEST_F(HealthTrackerTest, ALeavingBackendCountsNeitherForPanicNorAsAReturn) {
  ASSERT_NO_FATAL_FAILURE(buildLeaving(4, 70));
  ASSERT_EQ(cluster().hostCount(), 3u);
  ASSERT_EQ(cluster().backends.size(), 4u);
  check(3, CheckResult::kFail, 3);
  EXPECT_FALSE(healthy(3)) << "checked like a member";
  EXPECT_FALSE(panic()) << "3 of 3 members healthy";
  check(3, CheckResult::kOk, 2);
  ASSERT_TRUE(healthy(3));
  EXPECT_EQ(state(3).returned_at_ms.load(), 0);
  EXPECT_EQ(cluster().state->returns_until_ms.load(), 0);
  check(0, CheckResult::kFail, 3);
  EXPECT_TRUE(panic()) << "2 of 3 members is under 70%, whatever the leaving one says";
}

TEST_F(HealthTrackerTest, PanicOffRoutesNothingWhenEveryBackendIsDown) {
  build(2, true, false, 0);
  check(0, CheckResult::kFail, 3);
  check(1, CheckResult::kFail, 3);
  EXPECT_FALSE(panic());
  EXPECT_FALSE(cluster().loads->usable(pickOf(cluster(), 42).host));
}

TEST_F(HealthTrackerTest, ConsecutiveFailuresEjectForBaseThenTwiceAsLong) {
  build(4, false, true);
  uint64_t now = 10000;
  fail(1, 2);
  tracker_.sweep(now);
  EXPECT_TRUE(healthy(1));
  fail(1, 1, 1);   // the third, on another worker: runs add up
  tracker_.sweep(now);
  EXPECT_FALSE(healthy(1));
  EXPECT_EQ(state(1).health.status, HealthStatus::kEjected);
  EXPECT_EQ(state(1).health.ejection_ms, 1000u);
  EXPECT_EQ(state(1).health.ejections.get(), 1u);
  EXPECT_EQ(state(1).health.reason, "ejected for 1s after 3 consecutive failures (3 5xx)");
  EXPECT_TRUE(tracker_.takeCheckedDown().empty()) << "ejection leaves open connections alone";
  tracker_.sweep(now + 999);
  EXPECT_FALSE(healthy(1));
  now += 1000;
  tracker_.sweep(now);
  EXPECT_TRUE(healthy(1));
  EXPECT_EQ(state(1).health.reason, "ejection of 1s ended");
  fail(1, 3);
  now += 100;
  tracker_.sweep(now);
  EXPECT_FALSE(healthy(1));
  EXPECT_EQ(state(1).health.ejection_ms, 2000u);
  tracker_.sweep(now + 1999);
  EXPECT_FALSE(healthy(1));
  tracker_.sweep(now + 2000);
  EXPECT_TRUE(healthy(1));
  EXPECT_EQ(state(1).health.transitions[1].get(), 2u);
  EXPECT_EQ(state(1).health.transitions[0].get(), 2u);
}

TEST_F(HealthTrackerTest, ASuccessBetweenFailuresPreventsTheEjection) {
  build(4, false, true);
  fail(1, 2);
  noteBackendSuccess(state(1).per_worker[0]);
  fail(1, 2);
  tracker_.sweep(1000);
  EXPECT_TRUE(healthy(1));
  fail(1, 1);
  tracker_.sweep(1100);
  EXPECT_FALSE(healthy(1));
}

TEST_F(HealthTrackerTest, NeverMoreThanMaxEjectedPercentAtOnce) {
  build(4, false, true);   // 50% of 4: two
  fail(0, 5);
  fail(1, 5);
  fail(2, 5);
  tracker_.sweep(1000);
  int out = !healthy(0) + !healthy(1) + !healthy(2);
  EXPECT_EQ(out, 2);
  EXPECT_TRUE(healthy(3));
  EXPECT_FALSE(panic()) << "2 of 4 healthy";
  // When the first two return, the third (still failing) takes a place.
  tracker_.sweep(2000);
  EXPECT_FALSE(healthy(2));
  EXPECT_EQ(!healthy(0) + !healthy(1) + !healthy(2), 1);
}

TEST_F(HealthTrackerTest, AnEjectionEndsOnlyAfterRisePassesWhenTheClusterHasChecks) {
  build(4, true, true);
  check(1, CheckResult::kOk, 5);
  fail(1, 3);
  tracker_.sweep(0);
  ASSERT_FALSE(healthy(1));
  check(1, CheckResult::kFail);   // one failure: still up by checks, but the run is broken
  tracker_.sweep(1000);
  EXPECT_FALSE(healthy(1)) << "time is up, but its last check failed";
  check(1, CheckResult::kOk);
  tracker_.sweep(1100);
  EXPECT_FALSE(healthy(1));
  check(1, CheckResult::kOk);
  tracker_.sweep(1200);
  EXPECT_TRUE(healthy(1));
  EXPECT_EQ(state(1).health.reason, "ejection of 1s ended (2 checks passed)");
}

TEST_F(HealthTrackerTest, AReloadKeepsTheHealthOfBackendsThatStay) {
  build(3, true, false);
  check(1, CheckResult::kTimeout, 3);
  check(2, CheckResult::kTimeout, 2);   // two of three: one more takes it down
  ASSERT_FALSE(healthy(1));
  build(4, true, false);   // b3 joins
  EXPECT_FALSE(healthy(1)) << "a reload does not bring a down backend back";
  EXPECT_TRUE(healthy(3)) << "a new backend starts up";
  check(2, CheckResult::kTimeout);
  EXPECT_FALSE(healthy(2)) << "the run of failures carried over";
  EXPECT_EQ(state(1).health.transitions[1].get(), 1u);
  // Checks removed: what they said no longer counts.
  build(4, false, false);
  EXPECT_TRUE(healthy(1));
  EXPECT_TRUE(healthy(2));
  EXPECT_EQ(state(1).health.reason, "its cluster has no active checks any more");
}

TEST_F(HealthTrackerTest, AReloadThatDropsOutlierDetectionEndsEjections) {
  build(4, false, true);
  fail(0, 3);
  tracker_.sweep(0);
  ASSERT_FALSE(healthy(0));
  build(4, false, false);
  EXPECT_TRUE(healthy(0));
}

// An upgrade's new process starts from the old one's view: a backend its checks took down
// stays down until `rise` passes, an ejected one stays out for what its ejection had left,
// both without a failure of their own; backends the new config lacks are passed over.
TEST_F(HealthTrackerTest, CarriedBackendsStartOutOfRotationInTheNextProcess) {
  build(4, true, true);
  check(1, CheckResult::kTimeout, 3);
  fail(2, 3);
  tracker_.sweep(10000);
  ASSERT_FALSE(healthy(1));
  ASSERT_FALSE(healthy(2));
  std::vector<HealthCarry> carried = tracker_.carry(10200);
  ASSERT_EQ(carried.size(), 2u);
  EXPECT_EQ(carried[1].backend, "b2");
  EXPECT_EQ(carried[1].ejected_left_ms, 800u);
  carried.push_back({"cache", "gone", HealthStatus::kDown, true, 0, 0, 0, "x"});

  // The next process: its own registry, snapshot and tracker, and its own clock.
  StateRegistry registry(2);
  auto next = buildSnapshot(trackerConfig(4, true, true), registry, 1);
  ASSERT_TRUE(next.ok());
  HealthTracker tracker;
  tracker.reconcile(next.value());
  const ClusterSnapshot& c = next.value()->clusters[0];
  EXPECT_EQ(tracker.adopt(carried, 500), 2u);
  EXPECT_TRUE(c.backends[0].state->healthy.load());
  EXPECT_FALSE(c.backends[1].state->healthy.load());
  EXPECT_EQ(c.backends[1].state->health.status, HealthStatus::kDown);
  EXPECT_EQ(c.backends[1].state->health.reason,
            "as before the upgrade: 3 checks timed out after 100ms");
  EXPECT_EQ(c.backends[2].state->health.status, HealthStatus::kEjected);
  tracker.sweep(1299);
  EXPECT_FALSE(c.backends[2].state->healthy.load());
  // b1 comes back the ordinary way: rise passes.
  for (int k = 0; k < 2; ++k)
    tracker.recordCheck(c.backends[1].state.get(), CheckResult::kOk, "ok", 0.001, 1.0);
  EXPECT_TRUE(c.backends[1].state->healthy.load());
}

}  // namespace
}  // namespace lb
