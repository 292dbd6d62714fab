// The hot set as workers read it: HotHashes' membership over random sets and the
// hashes that stress it (0, 32- and 15-bit selectors' hashes), and HotKeyState's way from
// the tracker to each worker's slot: published by the main thread, adopted by each worker on
// its own thread, read there by isHot.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <thread>
#include <vector>

#include "lb/hotkeys/hot_hashes.h"
#include "lb/hotkeys/hot_key_state.h"

namespace lb {
namespace {

TEST(HotHashesTest, HoldsExactlyItsMembersOverRandomSets) {
  std::mt19937_64 rng(22);
  for (size_t n : {0u, 1u, 2u, 7u, 8u, 50u, 128u, 300u}) {
    for (uint64_t bits : {64u, 32u, 15u}) {
      const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      std::set<uint64_t> want;
      std::vector<uint64_t> in;
      while (want.size() < n && want.size() <= mask) {
        const uint64_t h = rng() & mask;
        want.insert(h);
        in.push_back(h);
        if (rng() % 4 == 0) in.push_back(h);   // duplicates are kept once
      }
      const HotHashes set(in);
      ASSERT_EQ(set.size(), want.size());
      EXPECT_TRUE(std::equal(set.members().begin(), set.members().end(), want.begin(), want.end()));
      // At most half full, a power of two: contains() always meets an empty slot.
      EXPECT_GE(set.slotCount(), 2 * set.size());
      EXPECT_EQ(set.slotCount() & (set.slotCount() - 1), 0u);
      for (uint64_t h : want) EXPECT_TRUE(set.contains(h)) << n << " " << bits << " " << h;
      for (int q = 0; q < 2000; ++q) {
        const uint64_t h = rng() & mask;
        EXPECT_EQ(set.contains(h), want.count(h) == 1) << n << " " << bits << " " << h;
      }
    }
  }
}

TEST(HotHashesTest, ZeroIsAHashLikeAnyOther) {
  const uint64_t with[] = {0, 5};
  const HotHashes a(with);
  EXPECT_TRUE(a.contains(0));
  EXPECT_TRUE(a.contains(5));
  EXPECT_FALSE(a.contains(6));
  const uint64_t without[] = {5};
  const HotHashes b(without);
  EXPECT_FALSE(b.contains(0));
  const HotHashes empty{std::span<const uint64_t>{}};
  EXPECT_FALSE(empty.contains(0));
  EXPECT_FALSE(empty.contains(1));
  EXPECT_EQ(empty.slotCount(), 8u);
}

TEST(HotHashesTest, SameAsComparesTheSetsNotTheirOrder) {
  const uint64_t x[] = {3, 1, 2, 2};
  const uint64_t y[] = {1, 2, 3};
  const uint64_t z[] = {1, 2, 4};
  EXPECT_TRUE(HotHashes(x).sameAs(HotHashes(y)));
  EXPECT_FALSE(HotHashes(x).sameAs(HotHashes(z)));
}

// Small low-bit hashes (twemproxy's 15-bit crc32) spread over the table rather than pile
// into its first slots: the probe for a member not far from where it hashed.
TEST(HotHashesTest, LowBitHashesDoNotShareOneSlot) {
  std::vector<uint64_t> in;
  for (uint64_t h = 1; h <= 64; ++h) in.push_back(h);
  const HotHashes set(in);
  ASSERT_EQ(set.slotCount(), 128u);
  // Unmixed, the top bits of these are all 0: every key would index slot 0 and the 64th
  // would probe 64 slots. Mixed, no two of 1..64 collide in 7 bits of h * 2^64/phi.
  std::set<uint64_t> top;
  for (uint64_t h : in) top.insert((h * 0x9E3779B97F4A7C15ULL) >> 57);
  EXPECT_GT(top.size(), 48u);
  for (uint64_t h : in) EXPECT_TRUE(set.contains(h));
  EXPECT_FALSE(set.contains(65));
}

// A tracker whose last window made `hot` hot, with `others` one-off keys beside it.
void observeHot(HotKeyState& hk, const std::vector<uint64_t>& hot, int64_t now_ms,
                int others = 100) {
  SpaceSaving s;
  for (uint64_t h : hot)
    for (int i = 0; i < 200; ++i) s.add(h, "hot");
  for (int i = 0; i < others; ++i) s.add(1000000 + static_cast<uint64_t>(i), "cold");
  hk.tracker().observe(s, 1.0, now_ms);
}

TEST(HotKeyStatePublishTest, AWorkerSeesTheSetOnlyOnceItAdoptedIt) {
  HotKeyState hk(2);
  EXPECT_FALSE(hk.isHot(0, 42));   // no set yet
  EXPECT_FALSE(hk.publishHotSet());   // nothing hot: nothing new to tell
  observeHot(hk, {42}, 1000);
  ASSERT_EQ(hk.tracker().activeCount(), 1u);
  EXPECT_TRUE(hk.publishHotSet());
  ASSERT_NE(hk.published(), nullptr);
  EXPECT_TRUE(hk.published()->contains(42));
  EXPECT_FALSE(hk.isHot(0, 42));   // published, not adopted
  // Worker 0 adopts on its own thread (joined: its slot's write happens before the reads).
  std::thread([&] { hk.adoptHotSet(0); }).join();
  EXPECT_TRUE(hk.isHot(0, 42));
  EXPECT_FALSE(hk.isHot(0, 43));
  EXPECT_FALSE(hk.isHot(1, 42));   // worker 1 has not adopted it yet
  std::thread([&] { hk.adoptHotSet(1); }).join();
  EXPECT_TRUE(hk.isHot(1, 42));
  // Past the workers it was made for: never hot, never a slot read out of range.
  EXPECT_FALSE(hk.isHot(2, 42));
  EXPECT_FALSE(hk.isHot(1000, 42));
  hk.adoptHotSet(7);   // no-op
}

TEST(HotKeyStatePublishTest, PublishesOnlyWhenTheSetChanges) {
  HotKeyState hk(1);
  observeHot(hk, {42}, 1000);
  EXPECT_TRUE(hk.publishHotSet());
  observeHot(hk, {42}, 2000);
  EXPECT_FALSE(hk.publishHotSet()) << "the same hot set must not cost the workers a round";
  observeHot(hk, {42, 77}, 3000);
  EXPECT_TRUE(hk.publishHotSet());
  hk.adoptHotSet(0);
  EXPECT_TRUE(hk.isHot(0, 42));
  EXPECT_TRUE(hk.isHot(0, 77));
}

TEST(HotKeyStatePublishTest, AKeyThatLeavesTheHotSetLeavesTheWorkersToo) {
  HotKeyState hk(1);
  hk.tracker().setPolicy({0.02, std::chrono::milliseconds(1000)});
  observeHot(hk, {42}, 1000);
  ASSERT_TRUE(hk.publishHotSet());
  hk.adoptHotSet(0);
  ASSERT_TRUE(hk.isHot(0, 42));
  // The key stops: once below the threshold for the hold, it is out; the set is empty.
  int64_t now = 2000;
  for (; now < 20000 && hk.tracker().activeCount() > 0; now += 1000) observeHot(hk, {}, now);
  ASSERT_EQ(hk.tracker().activeCount(), 0u);
  EXPECT_TRUE(hk.publishHotSet());
  EXPECT_EQ(hk.published(), nullptr);
  EXPECT_TRUE(hk.isHot(0, 42)) << "the worker keeps its set until it adopts the new one";
  hk.adoptHotSet(0);
  EXPECT_FALSE(hk.isHot(0, 42));
}

TEST(HotKeyStatePublishTest, PathCountsAreSummedOverWorkers) {
  HotKeyState hk(3);
  hk.countPath(0, HotKeyPath::kSpread);
  hk.countPath(2, HotKeyPath::kSpread);
  hk.countPath(2, HotKeyPath::kSpread);
  hk.countPath(9, HotKeyPath::kSpread);   // out of range: not counted
  EXPECT_EQ(hk.pathCount(HotKeyPath::kSpread), 3u);
  EXPECT_STREQ(hotKeyPathName(HotKeyPath::kSpread), "spread");
}

}  // namespace
}  // namespace lb
