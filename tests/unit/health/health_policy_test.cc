// The arithmetic of health, on its own: rise/fall hysteresis, the ejection length doubling up
// to its cap and starting over after a quiet max_ejection, the max_ejected_percent cap, the
// panic threshold, and the failure runs read from the workers' slots.
#include <gtest/gtest.h>

#include "lb/health/hysteresis.h"
#include "lb/health/outlier.h"

namespace lb {
namespace {

using Change = CheckHysteresis::Change;

TEST(CheckHysteresisTest, StartsUpAndGoesDownOnlyAfterFallFailuresInARow) {
  CheckHysteresis h(2, 3);
  EXPECT_TRUE(h.up());
  EXPECT_EQ(h.record(false), Change::kNone);
  EXPECT_EQ(h.record(false), Change::kNone);
  EXPECT_EQ(h.record(true), Change::kNone);   // the run is broken: start again
  EXPECT_EQ(h.record(false), Change::kNone);
  EXPECT_EQ(h.record(false), Change::kNone);
  EXPECT_TRUE(h.up());
  EXPECT_EQ(h.record(false), Change::kWentDown);
  EXPECT_FALSE(h.up());
  EXPECT_EQ(h.record(false), Change::kNone);   // already down: no second transition
}

TEST(CheckHysteresisTest, ComesUpOnlyAfterRisePassesInARow) {
  CheckHysteresis h(2, 3, false);
  EXPECT_EQ(h.record(true), Change::kNone);
  EXPECT_EQ(h.record(false), Change::kNone);
  EXPECT_EQ(h.record(true), Change::kNone);
  EXPECT_EQ(h.record(true), Change::kWentUp);
  EXPECT_EQ(h.passes(), 2u);
  EXPECT_EQ(h.record(true), Change::kNone);
}

TEST(CheckHysteresisTest, AlternatingResultsNeverChangeTheStateWhenRiseAndFallExceedOne) {
  // The flapping backend: pass, fail, pass, fail... under rise 2 / fall 3 stays as it was.
  for (bool start_up : {true, false}) {
    CheckHysteresis h(2, 3, start_up);
    int transitions = 0;
    for (int i = 0; i < 1000; ++i) transitions += h.record(i % 2 == 0) != Change::kNone;
    EXPECT_EQ(transitions, 0);
    EXPECT_EQ(h.up(), start_up);
  }
}

TEST(CheckHysteresisTest, TransitionsAreBoundedByRunsOfRiseAndFall) {
  // Runs of 3 failures then 2 passes: every run completes a transition, and no shorter one
  // could. 100 cycles: exactly 100 downs and 100 ups, one per qualifying run.
  CheckHysteresis h(2, 3);
  int down = 0, up = 0;
  for (int cycle = 0; cycle < 100; ++cycle) {
    for (int i = 0; i < 3; ++i) down += h.record(false) == Change::kWentDown;
    for (int i = 0; i < 2; ++i) up += h.record(true) == Change::kWentUp;
  }
  EXPECT_EQ(down, 100);
  EXPECT_EQ(up, 100);
  // One failure short of fall each time: nothing at all.
  CheckHysteresis g(2, 3);
  int any = 0;
  for (int cycle = 0; cycle < 100; ++cycle) {
    any += g.record(false) != Change::kNone;
    any += g.record(false) != Change::kNone;
    any += g.record(true) != Change::kNone;
  }
  EXPECT_EQ(any, 0);
}

TEST(CheckHysteresisTest, NewThresholdsKeepTheStateAndTheRun) {
  CheckHysteresis h(2, 5);
  h.record(false);
  h.record(false);
  h.configure(2, 3);
  EXPECT_TRUE(h.up());
  EXPECT_EQ(h.record(false), Change::kWentDown);   // the third failure of the same run
}

OutlierConfig policy(uint64_t base_ms, uint64_t max_ms) {
  OutlierConfig p;
  p.consecutive_failures = 3;
  p.base_ejection = Duration(base_ms);
  p.max_ejection = Duration(max_ms);
  return p;
}

TEST(EjectionTest, EachRepeatDoublesUpToTheCap) {
  const OutlierConfig p = policy(1000, 10000);
  EXPECT_EQ(Ejection::lengthFor(0, p), 1000u);
  EXPECT_EQ(Ejection::lengthFor(1, p), 2000u);
  EXPECT_EQ(Ejection::lengthFor(2, p), 4000u);
  EXPECT_EQ(Ejection::lengthFor(3, p), 8000u);
  EXPECT_EQ(Ejection::lengthFor(4, p), 10000u);
  EXPECT_EQ(Ejection::lengthFor(1000000, p), 10000u);   // no overflow however many
}

TEST(EjectionTest, EjectsUntilItsTimeIsUpThenTwiceAsLongTheNextTime) {
  const OutlierConfig p = policy(1000, 10000);
  Ejection e;
  uint64_t now = 5000;
  EXPECT_EQ(e.eject(now, p), 1000u);
  EXPECT_TRUE(e.ejected());
  EXPECT_FALSE(e.due(now + 999));
  EXPECT_TRUE(e.due(now + 1000));
  now += 1000;
  e.end(now);
  EXPECT_FALSE(e.ejected());
  now += 50;
  e.forgive(now, p);   // back for 50 ms only: still a repeat
  EXPECT_EQ(e.eject(now, p), 2000u);
  EXPECT_EQ(e.until(), now + 2000);
  now += 2000;
  e.end(now);
  EXPECT_EQ(e.eject(now, p), 4000u);
  e.end(now + 4000);
  EXPECT_EQ(e.eject(now + 4000, p), 8000u);
  e.end(now + 12000);
  EXPECT_EQ(e.eject(now + 12000, p), 10000u);   // capped
  EXPECT_EQ(e.lastLengthMs(), 10000u);
}

TEST(EjectionTest, AQuietMaxEjectionStartsOverAtBase) {
  const OutlierConfig p = policy(1000, 10000);
  Ejection e;
  e.eject(0, p);
  e.end(1000);
  e.forgive(1000 + 9999, p);
  EXPECT_EQ(e.repeats(), 1u);
  e.forgive(1000 + 10000, p);
  EXPECT_EQ(e.repeats(), 0u);
  EXPECT_EQ(e.eject(20000, p), 1000u);
}

TEST(EjectionTest, MaxEjectedPercentIsNeverExceeded) {
  // 4 backends at 50%: two may be out, never three.
  EXPECT_TRUE(mayEject(0, 4, 50));
  EXPECT_TRUE(mayEject(1, 4, 50));
  EXPECT_FALSE(mayEject(2, 4, 50));
  // 3 backends at 50%: one (2 of 3 would be 67%).
  EXPECT_TRUE(mayEject(0, 3, 50));
  EXPECT_FALSE(mayEject(1, 3, 50));
  // A single backend is never ejected below 100%; at 100% it may be.
  EXPECT_FALSE(mayEject(0, 1, 50));
  EXPECT_TRUE(mayEject(0, 1, 100));
  // Envoy's default of 10% ejects nothing from a cluster under 10 backends.
  EXPECT_FALSE(mayEject(0, 9, 10));
  EXPECT_TRUE(mayEject(0, 10, 10));
  // Exhaustively: ejecting while allowed never passes the percentage.
  for (uint32_t total = 1; total <= 64; ++total)
    for (uint32_t pct = 1; pct <= 100; ++pct) {
      uint32_t ejected = 0;
      while (mayEject(ejected, total, pct)) ++ejected;
      EXPECT_LE(ejected * 100, pct * total) << total << " " << pct;
      EXPECT_GT((ejected + 1) * 100, pct * total) << total << " " << pct;
    }
}

TEST(PanicTest, BelowTheThresholdStrictly) {
  EXPECT_TRUE(inPanic(1, 4, 50));    // 25%
  EXPECT_FALSE(inPanic(2, 4, 50));   // 50% is not under 50
  EXPECT_FALSE(inPanic(4, 4, 50));
  EXPECT_TRUE(inPanic(0, 4, 50));
  EXPECT_FALSE(inPanic(0, 4, 0));    // 0 = off
  EXPECT_FALSE(inPanic(0, 0, 50));   // no backends: nothing to panic about
  EXPECT_TRUE(inPanic(99, 100, 100));
  EXPECT_FALSE(inPanic(100, 100, 100));
  EXPECT_TRUE(inPanic(2, 3, 70));    // 66.7%
  EXPECT_FALSE(inPanic(7, 10, 70));
}

TEST(FailureStreakTest, SumsEachWorkersRunAndASuccessEndsThatWorkersRun) {
  BackendState s("c", "b", 3);
  FailureStreak streak(s);
  EXPECT_EQ(streak.current(s), 0u);
  noteBackendFailure(s.per_worker[0], BackendFailure::kServerError);
  noteBackendFailure(s.per_worker[0], BackendFailure::kServerError);
  noteBackendFailure(s.per_worker[1], BackendFailure::kConnectRefused);
  EXPECT_EQ(streak.current(s), 3u);
  noteBackendSuccess(s.per_worker[0]);
  EXPECT_EQ(streak.current(s), 1u);
  noteBackendFailure(s.per_worker[2], BackendFailure::kResponseTimeout);
  EXPECT_EQ(streak.current(s), 2u);
  auto kinds = streak.kindsSinceReset(s);
  EXPECT_EQ(kinds[static_cast<int>(BackendFailure::kServerError)], 2u);
  EXPECT_EQ(kinds[static_cast<int>(BackendFailure::kConnectRefused)], 1u);
  EXPECT_EQ(kinds[static_cast<int>(BackendFailure::kResponseTimeout)], 1u);
  streak.reset(s);   // the main thread forgets without writing the workers' slots
  EXPECT_EQ(streak.current(s), 0u);
  EXPECT_EQ(streak.kindsSinceReset(s)[static_cast<int>(BackendFailure::kServerError)], 0u);
  noteBackendFailure(s.per_worker[1], BackendFailure::kConnectTimeout);
  EXPECT_EQ(streak.current(s), 1u);
}

TEST(FailureStreakTest, FailuresBeforeItExistedDoNotCount) {
  BackendState s("c", "b", 1);
  for (int i = 0; i < 10; ++i) noteBackendFailure(s.per_worker[0], BackendFailure::kServerError);
  FailureStreak streak(s);
  EXPECT_EQ(streak.current(s), 0u);
}

TEST(FailureStreakTest, ASuccessWritesOnlyAfterAFailure) {
  BackendState s("c", "b", 1);
  noteBackendSuccess(s.per_worker[0]);
  EXPECT_EQ(s.per_worker[0].failures_at_success.get(), 0u);
  noteBackendFailure(s.per_worker[0], BackendFailure::kConnectReset);
  noteBackendSuccess(s.per_worker[0]);
  EXPECT_EQ(s.per_worker[0].failures_at_success.get(), 1u);
  EXPECT_EQ(s.per_worker[0].failures[static_cast<int>(BackendFailure::kConnectReset)].get(), 1u);
}

}  // namespace
}  // namespace lb
