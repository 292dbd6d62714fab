// The per-cluster hot set over windows of merged counts: entry at the threshold, none below
// it, hysteresis on the way out (the clock is the now_ms the test passes: nothing sleeps),
// smoothing, ordering, the bounds on rps_lower, forgetting idle keys, and a policy reload.
#include "lb/hotkeys/hot_keys.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace lb {
namespace {

struct Traffic {
  uint64_t hash;
  std::string key;
  uint64_t count;
};

// `background` keys of `each` requests (hashes 1000..), so that the cluster has a total the
// keys under test are a share of; 90 x 10 by default, with ~100 for the key under test a
// window of about 1000 requests.
void fill(SpaceSaving& s, const std::vector<Traffic>& keys, int background = 90, int each = 10) {
  s.clear();
  for (const Traffic& t : keys)
    for (uint64_t i = 0; i < t.count; ++i) s.add(t.hash, t.key);
  for (int b = 0; b < background; ++b)
    for (int i = 0; i < each; ++i) s.add(1000 + b, "bg:" + std::to_string(b));
}

const HotKey* find(const HotKeyTracker& t, uint64_t hash) {
  for (const HotKey& k : t.hotSet().keys)
    if (k.hash == hash) return &k;
  return nullptr;
}

// Steps a tracker through one-second windows ending at 1000, 2000, ... ms.
class WindowClock {
 public:
  explicit WindowClock(HotKeyTracker& tracker) : tracker_(tracker) {}
  int64_t step(const std::vector<Traffic>& keys, int background = 90, int each = 10) {
    fill(summary_, keys, background, each);
    now_ms_ += 1000;
    tracker_.observe(summary_, 1.0, now_ms_);
    return now_ms_;
  }

 private:
  HotKeyTracker& tracker_;
  SpaceSaving summary_;
  int64_t now_ms_ = 0;
};

constexpr uint64_t kKey = 7;

TEST(HotKeyTrackerTest, KeyAboveThresholdEntersOnce) {
  HotKeyTracker t({0.02, std::chrono::milliseconds(10000)});
  WindowClock clock(t);
  const int64_t at = clock.step({{kKey, "user:1", 100}});   // 10% of 1000
  const HotKey* k = find(t, kKey);
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->hot);
  EXPECT_EQ(k->hot_since_ms, at);
  EXPECT_EQ(k->key, "user:1");
  EXPECT_DOUBLE_EQ(k->share, 0.1);
  EXPECT_EQ(t.detections(), 1u);
  EXPECT_EQ(t.activeCount(), 1u);
  // Staying hot is not a second detection.
  for (int i = 0; i < 5; ++i) clock.step({{kKey, "user:1", 100}});
  EXPECT_EQ(t.detections(), 1u);
  EXPECT_EQ(find(t, kKey)->hot_since_ms, at);
}

TEST(HotKeyTrackerTest, KeyBelowThresholdStaysOut) {
  HotKeyTracker t({0.02, std::chrono::milliseconds(10000)});
  WindowClock clock(t);
  for (int i = 0; i < 20; ++i) clock.step({{kKey, "k", 18}});   // 18 of 918: just under 2%
  const HotKey* k = find(t, kKey);
  ASSERT_NE(k, nullptr);
  EXPECT_LT(k->share, 0.02);
  EXPECT_GT(k->share, 0.019);
  EXPECT_FALSE(k->hot);
  EXPECT_EQ(k->hot_since_ms, 0);
  EXPECT_EQ(t.detections(), 0u);
  EXPECT_EQ(t.activeCount(), 0u);
}

TEST(HotKeyTrackerTest, HotKeyLeavesOnlyAfterHoldBelowThreshold) {
  constexpr int64_t kHold = 3000;
  HotKeyTracker t({0.02, std::chrono::milliseconds(kHold)});
  WindowClock clock(t);
  for (int i = 0; i < 3; ++i) clock.step({{kKey, "k", 100}});
  ASSERT_TRUE(find(t, kKey)->hot);
  // The key goes quiet: its smoothed share halves each window, and falls below the threshold
  // after a few. From that window on it stays hot for kHold, then leaves.
  int64_t first_below = -1;
  bool left = false;
  for (int i = 0; i < 20 && !left; ++i) {
    const int64_t now = clock.step({});
    const HotKey* k = find(t, kKey);
    if (first_below < 0) {
      ASSERT_NE(k, nullptr);
      ASSERT_TRUE(k->hot);
      if (k->share < 0.02) first_below = now;
      continue;
    }
    if (now - first_below < kHold) {
      ASSERT_NE(k, nullptr) << "a hot key is shown while held";
      EXPECT_TRUE(k->hot) << "left at " << now << ", below since " << first_below;
      EXPECT_LT(k->share, 0.02);
    } else {
      EXPECT_TRUE(k == nullptr || !k->hot);
      EXPECT_EQ(now - first_below, kHold) << "held longer than hold";
      left = true;
    }
  }
  ASSERT_GT(first_below, 0);
  EXPECT_TRUE(left);
  EXPECT_EQ(t.activeCount(), 0u);
  EXPECT_EQ(t.detections(), 1u);
}

TEST(HotKeyTrackerTest, HoldStartsOverWhenTheKeyComesBackAboveThreshold) {
  constexpr int64_t kHold = 3000;
  HotKeyTracker t({0.02, std::chrono::milliseconds(kHold)});
  WindowClock clock(t);
  for (int i = 0; i < 3; ++i) clock.step({{kKey, "k", 100}});
  int64_t now = 0;
  while (find(t, kKey)->share >= 0.02) now = clock.step({});
  const int64_t first_below = now;
  clock.step({});                                  // below for 1000 ms of the 3000
  clock.step({{kKey, "k", 400}});                  // back above: the run below is broken
  ASSERT_GE(find(t, kKey)->share, 0.02);
  while (find(t, kKey)->share >= 0.02) now = clock.step({});
  const int64_t second_below = now;
  ASSERT_GE(second_below - first_below, kHold);    // counting from the first run it would be out
  EXPECT_TRUE(find(t, kKey)->hot);
  clock.step({});
  now = clock.step({});
  EXPECT_EQ(now - second_below, kHold - 1000);
  EXPECT_TRUE(find(t, kKey)->hot);
  clock.step({});
  const HotKey* k = find(t, kKey);
  EXPECT_TRUE(k == nullptr || !k->hot);
  EXPECT_EQ(t.detections(), 1u);
}

TEST(HotKeyTrackerTest, SmoothedRateReachesFifteenSixteenthsInFourWindows) {
  HotKeyTracker t({0.02, std::chrono::milliseconds(10000)});
  WindowClock clock(t);
  const double expect[] = {50, 75, 87.5, 93.75};   // of a steady 100 per second
  for (double rps : expect) {
    clock.step({{kKey, "k", 100}});
    EXPECT_DOUBLE_EQ(find(t, kKey)->rps, rps);
    // The total is smoothed the same way from the same start: the share is exact throughout.
    EXPECT_DOUBLE_EQ(find(t, kKey)->share, 0.1);
    EXPECT_DOUBLE_EQ(t.hotSet().total_rps, rps * 10);
  }
  EXPECT_DOUBLE_EQ(t.hotSet().window_s, 1.0);
}

TEST(HotKeyTrackerTest, DecayFollowsTheWindowsLength) {
  // The half-life is a second, not a window: a 0.25 s window keeps 2^-0.25 of the old rate,
  // and a count of 25 in it is a rate of 100.
  HotKeyTracker t({0.02, std::chrono::milliseconds(10000)});
  SpaceSaving s;
  fill(s, {{kKey, "k", 25}}, 0);
  t.observe(s, 0.25, 250);
  const double keep = std::exp2(-0.25);
  EXPECT_DOUBLE_EQ(find(t, kKey)->rps, (1 - keep) * 100);
  EXPECT_DOUBLE_EQ(t.hotSet().window_s, 0.25);
  t.observe(s, 0, 300);   // an empty window changes nothing
  EXPECT_DOUBLE_EQ(find(t, kKey)->rps, (1 - keep) * 100);
}

TEST(HotKeyTrackerTest, KeysAreOrderedByRateThenHash) {
  HotKeyTracker t({0.02, std::chrono::milliseconds(10000)});
  WindowClock clock(t);
  clock.step({{5, "e", 10}, {1, "a", 50}, {4, "d", 25}, {3, "c", 25}, {2, "b", 40}}, 0);
  std::vector<uint64_t> order;
  for (const HotKey& k : t.hotSet().keys) order.push_back(k.hash);
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  for (size_t i = 1; i < t.hotSet().keys.size(); ++i)
    EXPECT_GE(t.hotSet().keys[i - 1].rps, t.hotSet().keys[i].rps);
}

TEST(HotKeyTrackerTest, ShowsAtMostKShownAndKeepsAHeldKeyThatFellInRank) {
  HotKeyTracker t({0.02, std::chrono::milliseconds(60000)});
  WindowClock clock(t);
  clock.step({{kKey, "k", 1000}}, 0);
  ASSERT_TRUE(find(t, kKey)->hot);
  // 60 keys of 1/60 each (under 2%: none becomes hot) outrank the quiet hot key after a few
  // windows; it is still shown, as the last of kShown.
  for (int i = 0; i < 8; ++i) clock.step({}, 60, 100);
  const auto& keys = t.hotSet().keys;
  ASSERT_EQ(keys.size(), HotSet::kShown);
  EXPECT_EQ(keys.back().hash, kKey);
  EXPECT_TRUE(keys.back().hot);
  EXPECT_LT(keys.back().rps, keys.front().rps);
  EXPECT_EQ(t.activeCount(), 1u);
}

TEST(HotKeyTrackerTest, RpsLowerIsAtMostRps) {
  // 1000 keys, more than the summary's counters, the light ones first: the heavy keys enter
  // full counters late, through the filter, and carry an error.
  HotKeyTracker t({0.02, std::chrono::milliseconds(10000)});
  SpaceSaving s;
  int64_t now = 0;
  for (int w = 0; w < 5; ++w) {
    s.clear();
    for (uint64_t k = 1000; k-- > 0;)
      for (uint64_t i = 0; i < 1 + 2000 / (k + 1); ++i) s.add(k + 1, "");
    t.observe(s, 1.0, now += 1000);
  }
  ASSERT_GT(s.floor(), 0u);
  size_t with_error = 0;
  for (const HotKey& k : t.hotSet().keys) {
    EXPECT_LE(k.rps_lower, k.rps) << k.hash;
    EXPECT_GE(k.rps_lower, 0) << k.hash;
    with_error += k.rps_lower < k.rps;
  }
  EXPECT_GT(with_error, 0u);
  // The floor is the rate any untracked key may have had, smoothed like the rest.
  EXPECT_DOUBLE_EQ(t.hotSet().floor_rps, static_cast<double>(s.floor()) * (1 - 1.0 / 32));
  EXPECT_EQ(t.hotSet().summary_size, SpaceSaving::kCapacity);
}

TEST(HotKeyTrackerTest, IdleKeysDecayAndAreForgotten) {
  HotKeyTracker t({0.5, std::chrono::milliseconds(10000)});   // nothing here is hot
  WindowClock clock(t);
  clock.step({{kKey, "k", 100}}, 10, 90);
  ASSERT_NE(find(t, kKey), nullptr);
  EXPECT_DOUBLE_EQ(find(t, kKey)->rps, 50);
  clock.step({}, 10, 90);
  ASSERT_NE(find(t, kKey), nullptr);
  EXPECT_DOUBLE_EQ(find(t, kKey)->rps, 25);   // not seen: the rate halves
  EXPECT_DOUBLE_EQ(find(t, kKey)->rps_lower, 25);
  int windows = 2;
  while (find(t, kKey) != nullptr && windows < 40) {
    clock.step({}, 10, 90);
    ++windows;
  }
  EXPECT_EQ(find(t, kKey), nullptr) << "still remembered after " << windows << " windows";
  EXPECT_EQ(t.hotSet().keys.size(), 10u);   // the background keys, which keep coming
}

TEST(HotKeyTrackerTest, KeepsTheLatestNonEmptyKeyBytes) {
  HotKeyTracker t({0.02, std::chrono::milliseconds(10000)});
  WindowClock clock(t);
  const std::string long_key(300, 'x');
  clock.step({{kKey, "first", 100}});
  EXPECT_EQ(find(t, kKey)->key, "first");
  clock.step({{kKey, "", 100}});
  EXPECT_EQ(find(t, kKey)->key, "first");
  clock.step({{kKey, long_key, 100}});
  EXPECT_EQ(find(t, kKey)->key, long_key.substr(0, kHotKeyDisplayBytes));
  EXPECT_TRUE(find(t, kKey)->truncated);
}

TEST(HotKeyTrackerTest, SetPolicyAppliesFromTheNextWindow) {
  HotKeyTracker t({0.2, std::chrono::milliseconds(10000)});
  WindowClock clock(t);
  clock.step({{kKey, "k", 100}});   // 10%: under 20%
  EXPECT_FALSE(find(t, kKey)->hot);
  t.setPolicy({0.05, std::chrono::milliseconds(0)});
  clock.step({{kKey, "k", 100}});
  EXPECT_TRUE(find(t, kKey)->hot);
  EXPECT_EQ(t.detections(), 1u);
  // Hold 0: out at the first window below.
  t.setPolicy({0.5, std::chrono::milliseconds(0)});
  clock.step({{kKey, "k", 100}});
  EXPECT_FALSE(find(t, kKey)->hot);
  EXPECT_EQ(t.activeCount(), 0u);
}

}  // namespace
}  // namespace lb
