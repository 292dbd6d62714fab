// lb/cli/simulate/membership_plan.h: the members before and after a scenario's events. Adds
// append ids, removes take the last (one always stays), weights apply by id, a rollout of
// nothing else brings one server in, and failures move neither membership nor its time.
#include "lb/cli/simulate/membership_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace lb {
namespace {

SimEvent event(SimEvent::Kind kind, uint32_t count = 1, double at_s = -1) {
  SimEvent e;
  e.kind = kind;
  e.count = count;
  e.at_s = at_s;
  return e;
}

TEST(SimMembershipPlanTest, AddsAppendAndRemovesTakeTheLast) {
  SimScenario s;
  s.servers = 4;
  s.events = {event(SimEvent::Kind::kAdd, 2, 12), event(SimEvent::Kind::kRemove, 3, 15)};
  const SimMembershipPlan p = planMembership(s);
  EXPECT_EQ(p.old_ids, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(p.new_ids, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(p.removed, (std::vector<uint32_t>{5, 4, 3}));
  EXPECT_EQ(p.servers, 6u);
  EXPECT_TRUE(p.change);
  EXPECT_EQ(p.event_t, 15);
}

TEST(SimMembershipPlanTest, OneServerAlwaysStays) {
  SimScenario s;
  s.servers = 2;
  s.events = {event(SimEvent::Kind::kRemove, 5)};
  const SimMembershipPlan p = planMembership(s);
  EXPECT_EQ(p.new_ids, (std::vector<uint32_t>{0}));
  EXPECT_EQ(p.removed, (std::vector<uint32_t>{1}));
}

TEST(SimMembershipPlanTest, AWeightChangesOnlyTheNewWeights) {
  SimScenario s;
  s.servers = 3;
  SimEvent w = event(SimEvent::Kind::kWeight);
  w.server = 1;
  w.weight = 5;
  s.events = {w};
  const SimMembershipPlan p = planMembership(s);
  EXPECT_TRUE(p.change);
  EXPECT_EQ(p.new_ids, p.old_ids);
  EXPECT_EQ(p.old_weights[1], 1u);
  EXPECT_EQ(p.new_weights[1], 5u);
  EXPECT_EQ(p.new_weights[0], 1u);
}

TEST(SimMembershipPlanTest, ARolloutOfNothingElseBringsOneServerIn) {
  SimScenario s;
  s.servers = 3;
  s.events = {event(SimEvent::Kind::kRollout)};
  const SimMembershipPlan p = planMembership(s);
  ASSERT_NE(p.rollout, nullptr);
  EXPECT_EQ(p.rollout, &s.events[0]);
  EXPECT_EQ(p.new_ids, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(p.servers, 4u);
}

TEST(SimMembershipPlanTest, FailuresLeaveMembershipAndItsTimeAlone) {
  SimScenario s;
  s.servers = 3;
  s.event_at_s = 10;
  s.events = {event(SimEvent::Kind::kFail, 1, 30), event(SimEvent::Kind::kFlap, 1, 40)};
  const SimMembershipPlan p = planMembership(s);
  EXPECT_FALSE(p.change);
  EXPECT_EQ(p.new_ids, p.old_ids);
  EXPECT_EQ(p.event_t, 10);
  EXPECT_TRUE(p.removed.empty());
}

}  // namespace
}  // namespace lb
