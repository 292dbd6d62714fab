// Hot keys for redis and memcached: lb with a cache listener (2 workers) in
// front of 8 redis-server (or memcached) processes and the pipelined Zipf(1.2) load of
// hot_keys_load.h. GET /hotkeys must list the true top 10 in order of rate within 3 s of the
// load's start, each with a lower bound under its true rate; and a top key that stops being
// asked for must leave the hot set once the hold (2 s here) has passed, and not before.
#include <gtest/gtest.h>

#include "tests/support/cache_fleet.h"
#include "tests/support/hot_keys_load.h"

namespace lb::test {
namespace {

// The threshold under hk:10's share (about 1.2%), so the whole top 10 is hot; a short hold.
constexpr const char* kHotKeysTable = "hot_keys = { threshold = 0.005, hold = \"2s\" }";

void checkAcceptance(CacheFleet& fleet, HotKeysZipfLoad::Wire wire) {
  HotKeysZipfLoad load(wire, fleet.port());
  ASSERT_TRUE(load.start()) << load.firstError();
  std::string last;
  const double listed_at = waitForTrueTopTen(load, fleet.adminPort(), "fleet", 3.0, &last);
  ASSERT_GT(listed_at, 0) << "after " << load.elapsed() << " s (" << load.total()
                          << " commands sent), /hotkeys' top 10 was:\n" << last;
  EXPECT_EQ(load.errors(), 0) << load.firstError();

  // hk:3 (about 3% of the requests) stops: its smoothed share takes about 3 windows to fall
  // under the threshold, then the hold runs.
  bool rank1_hot = false;
  std::string problem;
  const double left =
      secondsUntilDroppedKeyLeaves(load, fleet.adminPort(), "fleet", 3, 10.0, &rank1_hot, &problem);
  EXPECT_TRUE(problem.empty()) << problem;
  ASSERT_GT(left, 0) << "hk:3 was still hot 10 s after its last request";
  EXPECT_GE(left, 2.0) << "hk:3 left the hot set before the hold";
  EXPECT_LE(left, 8.0);
  EXPECT_TRUE(rank1_hot) << "hk:1, still requested, left the hot set too";

  // The metrics carry ranks and counts, never a key.
  const std::string metrics = fleet.metrics();
  EXPECT_NE(metrics.find("lb_hotkeys_active{cluster=\"fleet\"}"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("lb_hotkey_share_ratio{cluster=\"fleet\",rank=\"1\"}"),
            std::string::npos);
  EXPECT_NE(metrics.find("lb_hotkey_detections_total{cluster=\"fleet\"}"), std::string::npos);
  EXPECT_EQ(metrics.find("hk:1"), std::string::npos);
  load.stop();
  EXPECT_EQ(load.errors(), 0) << load.firstError();
}

class HotKeysRedisTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fleet_.start("", kHotKeysTable)) << fleet_.output(); }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }
  CacheFleet fleet_{CacheServer::kRedis, 8, 2};
};

TEST_F(HotKeysRedisTest, TheTrueTopTenInOrderWithinThreeSecondsAndADroppedKeyLeavesAfterHold) {
  checkAcceptance(fleet_, HotKeysZipfLoad::Wire::kRedis);
}

class HotKeysMemcachedTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fleet_.start("", kHotKeysTable)) << fleet_.output(); }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }
  CacheFleet fleet_{CacheServer::kMemcached, 8, 2};
};

TEST_F(HotKeysMemcachedTest, TheTrueTopTenInOrderWithinThreeSecondsAndADroppedKeyLeavesAfterHold) {
  checkAcceptance(fleet_, HotKeysZipfLoad::Wire::kMemcached);
}

}  // namespace
}  // namespace lb::test
