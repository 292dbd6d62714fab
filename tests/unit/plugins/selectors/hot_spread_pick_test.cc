// pickSpread (hot_keys.spread): the least loaded of a key's first R usable hosts,
// ties to the earliest, hosts at their bounded-load cap skipped, a lost compare-and-swap
// dropping one host and not the pick, and "no candidate" when every one is at its cap. Golden
// cases on an order written out by hand, then a sweep over real tables and random loads
// against a brute-force reading of the rule.
#include "plugins/selectors/hot_spread.h"

#include <gtest/gtest.h>

#include <vector>

#include "plugins/selectors/selectors.h"
#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

// The order of key `hash` is hash, hash + 1, ... mod n: every order can be written by hand.
class SpreadOrderTable final : public SelectorTable {
 public:
  explicit SpreadOrderTable(uint32_t n) : n_(n) {}
  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    return static_cast<uint32_t>((hash + attempt) % n_);
  }
  uint32_t hostCount() const noexcept override { return n_; }
  size_t memoryBytes() const noexcept override { return 0; }

 private:
  uint32_t n_;
};

// Loads and health by hand; tryReserve takes a unit below the cap unless `refuse` says the
// host lost the race to another worker.
class SpreadTestLoads final : public LoadView {
 public:
  explicit SpreadTestLoads(size_t n) : loads(n, 0), up(n, true), refuse(n, false) {}
  uint64_t load(uint32_t host) const noexcept override { return loads[host]; }
  uint64_t totalLoad() const noexcept override {
    uint64_t t = 0;
    for (uint64_t l : loads) t += l;
    return t;
  }
  bool usable(uint32_t host) const noexcept override { return up[host]; }
  bool tryReserve(uint32_t host, uint64_t cap) const noexcept override {
    if (refuse[host] || loads[host] >= cap) return false;
    ++loads[host];
    return true;
  }
  bool reserves() const noexcept override { return true; }

  mutable std::vector<uint64_t> loads;
  std::vector<bool> up;
  std::vector<bool> refuse;
};

TEST(HotSpreadPickTest, TheLeastLoadedOfTheFirstRHosts) {
  SpreadOrderTable table(8);
  SpreadTestLoads loads(8);
  // Key 2's order: 2, 3, 4, 5, ... With R = 3 the candidates are 2, 3, 4.
  loads.loads = {0, 0, 5, 3, 4, 0, 0, 0};
  Pick p;
  ASSERT_TRUE(pickSpread(table, 2, loads, 3, nullptr, Reserve::kYes, &p));
  EXPECT_EQ(p.host, 3u);
  EXPECT_EQ(p.attempt, 1u);
  EXPECT_EQ(p.reason, PickReason::kSpread);
  EXPECT_FALSE(p.reserved) << "without bounded loads nothing is reserved: the caller adds it";
  // Host 5 is idle but fourth in the order: not a candidate.
  EXPECT_NE(p.host, 5u);
  EXPECT_STREQ(pickReasonName(PickReason::kSpread), "spread");
}

TEST(HotSpreadPickTest, TiesGoToTheEarliestSoAnIdleFleetKeepsTheOwner) {
  SpreadOrderTable table(8);
  SpreadTestLoads loads(8);
  Pick p;
  ASSERT_TRUE(pickSpread(table, 6, loads, 4, nullptr, Reserve::kNo, &p));
  EXPECT_EQ(p.host, 6u);
  EXPECT_EQ(p.attempt, 0u);
  loads.loads = {0, 1, 0, 0, 0, 0, 2, 1};   // order 6, 7, 0, 1: 0 is the first at 0
  ASSERT_TRUE(pickSpread(table, 6, loads, 4, nullptr, Reserve::kNo, &p));
  EXPECT_EQ(p.host, 0u);
  EXPECT_EQ(p.attempt, 2u);
}

TEST(HotSpreadPickTest, ADownHostIsReplacedByTheNextInTheOrder) {
  SpreadOrderTable table(6);
  SpreadTestLoads loads(6);
  loads.loads = {9, 9, 9, 0, 1, 9};
  loads.up[3] = false;   // order 1, 2, 3, 4: 3 is out, so R = 3 takes 1, 2, 4
  Pick p;
  ASSERT_TRUE(pickSpread(table, 1, loads, 3, nullptr, Reserve::kNo, &p));
  EXPECT_EQ(p.host, 4u);
  EXPECT_EQ(p.attempt, 3u);
  loads.up.assign(6, false);
  EXPECT_FALSE(pickSpread(table, 1, loads, 3, nullptr, Reserve::kNo, &p))
      << "nothing usable: the caller's ordinary pick answers (its fallback)";
}

TEST(HotSpreadPickTest, RIsClampedToTheHosts) {
  SpreadOrderTable table(2);
  SpreadTestLoads loads(2);
  loads.loads = {4, 1};
  Pick p;
  ASSERT_TRUE(pickSpread(table, 0, loads, 16, nullptr, Reserve::kNo, &p));
  EXPECT_EQ(p.host, 1u);
  SpreadOrderTable none(0);
  EXPECT_FALSE(pickSpread(none, 0, loads, 3, nullptr, Reserve::kNo, &p));
}

TEST(HotSpreadPickTest, BoundedLoadsSkipAHostAtItsCapAndReserveTheUnit) {
  auto hosts = test::makeHosts(4);
  BoundedLoad bounded(hosts, 125);
  SpreadOrderTable table(4);
  SpreadTestLoads loads(4);
  // 8 in flight, F = 125: slots ceil(9 * 1.25) = 12, each host's cap ceil(12 / 4) = 3.
  loads.loads = {1, 3, 2, 2};
  ASSERT_EQ(bounded.cap(0, 8), 3u);
  Pick p;
  // Key 1's order: 1, 2, 3. Host 1 is at 3 = its cap: skipped; 2 and 3 tie at 2: host 2.
  ASSERT_TRUE(pickSpread(table, 1, loads, 3, &bounded, Reserve::kYes, &p));
  EXPECT_EQ(p.host, 2u);
  EXPECT_TRUE(p.reserved);
  EXPECT_EQ(loads.loads[2], 3u) << "the unit was taken by the compare-and-swap";
  // With Reserve::kNo (admin, analysis) it only says where: nothing taken.
  ASSERT_TRUE(pickSpread(table, 1, loads, 3, &bounded, Reserve::kNo, &p));
  EXPECT_FALSE(p.reserved);
}

TEST(HotSpreadPickTest, ALostReservationTriesTheNextLeastLoaded) {
  auto hosts = test::makeHosts(4);
  BoundedLoad bounded(hosts, 200);
  SpreadOrderTable table(4);
  SpreadTestLoads loads(4);
  loads.loads = {0, 2, 1, 2};
  loads.refuse[0] = true;   // another worker took host 0's last slot first
  Pick p;
  ASSERT_TRUE(pickSpread(table, 0, loads, 3, &bounded, Reserve::kYes, &p));
  EXPECT_EQ(p.host, 2u);
  EXPECT_TRUE(p.reserved);
}

TEST(HotSpreadPickTest, EveryCandidateAtItsCapIsNoPick) {
  auto hosts = test::makeHosts(4);
  BoundedLoad bounded(hosts, 125);
  SpreadOrderTable table(4);
  SpreadTestLoads loads(4);
  loads.loads = {3, 3, 2, 0};   // total 8: caps 3; order of key 0: 0, 1 at cap
  Pick p;
  EXPECT_FALSE(pickSpread(table, 0, loads, 2, &bounded, Reserve::kYes, &p));
  EXPECT_EQ(loads.totalLoad(), 8u) << "nothing taken";
  // R = 3 reaches host 2, below its cap.
  ASSERT_TRUE(pickSpread(table, 0, loads, 3, &bounded, Reserve::kYes, &p));
  EXPECT_EQ(p.host, 2u);
}

// Over real tables and random loads and health: the pick is what the rule says, read the
// slow way (walk the order, keep the first R usable, skip those at cap, least load first).
TEST(HotSpreadPickTest, MatchesTheRuleOverRealTablesAndRandomLoads) {
  test::Prng rng(22);
  for (const auto& build : {buildRingHash, buildMaglev, buildRendezvous, buildJump}) {
    for (uint32_t n : {3u, 8u, 33u}) {
      auto hosts = test::makeHosts(n);
      auto table = build(hosts, SelectorOptions{});
      BoundedLoad bounded(hosts, 150);
      for (int round = 0; round < 300; ++round) {
        SpreadTestLoads loads(n);
        for (uint32_t h = 0; h < n; ++h) {
          loads.loads[h] = rng.below(6);
          loads.up[h] = rng.below(8) != 0;
        }
        const uint64_t hash = rng.next();
        const uint32_t r = 2 + static_cast<uint32_t>(rng.below(15));
        const bool with_bounded = rng.below(2) == 0;
        const uint64_t total = loads.totalLoad();
        // The rule, slowly.
        std::vector<uint32_t> cands;
        for (uint32_t a = 0; a < n && cands.size() < r; ++a)
          if (loads.up[table->pick(hash, a)]) cands.push_back(a);
        int want = -1;
        for (uint32_t a : cands) {
          const uint32_t h = table->pick(hash, a);
          if (with_bounded && loads.loads[h] >= bounded.cap(h, total)) continue;
          if (want < 0 || loads.loads[h] < loads.loads[table->pick(hash, want)])
            want = static_cast<int>(a);
        }
        Pick p;
        const bool got = pickSpread(*table, hash, loads, r, with_bounded ? &bounded : nullptr,
                                    Reserve::kNo, &p);
        ASSERT_EQ(got, want >= 0) << n << " " << round;
        if (!got) continue;
        EXPECT_EQ(p.attempt, static_cast<uint32_t>(want)) << n << " " << round;
        EXPECT_EQ(p.host, table->pick(hash, p.attempt));
        EXPECT_EQ(p.reason, PickReason::kSpread);
      }
    }
  }
}

}  // namespace
}  // namespace lb
