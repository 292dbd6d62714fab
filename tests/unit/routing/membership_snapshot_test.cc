// What a snapshot says of its clusters' membership: the revision it serves, the table's
// fingerprint (the same on every instance for the same table), and how /backends, /ring and
// /metrics show them.
#include <gtest/gtest.h>

#include <string>

#include "lb/admin/metrics.h"
#include "lb/admin/routes.h"
#include "lb/routing/readdress.h"
#include "tests/support/json_reader.h"
#include "tests/support/metrics_test_snapshot.h"

namespace lb {
namespace {

using testing::JsonReader;
using testing::JsonValue;

uint64_t fingerprintOf(const Config& config, const std::string& cluster) {
  StateRegistry registry(1);
  auto snap = testing::buildTestSnapshot(registry, config);
  return snap ? snap->findCluster(cluster)->fingerprint : 0;
}

TEST(TableFingerprintTest, IsTheSameForTheSameTableBuiltTwice) {
  const Config c = testing::metricsTestConfig();
  const uint64_t a = fingerprintOf(c, "cache");
  EXPECT_NE(a, 0u);
  EXPECT_EQ(a, fingerprintOf(c, "cache"));
  EXPECT_LT(a, uint64_t{1} << 48);   // exact in a double
  EXPECT_NE(a, fingerprintOf(c, "plain"));
}

TEST(TableFingerprintTest, ChangesWithABackendAWeightOrAnAddress) {
  const Config base = testing::metricsTestConfig();
  const uint64_t f = fingerprintOf(base, "cache");
  Config added = base;
  added.clusters[0].backends.push_back({"cache-d", "127.0.0.1:9004", 1, "", "", {}});
  EXPECT_NE(fingerprintOf(added, "cache"), f);
  Config weighted = base;
  weighted.clusters[0].backends[0].weight = 3;
  EXPECT_NE(fingerprintOf(weighted, "cache"), f);
  Config moved = base;
  moved.clusters[0].backends[1].address = "127.0.0.1:9999";
  EXPECT_NE(fingerprintOf(moved, "cache"), f);
}

TEST(TableFingerprintTest, IsZeroForAClusterWithoutBackends) {
  Config c = testing::metricsTestConfig();
  c.clusters[1].backends.clear();
  c.clusters[1].membership = MembershipConfig{};
  EXPECT_EQ(fingerprintOf(c, "plain"), 0u);
}

TEST(MembershipSnapshotTest, BuildTakesEachClustersOriginAndRevision) {
  StateRegistry registry(1);
  BackendOrigins origins{{"cache", {MembershipOrigin::kEtcd, 42}}};
  auto r = buildSnapshot(testing::metricsTestConfig(), registry, 1, nullptr, &origins);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value()->findCluster("cache")->origin, MembershipOrigin::kEtcd);
  EXPECT_EQ(r.value()->findCluster("cache")->revision, 42);
  EXPECT_EQ(r.value()->findCluster("plain")->origin, MembershipOrigin::kFile);
  EXPECT_EQ(r.value()->findCluster("plain")->revision, 0);
}

// A new address is not a new membership: re-resolution keeps the revision and the table's
// fingerprint.
TEST(MembershipSnapshotTest, ReaddressingKeepsRevisionAndFingerprint) {
  StateRegistry registry(1);
  BackendOrigins origins{{"cache", {MembershipOrigin::kEtcd, 7}}};
  auto r = buildSnapshot(testing::metricsTestConfig(), registry, 1, nullptr, &origins);
  ASSERT_TRUE(r.ok());
  AddressChange change{0, 0, r.value()->clusters[0].backends[1].address,
                       r.value()->clusters[0].backends[1].address_len};
  auto moved = withAddresses(*r.value(), {&change, 1});
  EXPECT_EQ(moved->clusters[0].revision, 7);
  EXPECT_EQ(moved->clusters[0].origin, MembershipOrigin::kEtcd);
  EXPECT_EQ(moved->clusters[0].fingerprint, r.value()->clusters[0].fingerprint);
}

class MembershipAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Config c = testing::metricsTestConfig();
    MembershipConfig m;
    m.etcd = {"http://127.0.0.1:2379"};
    m.key = "/lb/cache";
    c.clusters[0].membership = m;
    BackendOrigins origins{{"cache", {MembershipOrigin::kEtcd, 42}}};
    auto r = buildSnapshot(std::move(c), registry_, 3, nullptr, &origins);
    ASSERT_TRUE(r.ok());
    snap_ = r.value();
    MembershipStatus& st = snap_->findCluster("cache")->state->membership;
    st.configured = true;
    st.state = "watching";
    st.endpoint = "http://127.0.0.1:2379";
    st.watch_up = true;
    st.last_sync = 1764658862.5;   // 2025-12-02T07:01:02.500Z
    st.applied = 3;
    st.rejected = 1;
    st.last_rejected_revision = 40;
    st.last_rejected_reason = "key deleted";
  }
  StateRegistry registry_{1};
  std::shared_ptr<const Snapshot> snap_;
};

const JsonValue& clusterOf(const JsonValue& doc, const std::string& name) {
  for (const auto& c : doc["clusters"].items())
    if (c["name"].asString() == name) return c;
  throw std::runtime_error("no cluster " + name);
}

TEST_F(MembershipAdminTest, BackendsShowsTheMembershipOfEveryCluster) {
  const JsonValue doc = JsonReader::parse(backendsResponse(*snap_).body);
  const JsonValue& m = clusterOf(doc, "cache")["membership"];
  char hex[24];
  snprintf(hex, sizeof hex, "%016llx",
           static_cast<unsigned long long>(snap_->findCluster("cache")->fingerprint));
  EXPECT_EQ(m["source"].asString(), "etcd");
  EXPECT_EQ(m["revision"].asNumber(), 42);
  EXPECT_EQ(m["fingerprint"].asString(), hex);
  EXPECT_EQ(m["key"].asString(), "/lb/cache");
  EXPECT_EQ(m["state"].asString(), "watching");
  EXPECT_EQ(m["endpoint"].asString(), "http://127.0.0.1:2379");
  EXPECT_TRUE(m["watch_up"].asBool());
  EXPECT_EQ(m["last_sync"].asString(), "2025-12-02T07:01:02.500Z");
  EXPECT_EQ(m["applied"].asNumber(), 3);
  EXPECT_EQ(m["rejected"].asNumber(), 1);
  EXPECT_EQ(m["last_rejected"]["revision"].asNumber(), 40);
  EXPECT_EQ(m["last_rejected"]["reason"].asString(), "key deleted");
  // A cluster without a membership: from the file, revision 0, its fingerprint all the same.
  const JsonValue& p = clusterOf(doc, "plain")["membership"];
  EXPECT_EQ(p["source"].asString(), "file");
  EXPECT_EQ(p["revision"].asNumber(), 0);
  EXPECT_EQ(p["fingerprint"].asString().size(), 16u);
  EXPECT_FALSE(p.has("state"));
}

TEST_F(MembershipAdminTest, RingNamesTheRevisionAndFingerprintItAnsweredFrom) {
  const JsonValue doc = JsonReader::parse(ringResponse(*snap_, "cluster=cache&key=k1").body);
  EXPECT_EQ(doc["revision"].asNumber(), 42);
  EXPECT_EQ(doc["fingerprint"].asString().size(), 16u);
}

TEST_F(MembershipAdminTest, MetricsCarryFingerprintsForEveryClusterAndMembershipForItsOwn) {
  const auto families = collectSnapshotMetrics(*snap_);
  const auto* f = testing::findSample(families, "lb_cluster_table_fingerprint", {{"cluster", "plain"}});
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->gauge.value, static_cast<double>(snap_->findCluster("plain")->fingerprint));
  const auto* rev = testing::findSample(families, "lb_membership_revision", {{"cluster", "cache"}});
  ASSERT_NE(rev, nullptr);
  EXPECT_EQ(rev->gauge.value, 42);
  EXPECT_EQ(testing::findSample(families, "lb_membership_revision", {{"cluster", "plain"}}),
            nullptr);
  const auto* rejected = testing::findSample(families, "lb_membership_updates_total",
                                             {{"cluster", "cache"}, {"result", "rejected"}});
  ASSERT_NE(rejected, nullptr);
  EXPECT_EQ(rejected->counter.value, 1);
  const auto* sync = testing::findSample(families, "lb_membership_last_sync_timestamp_seconds",
                                         {{"cluster", "cache"}});
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->gauge.value, 1764658862.5);
  const auto* up = testing::findSample(families, "lb_membership_watch_up", {{"cluster", "cache"}});
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->gauge.value, 1);
}

}  // namespace
}  // namespace lb
