// A bad membership document changes nothing. Three real lb processes
// watch one key on a real etcd; each kind of bad update the issue lists (not JSON, duplicate
// names, a bad address, an unknown field, weight 0, an empty list, a removal past
// max_remove_percent, the key deleted) leaves every instance on the table it served (same
// revision, same fingerprint, same backends), is counted as rejected in /metrics, logged with
// its revision and reason, and shown as /backends' last_rejected; the next good document
// applies everywhere.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/membership_fleet.h"

namespace lb::test {
namespace {

constexpr int kInstances = 3;
constexpr size_t kOrigins = 6;

struct BadCase {
  const char* name;
  // The document to put; "" means: delete the key instead.
  std::string (*document)(const OriginFleet&);
};

std::string notJson(const OriginFleet& o) {
  return membershipDocument(o, firstN(4)).substr(0, 40);   // cut off mid-object
}
std::string duplicateNames(const OriginFleet& o) {
  return "{\"backends\":[{\"name\":\"origin-a\",\"address\":\"127.0.0.1:" +
         std::to_string(o.port(0)) + "\"},{\"name\":\"origin-a\",\"address\":\"127.0.0.1:" +
         std::to_string(o.port(1)) + "\"}," + membershipDocument(o, {2, 3, 4, 5}).substr(13);
}
std::string badAddress(const OriginFleet& o) {
  std::string doc = membershipDocument(o, firstN(6));
  return doc.substr(0, doc.size() - 2) + ",{\"name\":\"origin-z\",\"address\":\"127.0.0.1\"}]}";
}
std::string unknownField(const OriginFleet& o) {
  std::string doc = membershipDocument(o, firstN(6));
  return doc.substr(0, doc.size() - 3) + ",\"wieght\":2}]}";
}
std::string zeroWeight(const OriginFleet& o) {
  std::string doc = membershipDocument(o, firstN(6));
  return doc.substr(0, doc.size() - 3) + ",\"weight\":0}]}";
}
std::string emptyList(const OriginFleet&) { return "{\"backends\":[]}"; }
std::string removesTooMany(const OriginFleet& o) {
  return membershipDocument(o, firstN(2));   // 4 of 6 removed (67%); the default allows 50
}
std::string deleteKey(const OriginFleet&) { return ""; }

const BadCase kCases[] = {
    {"NotJson", notJson},
    {"DuplicateNames", duplicateNames},
    {"BadAddress", badAddress},
    {"UnknownField", unknownField},
    {"ZeroWeight", zeroWeight},
    {"EmptyList", emptyList},
    {"RemovalPastMaxRemovePercent", removesTooMany},
    {"KeyDeleted", deleteKey},
};

class MembershipRejectTest : public ::testing::TestWithParam<BadCase> {
 protected:
  static void SetUpTestSuite() {
    etcd_ = new EtcdProcess();
    origins_ = new OriginFleet(kOrigins);
  }
  static void TearDownTestSuite() {
    delete origins_;
    delete etcd_;
  }

  void SetUp() override {
    ASSERT_TRUE(etcd_->ok()) << etcd_->output();
    ASSERT_TRUE(origins_->ok()) << origins_->error();
    // Each case its own key and fleet, so a case starts from a clean counter and log.
    key_ = std::string("/lb/test/reject/") + GetParam().name;
    gateway_ = std::make_unique<EtcdGateway>(etcd_->clientUrl());
    auto rev = gateway_->put(key_, membershipDocument(*origins_, firstN(kOrigins)));
    ASSERT_TRUE(rev) << gateway_->error();
    good_revision_ = *rev;
    for (int i = 0; i < kInstances; ++i) {
      lbs_.push_back(std::make_unique<MemberLb>(
          MembershipOptions({etcd_->clientUrl()}, key_)));
      ASSERT_TRUE(lbs_.back()->start()) << lbs_.back()->output();
    }
    for (auto& lb : lbs_)
      ASSERT_TRUE(waitForRevision(lb->admin(), good_revision_))
          << lb->membership().error << lb->output();
  }

  static EtcdProcess* etcd_;
  static OriginFleet* origins_;
  std::string key_;
  std::unique_ptr<EtcdGateway> gateway_;
  int64_t good_revision_ = 0;
  std::vector<std::unique_ptr<MemberLb>> lbs_;
};

EtcdProcess* MembershipRejectTest::etcd_ = nullptr;
OriginFleet* MembershipRejectTest::origins_ = nullptr;

const std::map<std::string, std::string> kCluster = {{"cluster", "cache"}};

TEST_P(MembershipRejectTest, LeavesEveryInstanceOnItsTableCountedLoggedAndShown) {
  std::vector<MembershipView> before;
  for (auto& lb : lbs_) {
    before.push_back(lb->membership());
    ASSERT_EQ(before.back().revision, good_revision_);
    ASSERT_EQ(before.back().backends.size(), kOrigins);
  }
  const std::string bad = GetParam().document(*origins_);
  auto bad_revision = bad.empty() ? gateway_->remove(key_) : gateway_->put(key_, bad);
  ASSERT_TRUE(bad_revision) << gateway_->error();

  for (size_t i = 0; i < lbs_.size(); ++i) {
    MemberLb& lb = *lbs_[i];
    MembershipView now;
    ASSERT_TRUE(pollUntil([&] {
      now = lb.membership();
      return now.ok && now.rejected_revision == *bad_revision;
    }))
        << "instance " << i << " never showed revision " << *bad_revision
        << " as last_rejected: " << now.error << "\n" << lb.output();
    EXPECT_EQ(now.revision, good_revision_) << "instance " << i;
    EXPECT_EQ(now.fingerprint, before[i].fingerprint) << "instance " << i;
    EXPECT_EQ(now.backends, before[i].backends) << "instance " << i;
    EXPECT_FALSE(now.rejected_reason.empty()) << "instance " << i;
    if (i == 0)
      printf("[ membership ] %s: revision %lld rejected: %s\n", GetParam().name,
             static_cast<long long>(*bad_revision), now.rejected_reason.c_str());

    auto samples = scrape(lb.admin());
    EXPECT_EQ(sampleValue(samples, "lb_membership_updates_total",
                          {{"cluster", "cache"}, {"result", "rejected"}}),
              1.0)
        << "instance " << i;
    EXPECT_EQ(sampleValue(samples, "lb_membership_revision", kCluster),
              static_cast<double>(good_revision_))
        << "instance " << i;

    // One log line carries both the revision and the reason /backends shows.
    bool logged = false;
    for (const auto& line : lines(lb.output(), true))
      logged = logged || (line.find(std::to_string(*bad_revision)) != std::string::npos &&
                          line.find(now.rejected_reason) != std::string::npos);
    EXPECT_TRUE(logged) << "instance " << i << ": no log line names revision " << *bad_revision
                        << " and reason '" << now.rejected_reason << "':\n" << lb.output();

    // Still serving the old table: a request reaches a backend of it.
    EXPECT_EQ(lb.answer("after-reject").rfind("origin-", 0), 0u) << lb.answer("after-reject");
  }

  // The next good document applies on every instance.
  auto next = gateway_->put(key_, membershipDocument(*origins_, firstN(kOrigins - 1)));
  ASSERT_TRUE(next) << gateway_->error();
  for (size_t i = 0; i < lbs_.size(); ++i) {
    ASSERT_TRUE(waitForRevision(lbs_[i]->admin(), *next))
        << "instance " << i << "\n" << lbs_[i]->output();
    MembershipView v = lbs_[i]->membership();
    EXPECT_EQ(v.revision, *next);
    EXPECT_EQ(v.backends.size(), kOrigins - 1);
    EXPECT_NE(v.fingerprint, before[i].fingerprint);
  }
}

INSTANTIATE_TEST_SUITE_P(EachKind, MembershipRejectTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<BadCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace lb::test
