// etcd restored from a backup or rebuilt from scratch: its revisions start again, so the key
// lb watches comes back with a mod_revision older than the one lb serves. lb must neither move
// to the older table by itself (instances would disagree: each moves when it next reads etcd)
// nor stay silent about it (it was a debug line): it keeps its table and reports the older
// revision as a rejected update, which the documented alert on
// lb_membership_updates_total{result="rejected"} catches.
//
// Two independent single-member etcd "clusters" stand for before and after: lb lists both
// endpoints, the first holds revision 4 of the key, the second (the rebuilt one) revision 2.
// Killing the first makes lb fail over to the second and read the key there.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/membership_fleet.h"

namespace lb::test {
namespace {

const char kKey[] = "/lb/test/restored/cache";

TEST(MembershipRestoredTest, AnOlderRevisionFromARebuiltEtcdIsRejectedAndTheTableKept) {
  EtcdProcess before;
  EtcdProcess rebuilt;
  ASSERT_TRUE(before.ok()) << before.output();
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.output();
  OriginFleet origins(4);
  ASSERT_TRUE(origins.ok()) << origins.error();

  ASSERT_GT(before.put(kKey, membershipDocument(origins, {0})), 0);
  ASSERT_GT(before.put(kKey, membershipDocument(origins, {0, 1})), 0);
  const int64_t served = before.put(kKey, membershipDocument(origins, {0, 1, 2}));
  const int64_t older = rebuilt.put(kKey, membershipDocument(origins, {3}));
  ASSERT_GT(older, 0);
  ASSERT_LT(older, served) << "the rebuilt etcd must be behind for this test to mean anything";

  MemberLb lb(MembershipOptions({before.clientUrl(), rebuilt.clientUrl()}, kKey));
  ASSERT_TRUE(lb.start()) << lb.output();
  ASSERT_TRUE(waitForRevision(lb.admin(), served)) << lb.output();

  before.kill();
  MembershipView v;
  ASSERT_TRUE(pollUntil([&] {
    v = lb.membership();
    return v.ok && v.rejected_revision == older;
  }, 15s)) << "no rejection of revision " << older << "; /backends: " << v.error << "\n"
           << lb.output();
  EXPECT_NE(v.rejected_reason.find("restored from an older backup or rebuilt"), std::string::npos)
      << v.rejected_reason;
  EXPECT_EQ(v.revision, served) << "the newer table stays";
  EXPECT_EQ(v.backends, (std::vector<std::string>{origins.name(0), origins.name(1), origins.name(2)}));
  const auto rejected = metricValue(lb.admin(), "lb_membership_updates_total",
                                    {{"cluster", "cache"}, {"result", "rejected"}});
  ASSERT_TRUE(rejected.has_value());
  EXPECT_GE(*rejected, 1);
  // Requests still go to the table's hosts, none to the rebuilt etcd's only one.
  for (int k = 0; k < 40; ++k) EXPECT_NE(lb.answer("k" + std::to_string(k)), origins.name(3));
  EXPECT_NE(lb.output().find("rejected revision " + std::to_string(older)), std::string::npos);
}

}  // namespace
}  // namespace lb::test
