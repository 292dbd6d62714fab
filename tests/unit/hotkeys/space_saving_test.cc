// The filtered Space-Saving summary against streams whose true counts the test knows: exact
// below capacity, Space-Saving's three guarantees on a skewed stream and after a merge, the
// filter's point (a flood of one-off keys does not evict a steady key that plain
// Space-Saving would lose), key truncation, clear() and copyFrom().
#include "lb/hotkeys/space_saving.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace lb {
namespace {

constexpr uint64_t kCap = SpaceSaving::kCapacity;

// splitmix64's finalizer: distinct, well-spread hashes for key numbers.
uint64_t hashOf(uint64_t n) {
  n += 0x9e3779b97f4a7c15ULL;
  n = (n ^ (n >> 30)) * 0xbf58476d1ce4e5b9ULL;
  n = (n ^ (n >> 27)) * 0x94d049bb133111ebULL;
  return n ^ (n >> 31);
}

std::string keyOf(uint64_t n) { return "key:" + std::to_string(n); }

// Ranks 0..keys-1 drawn with P(r) proportional to 1 / (r + 1)^s, by inverting the CDF on a
// fixed-seed generator (raw 53-bit draws, so the stream is the same with any standard library).
class ZipfRanks {
 public:
  ZipfRanks(size_t keys, double s, uint64_t seed) : cdf_(keys), rng_(seed) {
    double sum = 0;
    for (size_t r = 0; r < keys; ++r) cdf_[r] = sum += 1.0 / std::pow(static_cast<double>(r + 1), s);
    for (double& c : cdf_) c /= sum;
  }
  size_t next() {
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
    return std::min<size_t>(static_cast<size_t>(it - cdf_.begin()), cdf_.size() - 1);
  }

 private:
  std::vector<double> cdf_;
  std::mt19937_64 rng_;
};

using TrueCounts = std::unordered_map<uint64_t, uint64_t>;   // hash -> occurrences

// Space-Saving's guarantees of `s` against the stream's true counts: total, every tracked
// count within [true, true + error], every untracked key at most floor(), floor at most
// total / kCapacity, and so every key above total / kCapacity tracked.
void expectGuarantees(const SpaceSaving& s, const TrueCounts& truth, uint64_t total) {
  EXPECT_EQ(s.total(), total);
  EXPECT_LE(s.floor() * kCap, total);
  TrueCounts tracked;
  for (const HotKeyCounter& c : s.counters()) {
    ASSERT_TRUE(tracked.emplace(c.hash, c.count).second) << "hash tracked twice: " << c.hash;
    const auto it = truth.find(c.hash);
    const uint64_t t = it == truth.end() ? 0 : it->second;
    EXPECT_LE(t, c.count) << "hash " << c.hash;
    EXPECT_LE(c.count - c.error, t) << "hash " << c.hash;
    EXPECT_LE(c.error, c.count);
  }
  for (const auto& [hash, count] : truth) {
    if (tracked.count(hash)) continue;
    EXPECT_LE(count, s.floor()) << "untracked hash " << hash;
    EXPECT_LE(count * kCap, total) << "untracked hash " << hash << " is above total/capacity";
  }
}

TEST(SpaceSavingTest, CountsExactlyWhileFewerKeysThanCounters) {
  SpaceSaving s;
  TrueCounts truth;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> stream;
  for (uint64_t k = 0; k < kCap - 1; ++k)
    for (uint64_t i = 0; i <= k; ++i) stream.push_back(k);   // key k occurs k + 1 times
  std::shuffle(stream.begin(), stream.end(), rng);
  for (uint64_t k : stream) {
    s.add(hashOf(k), keyOf(k));
    ++truth[hashOf(k)];
  }
  ASSERT_EQ(s.counters().size(), kCap - 1);
  EXPECT_EQ(s.floor(), 0u);
  EXPECT_EQ(s.total(), stream.size());
  for (const HotKeyCounter& c : s.counters()) {
    EXPECT_EQ(c.count, truth.at(c.hash));
    EXPECT_EQ(c.error, 0u);
  }
}

TEST(SpaceSavingTest, ZipfStreamKeepsSpaceSavingsGuarantees) {
  // alpha 1.2 over 100k keys: a few hundred keys carry most of the stream and tens of
  // thousands occur a handful of times, so the counters are full and churned.
  constexpr size_t kKeys = 100000;
  constexpr uint64_t kDraws = 1000000;
  ZipfRanks zipf(kKeys, 1.2, 20260101);
  std::vector<uint64_t> hashes(kKeys);
  std::vector<std::string> keys(kKeys);
  for (size_t r = 0; r < kKeys; ++r) {
    hashes[r] = hashOf(r);
    keys[r] = keyOf(r);
  }
  SpaceSaving s;
  TrueCounts truth;
  for (uint64_t i = 0; i < kDraws; ++i) {
    const size_t r = zipf.next();
    s.add(hashes[r], keys[r]);
    ++truth[hashes[r]];
  }
  ASSERT_EQ(s.counters().size(), kCap);
  EXPECT_GT(s.floor(), 0u);
  expectGuarantees(s, truth, kDraws);
  // The stream's heaviest key is tracked, and its bytes with it.
  const auto& cs = s.counters();
  const auto top = std::find_if(cs.begin(), cs.end(),
                                [&](const HotKeyCounter& c) { return c.hash == hashes[0]; });
  ASSERT_NE(top, cs.end());
  EXPECT_EQ(std::string(top->key, top->key_len), "key:0");
}

TEST(SpaceSavingTest, FilterKeepsASteadyKeyAgainstAFloodOfOneOffKeys) {
  // One key in 200 is below total / kCapacity (1 in 128), so Space-Saving alone guarantees it
  // nothing: with every other key new, its minimum rises by one every 128 adds and passes
  // the steady key's count (20 + n / 200) near n = 7,000, evicting it again and again. With
  // the filter a one-off key must first fill its cell up to the minimum, which then rises
  // about once every 384 adds (256 cells and 128 counters to lift), below the steady key's
  // rate: it is never the minimum, never evicted, and its count stays exact.
  constexpr uint64_t kSteady = 1;
  constexpr uint64_t kAdds = 200000;
  SpaceSaving s;
  uint64_t steady = 0;
  for (int i = 0; i < 20; ++i, ++steady) s.add(hashOf(kSteady), "steady");
  uint64_t fresh = 1000;
  for (uint64_t i = 0; i < kAdds; ++i) {
    if (i % 200 == 0) {
      s.add(hashOf(kSteady), "steady");
      ++steady;
    } else {
      s.add(hashOf(fresh++), "");
    }
  }
  const auto& cs = s.counters();
  const auto it = std::find_if(cs.begin(), cs.end(),
                               [](const HotKeyCounter& c) { return c.hash == hashOf(kSteady); });
  ASSERT_NE(it, cs.end());
  EXPECT_EQ(it->count, steady);
  EXPECT_EQ(it->error, 0u);
  EXPECT_GT(it->count, s.floor());
  EXPECT_LE(s.floor() * kCap, s.total());
}

TEST(SpaceSavingTest, KeepsOnlyTheFirstDisplayBytesOfALongKey) {
  SpaceSaving s;
  const std::string exact(kHotKeyDisplayBytes, 'e');
  const std::string long_key = std::string(kHotKeyDisplayBytes, 'l') + "-and-the-rest";
  s.add(1, "short");
  s.add(2, exact);
  s.add(3, long_key);
  s.add(4, "");
  s.add(4, "late");   // tracked without bytes: takes the first it is given
  s.add(4, "later");  // ... and keeps them
  for (const HotKeyCounter& c : s.counters()) {
    const std::string bytes(c.key, c.key_len);
    switch (c.hash) {
      case 1: EXPECT_EQ(bytes, "short"); EXPECT_FALSE(c.truncated); break;
      case 2: EXPECT_EQ(bytes, exact); EXPECT_FALSE(c.truncated); break;
      case 3:
        EXPECT_EQ(bytes, long_key.substr(0, kHotKeyDisplayBytes));
        EXPECT_EQ(c.key_len, kHotKeyDisplayBytes);
        EXPECT_TRUE(c.truncated);
        break;
      case 4: EXPECT_EQ(bytes, "late"); EXPECT_FALSE(c.truncated); break;
      default: ADD_FAILURE() << "unexpected hash " << c.hash;
    }
  }
}

TEST(SpaceSavingTest, MergeKeepsTheBoundsAgainstTheUnionStream) {
  // Two workers see differently skewed streams (the second's ranks are another permutation
  // of the keys), so each tracks keys the other does not and the merge must charge each
  // side's floor for them.
  constexpr size_t kKeys = 100000;
  ZipfRanks za(kKeys, 1.2, 1), zb(kKeys, 1.1, 2);
  SpaceSaving a, b;
  TrueCounts truth;
  for (int i = 0; i < 300000; ++i) {
    const uint64_t k = za.next();
    a.add(hashOf(k), keyOf(k));
    ++truth[hashOf(k)];
  }
  for (int i = 0; i < 200000; ++i) {
    const uint64_t k = (zb.next() * 7919 + 13) % kKeys;
    b.add(hashOf(k), keyOf(k));
    ++truth[hashOf(k)];
  }
  const uint64_t floor_a = a.floor(), floor_b = b.floor();
  ASSERT_GT(floor_a, 0u);
  ASSERT_GT(floor_b, 0u);
  a.merge(b);
  ASSERT_EQ(a.counters().size(), kCap);
  EXPECT_GE(a.floor(), floor_a + floor_b);
  expectGuarantees(a, truth, 500000);
  // The merged summary goes on counting, bounds intact.
  for (int i = 0; i < 100000; ++i) {
    const uint64_t k = za.next();
    a.add(hashOf(k), keyOf(k));
    ++truth[hashOf(k)];
  }
  expectGuarantees(a, truth, 600000);
}

TEST(SpaceSavingTest, MergeOfSummariesBelowCapacityIsExact) {
  SpaceSaving a, b;
  for (uint64_t k = 0; k < 40; ++k)
    for (uint64_t i = 0; i <= k; ++i) a.add(hashOf(k), keyOf(k));   // k + 1 times
  for (uint64_t k = 20; k < 60; ++k) b.add(hashOf(k), k < 40 ? "" : keyOf(k));
  a.merge(b);
  ASSERT_EQ(a.counters().size(), 60u);
  EXPECT_EQ(a.floor(), 0u);
  EXPECT_EQ(a.total(), 40u * 41 / 2 + 40);
  for (const HotKeyCounter& c : a.counters()) {
    uint64_t k = 0;
    while (hashOf(k) != c.hash) ++k;
    EXPECT_EQ(c.count, (k < 40 ? k + 1 : 0) + (k >= 20 ? 1 : 0)) << k;
    EXPECT_EQ(c.error, 0u);
    EXPECT_EQ(std::string(c.key, c.key_len), keyOf(k));
  }
}

// merge()'s scratch, as large as a summary, is the merging thread's: a summary holds only its
// own state (it held both, 75,920 bytes, when each summary carried its scratch; a cluster
// keeps 2 x workers + 1 of them).
TEST(SpaceSavingTest, ASummaryCarriesNoMergeScratch) {
  EXPECT_LT(SpaceSaving::bytesPerSummary(), 40u * 1024);
}

// Two threads merging at once, each into its own summaries, get what one thread gets: the
// scratch is per thread, never shared.
TEST(SpaceSavingTest, MergesOnTwoThreadsAtOnceMatchOneThreadsMerges) {
  auto fill = [](SpaceSaving& s, uint64_t seed) {
    for (uint64_t i = 0; i < 20000; ++i) {
      const uint64_t k = (i * 2654435761u + seed) % 400;
      s.add(hashOf(k), keyOf(k));
    }
  };
  auto mergedCounts = [&](uint64_t seed) {
    SpaceSaving a, b;
    fill(a, seed);
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> out;
    for (int round = 0; round < 50; ++round) {
      b.clear();
      fill(b, seed + static_cast<uint64_t>(round) + 1);
      a.merge(b);
    }
    for (const HotKeyCounter& c : a.counters()) out[c.hash] = {c.count, c.error};
    return out;
  };
  const auto one = mergedCounts(7), other = mergedCounts(99);
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> t1, t2;
  std::thread x([&] { t1 = mergedCounts(7); });
  std::thread y([&] { t2 = mergedCounts(99); });
  x.join();
  y.join();
  EXPECT_EQ(t1, one);
  EXPECT_EQ(t2, other);
}

TEST(SpaceSavingTest, ClearForgetsEverything) {
  SpaceSaving s;
  for (uint64_t i = 0; i < 5000; ++i) s.add(hashOf(i % 300), keyOf(i % 300));
  ASSERT_GT(s.floor(), 0u);
  s.clear();
  EXPECT_EQ(s.total(), 0u);
  EXPECT_EQ(s.floor(), 0u);
  EXPECT_TRUE(s.counters().empty());
  // Counting starts over, exact again: no filter cell or index slot survived.
  for (uint64_t k = 0; k < 100; ++k) s.add(hashOf(k), keyOf(k));
  ASSERT_EQ(s.counters().size(), 100u);
  for (const HotKeyCounter& c : s.counters()) {
    EXPECT_EQ(c.count, 1u);
    EXPECT_EQ(c.error, 0u);
  }
}

TEST(SpaceSavingTest, CopyFromTakesTheWholeSummary) {
  SpaceSaving s, copy;
  for (uint64_t i = 0; i < 5000; ++i) s.add(hashOf(i % 300), keyOf(i % 300));
  copy.add(hashOf(999), "stale");
  copy.copyFrom(s);
  EXPECT_EQ(copy.total(), s.total());
  EXPECT_EQ(copy.floor(), s.floor());
  ASSERT_EQ(copy.counters().size(), s.counters().size());
  for (size_t i = 0; i < s.counters().size(); ++i) {
    EXPECT_EQ(copy.counters()[i].hash, s.counters()[i].hash);
    EXPECT_EQ(copy.counters()[i].count, s.counters()[i].count);
    EXPECT_EQ(copy.counters()[i].error, s.counters()[i].error);
  }
  // Both go on identically from there: the index and filter came along.
  for (uint64_t i = 0; i < 2000; ++i) {
    s.add(hashOf(i % 700), keyOf(i % 700));
    copy.add(hashOf(i % 700), keyOf(i % 700));
  }
  ASSERT_EQ(copy.counters().size(), s.counters().size());
  for (size_t i = 0; i < s.counters().size(); ++i) {
    EXPECT_EQ(copy.counters()[i].hash, s.counters()[i].hash);
    EXPECT_EQ(copy.counters()[i].count, s.counters()[i].count);
  }
}

}  // namespace
}  // namespace lb
