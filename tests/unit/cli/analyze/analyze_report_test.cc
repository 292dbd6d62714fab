// The arithmetic of `lb analyze` on fake tables whose every pick is known, so each figure is
// checked exactly rather than within a tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "lb/cli/analyze/report.h"
#include "lb/core/hash.h"

namespace lb {
namespace {

// A table of 12 slots (hash % 12), each slot naming its owner by host index.
class SlotTable final : public SelectorTable {
 public:
  SlotTable(std::vector<uint32_t> slots, uint32_t hosts) : slots_(std::move(slots)), n_(hosts) {}
  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    return (slots_[hash % slots_.size()] + attempt) % n_;
  }
  uint32_t hostCount() const noexcept override { return n_; }
  size_t memoryBytes() const noexcept override { return 0; }

 private:
  std::vector<uint32_t> slots_;
  uint32_t n_;
};

// A consistent fake over b0, b1, b2: each owns four slots; without b2 its slots go half to b0
// and half to b1; b3 takes one slot from each. `collateral_on_add` also hands slot 0 from b0
// to b1 in the grown table, a move between two hosts that both stay.
AnalyzeTableBuilder slotBuilder(bool collateral_on_add = false) {
  return [collateral_on_add](std::span<const HostSpec> hosts) -> std::unique_ptr<SelectorTable> {
    const auto n = static_cast<uint32_t>(hosts.size());
    std::vector<uint32_t> slots;
    if (n == 3) slots = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
    if (n == 2) slots = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1};
    if (n == 4) slots = {collateral_on_add ? 1u : 0u, 0, 0, 3, 1, 1, 1, 3, 2, 2, 2, 3};
    if (slots.empty()) return nullptr;
    return std::make_unique<SlotTable>(std::move(slots), n);
  };
}

AnalyzeTableBuilder modNBuilder() {
  return [](std::span<const HostSpec> hosts) { return buildModNTable(hosts, {}); };
}

std::vector<uint64_t> iota(uint64_t n) {
  std::vector<uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

const std::vector<AnalyzeHost> kThree = {{"b0", 1}, {"b1", 1}, {"b2", 1}};
const std::vector<AnalyzeHost> kFour = {{"b0", 1}, {"b1", 1}, {"b2", 1}, {"b3", 1}};

TEST(AnalyzeReportTest, ConsistentTableMovesOnlyTheChangedHostsKeys) {
  std::string error;
  const auto f = analyzeSelector("slots", slotBuilder(), kThree, {"b3", 1}, iota(120), error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->remove.backend, "b2");
  EXPECT_EQ(f->remove.moved_keys, 40u);         // b2's four slots of twelve
  EXPECT_EQ(f->remove.collateral_keys, 0u);
  EXPECT_DOUBLE_EQ(f->remove.moved, 40.0 / 120);
  EXPECT_DOUBLE_EQ(f->remove.ideal, 1.0 / 3);
  EXPECT_EQ(f->add.backend, "b3");
  EXPECT_EQ(f->add.moved_keys, 30u);            // three slots to b3
  EXPECT_EQ(f->add.collateral_keys, 0u);
  EXPECT_DOUBLE_EQ(f->add.ideal, 0.25);
}

TEST(AnalyzeReportTest, MoveBetweenTwoStayingHostsCountsAsCollateral) {
  std::string error;
  const auto f =
      analyzeSelector("slots", slotBuilder(true), kThree, {"b3", 1}, iota(120), error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->add.moved_keys, 40u);            // three slots to b3, slot 0 from b0 to b1
  EXPECT_EQ(f->add.collateral_keys, 10u);
  EXPECT_DOUBLE_EQ(f->add.collateral, 10.0 / 120);
}

TEST(AnalyzeReportTest, ModNMovesThreeQuartersOnRemovalAndFourFifthsOnAdd) {
  // Hashes 0..59 cover every residue mod 3, 4 and 5 equally. 4 -> 3 hosts: a key stays only
  // when h % 4 == h % 3 (h % 12 in {0,1,2}), so 3/4 move; of the 9 moving residues, 3 were
  // b3's, so 6/12 = 1/2 is collateral. 4 -> 5: stays only when h % 20 < 4, so 4/5 move, and
  // only 4 of the 16 moving residues land on b4: 12/20 = 3/5 collateral.
  std::string error;
  const auto f = analyzeSelector("mod_n", modNBuilder(), kFour, {"b4", 1}, iota(60), error);
  ASSERT_TRUE(f) << error;
  EXPECT_DOUBLE_EQ(f->remove.moved, 0.75);
  EXPECT_DOUBLE_EQ(f->remove.collateral, 0.5);
  EXPECT_DOUBLE_EQ(f->remove.ideal, 0.25);
  EXPECT_DOUBLE_EQ(f->add.moved, 0.8);
  EXPECT_DOUBLE_EQ(f->add.collateral, 0.6);
  EXPECT_DOUBLE_EQ(f->add.ideal, 0.2);
}

TEST(AnalyzeReportTest, BalanceCountsKeysPerHostInHostOrder) {
  std::string error;
  const auto f = analyzeSelector("mod_n", modNBuilder(), kFour, {"b4", 1}, iota(60), error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->backends, (std::vector<std::string>{"b0", "b1", "b2", "b3"}));
  EXPECT_EQ(f->keys, 60u);
  EXPECT_EQ(f->balance.keys, (std::vector<uint64_t>{15, 15, 15, 15}));
  EXPECT_DOUBLE_EQ(f->balance.max_over_mean, 1.0);
  EXPECT_DOUBLE_EQ(f->balance.stddev_pct, 0.0);
  EXPECT_DOUBLE_EQ(f->balance.shares[2], 0.25);
}

TEST(AnalyzeReportTest, BuilderSeesPrefixesOfOneHostListAndTheAddedHostLast) {
  std::vector<std::vector<std::pair<std::string, uint32_t>>> seen;
  AnalyzeTableBuilder recording = [&](std::span<const HostSpec> hosts) {
    seen.emplace_back();
    for (const auto& h : hosts) seen.back().push_back({h.hash_key, h.weight});
    return buildModNTable(hosts, {});
  };
  const std::vector<AnalyzeHost> hosts = {{"b0", 3}, {"b1", 1}, {"b2", 2}};
  std::string error;
  ASSERT_TRUE(analyzeSelector("mod_n", recording, hosts, {"b3", 1}, iota(10), error));
  using L = std::vector<std::pair<std::string, uint32_t>>;
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], (L{{"b0", 3}, {"b1", 1}, {"b2", 2}}));
  EXPECT_EQ(seen[1], (L{{"b0", 3}, {"b1", 1}}));
  EXPECT_EQ(seen[2], (L{{"b0", 3}, {"b1", 1}, {"b2", 2}, {"b3", 1}}));
}

TEST(AnalyzeReportTest, IdealMovementFollowsWeightShares) {
  const std::vector<AnalyzeHost> hosts = {{"b0", 1}, {"b1", 1}, {"b2", 2}};
  std::string error;
  const auto f = analyzeSelector("mod_n", modNBuilder(), hosts, {"b3", 1}, iota(40), error);
  ASSERT_TRUE(f) << error;
  EXPECT_DOUBLE_EQ(f->remove.ideal, 0.5);   // b2 carries 2 of W = 4
  EXPECT_DOUBLE_EQ(f->add.ideal, 0.2);      // b3 gets 1 of W + 1 = 5
}

TEST(AnalyzeReportTest, WeightedBalanceIsRelativeToEachHostsFairShare) {
  // The worked example in balanceOf: fair shares 250/250/500, loads 1.00/0.96/1.02.
  const std::vector<uint64_t> keys = {250, 240, 510};
  const std::vector<uint32_t> weights = {1, 1, 2};
  const auto b = balanceOf(keys, weights);
  EXPECT_DOUBLE_EQ(b.max_over_mean, 1.02);
  EXPECT_NEAR(b.stddev_pct, 100 * std::sqrt(0.002 / 3), 1e-9);
  EXPECT_DOUBLE_EQ(b.shares[2], 0.51);
}

TEST(AnalyzeReportTest, UnweightedBalanceIsMaxOverMeanAndCoefficientOfVariation) {
  const std::vector<uint64_t> keys = {30, 10, 20};   // mean 20, population stddev 8.165
  const std::vector<uint32_t> weights = {1, 1, 1};
  const auto b = balanceOf(keys, weights);
  EXPECT_DOUBLE_EQ(b.max_over_mean, 1.5);
  EXPECT_NEAR(b.stddev_pct, 100 * std::sqrt(200.0 / 3) / 20, 1e-9);
}

TEST(AnalyzeReportTest, TableThatCannotBeBuiltIsAnErrorNamingTheSelector) {
  AnalyzeTableBuilder refuses = [](std::span<const HostSpec>) {
    return std::unique_ptr<SelectorTable>();
  };
  std::string error;
  EXPECT_FALSE(analyzeSelector("picky", refuses, kThree, {"b3", 1}, iota(10), error));
  EXPECT_NE(error.find("picky"), std::string::npos) << error;
}

// Reports the right host count but answers an index past it.
class OutOfRangeTable final : public SelectorTable {
 public:
  explicit OutOfRangeTable(uint32_t n) : n_(n) {}
  uint32_t pick(uint64_t, uint32_t) const noexcept override { return n_; }
  uint32_t hostCount() const noexcept override { return n_; }
  size_t memoryBytes() const noexcept override { return 0; }

 private:
  uint32_t n_;
};

TEST(AnalyzeReportTest, PickOutsideTheTableIsAnErrorNotAnOutOfBoundsWrite) {
  AnalyzeTableBuilder broken = [](std::span<const HostSpec> hosts) {
    return std::unique_ptr<SelectorTable>(
        new OutOfRangeTable(static_cast<uint32_t>(hosts.size())));
  };
  std::string error;
  EXPECT_FALSE(analyzeSelector("broken", broken, kThree, {"b3", 1}, iota(10), error));
  EXPECT_NE(error.find("outside"), std::string::npos) << error;
}

TEST(AnalyzeReportTest, TableReportingAnotherHostCountIsAnError) {
  AnalyzeTableBuilder wrong_count = [](std::span<const HostSpec>) {
    return std::unique_ptr<SelectorTable>(new SlotTable(std::vector<uint32_t>(12, 0), 99));
  };
  std::string error;
  EXPECT_FALSE(analyzeSelector("wrong", wrong_count, kThree, {"b3", 1}, iota(10), error));
  EXPECT_NE(error.find("reports 99"), std::string::npos) << error;
}

TEST(AnalyzeReportTest, ModNTableWeighsSlotsAndWalksDistinctHosts) {
  const std::vector<HostSpec> hosts = {{"a", 1}, {"b", 2}};
  const auto t = buildModNTable(hosts, {});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->hostCount(), 2u);
  EXPECT_EQ(t->pick(0, 0), 0u);   // slot 0: a
  EXPECT_EQ(t->pick(1, 0), 1u);   // slots 1, 2: b
  EXPECT_EQ(t->pick(2, 0), 1u);
  EXPECT_EQ(t->pick(3, 0), 0u);
  EXPECT_EQ(t->pick(2, 1), 0u);   // the next distinct host
  EXPECT_EQ(t->pick(2, 2), 1u);   // wraps
}

TEST(AnalyzeReportTest, ModNOnRealKeyHashesMovesAboutFourFifthsFromFourToFive) {
  std::vector<uint64_t> hashes;
  for (int i = 0; i < 20000; ++i) hashes.push_back(xxh64("key:" + std::to_string(i)));
  std::string error;
  const auto f = analyzeSelector("mod_n", modNBuilder(), kFour, {"b4", 1}, hashes, error);
  ASSERT_TRUE(f) << error;
  EXPECT_NEAR(f->add.moved, 0.8, 0.02);
  EXPECT_LT(f->balance.max_over_mean, 1.05);
}

}  // namespace
}  // namespace lb
