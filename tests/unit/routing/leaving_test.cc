// Leaving backends (lb/routing/handover.h): a cluster that reads through keeps the backend a
// change removed as a host past the table's for the handover window. No pick routes a key to
// it, a read through names it for the keys it owned, a carried window keeps it, and the
// snapshot derived at the window's end (lb/routing/readdress.h) drops it. A cluster that
// ramps (HTTP) keeps nothing: it never reads from a removed backend.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/routing/handover.h"
#include "lb/routing/readdress.h"
#include "lb/routing/snapshot.h"
#include "tests/support/handover_snapshot.h"

namespace lb {
namespace {


// The pick test cluster on ring_hash with `n` backends and a one-minute handover window,
// served by a redis listener (it reads through) or by the default HTTP one.
Config leavingConfig(size_t n, bool redis = true) {
  Config c = handoverTestConfig(n);
  if (redis) c.listeners[0].protocol = Protocol::kRedis;
  return c;
}

std::shared_ptr<const Snapshot> build(StateRegistry& registry, Config config,
                                      const Snapshot* previous = nullptr) {
  return buildHandoverSnapshot(registry, std::move(config), previous);
}

uint64_t hashAt(uint64_t i) { return i * 0x9e3779b97f4a7c15ULL; }

// The first of 5,000 hashes whose previous owner is the leaving host `leaving`.
uint64_t keyOfLeaving(const HandoverWindow& w, uint32_t leaving) {
  for (uint64_t i = 1; i < 5000; ++i)
    if (w.previousOwner(hashAt(i)) == leaving) return hashAt(i);
  return 0;
}

TEST(LeavingBackendTest, AClusterThatReadsThroughKeepsARemovedBackendPastTheTable) {
  StateRegistry registry(1);
  auto four = build(registry, leavingConfig(4));
  auto three = build(registry, leavingConfig(3), four.get());
  ASSERT_TRUE(three);
  const ClusterSnapshot& c = three->clusters[0];
  ASSERT_NE(c.handover, nullptr);
  ASSERT_EQ(c.hostCount(), 3u);
  ASSERT_EQ(c.backends.size(), 4u);
  EXPECT_EQ(c.backends[3].config->name, "b3");
  EXPECT_EQ(c.backends[3].config->address, "127.0.0.1:9004");
  // Its state is the one it had as a member: its health goes on.
  EXPECT_EQ(c.backends[3].state, four->clusters[0].backends[3].state);
  const uint64_t moved = keyOfLeaving(*c.handover, 3);
  ASSERT_NE(moved, 0u);
  PickContext ctx;
  ctx.read_through = true;
  Pick p;
  ASSERT_TRUE(c.pick(moved, ctx, &p));
  EXPECT_EQ(p.host, c.hostAt(moved, 0));
  EXPECT_EQ(p.from, 3u) << "a miss at the new owner is read from the leaving backend";
  EXPECT_EQ(c.handoverFrom(moved, p.host), 3u) << "a write deletes there";
  // Down, it is read from no more.
  c.backends[3].state->healthy.store(false);
  ASSERT_TRUE(c.pick(moved, ctx, &p));
  EXPECT_EQ(p.from, Pick::kNoHost);
}

TEST(LeavingBackendTest, NoPickRoutesAKeyToALeavingBackend) {
  StateRegistry registry(1);
  auto four = build(registry, leavingConfig(4));
  auto three = build(registry, leavingConfig(3), four.get());
  const ClusterSnapshot& c = three->clusters[0];
  ASSERT_EQ(c.backends.size(), 4u);
  for (uint64_t i = 0; i < 3000; ++i) {
    for (uint32_t attempt = 0; attempt < 3; ++attempt) {
      PickContext ctx;
      ctx.read_through = i % 2 == 0;
      ctx.from_attempt = attempt;
      Pick p;
      if (c.pick(hashAt(i), ctx, &p)) {
        ASSERT_LT(p.host, 3u) << "hash " << i << " attempt " << attempt;
      }
    }
  }
}

TEST(LeavingBackendTest, AClusterThatRampsKeepsNoRemovedBackend) {
  StateRegistry registry(1);
  auto four = build(registry, leavingConfig(4, false));
  auto three = build(registry, leavingConfig(3, false), four.get());
  const ClusterSnapshot& c = three->clusters[0];
  ASSERT_NE(c.handover, nullptr);
  EXPECT_EQ(c.handover->leaving, std::vector<std::string>{"b3"});
  EXPECT_EQ(c.backends.size(), 3u);
  EXPECT_TRUE(c.handover->leaving_backends.empty());
  EXPECT_EQ(leavingUntil(*three), 0);
}

// A reload that moves no key inside the window carries it, and the leaving backend with it.
TEST(LeavingBackendTest, ACarriedWindowKeepsTheLeavingBackend) {
  StateRegistry registry(1);
  auto four = build(registry, leavingConfig(4));
  auto three = build(registry, leavingConfig(3), four.get());
  auto again = build(registry, leavingConfig(3), three.get());
  ASSERT_TRUE(again);
  const ClusterSnapshot& c = again->clusters[0];
  ASSERT_NE(c.handover, nullptr);
  EXPECT_EQ(c.handover->until_ms, three->clusters[0].handover->until_ms);
  ASSERT_EQ(c.backends.size(), 4u);
  EXPECT_EQ(c.backends[3].config->name, "b3");
  const uint64_t moved = keyOfLeaving(*c.handover, 3);
  ASSERT_NE(moved, 0u);
  PickContext ctx;
  ctx.read_through = true;
  Pick p;
  ASSERT_TRUE(c.pick(moved, ctx, &p));
  EXPECT_EQ(p.from, 3u);
  // Added back, it is a member again and leaves nothing behind.
  auto back = build(registry, leavingConfig(4), again.get());
  EXPECT_EQ(back->clusters[0].backends.size(), 4u);
  EXPECT_EQ(back->clusters[0].hostCount(), 4u);
}

TEST(LeavingBackendTest, TheSnapshotDerivedAtTheWindowsEndDropsIt) {
  StateRegistry registry(1);
  auto four = build(registry, leavingConfig(4));
  auto three = build(registry, leavingConfig(3), four.get());
  const int64_t until = leavingUntil(*three);
  ASSERT_EQ(until, three->clusters[0].handover->until_ms);
  // Before its end: kept, whatever the generation.
  auto early = withoutLeaving(*three, 7, until - 1);
  EXPECT_EQ(early->generation, 7u);
  EXPECT_EQ(early->clusters[0].backends.size(), 4u);
  EXPECT_EQ(early->clusters[0].backends[3].config->name, "b3");
  // At its end: gone, with the window; the table is the same one, so no key moves.
  auto done = withoutLeaving(*three, 8, until);
  const ClusterSnapshot& c = done->clusters[0];
  EXPECT_EQ(c.backends.size(), 3u);
  EXPECT_EQ(c.handover, nullptr);
  EXPECT_EQ(c.table, three->clusters[0].table);
  EXPECT_EQ(leavingUntil(*done), 0);
  EXPECT_EQ(c.backends[0].config, &done->config.clusters[0].backends[0]);
}

// A re-resolution's snapshot keeps the leaving backend's settings where they live (the
// window), and the members' in its own config copy.
TEST(LeavingBackendTest, ANewAddressKeepsTheLeavingBackend) {
  StateRegistry registry(1);
  auto four = build(registry, leavingConfig(4));
  auto three = build(registry, leavingConfig(3), four.get());
  auto moved = withAddresses(*three, {});
  const ClusterSnapshot& c = moved->clusters[0];
  ASSERT_EQ(c.backends.size(), 4u);
  EXPECT_EQ(c.backends[3].config, &c.handover->leaving_backends[0]);
  EXPECT_EQ(c.backends[2].config, &moved->config.clusters[0].backends[2]);
}

}  // namespace
}  // namespace lb
