// TLS towards backends (a cluster's `tls`): real redis-servers from Debian with TLS only
// (`--port 0 --tls-port P`), and a second lb terminating TLS in front of lb-origin as an HTTPS
// origin, certificates made at test time (tests/support/tls_certs.h). lb must reach them with
// verification on, offer its client certificate to a server that requires one, resume its
// sessions, check them with TLS too, and treat a backend it cannot trust as a failed connect:
// refused with a log line that says why, counted, and the next host tried.
#include <signal.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/cache_server.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin.h"
#include "tests/support/process.h"
#include "tests/support/silent_backend.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb::test {
namespace {

// The sum of every exposition line whose series starts with `prefix` and holds each of
// `labels` (name="value" pairs); 0 when none does.
double metricSum(const std::string& text, const std::string& prefix,
                 const std::vector<std::string>& labels = {}) {
  double sum = 0;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    bool all = true;
    for (const auto& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

class TlsUpstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    ca_ = std::make_unique<TlsCa>(dir_.path());
    ASSERT_TRUE(ca_->ok()) << ca_->error();
    other_ca_ = std::make_unique<TlsCa>(dir_.path(), "other");
    ASSERT_TRUE(other_ca_->ok()) << other_ca_->error();
    server_ = ca_->issue("redis", {"redis.test", "IP:127.0.0.1"});
    ASSERT_TRUE(server_.ok) << server_.error;
    client_ = ca_->issue("client", {"lb.client"});
    ASSERT_TRUE(client_.ok) << client_.error;
    port_ = freePort();
    admin_port_ = freePort();
  }

  // A redis-server speaking only TLS with server_'s certificate; `clients`: it requires a
  // client certificate signed by ca_.
  std::unique_ptr<CacheServer> tlsRedis(bool clients = false) {
    return std::make_unique<CacheServer>(
        CacheServer::kRedisTls,
        std::vector<std::string>{"--tls-cert-file", server_.cert, "--tls-key-file", server_.key,
                                 "--tls-ca-cert-file", ca_->certPath(), "--tls-auth-clients",
                                 clients ? "yes" : "no"});
  }

  // lb with one plain `protocol` listener on port_ in front of cluster "cache" (its `tls`
  // line and `extra` lines as given) over `backends`.
  std::string config(const std::string& protocol, const std::string& tls,
                     const std::vector<std::string>& backends,
                     const std::string& extra = "") const {
    std::string c = "[lb]\nworkers = 1\n[admin]\nlisten = \"127.0.0.1:" +
                    std::to_string(admin_port_) + "\"\n[listeners.front]\nlisten = \"127.0.0.1:" +
                    std::to_string(port_) + "\"\nprotocol = \"" + protocol +
                    "\"\ncluster = \"cache\"\n" +
                    (protocol == "redis" ? "timeouts = { connect = \"300ms\", response = \"2s\" }\n"
                                         : "timeouts = { connect = \"300ms\" }\n") +
                    (protocol == "tcp" ? "on_missing_key = \"random\"\n" : "") +
                    "[clusters.cache]\n" + tls + "\n" + extra + "\nbackends = [\n";
    for (size_t i = 0; i < backends.size(); ++i)
      c += "  { name = \"b" + std::to_string(i) + "\", address = \"" + backends[i] + "\" },\n";
    return c + "]\n";
  }
  // `toml` (from config()) with timeouts.connect set to `limit`.
  static std::string withConnectTimeout(std::string toml, const std::string& limit) {
    const std::string fast = "connect = \"300ms\"";
    const size_t at = toml.find(fast);
    if (at != std::string::npos) toml.replace(at, fast.size(), "connect = \"" + limit + "\"");
    return toml;
  }
  std::string trusting(const std::string& more = "") const {
    return "tls = { ca = \"" + ca_->certPath() + "\"" + more + " }";
  }

  // lb with one backend, `silent` (the test's own acceptor that never answers), under
  // timeouts.connect = `connect` and no retries (one backend connection per request); its
  // admin checked to be this lb's.
  void startBehindSilent(const SilentBackend& silent, const std::string& connect) {
    const std::string toml = withConnectTimeout(
        config("http", trusting(), {silent.address()}, "retries = 0"), connect);
    ASSERT_NE(toml.find("connect = \"" + connect + "\""), std::string::npos) << toml;
    ASSERT_TRUE(lb_.start(toml, {port_, admin_port_})) << lb_.output();
    ASSERT_NE(metrics().find("lb_build_info"), std::string::npos) << lb_.output();
  }

  std::string metrics() {
    return runCommand({"curl", "-s", "http://127.0.0.1:" + std::to_string(admin_port_) +
                                         "/metrics"})
        .out;
  }
  // Waits (bounded) until the metric sum reaches n.
  bool waitMetric(const std::string& prefix, const std::vector<std::string>& labels, double n) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (metricSum(metrics(), prefix, labels) >= n) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  // Waits (bounded) until a scrape holds the metric and its sum is n: a failed scrape, which
  // holds no line of it, never passes for 0.
  bool waitMetricIs(const std::string& prefix, const std::vector<std::string>& labels, double n) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string m = metrics();
      if (m.find("\n" + prefix) != std::string::npos && metricSum(m, prefix, labels) == n)
        return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  bool waitOutput(const std::string& needle) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (lb_.output().find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  // An HTTPS origin: `https`, a second lb terminating TLS with a certificate for
  // origin.test (signed by ca_), in front of `origin`; *port is where it listens.
  void startHttpsOrigin(OriginProcess& origin, LbProcess& https, uint16_t* port) {
    ASSERT_TRUE(origin.ok()) << origin.output();
    TlsCert web = ca_->issue("web", {"origin.test"});
    ASSERT_TRUE(web.ok) << web.error;
    *port = freePort();
    ASSERT_TRUE(https.start("[lb]\nworkers = 1\n[admin]\nlisten = \"127.0.0.1:" +
                                std::to_string(freePort()) + "\"\n[listeners.web]\nlisten = "
                                "\"127.0.0.1:" + std::to_string(*port) +
                                "\"\ncluster = \"o\"\ntls = { certificates = [ { cert = \"" +
                                web.cert + "\", key = \"" + web.key + "\" } ] }\n"
                                "[clusters.o]\nbackends = [ { name = \"o\", address = \"" +
                                origin.address() + "\" } ]\n",
                            {*port}))
        << https.output();
  }

  // redis-cli through lb's plain listener.
  CommandResult viaLb(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  }
  // redis-cli straight to a TLS redis-server, with lb's client certificate.
  CommandResult direct(const CacheServer& s, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"redis-cli", "--tls", "--cacert", ca_->certPath(),
                                     "--cert", client_.cert, "--key", client_.key,
                                     "-h", "127.0.0.1", "-p", std::to_string(s.port())};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  }

  TempDir dir_{"tlsup"};
  std::unique_ptr<TlsCa> ca_, other_ca_;
  TlsCert server_, client_;
  LbProcess lb_;
  uint16_t port_ = 0, admin_port_ = 0;
};

TEST_F(TlsUpstreamTest, RedisListenerStoresEveryKeyOnTlsRedisServers) {
  auto r1 = tlsRedis(), r2 = tlsRedis();
  ASSERT_TRUE(r1->ok()) << r1->output();
  ASSERT_TRUE(r2->ok()) << r2->output();
  ASSERT_TRUE(lb_.start(config("redis", trusting(", server_name = \"redis.test\""),
                               {r1->address(), r2->address()}),
                        {port_, admin_port_}))
      << lb_.output();
  for (int i = 0; i < 20; ++i) {
    const std::string k = "key:" + std::to_string(i);
    auto set = viaLb({"SET", k, "v" + std::to_string(i)});
    ASSERT_EQ(set.out, "OK\n") << set.err << lb_.output();
  }
  for (int i = 0; i < 20; ++i) {
    auto get = viaLb({"GET", "key:" + std::to_string(i)});
    EXPECT_EQ(get.out, "v" + std::to_string(i) + "\n");
  }
  // The keys are on the TLS servers themselves, spread over both.
  const long n1 = std::stol(direct(*r1, {"DBSIZE"}).out);
  const long n2 = std::stol(direct(*r2, {"DBSIZE"}).out);
  EXPECT_EQ(n1 + n2, 20);
  EXPECT_GT(n1, 0);
  EXPECT_GT(n2, 0);
  const std::string m = metrics();
  EXPECT_GE(metricSum(m, "lb_upstream_tls_handshakes_total", {"backend=\"b0\""}), 1) << m;
  EXPECT_GE(metricSum(m, "lb_upstream_tls_handshakes_total", {"backend=\"b1\""}), 1) << m;
  EXPECT_EQ(metricSum(m, "lb_upstream_tls_handshake_errors_total"), 0) << m;
}

TEST_F(TlsUpstreamTest, WithoutServerNameTheCertificateMustNameTheAddress) {
  auto r = tlsRedis();
  ASSERT_TRUE(r->ok()) << r->output();
  // server_ names 127.0.0.1 (an IP SAN): checked against the address lb connected to.
  ASSERT_TRUE(lb_.start(config("redis", trusting(), {r->address()}), {port_, admin_port_}))
      << lb_.output();
  EXPECT_EQ(viaLb({"SET", "k", "v"}).out, "OK\n") << lb_.output();
  EXPECT_EQ(viaLb({"GET", "k"}).out, "v\n");
}

TEST_F(TlsUpstreamTest, AWrongCaIsRefusedWithAClearLogLine) {
  auto r = tlsRedis();
  ASSERT_TRUE(r->ok()) << r->output();
  ASSERT_TRUE(lb_.start(config("redis",
                               "tls = { ca = \"" + other_ca_->certPath() +
                                   "\", server_name = \"redis.test\" }",
                               {r->address()}),
                        {port_, admin_port_}))
      << lb_.output();
  auto get = viaLb({"GET", "k"});
  EXPECT_EQ(get.out.rfind("ERR", 0), 0u) << get.out;   // an error reply, not a hang
  // OpenSSL's own words for it ("unable to get local issuer certificate", or "self-signed
  // certificate in certificate chain" when the server sends its CA along) follow.
  EXPECT_TRUE(waitOutput("upstream TLS: cluster cache, backend " + r->address() +
                         ": handshake failed: certificate verify failed: "))
      << lb_.output();
  EXPECT_TRUE(waitMetric("lb_upstream_tls_handshake_errors_total",
                         {"backend=\"b0\"", "reason=\"verify\""}, 1))
      << metrics();
  EXPECT_EQ(metricSum(metrics(), "lb_upstream_tls_handshakes_total"), 0);
}

TEST_F(TlsUpstreamTest, AServerNameTheCertificateLacksIsAVerifyFailure) {
  auto r = tlsRedis();
  ASSERT_TRUE(r->ok()) << r->output();
  ASSERT_TRUE(lb_.start(config("redis", trusting(", server_name = \"other.test\""),
                               {r->address()}),
                        {port_, admin_port_}))
      << lb_.output();
  EXPECT_EQ(viaLb({"GET", "k"}).out.rfind("ERR", 0), 0u);
  EXPECT_TRUE(waitOutput("certificate verify failed: hostname mismatch")) << lb_.output();
}

TEST_F(TlsUpstreamTest, MutualTlsPresentsTheClientCertificate) {
  auto r = tlsRedis(/*clients=*/true);
  ASSERT_TRUE(r->ok()) << r->output();
  ASSERT_TRUE(lb_.start(config("redis",
                               trusting(", server_name = \"redis.test\", cert = \"" +
                                        client_.cert + "\", key = \"" + client_.key + "\""),
                               {r->address()}),
                        {port_, admin_port_}))
      << lb_.output();
  EXPECT_EQ(viaLb({"SET", "k", "mtls"}).out, "OK\n") << lb_.output();
  EXPECT_EQ(direct(*r, {"GET", "k"}).out, "mtls\n");
}

TEST_F(TlsUpstreamTest, WithoutItsClientCertificateTheBackendRefusesLb) {
  auto r = tlsRedis(/*clients=*/true);
  ASSERT_TRUE(r->ok()) << r->output();
  ASSERT_TRUE(lb_.start(config("redis", trusting(", server_name = \"redis.test\""),
                               {r->address()}),
                        {port_, admin_port_}))
      << lb_.output();
  // TLS 1.3 ends the client's side of the handshake before the server judges its (absent)
  // certificate, so the refusal may come as the first read's alert: either way an error
  // reply, and nothing stored.
  auto set = viaLb({"SET", "k", "v"});
  EXPECT_EQ(set.out.rfind("ERR", 0), 0u) << set.out << lb_.output();
  EXPECT_EQ(direct(*r, {"EXISTS", "k"}).out, "0\n");
}

TEST_F(TlsUpstreamTest, HealthChecksSpeakTlsAndSayWhyTheyFail) {
  auto good = tlsRedis();
  ASSERT_TRUE(good->ok()) << good->output();
  // The second backend shows a certificate from a CA lb does not trust.
  auto untrusted = other_ca_->issue("untrusted", {"redis.test", "IP:127.0.0.1"});
  ASSERT_TRUE(untrusted.ok) << untrusted.error;
  CacheServer bad(CacheServer::kRedisTls,
                  {"--tls-cert-file", untrusted.cert, "--tls-key-file", untrusted.key,
                   "--tls-ca-cert-file", ca_->certPath(), "--tls-auth-clients", "no"});
  ASSERT_TRUE(bad.ok()) << bad.output();
  const std::string health =
      "health = { type = \"redis\", interval = \"200ms\", timeout = \"150ms\", rise = 1, "
      "fall = 1 }";
  ASSERT_TRUE(lb_.start(config("redis", trusting(", server_name = \"redis.test\""),
                               {good->address(), bad.address()}, health),
                        {port_, admin_port_}))
      << lb_.output();
  // A plaintext PING to a TLS-only port fails: passing checks prove they speak TLS.
  EXPECT_TRUE(waitMetric("lb_backend_health_checks_total", {"backend=\"b0\"", "result=\"ok\""},
                         2))
      << metrics();
  EXPECT_TRUE(waitMetric("lb_backend_health_checks_total", {"backend=\"b1\"", "result=\"fail\""},
                         1))
      << metrics();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::string backends;
  while (std::chrono::steady_clock::now() < deadline) {
    backends = runCommand({"curl", "-s", "http://127.0.0.1:" + std::to_string(admin_port_) +
                                             "/backends"})
                   .out;
    if (backends.find("tls handshake: certificate verify failed") != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(backends.find("tls handshake: certificate verify failed"), std::string::npos)
      << backends;
  // Every key still lands: the down backend's keys go to the healthy one.
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(viaLb({"SET", "k" + std::to_string(i), "v"}).out, "OK\n") << lb_.output();
  EXPECT_EQ(std::stol(direct(*good, {"DBSIZE"}).out), 10);
}

TEST_F(TlsUpstreamTest, TcpListenerResumesItsSessionWithTheBackend) {
  auto r = tlsRedis();
  ASSERT_TRUE(r->ok()) << r->output();
  ASSERT_TRUE(lb_.start(config("tcp", trusting(", server_name = \"redis.test\""), {r->address()}),
                        {port_, admin_port_}))
      << lb_.output();
  // One backend connection per client connection: the first is a full handshake, later ones
  // offer the session the backend gave.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(viaLb({"PING"}).out, "PONG\n") << lb_.output();
  const std::string m = metrics();
  EXPECT_GE(metricSum(m, "lb_upstream_tls_handshakes_total", {"resumed=\"false\""}), 1) << m;
  EXPECT_GE(metricSum(m, "lb_upstream_tls_handshakes_total", {"resumed=\"true\""}), 1) << m;
}

TEST_F(TlsUpstreamTest, APlaintextBackendCostsARetryOnTheNextHost) {
  // A plain HTTP server answers the ClientHello with a 400: no TLS record.
  OriginProcess plain("plain");
  ASSERT_TRUE(plain.ok()) << plain.output();
  auto r = tlsRedis();
  ASSERT_TRUE(r->ok()) << r->output();
  ASSERT_TRUE(lb_.start(config("tcp", trusting(", server_name = \"redis.test\""),
                               {plain.address(), r->address()}),
                        {port_, admin_port_}))
      << lb_.output();
  // No hash policy: each connection picks at random, so some pick the plaintext one first.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(viaLb({"PING"}).out, "PONG\n") << lb_.output();
  const std::string m = metrics();
  EXPECT_GE(metricSum(m, "lb_upstream_tls_handshake_errors_total",
                      {"backend=\"b0\"", "reason=\"protocol\""}),
            1)
      << m;
  EXPECT_TRUE(waitOutput("upstream TLS: cluster cache, backend " + plain.address() +
                         ": handshake failed: "))
      << lb_.output();
}

TEST_F(TlsUpstreamTest, AStalledHandshakeEndsAtTheConnectTimeout) {
  auto stalled = tlsRedis(), r = tlsRedis();
  ASSERT_TRUE(stalled->ok()) << stalled->output();
  ASSERT_TRUE(r->ok()) << r->output();
  ASSERT_TRUE(lb_.start(config("tcp", trusting(", server_name = \"redis.test\""),
                               {stalled->address(), r->address()}),
                        {port_, admin_port_}))
      << lb_.output();
  // A frozen server still completes TCP connects (the kernel's backlog) but never answers
  // the ClientHello.
  kill(stalled->pid(), SIGSTOP);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(viaLb({"PING"}).out, "PONG\n") << lb_.output();
  kill(stalled->pid(), SIGCONT);
  const std::string m = metrics();
  EXPECT_GE(metricSum(m, "lb_upstream_tls_handshake_errors_total",
                      {"backend=\"b0\"", "reason=\"timeout\""}),
            1)
      << m;
  EXPECT_TRUE(waitOutput("upstream TLS: cluster cache, backend " + stalled->address() +
                         ": handshake failed: no handshake within the connect timeout"))
      << lb_.output();
}

TEST_F(TlsUpstreamTest, HttpClusterKeepsItsTlsConnectionToAnHttpsOrigin) {
  // The HTTPS origin: a second lb terminating TLS in front of lb-origin.
  OriginProcess origin("origin-1");
  LbProcess https;
  uint16_t https_port = 0;
  startHttpsOrigin(origin, https, &https_port);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(lb_.start(config("http", trusting(", server_name = \"origin.test\""),
                               {"127.0.0.1:" + std::to_string(https_port)}),
                        {port_, admin_port_}))
      << lb_.output();
  for (int i = 0; i < 3; ++i) {
    auto r = runCommand({"curl", "-sS", "-i", "http://127.0.0.1:" + std::to_string(port_) + "/"});
    EXPECT_NE(r.out.find("HTTP/1.1 200"), std::string::npos) << r.out << r.err << lb_.output();
    EXPECT_NE(r.out.find("X-Backend: origin-1"), std::string::npos) << r.out;
  }
  // Three requests, one handshake: the TLS connection went back to the pool each time.
  const std::string m = metrics();
  EXPECT_EQ(metricSum(m, "lb_upstream_tls_handshakes_total"), 1) << m;
}

TEST_F(TlsUpstreamTest, CheckNamesTheKeyOfEachBadFile) {
  const std::string path = dir_.write(
      "lb.toml", "[listeners.front]\nlisten = \"127.0.0.1:18444\"\ncluster = \"cache\"\n"
                 "[clusters.cache]\n"
                 "tls = { ca = \"" + dir_.path() + "/nope.pem\", cert = \"" + client_.cert +
                 "\", key = \"" + server_.key + "\" }\n"
                 "backends = [ { name = \"b\", address = \"127.0.0.1:9\" } ]\n");
  auto r = runCommand({builtBinary("lb"), "--check", "--config", path});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(path + ":5:14: clusters.cache.tls.ca: cannot read '" + dir_.path() +
                       "/nope.pem'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("clusters.cache.tls.key: '" + server_.key +
                       "' does not match the certificate in '" + client_.cert + "'"),
            std::string::npos)
      << r.err;
  const std::string half = dir_.write(
      "half.toml", "[listeners.front]\nlisten = \"127.0.0.1:18444\"\ncluster = \"cache\"\n"
                   "[clusters.cache]\ntls = { cert = \"" + client_.cert + "\" }\n"
                   "backends = [ { name = \"b\", address = \"127.0.0.1:9\" } ]\n");
  r = runCommand({builtBinary("lb"), "--check", "--config", half});
  EXPECT_NE(r.err.find("clusters.cache.tls.cert: needs its private key too"), std::string::npos)
      << r.err;
}

TEST_F(TlsUpstreamTest, TheNearCachesTrackingConnectionSpeaksTlsToo) {
  auto r = tlsRedis();
  ASSERT_TRUE(r->ok()) << r->output();
  ASSERT_TRUE(lb_.start(config("redis", trusting(", server_name = \"redis.test\""),
                               {r->address()},
                               "hot_keys = { near_cache = { items = 64, ttl = \"30s\" } }"),
                        {port_, admin_port_}))
      << lb_.output();
  ASSERT_EQ(viaLb({"SET", "hot", "v0"}).out, "OK\n");
  // One key, all the traffic: hot within a merge or two; then served from the near cache,
  // which only fills while the tracking connection (TLS here) is up.
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  bool hit = false;
  while (!hit && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 20; ++i) viaLb({"GET", "hot"});
    hit = metricSum(metrics(), "lb_hotkey_requests_total", {"path=\"near_hit\""}) > 0;
  }
  ASSERT_TRUE(hit) << metrics();
  // A SET straight to the server, which lb never sees: tracking's invalidation makes the
  // next reads through lb see it (the ttl is 30 s, so it cannot be what did it).
  ASSERT_EQ(direct(*r, {"SET", "hot", "v1"}).out, "OK\n");
  const auto seen_by = std::chrono::steady_clock::now() + 2s;
  std::string got;
  while (std::chrono::steady_clock::now() < seen_by && (got = viaLb({"GET", "hot"}).out) != "v1\n") {
  }
  EXPECT_EQ(got, "v1\n");
}

TEST_F(TlsUpstreamTest, VerifyFalseTrustsAnyCertificateAndSaysSo) {
  auto r = tlsRedis();
  ASSERT_TRUE(r->ok()) << r->output();
  // other_ca_ did not sign the server's certificate: only verify = false lets lb through.
  const std::string toml = config("redis",
                                  "tls = { ca = \"" + other_ca_->certPath() +
                                      "\", verify = false }",
                                  {r->address()});
  ASSERT_TRUE(lb_.start(toml, {port_, admin_port_})) << lb_.output();
  EXPECT_EQ(viaLb({"SET", "k", "v"}).out, "OK\n") << lb_.output();
  EXPECT_NE(lb_.output().find("clusters.cache.tls.verify: warning: verify = false"),
            std::string::npos)
      << lb_.output();
}

TEST_F(TlsUpstreamTest, AReloadKeepsTheServerConnectionsUntilATlsFileChanges) {
  auto r = tlsRedis();
  ASSERT_TRUE(r->ok()) << r->output();
  // The CA bundle as a file of lb's own, so that the test can change its bytes later.
  const std::string ca = dir_.path() + "/bundle.pem";
  const std::string pem = readWholeFile(ca_->certPath());
  ASSERT_FALSE(pem.empty());
  writeWholeFile(ca, pem);
  const std::string toml = config(
      "redis", "tls = { ca = \"" + ca + "\", server_name = \"redis.test\" }", {r->address()});
  ASSERT_TRUE(lb_.start(toml, {port_, admin_port_})) << lb_.output();
  // A client that stays connected across the reloads, as an application's pool does: its
  // session holds the generation it began in, and with it that generation's server
  // connections, which the next generation takes over when it can.
  TcpClient held;
  ASSERT_TRUE(held.connect(port_));
  ASSERT_EQ(redisCall(held, {"SET", "k", "v"}), "OK") << lb_.output();
  const double handshakes = metricSum(metrics(), "lb_upstream_tls_handshakes_total");
  ASSERT_GE(handshakes, 1);

  // The same files: the same client context, so the server connection carries on (a SIGHUP
  // for an unrelated change costs no reconnect and no handshake).
  ASSERT_TRUE(lb_.reload(toml + "# an unrelated change\n")) << lb_.output();
  EXPECT_EQ(viaLb({"GET", "k"}).out, "v\n");
  EXPECT_EQ(metricSum(metrics(), "lb_upstream_tls_handshakes_total"), handshakes) << metrics();

  // New bytes in the CA file are new trust: the connection is made again under it.
  writeWholeFile(ca, pem + "\n");
  ASSERT_TRUE(lb_.reload(toml)) << lb_.output();
  EXPECT_EQ(viaLb({"GET", "k"}).out, "v\n");
  EXPECT_GT(metricSum(metrics(), "lb_upstream_tls_handshakes_total"), handshakes) << metrics();
  EXPECT_EQ(redisCall(held, {"GET", "k"}), "v");
}

TEST_F(TlsUpstreamTest, AClientThatLeavesMidHandshakeIsNoBackendTimeout) {
  // The backend is the test's own silent acceptor: it reads lb's ClientHello, says so, and
  // never answers, so lb stays mid-handshake until something on lb's side ends it.
  SilentBackend silent;
  ASSERT_TRUE(silent.ok());
  // A connect timeout far past every wait below: only the client's leaving can end this
  // handshake.
  ASSERT_NO_FATAL_FAILURE(startBehindSilent(silent, "10s"));
  TcpClient leaving;
  ASSERT_TRUE(leaving.connect(port_));
  ASSERT_TRUE(leaving.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_TRUE(silent.waitHellos(1, 10s)) << "lb's ClientHello never reached the backend\n"
                                         << lb_.output();
  EXPECT_EQ(metricSum(metrics(), "lb_backend_active_connections", {"backend=\"b0\""}), 1);
  leaving.close();
  // lb abandons the handshake as its client leaves: the backend sees it close, and the
  // connection's gauge drops right after its transport was released (where a handshake that
  // never ended used to be counted as a timeout), so once it reads 0 every count is in.
  ASSERT_TRUE(silent.waitClosed(1, 10s)) << "lb kept the abandoned handshake open\n"
                                         << lb_.output();
  ASSERT_TRUE(waitMetricIs("lb_backend_active_connections", {"backend=\"b0\""}, 0))
      << "accepted " << silent.accepted() << "\n" << metrics() << lb_.output();
  const std::string m = metrics();
  EXPECT_EQ(metricSum(m, "lb_upstream_tls_handshake_errors_total"), 0) << m;
  EXPECT_EQ(countOf(lb_.output(), "no handshake within the connect timeout"), 0u)
      << lb_.output();
  EXPECT_EQ(silent.accepted(), 1);
  EXPECT_EQ(lb_.process().stop(), 0) << lb_.output();
}

TEST_F(TlsUpstreamTest, AHandshakeTheBackendNeverAnswersIsOneTimeout) {
  // The same silent backend, and a client that stays: the handshake runs into
  // timeouts.connect, the backend's real timeout, counted and logged once. 1s, not the
  // fixture's 300ms: under SAN on a loaded machine, the TCP connect and the ClientHello must
  // be well inside it, or the timeout would find no handshake begun.
  SilentBackend silent;
  ASSERT_TRUE(silent.ok());
  ASSERT_NO_FATAL_FAILURE(startBehindSilent(silent, "1s"));
  auto r = runCommand({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                       "http://127.0.0.1:" + std::to_string(port_) + "/"});
  EXPECT_EQ(r.out.substr(0, 1), "5") << r.out << r.err << lb_.output();
  EXPECT_TRUE(silent.waitHellos(1, 10s)) << "lb's ClientHello never reached the backend";
  // Once the connection is gone every count is in: one, not one more at its release.
  ASSERT_TRUE(waitMetricIs("lb_backend_active_connections", {"backend=\"b0\""}, 0))
      << "accepted " << silent.accepted() << "\n" << metrics() << lb_.output();
  const std::string m = metrics();
  EXPECT_EQ(metricSum(m, "lb_upstream_tls_handshake_errors_total", {"reason=\"timeout\""}), 1)
      << m;
  EXPECT_EQ(metricSum(m, "lb_upstream_tls_handshake_errors_total"), 1) << m;
  EXPECT_EQ(countOf(lb_.output(), "upstream TLS: cluster cache, backend " + silent.address() +
                                      ": handshake failed: no handshake within the connect "
                                      "timeout"),
            1u)
      << lb_.output();
  EXPECT_EQ(silent.accepted(), 1);
  EXPECT_EQ(lb_.process().stop(), 0) << lb_.output();
}

}  // namespace
}  // namespace lb::test
