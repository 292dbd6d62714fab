// TLS on listeners: a real lb with an http and a redis listener behind TLS, certificates made
// at test time (tests/support/tls_certs.h), spoken to by the clients a user would use: curl
// (SNI, keep-alive), openssl s_client (TLS 1.2 and 1.3, session resumption), redis-cli --tls;
// and the hostile cases (plaintext, garbage ClientHello, a stalled handshake, a client that
// leaves mid-handshake), each counted in lb_tls_handshake_errors_total while other clients go
// on being served.
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cache_server.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb::test {
namespace {

// The value of the exposition line that starts with `series` (name and labels), or -1.
double metricValue(const std::string& text, const std::string& series) {
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}

class TlsListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    ca_ = std::make_unique<TlsCa>(dir_.path());
    ASSERT_TRUE(ca_->ok()) << ca_->error();
    a_ = ca_->issue("a", {"a.test"});
    ASSERT_TRUE(a_.ok) << a_.error;
    b_ = ca_->issue("b", {"b.test", "*.wild.test"});
    ASSERT_TRUE(b_.ok) << b_.error;
    origin_ = std::make_unique<OriginProcess>("origin-1");
    ASSERT_TRUE(origin_->ok()) << origin_->output();
    redis_ = std::make_unique<CacheServer>(CacheServer::kRedis);
    ASSERT_TRUE(redis_->ok()) << redis_->output();
    port_ = freePort();
    redis_port_ = freePort();
    admin_port_ = freePort();
    ASSERT_TRUE(lb_.start(config(a_, b_), {port_, redis_port_, admin_port_})) << lb_.output();
  }

  std::string config(const TlsCert& first, const TlsCert& second) const {
    return "[lb]\nworkers = 2\n[admin]\nlisten = \"127.0.0.1:" + std::to_string(admin_port_) +
           "\"\n[listeners.web]\nlisten = \"127.0.0.1:" + std::to_string(port_) +
           "\"\nprotocol = \"http\"\ncluster = \"web\"\ntimeouts = { header = \"700ms\" }\n"
           "tls = { certificates = [ { cert = \"" + first.cert + "\", key = \"" + first.key +
           "\" }, { cert = \"" + second.cert + "\", key = \"" + second.key + "\" } ] }\n"
           "[listeners.cache]\nlisten = \"127.0.0.1:" + std::to_string(redis_port_) +
           "\"\nprotocol = \"redis\"\ncluster = \"cache\"\n"
           "tls = { certificates = [ { cert = \"" + first.cert + "\", key = \"" + first.key +
           "\" } ] }\n"
           "[clusters.web]\nbackends = [ { name = \"origin-1\", address = \"" +
           origin_->address() + "\" } ]\n"
           "[clusters.cache]\nbackends = [ { name = \"redis-1\", address = \"" +
           redis_->address() + "\" } ]\n";
  }

  std::string metrics() {
    auto r = runCommand({"curl", "-s", "http://127.0.0.1:" + std::to_string(admin_port_) +
                                           "/metrics"});
    return r.out;
  }
  double tlsError(const std::string& reason) {
    return metricValue(metrics(), "lb_tls_handshake_errors_total{listener=\"web\",reason=\"" +
                                      reason + "\"}");
  }
  // Waits (bounded) until the web listener's `reason` count reaches n.
  bool waitTlsError(const std::string& reason, double n) {
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (tlsError(reason) >= n) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  CommandResult curl(const std::string& host, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {"curl", "-sS", "-v", "--cacert", ca_->certPath(),
                                     "--resolve", host + ":" + std::to_string(port_) + ":127.0.0.1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("https://" + host + ":" + std::to_string(port_) + "/");
    return runCommand(argv);
  }

  // One s_client run: an HTTP request, then the answer until lb closes.
  CommandResult sClient(const std::string& version, const std::string& sess_flag,
                        const std::string& sess_file) {
    return runCommand({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port_),
                       "-servername", "a.test", "-CAfile", ca_->certPath(), version, sess_flag,
                       sess_file, "-ign_eof"},
                      10s, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
  }

  TempDir dir_{"tls"};
  std::unique_ptr<TlsCa> ca_;
  TlsCert a_, b_;
  std::unique_ptr<OriginProcess> origin_;
  std::unique_ptr<CacheServer> redis_;
  LbProcess lb_;
  uint16_t port_ = 0, redis_port_ = 0, admin_port_ = 0;
};

TEST_F(TlsListenerTest, CurlGetsEachSniNamesCertificateOverOneKeptAliveConnection) {
  // Two requests on one command line: curl reuses the connection when lb keeps it open.
  auto a = curl("a.test", {"https://a.test:" + std::to_string(port_) + "/again"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.err.find("subject: CN=a.test"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("Re-using existing connection"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("ALPN: server accepted http/1.1"), std::string::npos) << a.err;
  EXPECT_EQ(countOf(a.err, "< X-Backend: origin-1"), 2u) << a.err;
  auto b = curl("b.test");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.err.find("subject: CN=b.test"), std::string::npos) << b.err;
  // The wildcard name of b's certificate.
  auto w = curl("x.wild.test");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.err.find("subject: CN=b.test"), std::string::npos) << w.err;
  // A name no certificate has gets the default (the first), which curl then refuses.
  auto other = curl("other.test");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("CN=a.test"), std::string::npos) << other.err;
}

TEST_F(TlsListenerTest, OpensslResumesTls12AndTls13Sessions) {
  for (const std::string version : {"-tls1_2", "-tls1_3"}) {
    const std::string sess = dir_.path() + "/sess" + version;
    auto first = sClient(version, "-sess_out", sess);
    ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
    EXPECT_NE(first.out.find("X-Backend: origin-1"), std::string::npos) << first.out;
    EXPECT_NE(first.out.find("\nNew, TLSv1."), std::string::npos) << first.out;
    auto again = sClient(version, "-sess_in", sess);
    ASSERT_EQ(again.exit_code, 0) << again.err << again.out;
    EXPECT_NE(again.out.find("\nReused, TLSv1."), std::string::npos) << version << again.out;
    EXPECT_NE(again.out.find("X-Backend: origin-1"), std::string::npos) << again.out;
  }
  const std::string m = metrics();
  for (const std::string v : {"1.2", "1.3"})
    for (const std::string resumed : {"false", "true"})
      EXPECT_GE(metricValue(m, "lb_tls_handshakes_total{listener=\"web\",resumed=\"" + resumed +
                                   "\",version=\"" + v + "\"}"),
                1)
          << v << " resumed=" << resumed << "\n" << m;
}

TEST_F(TlsListenerTest, RedisCliTlsReachesTheRedisListener) {
  auto r = runCommand({"redis-cli", "--tls", "--cacert", ca_->certPath(), "--sni", "a.test",
                       "-h", "127.0.0.1", "-p", std::to_string(redis_port_)},
                      10s, "SET tls:greeting hello\nGET tls:greeting\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\nhello\n") << r.err;
  // A plain client on a TLS redis port is closed, not answered.
  TcpClient plain;
  ASSERT_TRUE(plain.connect(redis_port_));
  ASSERT_TRUE(plain.send("PING\r\n"));
  EXPECT_TRUE(plain.waitClosed(5s));
  EXPECT_EQ(plain.buffer(), "");
}

TEST_F(TlsListenerTest, PlainHttpToTheTlsPortGets400AndIsCounted) {
  auto r = runCommand({"curl", "-sS", "-i", "http://127.0.0.1:" + std::to_string(port_) + "/"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("The plain HTTP request was sent to HTTPS port"), std::string::npos)
      << r.out;
  EXPECT_TRUE(waitTlsError("plaintext", 1));
}

TEST_F(TlsListenerTest, HostileHandshakesAreCountedAndOthersAreServed) {
  // A stalled handshake (half a record header) stays open while others are served...
  TcpClient stalled;
  ASSERT_TRUE(stalled.connect(port_));
  ASSERT_TRUE(stalled.send(std::string("\x16\x03\x01", 3)));
  auto ok = curl("a.test");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // ...a garbage ClientHello (a handshake record of nonsense) is refused...
  TcpClient garbage;
  ASSERT_TRUE(garbage.connect(port_));
  ASSERT_TRUE(garbage.send(std::string("\x16\x03\x01\x00\x10", 5) + "this is no hello"));
  EXPECT_TRUE(garbage.waitClosed(5s));
  EXPECT_TRUE(waitTlsError("protocol", 1));
  // ...a client that leaves mid-handshake is counted as closed...
  TcpClient leaving;
  ASSERT_TRUE(leaving.connect(port_));
  ASSERT_TRUE(leaving.send(std::string("\x16\x03\x01\x02\x00\x01", 6)));
  leaving.close();
  EXPECT_TRUE(waitTlsError("closed", 1));
  // ...and the stalled one is closed at timeouts.header (700ms), counted as a timeout.
  EXPECT_TRUE(stalled.waitClosed(5s));
  EXPECT_TRUE(waitTlsError("timeout", 1));
  auto after = curl("b.test");
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

TEST_F(TlsListenerTest, RenegotiationIsRefused) {
  // openssl s_client sends a TLS 1.2 renegotiation ClientHello when it reads "R" on its own
  // line; requests come through a fifo, so the test writes each in turn.
  const std::string fifo = dir_.path() + "/stdin";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Process client({"sh", "-c", "exec openssl s_client -tls1_2 -connect 127.0.0.1:" +
                                  std::to_string(port_) + " -servername a.test < " + fifo});
  std::ofstream in(fifo);
  in << "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n" << std::flush;
  ASSERT_TRUE(client.waitForOutput("X-Backend: origin-1", 5s)) << client.output();
  in << "R\n" << std::flush;
  EXPECT_TRUE(client.waitForOutput("no renegotiation", 5s)) << client.output();
  // Others are served as before.
  auto ok = curl("a.test");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(TlsListenerTest, ASmallResponseLeavesInOneTlsRecord) {
  // The response head and its body are two buffers of one write: lb seals them into one
  // application-data record, not one each. s_client -msg prints every record it receives, its
  // inner content type (23, application data) on the line after "InnerContent".
  auto r = runCommand({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port_),
                       "-servername", "a.test", "-CAfile", ca_->certPath(), "-tls1_3", "-msg",
                       "-ign_eof"},
                      10s, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  ASSERT_NE(r.out.find("X-Backend: origin-1"), std::string::npos) << r.out;
  EXPECT_EQ(countOf(r.out, "<<< TLS 1.3, InnerContent [length 0001]\n    17\n"), 1u) << r.out;
}

TEST_F(TlsListenerTest, AConnectionGoesOnAfterALargeResponse) {
  // 300,000 bytes leave in writes whose ciphertext outgrows what the write BIO may keep, so
  // lb gives that buffer back and takes a fresh one: the kept-alive connection serves the
  // next request (and a large one again) as before.
  const std::string base = "https://a.test:" + std::to_string(port_);
  auto r = curl("a.test", {"-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-w",
                           "%{http_code} %{size_download}\n", base + "/bytes?n=300000",
                           base + "/small", base + "/bytes?n=300000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(countOf(r.err, "Re-using existing connection"), 3u) << r.err;
  EXPECT_EQ(countOf(r.out, "200 300000\n"), 2u) << r.out;
}

TEST_F(TlsListenerTest, CertificateExpiryIsExported) {
  const std::string m = metrics();
  EXPECT_GT(metricValue(m, "lb_tls_certificate_expiry_timestamp_seconds{listener=\"web\","
                           "name=\"a.test\"}"),
            static_cast<double>(time(nullptr)))
      << m;
  EXPECT_GT(metricValue(m, "lb_tls_certificate_expiry_timestamp_seconds{listener=\"web\","
                           "name=\"b.test\"}"),
            static_cast<double>(time(nullptr) + 20 * 86400))
      << m;
}

}  // namespace
}  // namespace lb::test
