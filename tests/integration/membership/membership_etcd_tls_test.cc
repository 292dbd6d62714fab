// Fleet membership from an etcd that serves clients over TLS and asks for their certificates
// (--client-cert-auth --trusted-ca-file --cert-file --key-file, https client URLs), as
// production runs it. Certificates are made in the test (tests/support/tls_certs.h); etcd's
// store is written through etcdctl with its own certificate, an independent path.
//   - lb with `membership.tls = { ca, cert, key }` follows the membership: the first put and
//     the next one (the watch, over TLS).
//   - A wrong CA and a missing client certificate each give one clear log line per attempt
//     and lb_membership_watch_up 0, and lb keeps serving its state file.
//   - A CA file that does not load is a config error at its key, with its position.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "tests/support/membership_fleet.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb::test {
namespace {

const char kKey[] = "/lb/test/tls/cache";
const std::map<std::string, std::string> kCluster = {{"cluster", "cache"}};

class MembershipEtcdTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    ASSERT_TRUE(origins_.ok()) << origins_.error();
    ca_ = std::make_unique<TlsCa>(dir_.path(), "ca");
    ASSERT_TRUE(ca_->ok()) << ca_->error();
    other_ca_ = std::make_unique<TlsCa>(dir_.path(), "other");
    ASSERT_TRUE(other_ca_->ok()) << other_ca_->error();
    server_ = ca_->issue("etcd", {"IP:127.0.0.1"});
    ASSERT_TRUE(server_.ok) << server_.error;
    client_ = ca_->issue("lb", {"lb.test"});
    ASSERT_TRUE(client_.ok) << client_.error;
    EtcdTls tls;
    tls.ca = ca_->certPath();
    tls.cert = server_.cert;
    tls.key = server_.key;
    tls.client_cert_auth = true;
    tls.client_cert = client_.cert;
    tls.client_key = client_.key;
    etcd_ = std::make_unique<EtcdProcess>(10s, tls);
    ASSERT_TRUE(etcd_->ok()) << etcd_->output();
    ASSERT_EQ(etcd_->clientUrl().rfind("https://", 0), 0u) << etcd_->clientUrl();
    revision_ = etcd_->put(kKey, membershipDocument(origins_, {0, 1, 2}));
    ASSERT_GT(revision_, 0) << etcd_->lastError();
  }

  // An lb whose membership table adds `extra` (its tls, for one).
  std::unique_ptr<MemberLb> memberLb(const std::string& extra) {
    return std::make_unique<MemberLb>(
        MembershipOptions({etcd_->clientUrl()}, kKey).membershipExtra(extra));
  }

  std::string tlsTable(const std::string& ca, bool with_client_cert) const {
    std::string t = ", tls = { ca = \"" + ca + "\"";
    if (with_client_cert) t += ", cert = \"" + client_.cert + "\", key = \"" + client_.key + "\"";
    return t + " }";
  }

  // lb_membership_watch_up of cluster "cache" becomes `up` within `timeout`.
  static bool watchUpIs(MemberLb& lb, double up, Millis timeout) {
    return pollUntil([&] {
      return metricValue(lb.admin(), "lb_membership_watch_up", kCluster) == up;
    }, timeout);
  }

  // A good lb has written its state file; `lb` starts from a copy of it, on its own path.
  void startFromStateFileOf(MemberLb& good, MemberLb& lb) {
    std::error_code ec;
    std::filesystem::copy_file(good.statePath(), lb.statePath(),
                               std::filesystem::copy_options::overwrite_existing, ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(lb.start()) << lb.output();
  }

  // `lb` keeps answering from the state file's membership, at its revision.
  void expectServingStateFile(MemberLb& lb) {
    MembershipView v = lb.membership();
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_EQ(v.revision, revision_) << lb.output();
    for (int k = 0; k < 20; ++k) {
      const std::string who = lb.answer("k" + std::to_string(k));
      EXPECT_TRUE(who == "origin-a" || who == "origin-b" || who == "origin-c") << who;
    }
  }

  TempDir dir_{"etcdtls"};
  OriginFleet origins_{4};
  std::unique_ptr<TlsCa> ca_, other_ca_;
  TlsCert server_, client_;
  std::unique_ptr<EtcdProcess> etcd_;
  int64_t revision_ = 0;
};

TEST_F(MembershipEtcdTlsTest, FollowsTheMembershipOverMutualTls) {
  auto lb = memberLb(tlsTable(ca_->certPath(), true));
  ASSERT_TRUE(lb->start()) << lb->output();
  ASSERT_TRUE(waitForRevision(lb->admin(), revision_)) << lb->output();
  EXPECT_TRUE(watchUpIs(*lb, 1, 5s)) << lb->output();
  // The next revision comes through the watch, over the same TLS.
  const int64_t next = etcd_->put(kKey, membershipDocument(origins_, {0, 1, 2, 3}));
  ASSERT_GT(next, revision_) << etcd_->lastError();
  ASSERT_TRUE(waitForRevision(lb->admin(), next)) << lb->output();
  MembershipView v = lb->membership();
  EXPECT_EQ(v.backends.size(), 4u);
  EXPECT_EQ(v.endpoint, etcd_->clientUrl());
  EXPECT_EQ(v.state, "watching");
}

TEST_F(MembershipEtcdTlsTest, WrongCaIsALogLineAndWatchDownWhileTheStateFileServes) {
  auto good = memberLb(tlsTable(ca_->certPath(), true));
  ASSERT_TRUE(good->start()) << good->output();
  ASSERT_TRUE(waitForRevision(good->admin(), revision_)) << good->output();
  auto lb = memberLb(tlsTable(other_ca_->certPath(), true));
  startFromStateFileOf(*good, *lb);
  const std::string line = "membership: cluster cache: range failed at " + etcd_->clientUrl() +
                           ": TLS handshake: certificate verify failed";
  ASSERT_TRUE(pollUntil([&] { return lb->output().find(line) != std::string::npos; }, 10s))
      << lb->output();
  EXPECT_TRUE(watchUpIs(*lb, 0, 10s)) << lb->output();
  EXPECT_TRUE(lb->process().running());
  expectServingStateFile(*lb);
  // One line per failed attempt: the TLS layer adds none of its own.
  EXPECT_EQ(lb->output().find("upstream TLS"), std::string::npos) << lb->output();
}

TEST_F(MembershipEtcdTlsTest, MissingClientCertificateIsALogLineAndWatchDown) {
  auto good = memberLb(tlsTable(ca_->certPath(), true));
  ASSERT_TRUE(good->start()) << good->output();
  ASSERT_TRUE(waitForRevision(good->admin(), revision_)) << good->output();
  auto lb = memberLb(tlsTable(ca_->certPath(), false));
  startFromStateFileOf(*good, *lb);
  // etcd refuses a client without a certificate: under TLS 1.3 with an alert after lb's
  // side of the handshake is done, so the failure is the request's, with OpenSSL's reason.
  const std::string line = "membership: cluster cache: range failed at " + etcd_->clientUrl() + ": ";
  ASSERT_TRUE(pollUntil([&] { return lb->output().find(line) != std::string::npos; }, 10s))
      << lb->output();
  const std::string out = lb->output();
  const size_t at = out.find(line);
  const std::string logged = out.substr(at, out.find('\n', at) - at);
  // TLS 1.3's alert; a TLS 1.2 server would fail the handshake itself with "bad certificate".
  EXPECT_TRUE(logged.find("certificate required") != std::string::npos ||
              logged.find("bad certificate") != std::string::npos)
      << logged;
  EXPECT_TRUE(watchUpIs(*lb, 0, 10s)) << lb->output();
  EXPECT_TRUE(lb->process().running());
  expectServingStateFile(*lb);
}

TEST_F(MembershipEtcdTlsTest, MembershipGetSpeaksTlsWithEtcdctlsFlags) {
  auto get = [&](const std::string& ca, bool with_client_cert) {
    std::vector<std::string> argv = {builtBinary("lb"), "membership", "get", "--etcd",
                                     etcd_->clientUrl(), "--key", kKey, "--cacert", ca};
    if (with_client_cert)
      argv.insert(argv.end(), {"--cert", client_.cert, "--key-file", client_.key});
    return runCommand(argv, 20s);
  };
  auto r = get(ca_->certPath(), true);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, membershipDocument(origins_, {0, 1, 2}));
  r = get(other_ca_->certPath(), true);
  EXPECT_EQ(r.exit_code, 1);
  // One line: the TLS layer adds none of its own.
  EXPECT_EQ(r.err, "lb membership: cannot read " + std::string(kKey) + " from " +
                       etcd_->clientUrl() +
                       ": TLS handshake: certificate verify failed: unable to get local issuer "
                       "certificate\n");
  r = get(ca_->certPath(), false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("certificate"), std::string::npos) << r.err;
}

TEST_F(MembershipEtcdTlsTest, AReloadWhoseCaDoesNotLoadChangesNothing) {
  auto lb = memberLb(tlsTable(ca_->certPath(), true));
  ASSERT_TRUE(lb->start()) << lb->output();
  ASSERT_TRUE(waitForRevision(lb->admin(), revision_)) << lb->output();
  ASSERT_TRUE(watchUpIs(*lb, 1, 5s)) << lb->output();
  std::string broken = lb->config();
  const std::string missing = dir_.path() + "/gone.pem";
  broken.replace(broken.find(ca_->certPath()), ca_->certPath().size(), missing);
  EXPECT_FALSE(lb->reload(broken)) << lb->output();
  EXPECT_NE(lb->output().find("clusters.cache.membership.tls.ca: cannot read '" + missing + "'"),
            std::string::npos)
      << lb->output();
  // The watch keeps its client: the next put still arrives.
  const int64_t next = etcd_->put(kKey, membershipDocument(origins_, {0, 1, 2, 3}));
  ASSERT_GT(next, revision_) << etcd_->lastError();
  EXPECT_TRUE(waitForRevision(lb->admin(), next)) << lb->output();
}

TEST_F(MembershipEtcdTlsTest, ACaFileRenewedInPlaceIsTakenAtTheNextReload) {
  // lb's own copy of the CA bundle, renewed in place as an operator's tooling does.
  const std::string bundle = dir_.path() + "/lb-ca.pem";
  std::filesystem::copy_file(ca_->certPath(), bundle);
  auto lb = memberLb(tlsTable(bundle, true));
  ASSERT_TRUE(lb->start()) << lb->output();
  ASSERT_TRUE(waitForRevision(lb->admin(), revision_)) << lb->output();
  ASSERT_TRUE(watchUpIs(*lb, 1, 5s)) << lb->output();
  const std::string restarted = "membership: cluster cache: etcd endpoints, key, tls or user "
                                "changed: watching again";
  // Nothing changed: the watch stays.
  ASSERT_TRUE(lb->reload(lb->config())) << lb->output();
  EXPECT_EQ(lb->output().find(restarted), std::string::npos) << lb->output();
  // The bundle gains a second CA: new trust, a new client.
  std::ofstream(bundle, std::ios::app) << std::ifstream(other_ca_->certPath()).rdbuf();
  ASSERT_TRUE(lb->reload(lb->config())) << lb->output();
  EXPECT_NE(lb->output().find(restarted), std::string::npos) << lb->output();
  const int64_t next = etcd_->put(kKey, membershipDocument(origins_, {0, 1, 2, 3}));
  ASSERT_GT(next, revision_) << etcd_->lastError();
  EXPECT_TRUE(waitForRevision(lb->admin(), next)) << lb->output();
  EXPECT_TRUE(watchUpIs(*lb, 1, 5s)) << lb->output();
}

TEST_F(MembershipEtcdTlsTest, CaFileThatDoesNotLoadIsAConfigErrorAtItsKey) {
  const std::string missing = dir_.path() + "/nope.pem";
  auto lb = memberLb(tlsTable(missing, true));
  const std::string config = lb->config();
  const std::string path = dir_.write("lb.toml", config);
  // file:line:column of the ca value.
  const size_t value = config.find("\"" + missing);
  const size_t line_start = config.rfind('\n', value) + 1;
  const std::string at = path + ":" +
                         std::to_string(std::count(config.begin(),
                                                   config.begin() + static_cast<long>(line_start),
                                                   '\n') + 1) +
                         ":" + std::to_string(value - line_start + 1) + ": ";
  auto r = runCommand({builtBinary("lb"), "--check", "--config", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(at + "clusters.cache.membership.tls.ca: cannot read '" + missing + "'"),
            std::string::npos)
      << at << "\n" << r.err;
  // And lb itself refuses to start on it, with the same error.
  r = runCommand({builtBinary("lb"), "--config", path}, 10s);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("clusters.cache.membership.tls.ca: cannot read"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace lb::test
