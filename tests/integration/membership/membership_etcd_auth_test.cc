// Fleet membership from an etcd with authentication on (a root user, `etcdctl auth enable`,
// then a user whose role may read the membership key and nothing else), all set up through
// etcdctl. lb signs in with `membership = { ..., user, password }` through the gateway's
// /v3/auth/authenticate and sends the token with every request and the watch.
//   - lb follows the membership with the read-only user: the first put and the next one.
//   - A restarted etcd has forgotten its tokens ("invalid auth token"): lb signs in again
//     and follows the next put.
//   - A wrong password is one clear log line per attempt and lb_membership_watch_up 0, the
//     state file keeps serving, and the password is nowhere in the log, /backends or
//     /metrics.
//   - Both at once, as production runs etcd: https with --client-cert-auth and
//     authentication on. lb follows with a client certificate that has no common name;
//     etcd's gateway refuses one that has, and lb's log line says so.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "tests/support/membership_fleet.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb::test {
namespace {

const char kKey[] = "/lb/test/auth/cache";
const char kRootPassword[] = "root-Secret-4711";
const char kUser[] = "lb-reader";
const char kPassword[] = "reader-Secret-0815";
const char kWrongPassword[] = "wrong-Secret-9999";
const std::map<std::string, std::string> kCluster = {{"cluster", "cache"}};

class MembershipEtcdAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.ok()) << etcd_.output();
    ASSERT_TRUE(origins_.ok()) << origins_.error();
    ASSERT_TRUE(etcd_.enableAuth(kRootPassword)) << etcd_.lastError();
    ASSERT_TRUE(etcd_.addReader(kUser, kPassword, kKey)) << etcd_.lastError();
    revision_ = etcd_.put(kKey, membershipDocument(origins_, {0, 1, 2}));
    ASSERT_GT(revision_, 0) << etcd_.lastError();
  }

  std::unique_ptr<MemberLb> memberLb(const std::string& password) {
    return std::make_unique<MemberLb>(
        MembershipOptions({etcd_.clientUrl()}, kKey)
            .membershipExtra(std::string(", user = \"") + kUser + "\", password = \"" +
                             password + "\""));
  }

  static bool watchUpIs(MemberLb& lb, double up, Millis timeout) {
    return pollUntil([&] {
      return metricValue(lb.admin(), "lb_membership_watch_up", kCluster) == up;
    }, timeout);
  }

  EtcdProcess etcd_;
  OriginFleet origins_{4};
  int64_t revision_ = 0;
};

TEST_F(MembershipEtcdAuthTest, FollowsTheMembershipAsAReadOnlyUser) {
  auto lb = memberLb(kPassword);
  ASSERT_TRUE(lb->start()) << lb->output();
  ASSERT_TRUE(waitForRevision(lb->admin(), revision_)) << lb->output();
  EXPECT_TRUE(watchUpIs(*lb, 1, 5s)) << lb->output();
  const int64_t next = etcd_.put(kKey, membershipDocument(origins_, {0, 1, 2, 3}));
  ASSERT_GT(next, revision_) << etcd_.lastError();
  ASSERT_TRUE(waitForRevision(lb->admin(), next)) << lb->output();
  EXPECT_EQ(lb->membership().backends.size(), 4u);
}

TEST_F(MembershipEtcdAuthTest, MembershipGetSignsInWithUserFlag) {
  auto get = [&](const std::string& password) {
    return runCommand({builtBinary("lb"), "membership", "get", "--etcd", etcd_.clientUrl(),
                       "--key", kKey, "--user", std::string(kUser) + ":" + password},
                      20s);
  };
  auto r = get(kPassword);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, membershipDocument(origins_, {0, 1, 2}));
  r = get(kWrongPassword);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "lb membership: cannot read " + std::string(kKey) + " from " +
                       etcd_.clientUrl() + ": authentication as user '" + kUser +
                       "' failed: status 400: etcdserver: authentication failed, invalid user "
                       "ID or password\n");
  // Without a user, etcd says so.
  r = runCommand({builtBinary("lb"), "membership", "get", "--etcd", etcd_.clientUrl(), "--key",
                  kKey},
                 20s);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("user name is empty"), std::string::npos) << r.err;
}

TEST_F(MembershipEtcdAuthTest, SignsInAgainWhenEtcdForgotTheToken) {
  auto lb = memberLb(kPassword);
  ASSERT_TRUE(lb->start()) << lb->output();
  ASSERT_TRUE(waitForRevision(lb->admin(), revision_)) << lb->output();
  ASSERT_TRUE(watchUpIs(*lb, 1, 5s)) << lb->output();
  // etcd's simple tokens live in the member's memory: after a restart lb's token is invalid.
  ASSERT_TRUE(etcd_.restart()) << etcd_.output();
  const int64_t next = etcd_.put(kKey, membershipDocument(origins_, {1, 2, 3}));
  ASSERT_GT(next, revision_) << etcd_.lastError();
  ASSERT_TRUE(waitForRevision(lb->admin(), next, 15s)) << lb->output();
  EXPECT_TRUE(watchUpIs(*lb, 1, 5s)) << lb->output();
}

TEST_F(MembershipEtcdAuthTest, WrongPasswordIsALogLineAndWatchDownWithNoSecretShown) {
  auto good = memberLb(kPassword);
  ASSERT_TRUE(good->start()) << good->output();
  ASSERT_TRUE(waitForRevision(good->admin(), revision_)) << good->output();
  auto lb = memberLb(kWrongPassword);
  std::error_code ec;
  std::filesystem::copy_file(good->statePath(), lb->statePath(),
                             std::filesystem::copy_options::overwrite_existing, ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(lb->start()) << lb->output();
  const std::string line = "membership: cluster cache: range failed at " + etcd_.clientUrl() +
                           ": authentication as user '" + kUser + "' failed: ";
  ASSERT_TRUE(pollUntil([&] { return lb->output().find(line) != std::string::npos; }, 10s))
      << lb->output();
  EXPECT_NE(lb->output().find("invalid user ID or password"), std::string::npos) << lb->output();
  EXPECT_TRUE(watchUpIs(*lb, 0, 10s)) << lb->output();
  EXPECT_TRUE(lb->process().running());
  MembershipView v = lb->membership();
  ASSERT_TRUE(v.ok) << v.error;
  EXPECT_EQ(v.revision, revision_);
  for (int k = 0; k < 20; ++k) {
    const std::string who = lb->answer("k" + std::to_string(k));
    EXPECT_TRUE(who == "origin-a" || who == "origin-b" || who == "origin-c") << who;
  }
  // Secrets: neither password in the log, /backends or /metrics.
  const HttpResponse backends = httpGetLocal(lb->admin(), "/backends", 2s);
  const HttpResponse metrics = httpGetLocal(lb->admin(), "/metrics", 2s);
  ASSERT_TRUE(backends && metrics);
  for (const std::string secret : {kPassword, kWrongPassword}) {
    EXPECT_EQ(lb->output().find(secret), std::string::npos) << lb->output();
    EXPECT_EQ(good->output().find(secret), std::string::npos) << good->output();
    EXPECT_EQ(backends.body.find(secret), std::string::npos) << backends.body;
    EXPECT_EQ(metrics.body.find(secret), std::string::npos);
  }
}

class MembershipEtcdTlsAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    ASSERT_TRUE(origins_.ok()) << origins_.error();
    ca_ = std::make_unique<TlsCa>(dir_.path(), "ca");
    ASSERT_TRUE(ca_->ok()) << ca_->error();
    TlsCert server = ca_->issue("etcd", {"IP:127.0.0.1"});
    ASSERT_TRUE(server.ok) << server.error;
    named_ = ca_->issue("lb-named", {"lb.test"});
    ASSERT_TRUE(named_.ok) << named_.error;
    unnamed_ = ca_->issue("lb-unnamed", {"lb.test"}, 30, /*common_name=*/false);
    ASSERT_TRUE(unnamed_.ok) << unnamed_.error;
    EtcdTls tls;
    tls.ca = ca_->certPath();
    tls.cert = server.cert;
    tls.key = server.key;
    tls.client_cert_auth = true;
    tls.client_cert = named_.cert;   // etcdctl speaks gRPC, where no gateway checks the name
    tls.client_key = named_.key;
    etcd_ = std::make_unique<EtcdProcess>(10s, tls);
    ASSERT_TRUE(etcd_->ok()) << etcd_->output();
    ASSERT_TRUE(etcd_->enableAuth(kRootPassword)) << etcd_->lastError();
    ASSERT_TRUE(etcd_->addReader(kUser, kPassword, kKey)) << etcd_->lastError();
    revision_ = etcd_->put(kKey, membershipDocument(origins_, {0, 1, 2}));
    ASSERT_GT(revision_, 0) << etcd_->lastError();
  }

  std::unique_ptr<MemberLb> memberLb(const TlsCert& client) {
    return std::make_unique<MemberLb>(
        MembershipOptions({etcd_->clientUrl()}, kKey)
            .membershipExtra(", tls = { ca = \"" + ca_->certPath() + "\", cert = \"" +
                             client.cert + "\", key = \"" + client.key + "\" }, user = \"" +
                             kUser + "\", password = \"" + kPassword + "\""));
  }

  TempDir dir_{"etcdtlsauth"};
  OriginFleet origins_{4};
  std::unique_ptr<TlsCa> ca_;
  TlsCert named_, unnamed_;
  std::unique_ptr<EtcdProcess> etcd_;
  int64_t revision_ = 0;
};

TEST_F(MembershipEtcdTlsAuthTest, FollowsWithAClientCertificateWithoutCommonNameAndAUser) {
  auto lb = memberLb(unnamed_);
  ASSERT_TRUE(lb->start()) << lb->output();
  ASSERT_TRUE(waitForRevision(lb->admin(), revision_)) << lb->output();
  EXPECT_TRUE(pollUntil([&] {
    return metricValue(lb->admin(), "lb_membership_watch_up", kCluster) == 1;
  }, 5s)) << lb->output();
  const int64_t next = etcd_->put(kKey, membershipDocument(origins_, {0, 1, 2, 3}));
  ASSERT_GT(next, revision_) << etcd_->lastError();
  ASSERT_TRUE(waitForRevision(lb->admin(), next)) << lb->output();
}

TEST_F(MembershipEtcdTlsAuthTest, AClientCertificateWithACommonNameIsRefusedByTheGateway) {
  auto lb = memberLb(named_);
  ASSERT_TRUE(lb->start()) << lb->output();
  const std::string line = "membership: cluster cache: range failed at " + etcd_->clientUrl() +
                           ": authentication as user '" + kUser + "' failed: status 400: "
                           "CommonName of client sending a request against gateway will be "
                           "ignored and not used as expected";
  ASSERT_TRUE(pollUntil([&] { return lb->output().find(line) != std::string::npos; }, 10s))
      << lb->output();
  EXPECT_TRUE(pollUntil([&] {
    return metricValue(lb->admin(), "lb_membership_watch_up", kCluster) == 0;
  }, 10s)) << lb->output();
  EXPECT_TRUE(lb->process().running());
}

}  // namespace
}  // namespace lb::test
