// TLS certificates as config errors: `lb --check` (and a SIGHUP reload) reads each listener's
// certificate and key and reports, at the file:line:column of the key that names it, a file
// that cannot be read, a key that is not its certificate's, and an expired certificate; a
// reload that would serve one of them changes nothing and the old certificate keeps serving.
#include <sys/stat.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/lb_fixture.h"
#include "tests/support/origin.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb::test {
namespace {

class TlsCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    ca_ = std::make_unique<TlsCa>(dir_.path());
    ASSERT_TRUE(ca_->ok()) << ca_->error();
    good_ = ca_->issue("good", {"a.test"});
    ASSERT_TRUE(good_.ok) << good_.error;
    other_ = ca_->issue("other", {"b.test"});
    ASSERT_TRUE(other_.ok) << other_.error;
  }

  // Line 4 names the certificate, column 55 its cert value, the key's after it.
  std::string config(const std::string& cert, const std::string& key, uint16_t port = 18443,
                     const std::string& backend = "127.0.0.1:9") const {
    return "[listeners.web]\n"
           "listen = \"127.0.0.1:" + std::to_string(port) + "\"\n"
           "cluster = \"web\"\n"
           "tls = { min_version = \"1.2\", certificates = [{ cert = \"" + cert + "\", key = \"" +
           key + "\" }] }\n"
           "[clusters.web]\nbackends = [ { name = \"o\", address = \"" + backend + "\" } ]\n";
  }

  CommandResult check(const std::string& toml) {
    const std::string path = dir_.write("lb.toml", toml);
    return runCommand({builtBinary("lb"), "--check", "--config", path});
  }

  TempDir dir_{"tlscheck"};
  std::unique_ptr<TlsCa> ca_;
  TlsCert good_, other_;
};

TEST_F(TlsCheckTest, GoodCertificatePasses) {
  auto r = check(config(good_.cert, good_.key));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(TlsCheckTest, MissingFileIsAnErrorAtItsKey) {
  auto r = check(config(dir_.path() + "/nope.pem", good_.key));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("lb.toml:4:55: listeners.web.tls.certificates[0].cert: cannot read '" +
                       dir_.path() + "/nope.pem'"),
            std::string::npos)
      << r.err;
}

TEST_F(TlsCheckTest, KeyOfAnotherCertificateIsAnErrorAtTheKey) {
  auto r = check(config(good_.cert, other_.key));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("listeners.web.tls.certificates[0].key: '" + other_.key +
                       "' does not match the certificate"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("lb.toml:4:" + std::to_string(55 + good_.cert.size() + 10) + ":"), std::string::npos) << r.err;
}

TEST_F(TlsCheckTest, ExpiredCertificateIsAnError) {
  TlsCert expired = ca_->issue("expired", {"a.test"}, 0);
  ASSERT_TRUE(expired.ok) << expired.error;
  std::this_thread::sleep_for(1100ms);   // -days 0: expired from the next second on
  auto r = check(config(expired.cert, expired.key));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("listeners.web.tls.certificates[0].cert: '" + expired.cert +
                       "' expired at "),
            std::string::npos)
      << r.err;
}

TEST_F(TlsCheckTest, NotPemIsAnError) {
  const std::string junk = dir_.write("junk.pem", "not a certificate\n");
  auto r = check(config(junk, good_.key));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not a PEM certificate"), std::string::npos) << r.err;
}

TEST_F(TlsCheckTest, SchemaErrorsAreReportedAtTheirKeys) {
  std::string toml = config(good_.cert, good_.key);
  toml.replace(toml.find("\"1.2\""), 5, "\"1.1\"");
  auto r = check(toml);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("lb.toml:4:23: listeners.web.tls.min_version: must be \"1.2\" or \"1.3\""),
            std::string::npos)
      << r.err;
  auto none = check("[listeners.web]\nlisten = \"127.0.0.1:18443\"\ncluster = \"web\"\n"
                    "tls = { certificates = [], ciphers = \"x\" }\n"
                    "[clusters.web]\nbackends = [ { name = \"o\", address = \"127.0.0.1:9\" } ]\n");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("listeners.web.tls.certificates: must list at least one"),
            std::string::npos)
      << none.err;
  EXPECT_NE(none.err.find("listeners.web.tls: unknown key 'ciphers'"), std::string::npos)
      << none.err;
}

TEST_F(TlsCheckTest, ReloadWithBrokenCertificateKeepsTheOldOneServing) {
  OriginProcess origin("origin-1");
  ASSERT_TRUE(origin.ok()) << origin.output();
  const uint16_t port = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(good_.cert, good_.key, port, origin.address()), {port}))
      << lb.output();
  const std::string junk = dir_.write("junk.pem", "not a certificate\n");
  EXPECT_FALSE(lb.reload(config(junk, good_.key, port, origin.address())));
  EXPECT_NE(lb.output().find("is not a PEM certificate"), std::string::npos) << lb.output();
  auto r = runCommand({"curl", "-sS", "-v", "--cacert", ca_->certPath(), "--resolve",
                       "a.test:" + std::to_string(port) + ":127.0.0.1",
                       "https://a.test:" + std::to_string(port) + "/"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("subject: CN=a.test"), std::string::npos) << r.err;
}

TEST_F(TlsCheckTest, ReloadWithRenewedCertificateServesItToNewConnectionsOnly) {
  OriginProcess origin("origin-1");
  ASSERT_TRUE(origin.ok()) << origin.output();
  const uint16_t port = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(good_.cert, good_.key, port, origin.address()), {port}))
      << lb.output();
  // A connection opened before the reload: openssl s_client reading its requests from a
  // fifo, so that the test writes one before the reload and one after.
  const std::string fifo = dir_.path() + "/requests";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Process before({"sh", "-c", "exec openssl s_client -quiet -connect 127.0.0.1:" +
                                  std::to_string(port) + " -servername a.test < " + fifo});
  std::ofstream requests(fifo);
  const std::string request = "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n";
  requests << request << std::flush;
  ASSERT_TRUE(before.waitForOutput("X-Backend: origin-1", 5s)) << before.output();
  TlsCert renewed = ca_->issue("renewed", {"a.test"}, 90);
  ASSERT_TRUE(renewed.ok) << renewed.error;
  ASSERT_TRUE(lb.reload(config(renewed.cert, renewed.key, port, origin.address())))
      << lb.output();
  auto serial = [&](const std::string& pem) {
    return runCommand({"openssl", "x509", "-in", pem, "-noout", "-serial"}).out;
  };
  auto now = runCommand({"sh", "-c",
                         "openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
                             " -servername a.test </dev/null 2>/dev/null | openssl x509 -noout "
                             "-serial"});
  EXPECT_EQ(now.out, serial(renewed.cert)) << now.err;
  EXPECT_NE(now.out, serial(good_.cert));
  // The old connection still answers, on its old certificate's session.
  requests << request << std::flush;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (countOf(before.output(), "X-Backend: origin-1") < 2 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(countOf(before.output(), "X-Backend: origin-1"), 2u) << before.output();
}

TEST_F(TlsCheckTest, WrkThroughACertificateReloadFailsNoRequest) {
  OriginProcess origin("origin-1");
  ASSERT_TRUE(origin.ok()) << origin.output();
  const uint16_t port = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(good_.cert, good_.key, port, origin.address()), {port}))
      << lb.output();
  TlsCert renewed = ca_->issue("renewed", {"a.test"}, 90);
  ASSERT_TRUE(renewed.ok) << renewed.error;
  // Keep-alive connections opened before the reload and new ones after (wrk reconnects
  // nothing on its own, so -c covers the old ones and a second run the new ones).
  Process wrk({"wrk", "-t1", "-c8", "-d3s", "https://127.0.0.1:" + std::to_string(port) + "/"});
  // The reload lands mid-run: once requests flow through lb, wrk's connections are open.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  for (;;) {
    auto st = origin.stats();
    if (st && st->requests_served > 100) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << wrk.output();
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(lb.reload(config(renewed.cert, renewed.key, port, origin.address())))
      << lb.output();
  ASSERT_TRUE(wrk.waitExit(10s).has_value());
  const std::string out = wrk.output();
  EXPECT_NE(out.find("requests in"), std::string::npos) << out;
  EXPECT_EQ(out.find("Socket errors"), std::string::npos) << out;
  EXPECT_EQ(out.find("Non-2xx"), std::string::npos) << out;
  auto after = runCommand({"wrk", "-t1", "-c4", "-d1s",
                           "https://127.0.0.1:" + std::to_string(port) + "/"});
  EXPECT_EQ(after.out.find("Socket errors"), std::string::npos) << after.out;
  EXPECT_NE(after.out.find("requests in"), std::string::npos) << after.out;
}

}  // namespace
}  // namespace lb::test
