// One numbered membership for the whole fleet. Three real lb
// processes (each its own listener and admin port) watch one key on a real etcd, in front of
// six real lb-origin backends. A put is served by all three within a second (the spread is
// printed); then 2,000 keys have the same owner on all three, by /ring and by real requests
// (the origin that answers says its name in X-Backend), and all three report the put's
// revision and one fingerprint, in /backends, /ring and /metrics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/membership_fleet.h"

namespace lb::test {
namespace {

constexpr int kInstances = 3;
constexpr size_t kOrigins = 6;
constexpr int kKeys = 2000;
const char kKey[] = "/lb/test/fleet/cache";

class MembershipFleetTest : public ::testing::Test {
 protected:
  // One etcd, one set of origins and one fleet for the suite: every test puts a document of
  // its own and waits for its revision, so none depends on what an earlier one left.
  static void SetUpTestSuite() {
    etcd_ = new EtcdProcess();
    origins_ = new OriginFleet(kOrigins);
    if (!etcd_->ok() || !origins_->ok()) return;
    initial_revision_ = etcd_->put(kKey, membershipDocument(*origins_, firstN(4)));
    for (int i = 0; i < kInstances; ++i) {
      auto lb = std::make_unique<MemberLb>(
          MembershipOptions({etcd_->clientUrl()}, kKey));
      if (!lb->start()) start_error_ += lb->output();
      lbs_.push_back(std::move(lb));
    }
  }
  static void TearDownTestSuite() {
    lbs_.clear();
    delete origins_;
    delete etcd_;
  }

  void SetUp() override {
    ASSERT_TRUE(etcd_->ok()) << etcd_->output();
    ASSERT_TRUE(origins_->ok()) << origins_->error();
    ASSERT_GT(initial_revision_, 0);
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    for (auto& lb : lbs_)
      ASSERT_TRUE(waitForRevision(lb->admin(), initial_revision_)) << lb->output();
  }

  // Puts the document of `indices` and waits until every instance serves it; its revision.
  int64_t putAndConverge(const std::vector<size_t>& indices) {
    int64_t rev = etcd_->put(kKey, membershipDocument(*origins_, indices));
    EXPECT_GT(rev, 0);
    for (auto& lb : lbs_) EXPECT_TRUE(waitForRevision(lb->admin(), rev)) << lb->output();
    return rev;
  }

  static EtcdProcess* etcd_;
  static OriginFleet* origins_;
  static int64_t initial_revision_;
  static std::string start_error_;
  static std::vector<std::unique_ptr<MemberLb>> lbs_;
};

EtcdProcess* MembershipFleetTest::etcd_ = nullptr;
OriginFleet* MembershipFleetTest::origins_ = nullptr;
int64_t MembershipFleetTest::initial_revision_ = 0;
std::string MembershipFleetTest::start_error_;
std::vector<std::unique_ptr<MemberLb>> MembershipFleetTest::lbs_;

std::string keyName(int i) { return "user:" + std::to_string(i * 7919); }

TEST_F(MembershipFleetTest, APutIsServedByAllThreeWithinOneSecond) {
  // Through the gateway, timed from the moment etcd answered the put (etcdctl's process exit
  // would add its own latency to the start and shrink what is measured).
  EtcdGateway gateway(etcd_->clientUrl());
  auto rev = gateway.put(kKey, membershipDocument(*origins_, {0, 1, 2, 3, 4}));
  const auto put_at = Clock::now();
  ASSERT_TRUE(rev) << gateway.error();
  // Each instance polled in its own thread, so one instance's poll does not delay another's.
  std::vector<std::optional<Clock::time_point>> seen(lbs_.size());
  std::vector<std::thread> pollers;
  for (size_t i = 0; i < lbs_.size(); ++i)
    pollers.emplace_back([&, i] { seen[i] = waitForRevision(lbs_[i]->admin(), *rev, 5s); });
  for (auto& t : pollers) t.join();

  double first = 1e9, last = 0;
  for (size_t i = 0; i < lbs_.size(); ++i) {
    ASSERT_TRUE(seen[i]) << "instance " << i << " never served revision " << *rev << "\n"
                         << lbs_[i]->output();
    double ms = std::chrono::duration<double, std::milli>(*seen[i] - put_at).count();
    printf("[ membership ] instance %zu served revision %" PRId64 " %.1f ms after the put\n", i,
           *rev, ms);
    EXPECT_LT(ms, 1000.0) << "instance " << i;
    first = std::min(first, ms);
    last = std::max(last, ms);
  }
  printf("[ membership ] spread across %zu instances: %.1f ms (first %.1f, last %.1f)\n",
         lbs_.size(), last - first, first, last);
}

TEST_F(MembershipFleetTest, TwoThousandKeysHaveOneOwnerOnAllThreeByRing) {
  const std::vector<size_t> members = {0, 1, 3, 4, 5};
  putAndConverge(members);
  std::set<std::string> allowed;
  for (size_t i : members) allowed.insert(origins_->name(i));
  std::set<std::string> owners_seen;
  int disagree = 0;
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = keyName(k);
    const std::string owner = ringOwner(lbs_[0]->admin(), key);
    ASSERT_TRUE(allowed.count(owner)) << key << ": " << owner;
    owners_seen.insert(owner);
    for (size_t i = 1; i < lbs_.size(); ++i) {
      std::string other = ringOwner(lbs_[i]->admin(), key);
      if (other != owner && ++disagree <= 5)
        ADD_FAILURE() << key << ": instance 0 says " << owner << ", instance " << i << " "
                      << other;
    }
  }
  EXPECT_EQ(disagree, 0);
  EXPECT_EQ(owners_seen, allowed);   // every member owns some of 2,000 keys
}

TEST_F(MembershipFleetTest, TwoThousandRequestsReachTheSameBackendThroughAllThree) {
  const std::vector<size_t> members = {1, 2, 3, 4, 5};
  putAndConverge(members);
  int disagree = 0, off_ring = 0;
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = keyName(k);
    const std::string first = lbs_[0]->answer(key);
    ASSERT_EQ(first.rfind("origin-", 0), 0u) << key << ": " << first;
    for (size_t i = 1; i < lbs_.size(); ++i) {
      std::string other = lbs_[i]->answer(key);
      if (other != first && ++disagree <= 5)
        ADD_FAILURE() << key << ": through instance 0 " << first << ", through instance " << i
                      << " " << other;
    }
    // And the backend that answered is the ring's owner (every origin is up).
    if (k % 10 == 0 && ringOwner(lbs_[0]->admin(), key) != first && ++off_ring <= 5)
      ADD_FAILURE() << key << ": answered by " << first << ", /ring says "
                    << ringOwner(lbs_[0]->admin(), key);
  }
  EXPECT_EQ(disagree, 0);
  EXPECT_EQ(off_ring, 0);
}

TEST_F(MembershipFleetTest, AllThreeReportTheSameRevisionAndFingerprint) {
  const int64_t rev_a = putAndConverge({0, 2, 3, 4, 5});
  std::string fingerprint_a;
  double metric_fingerprint_a = -1;
  for (size_t i = 0; i < lbs_.size(); ++i) {
    MembershipView v = lbs_[i]->membership();
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_EQ(v.source, "etcd");
    EXPECT_EQ(v.revision, rev_a) << "instance " << i;
    EXPECT_EQ(v.fingerprint.size(), 16u) << v.fingerprint;
    EXPECT_EQ(v.fingerprint.find_first_not_of("0123456789abcdef"), std::string::npos)
        << v.fingerprint;
    EXPECT_EQ(ringRevision(lbs_[i]->admin()), rev_a) << "instance " << i;
    auto samples = scrape(lbs_[i]->admin());
    auto metric_rev = sampleValue(samples, "lb_membership_revision", {{"cluster", "cache"}});
    auto metric_fp = sampleValue(samples, "lb_cluster_table_fingerprint", {{"cluster", "cache"}});
    ASSERT_TRUE(metric_rev && metric_fp) << "instance " << i;
    EXPECT_EQ(*metric_rev, static_cast<double>(rev_a)) << "instance " << i;
    // One number: the metric is the fingerprint's 48 bits, which /backends prints in hex.
    EXPECT_EQ(*metric_fp, static_cast<double>(strtoull(v.fingerprint.c_str(), nullptr, 16)))
        << "instance " << i << ": /backends " << v.fingerprint;
    if (i == 0) {
      fingerprint_a = v.fingerprint;
      metric_fingerprint_a = *metric_fp;
    } else {
      EXPECT_EQ(v.fingerprint, fingerprint_a) << "instance " << i;
      EXPECT_EQ(*metric_fp, metric_fingerprint_a) << "instance " << i;
    }
  }
  printf("[ membership ] revision %" PRId64 ": /backends fingerprint %s, metric %.0f\n", rev_a,
         fingerprint_a.c_str(), metric_fingerprint_a);
  // The fingerprint names the table: another membership gives another one, everywhere.
  const int64_t rev_b = putAndConverge({0, 1, 2, 3, 4, 5});
  for (size_t i = 0; i < lbs_.size(); ++i) {
    MembershipView v = lbs_[i]->membership();
    EXPECT_EQ(v.revision, rev_b);
    EXPECT_NE(v.fingerprint, fingerprint_a) << "instance " << i;
    EXPECT_NE(metricValue(lbs_[i]->admin(), "lb_cluster_table_fingerprint",
                          {{"cluster", "cache"}}),
              metric_fingerprint_a)
        << "instance " << i;
  }
}

}  // namespace
}  // namespace lb::test
