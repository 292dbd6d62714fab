// HTTP/2 from clients, as the clients people use speak it: curl by ALPN over TLS and with
// prior knowledge over plain TCP, nghttp, and Debian's python3-h2. Each stream is a request
// of its own: its own key and so its own backend, the same one the key reaches over HTTP/1.1;
// large bodies stream both ways on one stream while the connection's other streams go on;
// a drain sends GOAWAY naming the last stream and lets that stream finish.
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/h2_fleet.h"

namespace lb::test {
namespace {

using nlohmann::json;

uint64_t rssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

class H2ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fleet_.ok()) << fleet_.output(); }
  H2Fleet fleet_;
};

TEST_F(H2ProxyTest, HundredStreamsOnOneConnectionEachReachTheirKeysBackend) {
  auto r = fleet_.probe(fleet_.web(), {"keys", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["ended"], 100) << r.out;
  EXPECT_EQ(j["concurrent"], 100);   // lb's SETTINGS_MAX_CONCURRENT_STREAMS default
  std::map<std::string, int> per_backend;
  for (int i = 0; i < 100; ++i) {
    const std::string key = "key-" + std::to_string(i);
    ASSERT_EQ(j["statuses"][key], 200) << key;
    const std::string h2_backend = j["backends"][key];
    EXPECT_EQ(h2_backend, fleet_.backendOverHttp11(key)) << key;
    ++per_backend[h2_backend];
  }
  // One connection, yet every backend got some of its keys: no pinning per connection.
  EXPECT_EQ(per_backend.size(), 3u);
}

TEST_F(H2ProxyTest, CurlByAlpnAndWithPriorKnowledge) {
  const std::string expect = fleet_.backendOverHttp11("curl-key");
  ASSERT_FALSE(expect.empty());
  auto tls = runCommand({"curl", "-sk", "--http2", "-D", "-", "-H", "x-key: curl-key",
                         "https://127.0.0.1:" + std::to_string(fleet_.tls()) + "/x"});
  ASSERT_EQ(tls.exit_code, 0) << tls.err;
  EXPECT_EQ(tls.out.rfind("HTTP/2 200", 0), 0u) << tls.out;
  EXPECT_NE(tls.out.find("x-backend: " + expect), std::string::npos) << tls.out;
  EXPECT_NE(tls.out.find("x-echo-x-forwarded-proto: https"), std::string::npos) << tls.out;
  auto h2c = runCommand({"curl", "-s", "--http2-prior-knowledge", "-D", "-", "-H",
                         "x-key: curl-key", "http://127.0.0.1:" + std::to_string(fleet_.web()) +
                                                "/x"});
  ASSERT_EQ(h2c.exit_code, 0) << h2c.err;
  EXPECT_EQ(h2c.out.rfind("HTTP/2 200", 0), 0u) << h2c.out;
  EXPECT_NE(h2c.out.find("x-backend: " + expect), std::string::npos) << h2c.out;
  // :authority became Host.
  EXPECT_NE(h2c.out.find("x-echo-host: 127.0.0.1:" + std::to_string(fleet_.web())),
            std::string::npos)
      << h2c.out;
  // Each stream has its access-log line, proto=h2.
  ASSERT_TRUE(fleet_.lb().waitAccessLines(3));
  const std::string log = fleet_.lb().accessLog();
  EXPECT_EQ(countOf(log, " proto=h2 "), 2u) << log;
  EXPECT_NE(log.find(" path=\"/x\""), std::string::npos) << log;
  EXPECT_EQ(fleet_.metric("lb_h2_streams_total{listener=\"web\"}"), 1);
  EXPECT_EQ(fleet_.metric("lb_h2_streams_total{listener=\"webtls\"}"), 1);
}

// RFC 9113 §8.2.3: a client may send cookie as crumbs; the key reads them joined, as the
// HTTP/1.1 request the backend gets has them.
TEST_F(H2ProxyTest, ACookieKeyReadsTheJoinedCrumbs) {
  HttpResponse h1 = httpExchange(fleet_.cookies(),
                                 httpRequest("GET", "/c", "Cookie: a=1; user=u42; b=2\r\n"));
  ASSERT_TRUE(h1.ok) << h1.error;
  const std::string expect(*h1.header("X-Backend"));
  auto r = fleet_.probe(fleet_.cookies(), {"crumbs", "a=1", "user=u42", "b=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["status"], 200) << r.out;
  EXPECT_EQ(j["backend"], expect) << r.out;
}

// RFC 9113 §8.1: the backend's 100 Continue reaches the client as an interim HEADERS of its
// own, which a client that sent expect: 100-continue waits for before its body.
TEST_F(H2ProxyTest, ContinueReachesTheClientBeforeTheFinalResponse) {
  TempDir dir("h2continue");
  const std::string body = dir.path() + "/body";
  std::ofstream(body, std::ios::binary) << std::string(5000, 'x');
  auto r = runCommand({"curl", "-s", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null",
                       "-H", "Expect: 100-continue", "-H", "x-key: e", "--data-binary",
                       "@" + body, "http://127.0.0.1:" + std::to_string(fleet_.web()) + "/echo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t interim = r.out.find("HTTP/2 100"), final_ = r.out.find("HTTP/2 200");
  ASSERT_NE(interim, std::string::npos) << r.out;
  ASSERT_NE(final_, std::string::npos) << r.out;
  EXPECT_LT(interim, final_) << r.out;
  EXPECT_NE(r.out.find("x-body-bytes: 5000"), std::string::npos) << r.out;
}

// timeouts.idle bounds a stream's wait for its backend: 504 once the backend has been silent
// that long, and the connection's other streams are not touched by it.
TEST_F(H2ProxyTest, ASilentBackendIs504ForItsStreamAlone) {
  const std::string base = "http://127.0.0.1:" + std::to_string(fleet_.shortIdle());
  auto r = runCommand({"nghttp", "-n", "-s", "-H", "x-key: t", base + "/slow?delay_ms=1500",
                       base + "/quick?delay_ms=100"},
                      30s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" 504 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 200 "), std::string::npos) << r.out;
  EXPECT_EQ(fleet_.metric("lb_http_errors_total{listener=\"short\",reason=\"backend_timeout\"}"),
            1);
  EXPECT_EQ(fleet_.metric("lb_h2_goaways_total{listener=\"short\",reason=\"stall\"}"), 0);
}

TEST_F(H2ProxyTest, NghttpFetchesSeveralStreamsOnOneConnection) {
  const std::string base = "http://127.0.0.1:" + std::to_string(fleet_.web());
  auto r = runCommand({"nghttp", "-n", "-s", "-H", "x-key: n", base + "/a", base + "/b",
                       base + "/c"},
                      30s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(countOf(r.out, " 200 "), 3u) << r.out;
  EXPECT_EQ(fleet_.metric("lb_h2_streams_total{listener=\"web\"}"), 3);
}

// A 64 MiB POST goes up and comes back (the origin echoes it) on one stream, with every byte
// intact: the request window opens only as the backend takes the bytes.
TEST_F(H2ProxyTest, A64MiBPostStreamsUpAndBack) {
  TempDir dir("h2post");
  const std::string in = dir.path() + "/in", out = dir.path() + "/out";
  {
    std::ofstream f(in, std::ios::binary);
    std::string block(1 << 20, '\0');
    for (int i = 0; i < 64; ++i) {
      for (size_t k = 0; k < block.size(); ++k) block[k] = static_cast<char>('a' + (k + i) % 26);
      f << block;
    }
  }
  auto r = runCommand({"curl", "-s", "--http2-prior-knowledge", "-o", out, "-w", "%{http_code}",
                       "--data-binary", "@" + in, "-H", "x-key: big",
                       "http://127.0.0.1:" + std::to_string(fleet_.web()) + "/echo"},
                      120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "200");
  EXPECT_EQ(runCommand({"cmp", in, out}).exit_code, 0);
}

// A 1 GiB download on one stream while three small ones on the same connection finish long
// before it does, and lb's memory stays flat: the body moves as the client's window opens.
TEST_F(H2ProxyTest, AGiBDownloadLeavesTheOtherStreamsFlowingAndMemoryFlat) {
  const pid_t pid = fleet_.lb().process().pid();
  const uint64_t before = rssKiB(pid);
  const std::string base = "http://127.0.0.1:" + std::to_string(fleet_.web());
  auto r = runCommand({"nghttp", "-n", "-s", "-H", "x-key: gib",
                       base + "/bytes?n=1073741824", base + "/s1?delay_ms=200",
                       base + "/s2?delay_ms=400", base + "/s3?delay_ms=600"},
                      300s);
  const uint64_t after = rssKiB(pid);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // nghttp -s: one line per stream: id, responseEnd (+X.XXms, +X.XXs or +Xus), ..., the path.
  std::map<std::string, double> end_ms;
  std::stringstream ss(r.out);
  for (std::string line; std::getline(ss, line);) {
    std::stringstream ls(line);
    std::vector<std::string> f;
    for (std::string w; ls >> w;) f.push_back(w);
    if (f.size() < 7 || f[1][0] != '+') continue;
    std::string t = f[1].substr(1);
    double v = std::stod(t);
    if (t.find("ms") == std::string::npos && t.find("us") == std::string::npos) v *= 1000;
    if (t.find("us") != std::string::npos) v /= 1000;
    end_ms[f.back()] = v;
  }
  ASSERT_EQ(end_ms.size(), 4u) << r.out;
  const double big = end_ms["/bytes?n=1073741824"];
  for (const char* s : {"/s1?delay_ms=200", "/s2?delay_ms=400", "/s3?delay_ms=600"})
    EXPECT_LT(end_ms[s], big) << s << "\n" << r.out;
  EXPECT_LT(after, before + 64 * 1024) << "RSS went from " << before << " to " << after << " KiB";
}

TEST_F(H2ProxyTest, DrainSendsGoawayWithTheLastStreamAndFinishesIt) {
  auto r = fleet_.probe(fleet_.web(),
                        {"drain", std::to_string(fleet_.lb().process().pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["status"], 200) << r.out;
  EXPECT_TRUE(j["ended"].get<bool>()) << r.out;
  // First the notice (every stream id), then the GOAWAY that names stream 1 as the last.
  ASSERT_GE(j["goaways"].size(), 1u) << r.out;
  const json last = j["goaways"].back();
  EXPECT_EQ(last[0], 0) << r.out;   // NO_ERROR
  EXPECT_EQ(last[1], 1) << r.out;
}

}  // namespace
}  // namespace lb::test
