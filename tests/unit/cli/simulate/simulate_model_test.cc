// lb simulate's model (lb/cli/simulate): the caches against a reference LRU, and the textbook
// figures of a scale event (docs/analyze.md, "lb simulate") within stated tolerances.
#include <gtest/gtest.h>

#include <list>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lb/cli/analyze/report.h"
#include "lb/cli/simulate/simulate_format.h"
#include "lb/cli/simulate/lru_fleet.h"
#include "lb/cli/simulate/model.h"
#include "lb/cli/simulate/simulate_options.h"
#include "plugins/builtin.h"

namespace lb {
namespace {

// 200k random operations on 3 small caches, against std::list + std::map.
TEST(SimulateLru, MatchesAReferenceLru) {
  LruFleet fleet({5, 1, 17});
  std::vector<std::list<uint32_t>> ref(3);
  std::mt19937 gen(3);
  for (int op = 0; op < 200000; ++op) {
    const uint32_t s = gen() % 3, k = gen() % 40;
    auto& l = ref[s];
    auto it = std::find(l.begin(), l.end(), k);
    switch (gen() % 4) {
      case 0: {   // erase
        fleet.erase(s, k);
        if (it != l.end()) l.erase(it);
        break;
      }
      case 1:     // clear, rarely
        if (gen() % 50 == 0) {
          fleet.clear(s);
          l.clear();
        }
        break;
      default: {  // read, fill on a miss
        const bool hit = fleet.touch(s, k) != LruFleet::kNone;
        ASSERT_EQ(hit, it != l.end()) << "op " << op;
        if (hit) {
          l.erase(it);
          l.push_front(k);
        } else {
          fleet.fill(s, k, 0);
          l.push_front(k);
          const size_t cap = s == 0 ? 5 : s == 1 ? 1 : 17;
          if (l.size() > cap) l.pop_back();
        }
      }
    }
    ASSERT_EQ(fleet.size(s), l.size());
  }
}

SimSelector selector(const std::string& name) {
  if (name == "mod_n") return {"mod_n", &buildModNTable, KeyHash::kXxh64, {}};
  const SelectorInfo* s = findSelector(name);
  return {name, s->build, s->key_hash, {}};
}

SimResult run(const SimScenario& s, const std::string& name, uint32_t factor = 0,
              SimHandover handover = SimHandover::kOff) {
  std::string error;
  auto r = simulateSelector(s, selector(name), factor, error, handover);
  EXPECT_TRUE(r) << error;
  return r ? *r : SimResult{};
}

// 10^6 uniform keys, capacity 95% of keys / N: steady state hits 95%. A million requests a
// second, so a key is read about once a second and the first 50 ms after the change show the
// caches before they refill.
SimScenario textbook(uint32_t servers, SimEvent event) {
  SimScenario s;
  s.servers = servers;
  s.keys = 1000000;
  s.capacity = static_cast<uint32_t>(0.95 * 1000000 / servers);
  s.rate = 1000000;
  s.duration_s = 30;
  s.event_at_s = 10;
  s.samples_per_step = 40000;
  s.events = {event};
  return s;
}

SimEvent add(uint32_t k) {
  SimEvent e;
  e.count = k;
  return e;
}

// 4 -> 5 with hash mod N: 0.95 x 1/5 = 19% hits right after, database reads from 5% to 81%
// of the rate. Tolerance: 3 points on ratios (the 50 ms window's 1.1-point standard error
// plus the refill within it), 5% of the rate on reads.
TEST(SimulateTextbook, ModNFourToFiveCollapsesTheHitRatio) {
  const SimResult r = run(textbook(4, add(1)), "mod_n");
  EXPECT_NEAR(r.hit_ratio_before, 0.95, 0.01);
  EXPECT_NEAR(r.hit_ratio_after_event, 0.19, 0.03);
  EXPECT_NEAR(r.backend_reads_per_s_before / 1e6, 0.05, 0.01);
  EXPECT_NEAR(r.backend_reads_per_s_peak / 1e6, 0.81, 0.05);
  EXPECT_NEAR(r.keys_moved, 0.80, 0.01);
  EXPECT_EQ(r.servers_before, 4u);
  EXPECT_EQ(r.servers_after, 5u);
}

// With a ring only the new server's share misses (about a fifth; ring_hash's share of the
// new host is 20% +/- its imbalance), then it fills and the hit ratio comes back.
TEST(SimulateTextbook, RingHashFourToFiveMissesOnlyTheNewShare) {
  const SimResult r = run(textbook(4, add(1)), "ring_hash");
  EXPECT_NEAR(r.hit_ratio_before, 0.95, 0.01);
  EXPECT_NEAR(r.keys_moved, 0.20, 0.04);
  const double new_misses = 1 - r.hit_ratio_after_event / r.hit_ratio_before;
  EXPECT_NEAR(new_misses, 0.20, 0.05);
  EXPECT_LT(r.backend_reads_per_s_peak / 1e6, 0.35);
  ASSERT_TRUE(r.recovery_s.has_value());
  EXPECT_LE(*r.recovery_s, 10);
  EXPECT_GE(r.timeline.back().hit_ratio, r.hit_ratio_before - 0.01);
}

// 40 -> 50: a fifth of the keys move on a ring, four fifths with mod N (error of the
// sampled-key count: 0.3 points).
TEST(SimulateTextbook, FortyToFiftyMovesAFifthOnARingFourFifthsWithModN) {
  SimScenario s = textbook(40, add(10));
  s.duration_s = 12;
  EXPECT_NEAR(run(s, "ring_hash").keys_moved, 0.20, 0.02);
  EXPECT_NEAR(run(s, "mod_n").keys_moved, 0.80, 0.02);
}

TEST(SimulateTextbook, SameSeedSameFigures) {
  SimScenario s = textbook(4, add(1));
  s.duration_s = 12;
  const SimResult a = run(s, "maglev"), b = run(s, "maglev");
  const std::vector<SimResult> ra{a}, rb{b};
  EXPECT_EQ(simulateJson(ra), simulateJson(rb));
  s.seed = 2;
  const std::vector<SimResult> rc{run(s, "maglev")};
  EXPECT_NE(simulateJson(ra), simulateJson(rc));
}

// Zipf 0.99: the hottest keys make one server the busiest; bounded loads (factor 125) spread
// it, at the cost of hit ratio (keys spill to servers that do not cache them).
TEST(SimulateZipf, BoundedLoadsLowerTheBusiestShareAndCostHits) {
  SimScenario s = textbook(20, add(1));
  s.popularity.kind = SimPopularity::Kind::kZipf;
  s.capacity = 20000;
  s.duration_s = 14;
  const SimResult plain = run(s, "ring_hash");
  const SimResult bounded = run(s, "ring_hash", 125);
  EXPECT_LT(bounded.busiest_share_before, plain.busiest_share_before * 0.8);
  EXPECT_LT(bounded.hit_ratio_before, plain.hit_ratio_before - 0.01);
}

// A server unreachable one second in three for half the run, with 5% writes. lb's
// hysteresis (fall 3) never marks it down, so its keys leave it only while it is really
// unreachable; without (rise 1, fall 1) they also stay away while it is back, and return to
// copies the writes elsewhere have made stale.
TEST(SimulateFlap, HysteresisKeepsMoreHitsAndFewerStaleReads) {
  SimEvent flap;
  flap.kind = SimEvent::Kind::kFlap;
  SimScenario s = textbook(4, flap);
  s.writes = 0.05;
  s.duration_s = 40;
  const SimResult with = run(s, "ring_hash");
  s.rise = s.fall = 1;
  const SimResult without = run(s, "ring_hash");
  EXPECT_GT(with.hit_ratio_mean_after, without.hit_ratio_mean_after);
  EXPECT_LT(with.stale_reads, without.stale_reads);
}

// Eight proxies moving to the new membership over 20 s: reads go to a server other than the
// one the other proxies write to for as long as the fleet is split; one switch (membership
// from etcd: every proxy at once) has no such window.
TEST(SimulateRollout, SplitFleetMisdirectsReadsForTheRolloutWindow) {
  SimEvent rollout;
  rollout.kind = SimEvent::Kind::kRollout;
  rollout.proxies = 8;
  rollout.over_s = 20;
  SimScenario s = textbook(4, rollout);
  s.duration_s = 40;
  s.writes = 0.05;
  const SimResult slow = run(s, "ring_hash");
  EXPECT_GT(slow.misdirected_reads, 0);
  EXPECT_NEAR(slow.split_brain_s, 20, 1.01);
  double early = 0, late = 0;
  for (const auto& p : slow.timeline) {
    if (p.t >= 11 && p.t < 14) early += p.misdirected_reads_per_s;
    if (p.t >= 31) late += p.misdirected_reads_per_s;
  }
  EXPECT_GT(early, 0);
  EXPECT_EQ(late, 0);
  s.events[0].proxies = 1;
  const SimResult at_once = run(s, "ring_hash");
  EXPECT_EQ(at_once.misdirected_reads, 0);
  EXPECT_EQ(at_once.split_brain_s, 0);
}

// 4 -> 5 on a ring with a 60 s handover: a moved key that misses at the new server is read
// from its previous owner, so the hit ratio right after the change stays at the steady 95%
// (within the window's 3-point tolerance) and the database sees no storm; without it, the
// new server's fifth misses at once (the same run, the same seed).
TEST(SimulateHandover, ReadThroughKeepsTheHitRatioAndTheDatabaseFlat) {
  SimScenario s = textbook(4, add(1));
  s.handover_window_s = 60;
  const SimResult cold = run(s, "ring_hash");
  const SimResult warm = run(s, "ring_hash", 0, SimHandover::kReadThrough);
  EXPECT_EQ(cold.handover, SimHandover::kOff);
  EXPECT_EQ(cold.handover_reads, 0);
  EXPECT_LT(cold.hit_ratio_after_event, 0.85);
  EXPECT_GE(warm.hit_ratio_after_event, 0.93);
  EXPECT_LE(warm.backend_reads_per_s_peak, 1.2 * warm.backend_reads_per_s_before);
  EXPECT_GT(cold.backend_reads_per_s_peak, 3 * cold.backend_reads_per_s_before);
  EXPECT_GT(warm.handover_reads, 0);
  EXPECT_NEAR(warm.keys_moved, cold.keys_moved, 1e-9);
}

// The same change with a 20 s ramp: a moved key moves at its own moment, so its cold miss
// arrives then; the database's peak stays within 1.2x, the change's first second reads well
// under half of what the cold change reads in it, and by the window's end the ring has
// settled (every moved key at its new owner, the hit ratio back).
TEST(SimulateHandover, RampSpreadsTheColdMissesOverTheWindow) {
  SimScenario s = textbook(4, add(1));
  s.duration_s = 40;
  s.handover_window_s = 20;
  const SimResult cold = run(s, "ring_hash");
  const SimResult r = run(s, "ring_hash", 0, SimHandover::kRamp);
  EXPECT_LE(r.backend_reads_per_s_peak, 1.2 * r.backend_reads_per_s_before);
  EXPECT_GE(r.hit_ratio_after_event, 0.93);
  EXPECT_EQ(r.handover_reads, 0);
  ASSERT_EQ(r.timeline.size(), cold.timeline.size());
  ASSERT_EQ(r.timeline[10].t, 10);
  EXPECT_LT(r.timeline[10].backend_reads_per_s, 0.5 * cold.timeline[10].backend_reads_per_s);
  EXPECT_GE(r.timeline.back().hit_ratio, r.hit_ratio_before - 0.01);
}

// A server removed (4 -> 3) stays as leaving through the window: its keys are read from it
// and copied to their new owners instead of missing.
TEST(SimulateHandover, ALeavingServerAnswersForItsKeys) {
  SimEvent remove;
  remove.kind = SimEvent::Kind::kRemove;
  SimScenario s = textbook(4, remove);
  s.handover_window_s = 60;
  const SimResult cold = run(s, "ring_hash");
  const SimResult warm = run(s, "ring_hash", 0, SimHandover::kReadThrough);
  EXPECT_LT(cold.hit_ratio_after_event, 0.80);
  EXPECT_GE(warm.hit_ratio_after_event, 0.90);
}

// A server crashes at 10 s and comes back empty 10 s later, on a fleet whose other three
// servers can hold its keys meanwhile (capacity half the keys each). When health brings it
// back, its keys return to it: without a handover they all miss there at once; read
// through, the host that served them meanwhile answers and the copies warm it; ramped, they
// return a few at a time.
TEST(SimulateHandover, ARestartedServerIsWarmedFromTheHostThatServedItsKeys) {
  SimEvent fail;
  fail.kind = SimEvent::Kind::kFail;
  fail.recover_s = 10;
  SimScenario s = textbook(4, fail);
  s.capacity = 500000;
  s.duration_s = 40;
  s.handover_window_s = 60;
  auto lowestAfterReturn = [](const SimResult& r) {
    double low = 1;
    for (const auto& p : r.timeline)
      if (p.t >= 21) low = std::min(low, p.hit_ratio);
    return low;
  };
  const SimResult cold = run(s, "ring_hash");
  const SimResult warm = run(s, "ring_hash", 0, SimHandover::kReadThrough);
  const SimResult ramp = run(s, "ring_hash", 0, SimHandover::kRamp);
  EXPECT_LT(lowestAfterReturn(cold), 0.9);
  EXPECT_GE(lowestAfterReturn(warm), 0.99);
  EXPECT_GE(lowestAfterReturn(ramp), 0.99);
  EXPECT_GT(warm.handover_reads, 0);
}

// With 5% writes a write deletes at the previous owner too, so a handover read never hands
// out a value older than the last write: no stale read more than without a handover.
TEST(SimulateHandover, WritesDuringTheWindowLeaveNoStaleCopies) {
  SimScenario s = textbook(4, add(1));
  s.writes = 0.05;
  s.handover_window_s = 60;
  const SimResult r = run(s, "ring_hash", 0, SimHandover::kReadThrough);
  EXPECT_GT(r.handover_reads, 0);
  EXPECT_EQ(r.stale_reads, 0);
}

TEST(SimulateOptions, ParsesEventsAndRejectsBadOnes) {
  std::string error;
  auto e = parseSimEvent("fail:2@5s,recover:30s", error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(e->kind, SimEvent::Kind::kFail);
  EXPECT_EQ(e->count, 2u);
  EXPECT_EQ(e->at_s, 5);
  EXPECT_EQ(e->recover_s, 30);
  e = parseSimEvent("rollout:8,1m", error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(e->proxies, 8u);
  EXPECT_EQ(e->over_s, 60);
  e = parseSimEvent("weight:2=3", error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(e->server, 2u);
  EXPECT_EQ(e->weight, 3u);
  EXPECT_FALSE(parseSimEvent("grow:1", error));
  EXPECT_NE(error.find("unknown event"), std::string::npos);
  EXPECT_FALSE(parseSimEvent("add:0", error));
  EXPECT_FALSE(parseSimEvent("fail:1,recover:soon", error));

  std::vector<std::string> args = {"--servers", "5", "--keys=1000", "--event", "remove:1"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  auto o = parseSimulateArgs(argv, error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->scenario.capacity, 190u);   // 95% of 1000 / 5
  args = {"--rate", "-3"};
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  EXPECT_FALSE(parseSimulateArgs(argv, error));
  EXPECT_NE(error.find("--rate"), std::string::npos);
  args = {"--handover", "1m"};
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  o = parseSimulateArgs(argv, error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->scenario.handover_window_s, 60);
  for (const char* bad : {"0s", "soon"}) {
    args = {"--handover", bad};
    argv.clear();
    for (auto& a : args) argv.push_back(a.data());
    EXPECT_FALSE(parseSimulateArgs(argv, error)) << bad;
    EXPECT_NE(error.find("--handover"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace lb
