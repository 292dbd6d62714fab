// One etcd: etcd down is not an outage. With the only etcd member
// killed, two real lb processes keep serving the membership they had (real requests succeed)
// and show it is getting stale (lb_membership_watch_up 0, a last-sync time that stops); an lb
// restarted meanwhile starts from its state file (same revision, same fingerprint, same
// owners); when etcd is back every instance applies the next put. And without etcd, a state
// file or TOML backends, a cluster serves nothing and /ready says why.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/membership_fleet.h"

namespace lb::test {
namespace {

constexpr int kInstances = 2;
constexpr size_t kOrigins = 4;
const char kKey[] = "/lb/test/loss/cache";
const std::map<std::string, std::string> kCluster = {{"cluster", "cache"}};

double wallNow() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

class MembershipEtcdLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.ok()) << etcd_.output();
    ASSERT_TRUE(origins_.ok()) << origins_.error();
    revision_ = etcd_.put(kKey, membershipDocument(origins_, {0, 1, 2}));
    ASSERT_GT(revision_, 0);
    for (int i = 0; i < kInstances; ++i) {
      lbs_.push_back(std::make_unique<MemberLb>(
          MembershipOptions({etcd_.clientUrl()}, kKey)));
      ASSERT_TRUE(lbs_.back()->start()) << lbs_.back()->output();
    }
    for (auto& lb : lbs_) ASSERT_TRUE(waitForRevision(lb->admin(), revision_)) << lb->output();
  }

  // Waits until lb_membership_watch_up{cluster="cache"} is `up` on every instance.
  void expectWatchUp(double up, Millis timeout) {
    for (size_t i = 0; i < lbs_.size(); ++i) {
      std::optional<double> v;
      EXPECT_TRUE(pollUntil([&] {
        v = metricValue(lbs_[i]->admin(), "lb_membership_watch_up", kCluster);
        return v == up;
      }, timeout))
          << "instance " << i << ": lb_membership_watch_up is " << (v ? *v : -1) << ", not "
          << up << "\n" << lbs_[i]->output();
    }
  }

  // Owners of n keys through instance i.
  std::map<std::string, std::string> owners(size_t i, int n) {
    std::map<std::string, std::string> out;
    for (int k = 0; k < n; ++k) out["k" + std::to_string(k)] = lbs_[i]->answer("k" + std::to_string(k));
    return out;
  }

  EtcdProcess etcd_;
  OriginFleet origins_{kOrigins};
  int64_t revision_ = 0;
  std::vector<std::unique_ptr<MemberLb>> lbs_;
};

TEST_F(MembershipEtcdLossTest, RequestsKeepSucceedingAndStalenessShowsWhileEtcdIsDown) {
  expectWatchUp(1, 5s);
  etcd_.kill();
  expectWatchUp(0, 5s);
  std::vector<double> last_sync;
  for (size_t i = 0; i < lbs_.size(); ++i) {
    auto v = metricValue(lbs_[i]->admin(), "lb_membership_last_sync_timestamp_seconds", kCluster);
    ASSERT_TRUE(v) << "instance " << i;
    EXPECT_GT(*v, 0) << "instance " << i;
    EXPECT_LE(*v, wallNow()) << "instance " << i;
    last_sync.push_back(*v);
  }
  // Requests keep succeeding, on the members of the last good membership.
  for (size_t i = 0; i < lbs_.size(); ++i)
    for (int k = 0; k < 100; ++k) {
      std::string who = lbs_[i]->answer("down-" + std::to_string(k));
      ASSERT_TRUE(who == "origin-a" || who == "origin-b" || who == "origin-c")
          << "instance " << i << ": " << who;
    }
  // A second and a half later the last sync has not moved, so its age has grown by as much.
  const double until = wallNow() + 1.5;
  ASSERT_TRUE(pollUntil([&] { return wallNow() >= until; }, 3s));
  for (size_t i = 0; i < lbs_.size(); ++i) {
    EXPECT_EQ(metricValue(lbs_[i]->admin(), "lb_membership_last_sync_timestamp_seconds", kCluster),
              last_sync[i])
        << "instance " << i;
    EXPECT_GT(wallNow() - last_sync[i], 1.5) << "instance " << i;
    MembershipView v = lbs_[i]->membership();
    EXPECT_EQ(v.revision, revision_) << "instance " << i;
    EXPECT_NE(v.state, "watching") << "instance " << i;
  }
}

TEST_F(MembershipEtcdLossTest, RestartWhileEtcdIsDownServesTheStateFile) {
  MembershipView before = lbs_[0]->membership();
  ASSERT_EQ(before.revision, revision_);
  const auto owners_before = owners(0, 100);
  struct stat st;
  ASSERT_EQ(stat(lbs_[0]->statePath().c_str(), &st), 0)
      << "lb wrote no state file at " << lbs_[0]->statePath();

  etcd_.kill();
  lbs_[0]->kill();
  ASSERT_TRUE(lbs_[0]->start()) << lbs_[0]->output();
  MembershipView after;
  ASSERT_TRUE(pollUntil([&] {
    after = lbs_[0]->membership();
    return after.ok && after.revision == revision_;
  }, 5s))
      << "restarted without etcd, lb does not serve revision " << revision_ << ": "
      << after.error << " revision " << after.revision << "\n" << lbs_[0]->output();
  EXPECT_EQ(after.source, "state_file");
  EXPECT_EQ(after.fingerprint, before.fingerprint);
  EXPECT_EQ(after.backends, before.backends);
  EXPECT_EQ(metricValue(lbs_[0]->admin(), "lb_membership_revision", kCluster),
            static_cast<double>(revision_));
  EXPECT_EQ(owners(0, 100), owners_before);
  // It serves, so it is ready (the readiness of an instance does not hang on etcd).
  HttpResponse ready = httpGetLocal(lbs_[0]->admin(), "/ready");
  EXPECT_EQ(ready.status, 200) << ready.body;
}

TEST_F(MembershipEtcdLossTest, EveryInstanceConvergesWhenEtcdComesBack) {
  etcd_.kill();
  expectWatchUp(0, 5s);
  std::vector<double> last_sync;
  for (auto& lb : lbs_)
    last_sync.push_back(
        metricValue(lb->admin(), "lb_membership_last_sync_timestamp_seconds", kCluster)
            .value_or(-1));
  ASSERT_TRUE(etcd_.restart()) << etcd_.output();
  const int64_t next = etcd_.put(kKey, membershipDocument(origins_, {0, 1, 2, 3}));
  ASSERT_GT(next, revision_);
  for (size_t i = 0; i < lbs_.size(); ++i) {
    // Reconnecting waits out a jittered backoff: allow it several seconds.
    ASSERT_TRUE(waitForRevision(lbs_[i]->admin(), next, 15s))
        << "instance " << i << " did not apply revision " << next << " after etcd came back\n"
        << lbs_[i]->output();
    EXPECT_EQ(lbs_[i]->membership().backends.size(), 4u);
    EXPECT_GT(metricValue(lbs_[i]->admin(), "lb_membership_last_sync_timestamp_seconds", kCluster)
                  .value_or(-1),
              last_sync[i])
        << "instance " << i;
  }
  expectWatchUp(1, 5s);
  EXPECT_EQ(lbs_[0]->membership().fingerprint, lbs_[1]->membership().fingerprint);
}

// Not the fixture: this lb never sees etcd.
TEST(MembershipEtcdAbsentTest, WithoutEtcdOrStateFileTheClusterServesNothingAndReadySaysWhy) {
  // A port nothing listens on: etcd was never there.
  MemberLb lb(MembershipOptions({"http://127.0.0.1:" + std::to_string(freePort())}, kKey));
  ASSERT_TRUE(lb.start()) << lb.output();
  HttpResponse ready;
  ASSERT_TRUE(pollUntil([&] {
    ready = httpGetLocal(lb.admin(), "/ready");
    return ready.ok;
  }));
  EXPECT_NE(ready.status, 200) << ready.body;
  EXPECT_NE(ready.body.find("cache"), std::string::npos)
      << "/ready does not name the cluster that serves nothing: " << ready.body;
  MembershipView v = lb.membership();
  EXPECT_TRUE(v.backends.empty());
  EXPECT_EQ(v.revision, 0);
  EXPECT_EQ(lb.answer("k").rfind("error: status 5", 0), 0u) << lb.answer("k");
  // docs/metrics.md: revision 0 and fingerprint 0 for a cluster that serves no backend.
  auto samples = scrape(lb.admin());
  EXPECT_EQ(sampleValue(samples, "lb_membership_revision", kCluster), 0.0);
  EXPECT_EQ(sampleValue(samples, "lb_cluster_table_fingerprint", kCluster), 0.0);
  EXPECT_EQ(sampleValue(samples, "lb_membership_watch_up", kCluster), 0.0);
}

TEST(MembershipEtcdAbsentTest, WithoutEtcdOrStateFileTheTomlBackendsServe) {
  OriginFleet origins(1);
  ASSERT_TRUE(origins.ok()) << origins.error();
  MemberLb lb(MembershipOptions({"http://127.0.0.1:" + std::to_string(freePort())}, kKey)
                    .clusterExtra("backends = [\n" + origins.backends(1) + "]\n"));
  ASSERT_TRUE(lb.start()) << lb.output();
  EXPECT_EQ(lb.answer("k"), "origin-a");
  HttpResponse ready = httpGetLocal(lb.admin(), "/ready");
  EXPECT_EQ(ready.status, 200) << ready.body;
  MembershipView v = lb.membership();
  EXPECT_EQ(v.source, "file");
  EXPECT_EQ(v.revision, 0);
  EXPECT_EQ(metricValue(lb.admin(), "lb_membership_revision", kCluster), 0.0);
}

}  // namespace
}  // namespace lb::test
