// Bounded loads and the health-aware walk: HAProxy's cap arithmetic pinned by hand, even loads
// never spill, a randomized sweep over thousands of load vectors proves no pick lands on a host
// at its cap while a usable host in the key's preference order is below its own, and unhealthy
// hosts are skipped.
#include "plugins/selectors/bounded_load.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

class VectorLoads final : public LoadView {
 public:
  explicit VectorLoads(size_t n) : loads(n, 0), up(n, true) {}
  uint64_t load(uint32_t host) const noexcept override { return loads[host]; }
  uint64_t totalLoad() const noexcept override {
    uint64_t t = 0;
    for (uint64_t l : loads) t += l;
    return t;
  }
  bool usable(uint32_t host) const noexcept override { return up[host]; }

  std::vector<uint64_t> loads;
  std::vector<bool> up;
};

TEST(PickReasonTest, NamesAreMetricLabels) {
  EXPECT_STREQ(pickReasonName(PickReason::kOwner), "owner");
  EXPECT_STREQ(pickReasonName(PickReason::kBounded), "bounded");
  EXPECT_STREQ(pickReasonName(PickReason::kFailover), "failover");
  EXPECT_STREQ(pickReasonName(PickReason::kFallback), "fallback");
}

// HAProxy lb_chash.c, chash_server_is_eligible():
//   tot_slots = ((served + 1) * hash_balance_factor + 99) / 100;
//   slots     = ((tot_slots * server_weight) + tot_weight - 1) / tot_weight;
//   eligible while server_served < slots.
TEST(BoundedLoadCapTest, MatchesHaproxyArithmetic) {
  auto four = test::makeHosts(4);
  BoundedLoad f150(four, 150);
  // 7 in flight: tot_slots = (8 * 150 + 99) / 100 = 12; slots = (12 * 1 + 3) / 4 = 3.
  EXPECT_EQ(f150.cap(0, 7), 3u);
  // Idle cluster, F = 125: tot_slots = (125 + 99) / 100 = 2; slots = (2 + 3) / 4 = 1.
  BoundedLoad f125(four, 125);
  EXPECT_EQ(f125.cap(2, 0), 1u);
  // 100 in flight, F = 125: tot_slots = (101 * 125 + 99) / 100 = 127; slots = (127 + 3) / 4 = 32.
  EXPECT_EQ(f125.cap(1, 100), 32u);

  // Weights 1 and 3 (W = 4), 99 in flight, F = 125: tot_slots = (12500 + 99) / 100 = 125;
  // weight 1: (125 + 3) / 4 = 32; weight 3: (375 + 3) / 4 = 94.
  std::vector<HostSpec> weighted = {{"light", 1}, {"heavy", 3}};
  BoundedLoad w(weighted, 125);
  EXPECT_EQ(w.cap(0, 99), 32u);
  EXPECT_EQ(w.cap(1, 99), 94u);
  EXPECT_EQ(w.balanceFactor(), 125u);
}

TEST(BoundedLoadCapTest, HugeTotalsDoNotOverflow) {
  auto two = test::makeHosts(2);
  BoundedLoad b(two, 200);
  // (2^62 + 1) * 200 overflows 64 bits; the cap is ceil(ceil((2^62 + 1) * 2) / 2) = 2^62 + 1.
  EXPECT_EQ(b.cap(0, uint64_t{1} << 62), (uint64_t{1} << 62) + 1);
}

TEST(BoundedLoadTest, EvenLoadsKeepEveryKeyOnItsOwner) {
  auto hosts = test::makeHosts(10);
  for (const SelectorInfo& info : allSelectors()) {
    const std::string name(info.name);
    auto table = info.build(hosts, {});
    BoundedLoad bounded(hosts, 125);
    for (uint64_t level : {0u, 1u, 7u, 1000u}) {
      VectorLoads loads(hosts.size());
      for (auto& l : loads.loads) l = level;
      for (uint32_t k = 0; k < 2000; ++k) {
        const uint64_t h = test::keyHash(info.key_hash, k);
        const Pick p = bounded.pick(*table, h, loads);
        ASSERT_EQ(p.host, table->pick(h, 0)) << name << " level " << level;
        ASSERT_EQ(p.attempt, 0u);
        ASSERT_EQ(p.reason, PickReason::kOwner);
      }
    }
  }
}

TEST(BoundedLoadTest, OverCapOwnerSpillsToNextInPreferenceOrder) {
  auto hosts = test::makeHosts(4);
  auto table = test::selector("ring_hash").build(hosts, {});
  BoundedLoad bounded(hosts, 150);
  const uint64_t h = test::keyHash(KeyHash::kXxh64, 1);
  VectorLoads loads(4);
  loads.loads[table->pick(h, 0)] = 3;   // total 3: cap = ceil(ceil(4 * 1.5) / 4) = 2
  const Pick p = bounded.pick(*table, h, loads);
  EXPECT_EQ(p.host, table->pick(h, 1));
  EXPECT_EQ(p.attempt, 1u);
  EXPECT_EQ(p.reason, PickReason::kBounded);
}

TEST(BoundedLoadTest, UnusableHostsAreSkippedAsFailover) {
  auto hosts = test::makeHosts(5);
  auto table = test::selector("maglev").build(hosts, {});
  BoundedLoad bounded(hosts, 125);
  const uint64_t h = test::keyHash(KeyHash::kXxh64, 9);
  VectorLoads loads(5);
  loads.up[table->pick(h, 0)] = false;
  loads.up[table->pick(h, 1)] = false;
  const Pick p = bounded.pick(*table, h, loads);
  EXPECT_EQ(p.host, table->pick(h, 2));
  EXPECT_EQ(p.attempt, 2u);
  EXPECT_EQ(p.reason, PickReason::kFailover);
}

TEST(BoundedLoadTest, NothingUsableFallsBackToOwner) {
  auto hosts = test::makeHosts(3);
  auto table = test::selector("rendezvous").build(hosts, {});
  BoundedLoad bounded(hosts, 125);
  VectorLoads loads(3);
  loads.up.assign(3, false);
  const uint64_t h = test::keyHash(KeyHash::kXxh64, 4);
  const Pick p = bounded.pick(*table, h, loads, 1);
  EXPECT_EQ(p.host, table->pick(h, 0));
  EXPECT_EQ(p.reason, PickReason::kFallback);
}

// The CI failure of CacheBoundedCapTest (round 9: a load of 2 on a host with a cap of 1): a
// worker read the cluster's total, was preempted while the other worker took three units,
// then found every host at the caps of the total it had read and fell back to the owner,
// which it loaded past the cap of the real total. The total it read was stale, not the
// fleet full: with the fresh total one host is below its cap (the caps sum to at least
// total + 1), so the pick reads it again before falling back.
class StaleTotalLoads final : public LoadView {
 public:
  StaleTotalLoads(std::vector<uint64_t> l, uint64_t stale) : loads(std::move(l)), stale_(stale) {}
  uint64_t load(uint32_t host) const noexcept override { return loads[host]; }
  uint64_t totalLoad() const noexcept override {
    if (reads_++ == 0) return stale_;
    uint64_t t = 0;
    for (uint64_t l : loads) t += l;
    return t;
  }
  bool usable(uint32_t) const noexcept override { return true; }

  std::vector<uint64_t> loads;
  mutable int reads_ = 0;

 private:
  const uint64_t stale_;
};

TEST(BoundedLoadTest, AStaleTotalIsReadAgainBeforeFallingBack) {
  auto hosts = test::makeHosts(3);
  auto table = test::selector("ring_hash").build(hosts, {});
  BoundedLoad bounded(hosts, 125);
  const uint64_t h = test::keyHash(KeyHash::kXxh64, 5);
  // Read as 0, every cap is ceil(ceil(1.25) / 3) = 1 and every host carries 1. The real
  // total, 3, gives caps of ceil(ceil(4 * 1.25) / 3) = 2: the owner has room.
  StaleTotalLoads loads({1, 1, 1}, 0);
  const Pick p = bounded.pick(*table, h, loads);
  EXPECT_EQ(p.host, table->pick(h, 0));
  EXPECT_EQ(p.reason, PickReason::kOwner);
  EXPECT_EQ(loads.reads_, 2);
}

TEST(BoundedLoadTest, AFullFleetAtAFreshTotalStillFallsBackToTheLeastLoaded) {
  auto hosts = test::makeHosts(3);
  auto table = test::selector("ring_hash").build(hosts, {});
  BoundedLoad bounded(hosts, 125);
  const uint64_t h = test::keyHash(KeyHash::kXxh64, 5);
  // Loads no real total can reach with every host below cap: the view's total says 0
  // however often it is read, and each host carries 1 (cap 1).
  VectorLoads loads(3);
  loads.loads = {1, 1, 1};
  class ZeroTotal final : public LoadView {
   public:
    explicit ZeroTotal(const VectorLoads& v) : v_(v) {}
    uint64_t load(uint32_t host) const noexcept override { return v_.load(host); }
    uint64_t totalLoad() const noexcept override { return 0; }
    bool usable(uint32_t host) const noexcept override { return v_.usable(host); }

   private:
    const VectorLoads& v_;
  } zero(loads);
  const Pick p = bounded.pick(*table, h, zero);
  EXPECT_EQ(p.reason, PickReason::kFallback);
  EXPECT_EQ(p.host, table->pick(h, 0)) << "ties stay with the earliest in preference order";
}

// Thousands of random load vectors and health masks (fixed seed), every selector: each pick
// obeys the rule, checked against the preference order from scratch.
TEST(BoundedLoadTest, RandomLoadsNeverPickOverCapWhileAHostInOrderIsUnder) {
  test::Prng prng(2026);
  auto hosts = test::makeHosts(12);
  for (size_t i = 0; i < hosts.size(); ++i) hosts[i].weight = 1 + i % 3;
  uint32_t spills = 0, fallbacks = 0;
  for (const SelectorInfo& info : allSelectors()) {
    auto specs = hosts;
    if (info.name == "jump")
      for (auto& s : specs) s.weight = 1;
    auto table = info.build(specs, {});
    for (int trial = 0; trial < 1000; ++trial) {
      const uint32_t factor = 101 + static_cast<uint32_t>(prng.below(200));
      BoundedLoad bounded(specs, factor);
      VectorLoads loads(specs.size());
      // From all healthy to mostly down: with many hosts down, the usable ones can all sit at
      // their caps (W counts every host), which is what exercises the fallback.
      const uint64_t scale = 1 + prng.below(50);
      const uint64_t down_eighths = prng.below(8);
      for (size_t i = 0; i < specs.size(); ++i) {
        loads.loads[i] = prng.below(scale);
        loads.up[i] = prng.below(8) >= down_eighths;
      }
      const uint64_t total = loads.totalLoad();
      for (int k = 0; k < 6; ++k) {
        const uint64_t h = prng.next();
        const uint32_t from = static_cast<uint32_t>(prng.below(3));
        const Pick p = bounded.pick(*table, h, loads, from);
        // The preference order from `from`, and which of it is usable and under cap.
        bool any_under = false, any_usable = false;
        bool passed_over = false, expect_found = false;
        Pick expect{0, 0, PickReason::kFallback};
        uint64_t least = UINT64_MAX;
        Pick least_pick{0, 0, PickReason::kFallback};
        for (uint32_t a = from; a < from + specs.size(); ++a) {
          const uint32_t host = table->pick(h, a);
          if (!loads.up[host]) continue;
          any_usable = true;
          const bool under = loads.loads[host] < bounded.cap(host, total);
          if (under && !expect_found) {
            expect = {host, a,
                      a == 0 ? PickReason::kOwner
                             : (passed_over ? PickReason::kBounded : PickReason::kFailover)};
            expect_found = true;
          }
          any_under = any_under || under;
          if (!under) passed_over = true;
          if (loads.loads[host] < least) {
            least = loads.loads[host];
            least_pick = {host, a, PickReason::kFallback};
          }
        }
        const std::string where = std::string(info.name) + " trial " + std::to_string(trial);
        if (any_under) {
          ASSERT_TRUE(loads.up[p.host]) << where;
          ASSERT_LT(loads.loads[p.host], bounded.cap(p.host, total)) << where;
          ASSERT_EQ(p.host, expect.host) << where;
          ASSERT_EQ(p.attempt, expect.attempt) << where;
          ASSERT_EQ(p.reason, expect.reason) << where;
          spills += p.reason == PickReason::kBounded;
        } else if (any_usable) {
          ASSERT_EQ(p.reason, PickReason::kFallback) << where;
          ASSERT_EQ(p.host, least_pick.host) << where;   // least loaded, earliest on ties
          ASSERT_EQ(p.attempt, least_pick.attempt) << where;
          ++fallbacks;
        } else {
          ASSERT_EQ(p.reason, PickReason::kFallback) << where;
          ASSERT_EQ(p.host, table->pick(h, 0)) << where;
        }
      }
    }
  }
  // The sweep must exercise both spill paths, or it proves nothing.
  EXPECT_GT(spills, 100u);
  EXPECT_GT(fallbacks, 10u);
}

TEST(PickUsableTest, WalksPastDownHostsInPreferenceOrder) {
  auto hosts = test::makeHosts(6);
  auto table = test::selector("ketama").build(hosts, {});
  const uint64_t h = test::keyHash(KeyHash::kCrc32, 17);
  VectorLoads loads(6);
  Pick p = pickUsable(*table, h, loads);
  EXPECT_EQ(p.host, table->pick(h, 0));
  EXPECT_EQ(p.reason, PickReason::kOwner);

  loads.up[table->pick(h, 0)] = false;
  p = pickUsable(*table, h, loads);
  EXPECT_EQ(p.host, table->pick(h, 1));
  EXPECT_EQ(p.attempt, 1u);
  EXPECT_EQ(p.reason, PickReason::kFailover);

  // A retry resumes after the host that failed.
  p = pickUsable(*table, h, loads, 2);
  EXPECT_EQ(p.host, table->pick(h, 2));
  EXPECT_EQ(p.attempt, 2u);
  EXPECT_EQ(p.reason, PickReason::kFailover);
}

TEST(PickUsableTest, NothingUsableFallsBackToOwner) {
  auto hosts = test::makeHosts(4);
  auto table = test::selector("jump").build(hosts, {});
  VectorLoads loads(4);
  loads.up.assign(4, false);
  const uint64_t h = test::keyHash(KeyHash::kXxh64, 3);
  const Pick p = pickUsable(*table, h, loads, 2);
  EXPECT_EQ(p.host, table->pick(h, 0));
  EXPECT_EQ(p.attempt, 0u);
  EXPECT_EQ(p.reason, PickReason::kFallback);
}

}  // namespace
}  // namespace lb
