// Handover (lb/routing/handover.h): which changes open a window, what the window knows of the
// previous table, and the pick's ramp step that holds a moved key at its previous owner until
// its moment. The windows here are placed around the wall clock (since in the past, until in
// the future) rather than waited through.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/routing/handover.h"
#include "lb/routing/snapshot.h"
#include "tests/support/handover_snapshot.h"

namespace lb {
namespace {

constexpr int64_t kMinute = kHandoverTestWindowMs;

Config ringConfig(size_t n) { return handoverTestConfig(n); }

std::shared_ptr<const Snapshot> build(StateRegistry& registry, Config config,
                                      const Snapshot* previous = nullptr) {
  return buildHandoverSnapshot(registry, std::move(config), previous);
}

// The same window, moved so that `progress` of it has elapsed now.
std::shared_ptr<const HandoverWindow> at(const HandoverWindow& w, double progress) {
  auto out = std::make_shared<HandoverWindow>(w);
  const int64_t length = w.until_ms - w.since_ms;
  out->since_ms = wallClockMs() - static_cast<int64_t>(progress * static_cast<double>(length));
  out->until_ms = out->since_ms + length;
  return out;
}

uint32_t pickOf(const ClusterSnapshot& c, uint64_t hash) {
  Pick p;
  EXPECT_TRUE(c.pick(hash, PickContext{}, &p));
  return p.host;
}

TEST(RampMomentTest, IsDeterministicAndSpreadOverTheUnitInterval) {
  EXPECT_EQ(rampMoment(12345), rampMoment(12345));
  int below_half = 0;
  double low = 1, high = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const double m = rampMoment(i);   // consecutive hashes: the worst case for a weak mix
    ASSERT_GE(m, 0);
    ASSERT_LT(m, 1);
    below_half += m < 0.5;
    low = std::min(low, m);
    high = std::max(high, m);
  }
  EXPECT_NEAR(below_half, 5000, 200);   // 4 standard deviations
  EXPECT_LT(low, 0.001);
  EXPECT_GT(high, 0.999);
}

TEST(HandoverWindowTest, AddingAServerOpensAWindowOverTheMovedFifth) {
  StateRegistry registry(1);
  auto before = build(registry, ringConfig(4));
  auto after = build(registry, ringConfig(5), before.get());
  ASSERT_TRUE(before && after);
  EXPECT_EQ(before->clusters[0].handover, nullptr) << "no previous snapshot, no window";
  const HandoverWindow* w = after->clusters[0].handover.get();
  ASSERT_NE(w, nullptr);
  EXPECT_NEAR(w->moved_ratio, 0.2, 0.05);
  EXPECT_EQ(w->until_ms - w->since_ms, kMinute);
  EXPECT_NEAR(static_cast<double>(w->since_ms), static_cast<double>(wallClockMs()), 5000);
  EXPECT_EQ(w->from_fingerprint, before->clusters[0].fingerprint);
  EXPECT_TRUE(w->leaving.empty());
  // A key keeps its owner, or its owner was b4, the new one; the previous owner is the old
  // table's.
  int moved = 0;
  for (uint64_t h = 0; h < 2000; ++h) {
    const uint64_t hash = h * 0x9e3779b97f4a7c15ULL;
    const uint32_t now = after->clusters[0].hostAt(hash, 0);
    const uint32_t was = before->clusters[0].hostAt(hash, 0);
    EXPECT_EQ(w->previousOwner(hash), was);
    if (now != was) {
      ++moved;
      EXPECT_EQ(after->clusters[0].backends[now].config->name, "b4");
    }
  }
  EXPECT_NEAR(moved, 400, 100);
}

TEST(HandoverWindowTest, ARebuildThatMovesNoKeyOpensNoneAndKeepsAnOpenOne) {
  StateRegistry registry(1);
  auto four = build(registry, ringConfig(4));
  Config readdressed = ringConfig(4);
  readdressed.clusters[0].backends[2].address = "127.0.0.1:9999";
  auto same = build(registry, readdressed, four.get());
  ASSERT_TRUE(same);
  EXPECT_NE(same->clusters[0].fingerprint, four->clusters[0].fingerprint);
  EXPECT_EQ(same->clusters[0].handover, nullptr) << "a new address moves no key";

  auto five = build(registry, ringConfig(5), four.get());
  auto again = build(registry, ringConfig(5), five.get());
  ASSERT_TRUE(five && again);
  ASSERT_NE(again->clusters[0].handover, nullptr) << "a reload inside the window keeps it";
  EXPECT_EQ(again->clusters[0].handover->since_ms, five->clusters[0].handover->since_ms);
  EXPECT_EQ(again->clusters[0].handover->from_fingerprint, four->clusters[0].fingerprint);
}

TEST(HandoverWindowTest, NoWindowWithoutTheSettingOrAcrossASelectorChange) {
  StateRegistry registry(1);
  auto four = build(registry, ringConfig(4));
  Config off = ringConfig(5);
  off.clusters[0].handover.reset();
  EXPECT_EQ(build(registry, off, four.get())->clusters[0].handover, nullptr);
  Config zero = ringConfig(5);
  zero.clusters[0].handover->window = Duration{0};
  EXPECT_EQ(build(registry, zero, four.get())->clusters[0].handover, nullptr);
  Config maglev = ringConfig(5);
  maglev.clusters[0].selector = "maglev";
  EXPECT_EQ(build(registry, maglev, four.get())->clusters[0].handover, nullptr);
}

TEST(HandoverWindowTest, ARemovedServerIsLeavingAndItsKeysMoveAtOnce) {
  StateRegistry registry(1);
  auto four = build(registry, ringConfig(4));
  auto three = build(registry, ringConfig(3), four.get());
  ASSERT_TRUE(three);
  const ClusterSnapshot& c = three->clusters[0];
  ASSERT_NE(c.handover, nullptr);
  EXPECT_EQ(c.handover->leaving, std::vector<std::string>{"b3"});
  ClusterSnapshot& held = const_cast<ClusterSnapshot&>(c);
  held.handover = at(*c.handover, 0);   // the window's first moment: nothing moved yet
  int leaving = 0;
  for (uint64_t h = 0; h < 2000; ++h) {
    const uint64_t hash = h * 0x9e3779b97f4a7c15ULL;
    if (c.handover->previousOwner(hash) != HandoverWindow::kLeaving) continue;
    ++leaving;
    EXPECT_EQ(pickOf(c, hash), c.hostAt(hash, 0)) << "no key waits for a leaving server";
  }
  EXPECT_GT(leaving, 0);
}

// An etcd membership stamped by `lb membership put` starts the window at the stamp, so that
// instances applying it moments apart ramp alike; a stamp outside the window before now, or
// too far ahead of now, is not believed and the window starts at now.
TEST(HandoverWindowTest, AStampedChangeStartsTheWindowAtItsStamp) {
  StateRegistry registry(1);
  auto four = build(registry, ringConfig(4));
  const int64_t now = wallClockMs();
  for (const auto& [stamp, want] : std::vector<std::pair<int64_t, int64_t>>{
           {now - 20000, now - 20000},            // within the minute's window: believed
           {now + 2000, now + 2000},              // a little ahead: another host's clock
           {now - 2 * kMinute, 0},                // older than the window: now
           {now + 60000, 0}}) {                   // far ahead: now
    BackendOrigins origins{{"c", {MembershipOrigin::kEtcd, 7, stamp}}};
    auto r = buildSnapshot(ringConfig(5), registry, 2, nullptr, &origins, four.get());
    ASSERT_TRUE(r.ok());
    const HandoverWindow* w = r.value()->clusters[0].handover.get();
    ASSERT_NE(w, nullptr);
    if (want != 0) {
      EXPECT_EQ(w->since_ms, want);
    } else {
      EXPECT_NEAR(static_cast<double>(w->since_ms), static_cast<double>(wallClockMs()), 5000);
    }
    EXPECT_EQ(w->until_ms - w->since_ms, kMinute);
  }
}

// The ramp: at each quarter of the window the moved keys still at their previous owner are
// those whose moment is not reached (about 1 - elapsed), a key that moved never goes back,
// and every key is at its new owner once the window is over.
TEST(HandoverRampTest, MovedKeysMoveAtTheirMomentAndNeverGoBack) {
  StateRegistry registry(1);
  auto four = build(registry, ringConfig(4));
  auto five = build(registry, ringConfig(5), four.get());
  ASSERT_TRUE(five && five->clusters[0].handover);
  ClusterSnapshot& c = const_cast<ClusterSnapshot&>(five->clusters[0]);
  const HandoverWindow window = *c.handover;
  std::vector<uint64_t> moved;
  for (uint64_t h = 0; moved.size() < 2000 && h < 100000; ++h) {
    const uint64_t hash = h * 0x9e3779b97f4a7c15ULL;
    if (window.previousOwner(hash) != c.hostAt(hash, 0)) moved.push_back(hash);
  }
  ASSERT_EQ(moved.size(), 2000u);
  std::vector<bool> arrived(moved.size(), false);
  for (const double progress : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    c.handover = at(window, progress);
    size_t at_new = 0;
    for (size_t i = 0; i < moved.size(); ++i) {
      const uint32_t host = pickOf(c, moved[i]);
      const bool is_new = host == c.hostAt(moved[i], 0);
      if (!is_new) {
        EXPECT_EQ(host, window.previousOwner(moved[i]));
      }
      EXPECT_FALSE(arrived[i] && !is_new) << "key " << i << " went back at " << progress;
      arrived[i] = is_new;
      at_new += is_new;
    }
    EXPECT_NEAR(static_cast<double>(at_new) / moved.size(), progress, 0.05) << progress;
    EXPECT_NEAR(c.handover->rampRatioAt(wallClockMs()), progress, 0.05) << progress;
  }
}

TEST(HandoverRampTest, AKeyThatDidNotMoveAndAnUnusablePreviousOwnerAreNotHeld) {
  StateRegistry registry(1);
  auto four = build(registry, ringConfig(4));
  auto five = build(registry, ringConfig(5), four.get());
  ClusterSnapshot& c = const_cast<ClusterSnapshot&>(five->clusters[0]);
  c.handover = at(*c.handover, 0);
  uint64_t kept = 0, moved = 0;
  for (uint64_t h = 1; (kept == 0 || moved == 0) && h < 10000; ++h) {
    const uint64_t hash = h * 0x9e3779b97f4a7c15ULL;
    (c.handover->previousOwner(hash) == c.hostAt(hash, 0) ? kept : moved) = hash;
  }
  ASSERT_NE(kept, 0u);
  ASSERT_NE(moved, 0u);
  EXPECT_EQ(pickOf(c, kept), c.hostAt(kept, 0));
  const uint32_t prev = c.handover->previousOwner(moved);
  EXPECT_EQ(pickOf(c, moved), prev);
  // Its previous owner down: the key goes to its new one rather than waiting.
  c.backends[prev].state->healthy.store(false);
  EXPECT_EQ(pickOf(c, moved), c.hostAt(moved, 0));
  c.backends[prev].state->healthy.store(true);
  // A retry after the previous owner failed goes past its position, never back to it.
  Pick first;
  ASSERT_TRUE(c.pick(moved, PickContext{}, &first));
  PickContext retry;
  retry.from_attempt = first.attempt + 1;
  Pick second;
  ASSERT_TRUE(c.pick(moved, retry, &second));
  EXPECT_NE(second.host, prev);
}

// A pick that reads through (redis) never holds a moved key at its previous owner: it
// goes to the new owner at once, and the pick names the previous one in Pick::from while
// the window lasts and that host is usable; an unmoved key names none.
TEST(HandoverReadThroughTest, APickThatReadsThroughGoesToTheNewOwnerAndNamesThePrevious) {
  StateRegistry registry(1);
  auto four = build(registry, ringConfig(4));
  auto five = build(registry, ringConfig(5), four.get());
  ClusterSnapshot& c = const_cast<ClusterSnapshot&>(five->clusters[0]);
  const HandoverWindow window = *c.handover;
  c.handover = at(window, 0);
  uint64_t kept = 0, moved = 0;
  for (uint64_t h = 1; (kept == 0 || moved == 0) && h < 10000; ++h) {
    const uint64_t hash = h * 0x9e3779b97f4a7c15ULL;
    (window.previousOwner(hash) == c.hostAt(hash, 0) ? kept : moved) = hash;
  }
  ASSERT_NE(kept, 0u);
  ASSERT_NE(moved, 0u);
  PickContext ctx;
  ctx.read_through = true;
  Pick p;
  ASSERT_TRUE(c.pick(moved, ctx, &p));
  EXPECT_EQ(p.host, c.hostAt(moved, 0));
  EXPECT_EQ(p.from, window.previousOwner(moved));
  EXPECT_EQ(c.handoverFrom(moved, p.host), p.from);
  ASSERT_TRUE(c.pick(kept, ctx, &p));
  EXPECT_EQ(p.host, c.hostAt(kept, 0));
  EXPECT_EQ(p.from, Pick::kNoHost);
  // A pick that does not read through ramps, and names nothing.
  ASSERT_TRUE(c.pick(moved, PickContext{}, &p));
  EXPECT_EQ(p.host, window.previousOwner(moved));
  EXPECT_EQ(p.from, Pick::kNoHost);
  // The previous owner down: nowhere to read from.
  const uint32_t prev = window.previousOwner(moved);
  c.backends[prev].state->healthy.store(false);
  ASSERT_TRUE(c.pick(moved, ctx, &p));
  EXPECT_EQ(p.from, Pick::kNoHost);
  c.backends[prev].state->healthy.store(true);
  // The window over: nothing either.
  c.handover = at(window, 1.01);
  ASSERT_TRUE(c.pick(moved, ctx, &p));
  EXPECT_EQ(p.host, c.hostAt(moved, 0));
  EXPECT_EQ(p.from, Pick::kNoHost);
}

// A returned owner's window: its keys go to it at once, and the pick names the host that
// served them while it was down.
TEST(HandoverReadThroughTest, AReturnedOwnerNamesTheHostThatStoodInForIt) {
  StateRegistry registry(1);
  auto four = build(registry, ringConfig(4));
  ClusterSnapshot& c = const_cast<ClusterSnapshot&>(four->clusters[0]);
  const uint64_t hash = 0x9e3779b97f4a7c15ULL * 7;
  const uint32_t owner = c.hostAt(hash, 0);
  const int64_t now = wallClockMs();
  c.backends[owner].state->returned_at_ms.store(now - 1000);
  c.state->returns_until_ms.store(now + kMinute);
  PickContext ctx;
  ctx.read_through = true;
  Pick p;
  ASSERT_TRUE(c.pick(hash, ctx, &p));
  EXPECT_EQ(p.host, owner);
  EXPECT_EQ(p.from, c.hostAt(hash, 1));
  c.state->returns_until_ms.store(0);
  ASSERT_TRUE(c.pick(hash, ctx, &p));
  EXPECT_EQ(p.from, Pick::kNoHost);
}

}  // namespace
}  // namespace lb
