// Issue 20, acceptance 5: a flapping writer costs a few table builds, not one per write. A
// thousand writes to the key as fast as etcd takes them (one keep-alive connection to its
// JSON gateway) reach a real lb with the default min_apply_interval (100 ms): lb applies at
// most one build per interval, a few dozen in all (lb_membership_updates_total{result=
// "applied"}), and ends on the last revision with the last document's backends.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>

#include "tests/integration/membership_fleet.h"

namespace lb::test {
namespace {

const std::map<std::string, std::string> kApplied = {{"cluster", "cache"},
                                                     {"result", "applied"}};

TEST(MembershipCoalesceTest, AThousandRapidWritesCostAFewDozenBuildsAndEndOnTheLast) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  OriginFleet origins(4);
  ASSERT_TRUE(origins.ok()) << origins.error();
  const std::string key = "/lb/test/coalesce/cache";
  EtcdGateway gateway(etcd.clientUrl());
  auto first = gateway.put(key, membershipDocument(origins, {0, 1, 2, 3}));
  ASSERT_TRUE(first) << gateway.error();
  MemberLb lb(MembershipOptions({etcd.clientUrl()}, key).minApplyInterval("100ms"));
  ASSERT_TRUE(lb.start()) << lb.output();
  ASSERT_TRUE(waitForRevision(lb.admin(), *first)) << lb.output();
  const double applied_before = metricValue(lb.admin(), "lb_membership_updates_total", kApplied)
                                    .value_or(-1);
  ASSERT_GE(applied_before, 1);

  // Alternate between three and four members, so that every write is a real change.
  const std::string three = membershipDocument(origins, {0, 1, 2});
  const std::string four = membershipDocument(origins, {0, 1, 2, 3});
  const auto start = Clock::now();
  int64_t last = 0;
  for (int i = 0; i < 1000; ++i) {
    auto rev = gateway.put(key, i % 2 == 0 ? three : four);
    ASSERT_TRUE(rev) << "write " << i << ": " << gateway.error();
    last = *rev;
  }
  const double write_s = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_TRUE(waitForRevision(lb.admin(), last, 5s)) << lb.output();
  const double total_s = std::chrono::duration<double>(Clock::now() - start).count();

  // The last write (i = 999) is the four-member document.
  EXPECT_EQ(lb.membership().backends.size(), 4u);
  EXPECT_EQ(lb.membership().revision, last);
  const double builds =
      metricValue(lb.admin(), "lb_membership_updates_total", kApplied).value_or(-1) -
      applied_before;
  printf("[ membership ] 1000 writes in %.2f s, served the last after %.2f s: %.0f builds\n",
         write_s, total_s, builds);
  EXPECT_GE(builds, 1);
  // At most one per 100 ms while the writes last, plus the trailing one; and a few dozen.
  EXPECT_LE(builds, total_s / 0.1 + 2);
  EXPECT_LE(builds, 60);
}

}  // namespace
}  // namespace lb::test
