// The HTTP hostile suite (tests/support/http_hostile_cases.h) against a TLS listener:
// the same cases, statuses, origin bytes and counted reasons, with the bytes carried by a
// loopback TLS relay (tests/support/tls_relay.h), so every case goes through lb's TLS
// transport. The relay turns lb's close into a FIN whatever it was, so whether lb reset or
// lingered is left to the plain suite.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_hostile_cases.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/proxy_harness.h"
#include "tests/support/recording_origin.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"
#include "tests/support/tls_relay.h"

namespace lb::test {
namespace {

class TlsHostileTest : public ::testing::TestWithParam<HostileCase> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("tlshostile");
    TlsCa ca(dir_->path());
    ASSERT_TRUE(ca.ok()) << ca.error();
    TlsCert cert = ca.issue("a", {"a.test"});
    ASSERT_TRUE(cert.ok) << cert.error;
    origin_ = new RecordingOrigin();
    ASSERT_TRUE(origin_->ok());
    lb_ = new ProxyHarness();
    std::string why;
    // One worker, no retries (a retry would send a request twice), a 4 KiB head limit and
    // short timeouts so that a case that hangs on the base build fails fast.
    ASSERT_TRUE(lb_->startLb(
        "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
        "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
        "timeouts = { connect = \"1s\", header = \"500ms\", idle = \"2s\" }\n"
        "limits = { max_header_bytes = 4096 }\n"
        "tls = { certificates = [ { cert = \"" + cert.cert + "\", key = \"" + cert.key +
            "\" } ] }\n"
        "[clusters.c]\nretries = 0\nbackends = [ { name = \"rec\", address = \"" +
            origin_->address() + "\" } ]\n",
        &why))
        << why;
    relay_ = new TlsRelay(lb_->port());
    ASSERT_TRUE(relay_->ok());
  }
  static void TearDownTestSuite() {
    delete relay_;
    relay_ = nullptr;
    delete lb_;   // SIGTERM, and exit 0 is asserted
    lb_ = nullptr;
    delete origin_;
    origin_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }

  // lb_http_errors_total{listener="web",reason=...} now.
  static long errorsCounted(const std::string& reason) {
    auto r = httpExchange(lb_->adminPort(), "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
    if (!r.ok) return -1;
    const std::string want = "reason=\"" + reason + "\"";
    size_t at = 0;
    while ((at = r.body.find("lb_http_errors_total{", at)) != std::string::npos) {
      size_t eol = r.body.find('\n', at);
      std::string line = r.body.substr(at, eol - at);
      at = eol;
      if (line.find("listener=\"web\"") == std::string::npos ||
          line.find(want) == std::string::npos)
        continue;
      return atol(line.c_str() + line.rfind(' ') + 1);
    }
    return 0;
  }

  static RecordingOrigin* origin_;
  static ProxyHarness* lb_;
  static TlsRelay* relay_;
  static TempDir* dir_;
};

RecordingOrigin* TlsHostileTest::origin_ = nullptr;
ProxyHarness* TlsHostileTest::lb_ = nullptr;
TlsRelay* TlsHostileTest::relay_ = nullptr;
TempDir* TlsHostileTest::dir_ = nullptr;

void sendOverTls(TcpClient& c, const HostileCase& hc) {
  switch (hc.send) {
    case Send::kWhole:
    case Send::kHalfClose:
      c.send(hc.request);
      if (hc.send == Send::kHalfClose) c.shutdownWrite();
      return;
    case Send::kBytewise:
      // One byte per segment: lb reads the head in as many pieces as it likes, and must
      // judge it as it would judge it whole.
      for (char ch : hc.request) {
        if (!c.send(std::string_view(&ch, 1))) return;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
      return;
    case Send::kTrickle:
      // Slowloris: the head never completes; a byte every 100 ms keeps the connection busy.
      c.send(hc.request);
      for (int i = 0; i < 30 && c.buffer().empty() && !c.closedByPeer(); ++i) {
        if (!c.send("X")) break;
        c.readAtLeast(1, 100ms);
      }
      return;
  }
}

TEST_P(TlsHostileTest, StatusAndOriginBytes) {
  const HostileCase& hc = GetParam();
  ASSERT_NE(origin_, nullptr);
  const long errors_before = hc.reason ? errorsCounted(hc.reason) : 0;
  const size_t conns_before = origin_->connections();
  const RecordingOrigin::Mark mark = origin_->mark();

  TcpClient c;
  ASSERT_TRUE(c.connect(relay_->port()));
  sendOverTls(c, hc);
  for (size_t i = 0; i < hc.statuses.size(); ++i) {
    auto r = readHttpResponse(c, false, 4s);
    ASSERT_TRUE(r.ok) << "response " << i << ": " << r.error << "\nread: " << c.buffer();
    EXPECT_EQ(r.status, hc.statuses[i]) << "response " << i;
    if (hc.reason != nullptr && i + 1 == hc.statuses.size()) {
      EXPECT_EQ(r.header("connection").value_or(""), "close");
    }
  }
  if (hc.reason != nullptr || hc.statuses.empty()) {
    // lb answered (or had nothing to answer): it closes, gracefully.
    EXPECT_TRUE(c.waitClosed(3s)) << "lb must close after refusing";
    EXPECT_EQ(c.buffer(), "") << "bytes after the last expected response";
  }
  c.close();

  EXPECT_EQ(origin_->receivedSince(mark), hc.origin) << "bytes that reached the origin";
  if (hc.cut_upstream) {
    // A request refused mid-body: its upstream connection must not carry anything else.
    size_t conns = origin_->connections();
    ASSERT_GT(conns, 0u);
    EXPECT_TRUE(origin_->waitPeerClosed(conns - 1, 3s)) << "lb kept the upstream connection";
  } else if (hc.origin.empty()) {
    EXPECT_EQ(origin_->connections(), conns_before) << "lb opened an upstream connection";
  }
  if (hc.reason != nullptr) {
    auto deadline = std::chrono::steady_clock::now() + 2s;
    long after = errorsCounted(hc.reason);
    while (after != errors_before + 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
      after = errorsCounted(hc.reason);
    }
    EXPECT_EQ(after, errors_before + 1) << "lb_http_errors_total{reason=\"" << hc.reason << "\"}";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, TlsHostileTest, ::testing::ValuesIn(hostileCases()),
                         [](const ::testing::TestParamInfo<HostileCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace lb::test
