// Three etcd members: a real lb watching a key on a real 3-member
// etcd cluster. Killing the member lb is connected to (the one /backends names as its
// "endpoint") moves lb to another member, and every revision put afterwards, one at a time,
// is applied: none is skipped. A compaction past lb's revision while lb's only member is
// down is recovered with a Range: lb ends on the latest revision. (lb Ranges after every
// break, so here the compaction is only in the way of a careless client; the watch start
// that etcd refuses as compacted is membership_compaction_test.cc.)
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/membership_fleet.h"

namespace lb::test {
namespace {

const std::map<std::string, std::string> kCluster = {{"cluster", "cache"}};

// A put through etcdctl, again while it fails: right after a member dies, the others may
// still be electing a leader, and a write then fails ("leader changed") as it would for any
// client. That is etcd's answer to the test, not lb's behaviour, so the test retries it.
int64_t putRetrying(EtcdCluster& etcd, const std::string& key, const std::string& value) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    for (size_t m = 0; m < etcd.size(); ++m)
      if (etcd.running(m)) etcd.waitHealthy(m, 5s);
    if (int64_t rev = etcd.put(key, value); rev > 0) return rev;
  }
  return 0;
}

class MembershipEtcdClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.ok()) << etcd_.output();
    ASSERT_TRUE(origins_.ok()) << origins_.error();
  }
  EtcdCluster etcd_{3};
  OriginFleet origins_{4};
};

TEST_F(MembershipEtcdClusterTest, KillingTheConnectedMemberMovesLbOnAndSkipsNoRevision) {
  const std::string key = "/lb/test/cluster/failover";
  const int64_t first = etcd_.put(key, membershipDocument(origins_, {0, 1, 2}));
  ASSERT_GT(first, 0);
  MemberLb lb(MembershipOptions(etcd_.clientUrls(), key));
  ASSERT_TRUE(lb.start()) << lb.output();
  ASSERT_TRUE(waitForRevision(lb.admin(), first)) << lb.output();

  MembershipView v = lb.membership();
  size_t connected = etcd_.size();
  for (size_t m = 0; m < etcd_.size(); ++m)
    if (v.endpoint == etcd_.clientUrl(m)) connected = m;
  ASSERT_LT(connected, etcd_.size())
      << "/backends' membership \"endpoint\" (" << v.endpoint << ") names no member";
  etcd_.kill(connected);

  // Each put waited for before the next, so lb has each revision to apply: it must apply
  // every one (a skipped revision would be a lost update).
  std::vector<int64_t> puts;
  const std::vector<std::vector<size_t>> changes = {{0, 1, 2, 3}, {1, 2, 3}, {0, 1, 2, 3}};
  for (const auto& members : changes) {
    const int64_t rev = putRetrying(etcd_, key, membershipDocument(origins_, members));
    ASSERT_GT(rev, 0) << etcd_.output();
    puts.push_back(rev);
    // The first after the kill waits out lb's reconnect (backoff to the next member).
    ASSERT_TRUE(waitForRevision(lb.admin(), rev, puts.size() == 1 ? 15s : 5s))
        << "revision " << rev << " not applied\n" << lb.output();
    v = lb.membership();
    EXPECT_EQ(v.revision, rev) << "lb went past revision " << rev << " before showing it";
    EXPECT_EQ(v.backends.size(), members.size());
  }
  EXPECT_NE(v.endpoint, etcd_.clientUrl(connected));
  EXPECT_FALSE(v.endpoint.empty());
  EXPECT_EQ(v.state, "watching");
  EXPECT_EQ(metricValue(lb.admin(), "lb_membership_watch_up", kCluster), 1.0);
  printf("[ membership ] lb moved from %s to %s\n", etcd_.clientUrl(connected).c_str(),
         v.endpoint.c_str());
}

TEST_F(MembershipEtcdClusterTest, ACompactionPastLbsRevisionIsRecoveredWithARange) {
  const std::string key = "/lb/test/cluster/compaction";
  const int64_t first = etcd_.put(key, membershipDocument(origins_, {0, 1, 2}));
  ASSERT_GT(first, 0);
  // Only member 0: with it down, lb's watch is down and cannot move on.
  MemberLb lb(MembershipOptions({etcd_.clientUrl(0)}, key));
  ASSERT_TRUE(lb.start()) << lb.output();
  ASSERT_TRUE(waitForRevision(lb.admin(), first)) << lb.output();

  etcd_.kill(0);
  ASSERT_TRUE(pollUntil([&] {
    return metricValue(lb.admin(), "lb_membership_watch_up", kCluster) == 0.0;
  })) << lb.output();
  int64_t last = 0;
  for (const auto& members : std::vector<std::vector<size_t>>{{0, 1, 2, 3}, {1, 2, 3}, {0, 2, 3}})
    last = putRetrying(etcd_, key, membershipDocument(origins_, members));
  ASSERT_GT(last, first) << etcd_.output();
  // Everything up to the latest revision is compacted away: lb's next revision is gone.
  ASSERT_TRUE(etcd_.compact(last)) << etcd_.output();
  ASSERT_TRUE(etcd_.restart(0)) << etcd_.output();

  ASSERT_TRUE(waitForRevision(lb.admin(), last, 15s))
      << "lb did not recover revision " << last << " after the compaction\n" << lb.output();
  MembershipView v = lb.membership();
  EXPECT_EQ(v.revision, last);
  EXPECT_EQ(v.backends, (std::vector<std::string>{"origin-a", "origin-c", "origin-d"}));
  EXPECT_EQ(metricValue(lb.admin(), "lb_membership_revision", kCluster),
            static_cast<double>(last));
  // And it keeps watching from there: the next put applies.
  const int64_t after = etcd_.put(key, membershipDocument(origins_, {0, 1, 2, 3}));
  ASSERT_TRUE(waitForRevision(lb.admin(), after, 5s)) << lb.output();
}

}  // namespace
}  // namespace lb::test
