// analyzeChange (lb/cli/analyze/report.h): the movement figures of any membership change, which
// `lb membership put|diff` print. On the one-host changes `lb analyze` measures they agree
// with analyzeSelector's exactly; beyond those, owners are compared by name.
#include <gtest/gtest.h>

#include <initializer_list>
#include <numeric>
#include <string>
#include <vector>

#include "lb/cli/analyze/report.h"
#include "plugins/builtin.h"

namespace lb {
namespace {

AnalyzeTableBuilder modN() {
  return [](std::span<const HostSpec> hosts) { return buildModNTable(hosts, {}); };
}

AnalyzeTableBuilder ringHash() {
  const SelectorInfo* s = findSelector("ring_hash");
  return [s](std::span<const HostSpec> hosts) { return s->build(hosts, SelectorOptions{}); };
}

std::vector<uint64_t> iota(uint64_t n) {
  std::vector<uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Hosts named as their hash_key, weights as given.
std::vector<ChangeHost> hosts(std::initializer_list<std::pair<const char*, uint32_t>> list) {
  std::vector<ChangeHost> out;
  for (const auto& [name, weight] : list) out.push_back({name, {name, weight}});
  return out;
}

const std::vector<AnalyzeHost> kFourHosts = {{"b0", 1}, {"b1", 1}, {"b2", 1}, {"b3", 1}};
const std::vector<ChangeHost> kFour = hosts({{"b0", 1}, {"b1", 1}, {"b2", 1}, {"b3", 1}});

TEST(AnalyzeChange, RemovingTheLastHostGivesAnalyzeSelectorsFigures) {
  std::string error;
  const auto keys = iota(60);
  const auto whole = analyzeSelector("mod_n", modN(), kFourHosts, {"b4", 1}, keys, error);
  ASSERT_TRUE(whole) << error;
  const std::vector<ChangeHost> three(kFour.begin(), kFour.end() - 1);
  const auto f = analyzeChange("mod_n", modN(), kFour, three, keys, error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->moved_keys, whole->remove.moved_keys);
  EXPECT_EQ(f->collateral_keys, whole->remove.collateral_keys);
  EXPECT_DOUBLE_EQ(f->moved, 0.75);
  EXPECT_DOUBLE_EQ(f->collateral, 0.5);
  EXPECT_DOUBLE_EQ(f->ideal, 0.25);
}

TEST(AnalyzeChange, AddingAHostGivesAnalyzeSelectorsFigures) {
  std::string error;
  std::vector<ChangeHost> five = kFour;
  five.push_back({"b4", {"b4", 1}});
  const auto f = analyzeChange("mod_n", modN(), kFour, five, iota(60), error);
  ASSERT_TRUE(f) << error;
  EXPECT_DOUBLE_EQ(f->moved, 0.8);
  EXPECT_DOUBLE_EQ(f->collateral, 0.6);
  EXPECT_DOUBLE_EQ(f->ideal, 0.2);
}

TEST(AnalyzeChange, SameListMovesNothing) {
  std::string error;
  const auto f = analyzeChange("mod_n", modN(), kFour, kFour, iota(60), error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->moved_keys, 0u);
  EXPECT_DOUBLE_EQ(f->ideal, 0.0);
}

// ring_hash places hosts by hash_key, not by position: a reordered list is the same ring, and
// comparing owners by name (not index) sees that.
TEST(AnalyzeChange, ReorderedListMovesNothingOnARing) {
  std::string error;
  const std::vector<ChangeHost> reversed(kFour.rbegin(), kFour.rend());
  const auto f = analyzeChange("ring_hash", ringHash(), kFour, reversed,
                               sampleKeyHashes(KeyHash::kXxh64, 10000), error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->moved_keys, 0u);
}

TEST(AnalyzeChange, RemovingAMiddleHostOfARingMovesOnlyItsKeys) {
  std::string error;
  const auto without_b1 = hosts({{"b0", 1}, {"b2", 1}, {"b3", 1}});
  const auto f = analyzeChange("ring_hash", ringHash(), kFour, without_b1,
                               sampleKeyHashes(KeyHash::kXxh64, 100000), error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->collateral_keys, 0u);
  EXPECT_NEAR(f->moved, 0.25, 0.05);
  EXPECT_DOUBLE_EQ(f->ideal, 0.25);
}

// Weights 1:1 -> 1:3: b0's share falls from 1/2 to 1/4, so at least a quarter must move.
TEST(AnalyzeChange, IdealOfAReweightIsTheShareLost) {
  std::string error;
  const auto before = hosts({{"a", 1}, {"b", 1}});
  const auto after = hosts({{"a", 1}, {"b", 3}});
  const auto f = analyzeChange("ring_hash", ringHash(), before, after,
                               sampleKeyHashes(KeyHash::kXxh64, 100000), error);
  ASSERT_TRUE(f) << error;
  EXPECT_DOUBLE_EQ(f->ideal, 0.25);
  EXPECT_NEAR(f->moved, 0.25, 0.05);
  EXPECT_EQ(f->moved_keys, f->collateral_keys);   // every move is between a and b, both staying
}

TEST(AnalyzeChange, ReplacingEveryHostMovesEveryKeyWithoutCollateral) {
  std::string error;
  const auto others = hosts({{"c0", 1}, {"c1", 1}});
  const auto f = analyzeChange("mod_n", modN(), kFour, others, iota(60), error);
  ASSERT_TRUE(f) << error;
  EXPECT_DOUBLE_EQ(f->moved, 1.0);
  EXPECT_EQ(f->collateral_keys, 0u);
  EXPECT_DOUBLE_EQ(f->ideal, 1.0);
}

// A host's identity in the table is its hash_key: changing it moves that host's keys, though
// its name stays.
TEST(AnalyzeChange, NewHashKeyMovesTheHostsKeys) {
  std::string error;
  auto rekeyed = kFour;
  rekeyed[0].spec.hash_key = "b0-new";
  const auto f = analyzeChange("ring_hash", ringHash(), kFour, rekeyed,
                               sampleKeyHashes(KeyHash::kXxh64, 100000), error);
  ASSERT_TRUE(f) << error;
  EXPECT_GT(f->moved, 0.2);
  EXPECT_DOUBLE_EQ(f->ideal, 0.0);   // same names and weights: no move was called for
}

TEST(AnalyzeChange, EmptySideIsAnError) {
  std::string error;
  EXPECT_FALSE(analyzeChange("mod_n", modN(), kFour, {}, iota(60), error));
  EXPECT_NE(error, "");
}

}  // namespace
}  // namespace lb
