// The bounded-load cap across workers: two threads (two workers' loops) race for the last
// slot of a hot key's owner through the proxy's own ClusterLoads and BackendStates. The
// compare-and-swap reservation lets exactly one of them have it, every round; a check-then-add
// lets both in whenever their picks overlap, one request over the cap.
#include <gtest/gtest.h>

#include <barrier>
#include <memory>
#include <thread>
#include <vector>

#include "lb/routing/backend_state.h"
#include "lb/routing/snapshot.h"
#include "plugins/selectors/bounded_load.h"

namespace lb {
namespace {

// attempt k of hash h is host (h + k) % n: the hot key 0 is owned by host 0, then 1, 2, 3.
class ModuloTable final : public SelectorTable {
 public:
  explicit ModuloTable(uint32_t n) : n_(n) {}
  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    return static_cast<uint32_t>((hash + attempt) % n_);
  }
  uint32_t hostCount() const noexcept override { return n_; }
  size_t memoryBytes() const noexcept override { return 0; }

 private:
  uint32_t n_;
};

struct Fleet {
  StateRegistry registry{2};
  std::vector<BackendSnapshot> backends{4};
  std::unique_ptr<ClusterLoads> loads;

  Fleet() {
    for (int i = 0; i < 4; ++i)
      backends[i].state = registry.backend("c", "cache-" + std::to_string(i));
    loads = std::make_unique<ClusterLoads>(&backends, registry.clusterLoad("c"));
  }
  void setLive(uint32_t host, int64_t want) {
    BackendState& s = *backends[host].state;
    while (s.live.load() < want) s.addLive();
    while (s.live.load() > want) s.dropLive();
  }
  int64_t live(uint32_t host) const { return backends[host].state->live.load(); }
};

TEST(BoundedCapWorkersTest, ClusterTotalFollowsEveryHost) {
  Fleet f;
  f.setLive(0, 3);
  f.setLive(2, 5);
  EXPECT_EQ(f.loads->totalLoad(), 8u);
  ASSERT_TRUE(f.backends[1].state->tryAddLive(1));
  EXPECT_EQ(f.loads->totalLoad(), 9u);
  EXPECT_FALSE(f.backends[1].state->tryAddLive(1));   // at its cap: nothing taken
  EXPECT_EQ(f.loads->totalLoad(), 9u);
  f.backends[0].state->dropLive();
  EXPECT_EQ(f.loads->totalLoad(), 8u);
}

TEST(BoundedCapWorkersTest, AReservedPickSaysSoAndAnUnreservedOneTakesNothing) {
  Fleet f;
  ModuloTable table(4);
  const std::vector<HostSpec> hosts(4);
  BoundedLoad bounded(hosts, 125);
  const Pick look = bounded.pick(table, 0, *f.loads, 0, Reserve::kNo);
  EXPECT_FALSE(look.reserved);
  EXPECT_EQ(f.loads->totalLoad(), 0u);
  const Pick take = bounded.pick(table, 0, *f.loads, 0, Reserve::kYes);
  EXPECT_TRUE(take.reserved);
  EXPECT_EQ(take.host, 0u);
  EXPECT_EQ(f.live(0), 1);
  EXPECT_EQ(f.loads->totalLoad(), 1u);
}

TEST(BoundedCapWorkersTest, TwoWorkersNeverBothTakeTheLastSlotOfAHotKeysOwner) {
  Fleet f;
  ModuloTable table(4);
  const std::vector<HostSpec> hosts(4);
  BoundedLoad bounded(hosts, 125);
  // 10 in flight (3, 3, 2, 2): host 0's cap is 4 at a total of 10 and still 4 at 11, so
  // whichever worker reserves first, the other must find host 0 full.
  ASSERT_EQ(bounded.cap(0, 10), 4u);
  ASSERT_EQ(bounded.cap(0, 11), 4u);
  auto baseline = [&] {
    f.setLive(0, 3);
    f.setLive(1, 3);
    f.setLive(2, 2);
    f.setLive(3, 2);
  };
  baseline();

  constexpr int kRounds = 20000;
  Pick got[2]{};
  int both_on_owner = 0, none_on_owner = 0, over_cap = 0;
  std::barrier sync(2);
  auto worker = [&](int id) {
    for (int r = 0; r < kRounds; ++r) {
      sync.arrive_and_wait();   // the loads are at the baseline
      got[id] = bounded.pick(table, 0, *f.loads, 0, Reserve::kYes);
      sync.arrive_and_wait();   // both picked
      if (id == 0) {
        const int on_owner = (got[0].host == 0) + (got[1].host == 0);
        both_on_owner += on_owner == 2;
        none_on_owner += on_owner == 0;
        over_cap += f.live(0) > 4;
        for (const Pick& p : got)
          if (p.reserved) f.backends[p.host].state->dropLive();
        baseline();
      }
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  EXPECT_EQ(both_on_owner, 0);
  EXPECT_EQ(over_cap, 0);
  EXPECT_EQ(none_on_owner, 0);   // the slot was free: one of them always had it
  EXPECT_EQ(f.loads->totalLoad(), 10u);
}

}  // namespace
}  // namespace lb
