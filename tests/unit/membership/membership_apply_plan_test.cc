// The membership source's decisions without etcd (lb/membership/apply_plan.h): which
// revisions may still be served, coalescing by min_apply_interval, one build at a time.
#include <gtest/gtest.h>

#include <string>

#include "lb/membership/apply_plan.h"

namespace lb {
namespace {

MembershipUpdate put(int64_t revision, std::string doc = "") {
  MembershipUpdate u;
  u.revision = revision;
  u.document = doc.empty() ? "doc@" + std::to_string(revision) : std::move(doc);
  return u;
}

MembershipUpdate deletion(int64_t revision) {
  MembershipUpdate u;
  u.revision = revision;
  u.deleted = true;
  return u;
}

TEST(ApplyPlanTest, TheFirstUpdateBuildsAtOnce) {
  ApplyPlan plan(0, 100);
  ASSERT_TRUE(plan.offer(put(5)));
  ASSERT_TRUE(plan.ready(1000, nullptr));
  MembershipUpdate u = plan.take(1000);
  EXPECT_EQ(u.revision, 5);
  EXPECT_EQ(u.document, "doc@5");
  EXPECT_TRUE(plan.inFlight());
  plan.done(true);
  EXPECT_EQ(plan.served(), 5);
  EXPECT_EQ(plan.builds(), 1u);
}

TEST(ApplyPlanTest, ARevisionNotNewerThanTheServedOneIsDropped) {
  ApplyPlan plan(7, 0);
  EXPECT_FALSE(plan.offer(put(7)));
  EXPECT_FALSE(plan.offer(put(3)));
  EXPECT_FALSE(plan.waiting());
  EXPECT_TRUE(plan.offer(put(8)));
}

TEST(ApplyPlanTest, AnOlderRevisionArrivingAfterANewerOneIsDropped) {
  ApplyPlan plan(0, 0);
  ASSERT_TRUE(plan.offer(put(10)));
  EXPECT_FALSE(plan.offer(put(9)));
  EXPECT_EQ(plan.take(0).revision, 10);
  plan.done(true);
  EXPECT_FALSE(plan.offer(put(9)));
  EXPECT_EQ(plan.served(), 10);
}

// A reconciling Range that finds the revision already rejected does not judge it again.
TEST(ApplyPlanTest, ARejectedRevisionIsNotJudgedAgain) {
  ApplyPlan plan(4, 0);
  ASSERT_TRUE(plan.offer(put(6)));
  plan.take(0);
  plan.done(false);
  EXPECT_EQ(plan.served(), 4);
  EXPECT_FALSE(plan.offer(put(6)));
  EXPECT_TRUE(plan.offer(put(7)));
}

TEST(ApplyPlanTest, UpdatesWithinTheIntervalCoalesceToTheLatest) {
  ApplyPlan plan(0, 100);
  ASSERT_TRUE(plan.offer(put(1)));
  plan.take(1000);
  plan.done(true);
  for (int64_t r = 2; r <= 1000; ++r) ASSERT_TRUE(plan.offer(put(r)));
  uint64_t wait = 0;
  EXPECT_FALSE(plan.ready(1040, &wait));
  EXPECT_EQ(wait, 60u);
  ASSERT_TRUE(plan.ready(1100, &wait));
  MembershipUpdate u = plan.take(1100);
  EXPECT_EQ(u.revision, 1000);
  EXPECT_EQ(u.document, "doc@1000");
  plan.done(true);
  EXPECT_EQ(plan.builds(), 2u);
  EXPECT_EQ(plan.served(), 1000);
}

TEST(ApplyPlanTest, NothingIsTakenWhileABuildIsInFlight) {
  ApplyPlan plan(0, 0);
  ASSERT_TRUE(plan.offer(put(1)));
  plan.take(0);
  ASSERT_TRUE(plan.offer(put(2)));
  uint64_t wait = 99;
  EXPECT_FALSE(plan.ready(5000, &wait));
  EXPECT_EQ(wait, 0u);
  plan.done(true);
  ASSERT_TRUE(plan.ready(5000, nullptr));
  EXPECT_EQ(plan.take(5000).revision, 2);
}

TEST(ApplyPlanTest, AZeroIntervalBuildsEveryRevision) {
  ApplyPlan plan(0, 0);
  for (int64_t r = 1; r <= 5; ++r) {
    ASSERT_TRUE(plan.offer(put(r)));
    ASSERT_TRUE(plan.ready(10, nullptr));
    EXPECT_EQ(plan.take(10).revision, r);
    plan.done(true);
  }
  EXPECT_EQ(plan.builds(), 5u);
}

// A deletion is a rejection, judged at once: it builds nothing and spends no interval.
TEST(ApplyPlanTest, ADeletionIsJudgedAtOnceAndBuildsNothing) {
  ApplyPlan plan(0, 1000);
  ASSERT_TRUE(plan.offer(put(1)));
  plan.take(0);
  plan.done(true);
  ASSERT_TRUE(plan.offer(deletion(2)));
  ASSERT_TRUE(plan.ready(10, nullptr));
  MembershipUpdate u = plan.take(10);
  EXPECT_TRUE(u.deleted);
  plan.done(false);
  EXPECT_EQ(plan.served(), 1);
  EXPECT_EQ(plan.builds(), 1u);
  // The put after it still waits for the interval of the last build.
  ASSERT_TRUE(plan.offer(put(3)));
  uint64_t wait = 0;
  EXPECT_FALSE(plan.ready(10, &wait));
  EXPECT_EQ(wait, 990u);
}

// Starting on the state file's revision: what etcd holds at or below it is not applied again.
TEST(ApplyPlanTest, SetServedDropsAWaitingUpdateThatIsNoNewer) {
  ApplyPlan plan(0, 0);
  ASSERT_TRUE(plan.offer(put(5)));
  plan.setServed(5);
  EXPECT_FALSE(plan.waiting());
  EXPECT_EQ(plan.served(), 5);
  EXPECT_FALSE(plan.offer(put(5)));
  EXPECT_TRUE(plan.offer(put(6)));
}

}  // namespace
}  // namespace lb
