// Compaction: "a compacted revision means Range again, never a lost
// update". lb Ranges, then watches from the Range's revision + 1; if etcd compacts past that
// revision first, etcd answers the watch with compact_revision, and lb must read the key
// again. A relay between lb and a real etcd (watch_gate.h) holds lb's watch request at
// exactly that moment while the test writes three revisions and compacts past them all; once
// the watch goes through, lb says it was compacted, Ranges, and serves the latest revision.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/membership_fleet.h"
#include "tests/support/watch_gate.h"

namespace lb::test {
namespace {

const std::map<std::string, std::string> kCluster = {{"cluster", "cache"}};

TEST(MembershipCompactionTest, AWatchStartOvertakenByACompactionIsRecoveredWithARange) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  OriginFleet origins(4);
  ASSERT_TRUE(origins.ok()) << origins.error();
  WatchGate gate(etcd.clientPort());
  ASSERT_NE(gate.port(), 0);
  const std::string key = "/lb/test/compaction/cache";
  const int64_t first = etcd.put(key, membershipDocument(origins, {0, 1, 2}));
  ASSERT_GT(first, 0);
  MemberLb lb(MembershipOptions({gate.url()}, key));
  ASSERT_TRUE(lb.start()) << lb.output();
  ASSERT_TRUE(waitForRevision(lb.admin(), first)) << lb.output();
  ASSERT_TRUE(pollUntil([&] {
    return metricValue(lb.admin(), "lb_membership_watch_up", kCluster) == 1.0;
  })) << lb.output();

  // Break lb's watch with the gate closed: lb Ranges (answered: revision `first`) and asks
  // for a watch from first + 1, which waits at the gate.
  gate.hold();
  gate.cutAll();
  ASSERT_TRUE(pollUntil([&] { return gate.heldWatches() == 1; }, 10s)) << lb.output();
  // Three revisions and the compaction through etcd's gateway, in milliseconds: lb gives up
  // a watch that has not started within its request timeout (1.5 s) and Ranges again, and
  // an etcdctl process for each could outlast that on a loaded machine.
  std::vector<int64_t> puts;
  std::vector<std::string> documents;
  for (const auto& members : std::vector<std::vector<size_t>>{{0, 1, 2, 3}, {1, 2, 3}, {0, 2, 3}})
    documents.push_back(membershipDocument(origins, members));
  puts.push_back(etcd.putSequence(key, documents));
  ASSERT_GT(puts.back(), first) << etcd.output();
  ASSERT_TRUE(etcd.compactQuickly(puts.back())) << etcd.output();
  EXPECT_EQ(lb.membership().revision, first);   // nothing reached it meanwhile

  gate.release();
  ASSERT_TRUE(waitForRevision(lb.admin(), puts.back(), 10s))
      << "lb did not recover revision " << puts.back() << " after its watch start was compacted\n"
      << lb.output();
  MembershipView v = lb.membership();
  EXPECT_EQ(v.revision, puts.back());
  EXPECT_EQ(v.backends, (std::vector<std::string>{"origin-a", "origin-c", "origin-d"}));
  // It went the compaction's way: etcd refused the watch start, lb said so and read again.
  EXPECT_GE(gate.relayedWatches(), 2);
  EXPECT_NE(lb.output().find("compact"), std::string::npos) << lb.output();
  // The revisions in between were compacted away: lb applied the latest, nothing older.
  EXPECT_EQ(appliedRevisions(lb.output()), (std::vector<int64_t>{first, puts.back()}))
      << lb.output();
  // And it watches again from there: the next put applies.
  const int64_t after = etcd.put(key, membershipDocument(origins, {0, 1, 2, 3}));
  ASSERT_TRUE(waitForRevision(lb.admin(), after, 5s)) << lb.output();
}

}  // namespace
}  // namespace lb::test
