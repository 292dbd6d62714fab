// Hostile and edge-case requests from a raw socket, through a real lb, to a raw recording
// origin (tests/support/recording_origin.h). Each case asserts what the client reads (the
// statuses, in order) and exactly which bytes reached the origin: nothing for a request lb
// refuses at its head; the head (and the body up to the fault) for one it refuses mid-body,
// with that upstream connection then closed; the rewritten request, byte for byte, for one it
// forwards. Every refusal carries Connection: close, ends in a clean close (FIN, no reset:
// the lingering close), is counted in lb_http_errors_total{reason}, and nothing pipelined
// behind it is forwarded.
//
// The cases are also the seeds of the HTTP fuzz target (tests/fuzz/corpus/http/).
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_hostile_cases.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/proxy_harness.h"
#include "tests/support/recording_origin.h"
#include "tests/support/repo_file.h"

namespace lb::test {
namespace {

class HttpHostileTest : public ::testing::TestWithParam<HostileCase> {
 protected:
  static void SetUpTestSuite() {
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
        "[clusters.c]\nretries = 0\nbackends = [ { name = \"rec\", address = \"" +
            origin_->address() + "\" } ]\n",
        &why))
        << why;
  }
  static void TearDownTestSuite() {
    delete lb_;   // SIGTERM, and exit 0 is asserted
    lb_ = nullptr;
    delete origin_;
    origin_ = nullptr;
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
};

RecordingOrigin* HttpHostileTest::origin_ = nullptr;
ProxyHarness* HttpHostileTest::lb_ = nullptr;

void sendAs(TcpClient& c, const HostileCase& hc) {
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

TEST_P(HttpHostileTest, StatusAndOriginBytes) {
  const HostileCase& hc = GetParam();
  // The h2c preface is HTTP/1.1's 505 only where lb does not speak HTTP/2 (TLS without h2 in
  // its ALPN: tls_hostile_test.cc); a plain listener takes it as HTTP/2 (tests/integration/h2/).
  if (std::string_view(hc.name) == "Http2Preface") GTEST_SKIP() << "HTTP/2 on a plain listener";
  ASSERT_NE(origin_, nullptr);
  const long errors_before = hc.reason ? errorsCounted(hc.reason) : 0;
  const size_t conns_before = origin_->connections();
  const RecordingOrigin::Mark mark = origin_->mark();

  TcpClient c;
  ASSERT_TRUE(c.connect(lb_->port()));
  sendAs(c, hc);
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
    EXPECT_FALSE(c.sawReset()) << "lb must close with FIN after lingering, not reset";
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

INSTANTIATE_TEST_SUITE_P(Cases, HttpHostileTest, ::testing::ValuesIn(hostileCases()),
                         [](const ::testing::TestParamInfo<HostileCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(HttpHostileCasesTest, ThereAreAtLeastEightyAndTheirNamesAreUnique) {
  std::vector<HostileCase> all = hostileCases();
  EXPECT_GE(all.size(), 80u);
  std::set<std::string> names;
  for (const auto& c : all) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

TEST(HttpHostileCasesTest, EveryCaseIsASeedOfTheHttpFuzzTarget) {
  // tests/fuzz/corpus/http/NAME: byte 0 = 0 (a request, read whole), then the request bytes.
  for (const auto& c : hostileCases()) {
    std::string seed = readWholeFile(repoFile(std::string("tests/fuzz/corpus/http/") + c.name));
    EXPECT_EQ(seed, std::string(1, '\0') + c.request) << "tests/fuzz/corpus/http/" << c.name;
  }
}

}  // namespace
}  // namespace lb::test
