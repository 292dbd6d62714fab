// lb's metrics as an operator sees them: a real lb in front of real lb-origin backends, a real
// Prometheus scraping the admin listener every second, and the numbers read back through
// Prometheus' HTTP API matching the traffic the test sent. Also promtool's linter on the live
// process's /metrics, and the admin paths served by the real binary. The dashboard's Cache row
// is checked against lb with a redis listener in front of real redis-servers, its TLS row
// against lb terminating TLS in front of redis-servers that speak only TLS.
//
// Waits on the proxy: until lb/app/worker_group.cc and lb-origin land on main, their placeholders exit
// at once and these tests skip with that reason.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/cache_fleet.h"
#include "tests/support/cache_server.h"
#include "tests/support/etcd_process.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/metrics_fleet.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb::test {
namespace {

class MetricsPrometheusTest : public ::testing::Test {
 protected:
  void startFleet(int backends, uint32_t factor = 0, const std::string& cluster_extra = "") {
    bool skip = false;
    std::string why = fleet_.start(backends, factor, &skip, cluster_extra);
    if (skip) GTEST_SKIP() << "waiting for the proxy to land on main: " << why;
    ASSERT_EQ(why, "");
  }

  // Sends one request for `key` on c (keep-alive); returns the X-Backend that answered.
  std::string send(TcpClient& c, const std::string& key, const std::string& target = "/") {
    EXPECT_TRUE(c.send(httpRequest("GET", target, "x-cache-key: " + key + "\r\n")));
    auto r = readHttpResponse(c);
    EXPECT_TRUE(r) << r.error;
    EXPECT_EQ(r.status, 200);
    return r.header("x-backend").value_or("");
  }

  // Polls Prometheus until `expr` by `label` equals `want`, up to 30 s. Returns the last value.
  std::map<std::string, double> waitForQuery(PrometheusServer& prom, const std::string& expr,
                                             const std::string& label,
                                             const std::map<std::string, double>& want) {
    std::map<std::string, double> got;
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      got = prom.queryBy(expr, label);
      if (got == want) break;
      std::this_thread::sleep_for(250ms);   // Prometheus scrapes every 1 s
    }
    return got;
  }

  Fleet fleet_;
};

TEST_F(MetricsPrometheusTest, PrometheusSeesPerBackendRequestCounts) {
  startFleet(3);
  if (IsSkipped() || HasFatalFailure()) return;
  PrometheusServer prom;
  ASSERT_EQ(prom.start(fleet_.adminPort()), "");

  std::map<std::string, double> sent;
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.webPort()));
  for (int i = 0; i < 90; ++i) sent[send(c, "key:" + std::to_string(i))] += 1;
  ASSERT_FALSE(sent.count("")) << "a response without X-Backend";
  ASSERT_GE(sent.size(), 2u) << "90 keys should reach more than one of 3 backends";

  auto got = waitForQuery(
      prom, "sum by (backend) (lb_backend_requests_total{cluster=\"cache\",code=\"2xx\"})",
      "backend", [&] {
        auto want = sent;
        for (const auto& b : fleet_.backendNames()) want[b] += 0;   // zero series present too
        return want;
      }());
  for (const auto& b : fleet_.backendNames()) EXPECT_EQ(got[b], sent[b]) << b;
  auto downstream = waitForQuery(
      prom, "sum by (listener) (lb_downstream_requests_total{code=\"2xx\"})", "listener",
      {{"web", 90}});
  EXPECT_EQ(downstream["web"], 90);
}

TEST_F(MetricsPrometheusTest, PrometheusSeesLiveLoadOfRequestsInFlight) {
  startFleet(3);
  if (IsSkipped() || HasFatalFailure()) return;
  PrometheusServer prom;
  ASSERT_EQ(prom.start(fleet_.adminPort()), "");

  // Five requests for one key, each with half its body sent: lb has picked a backend and the
  // origin streams its echo but cannot finish, so the key's owner has a live load of 5 and
  // the others 0 until the test sends the rest.
  constexpr int kHeld = 5;
  std::vector<std::unique_ptr<TcpClient>> held;
  for (int i = 0; i < kHeld; ++i) {
    held.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(held.back()->connect(fleet_.webPort()));
    ASSERT_TRUE(held.back()->send(httpRequest("POST", "/", "x-cache-key: hot\r\n"
                                                           "Content-Length: 10\r\n") +
                                  "01234"));
  }
  auto sumAndTop = [](const std::map<std::string, double>& m) {
    double total = 0, top = 0;
    for (const auto& [_, v] : m) total += v, top = std::max(top, v);
    return std::make_pair(total, top);
  };
  const std::string expr = "sum by (backend) (lb_backend_active_requests{cluster=\"cache\"})";
  std::map<std::string, double> got;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    got = prom.queryBy(expr, "backend");
    if (sumAndTop(got) == std::make_pair(double{kHeld}, double{kHeld})) break;
    std::this_thread::sleep_for(250ms);   // Prometheus scrapes every 1 s
  }
  EXPECT_EQ(sumAndTop(got).first, kHeld);
  EXPECT_EQ(sumAndTop(got).second, kHeld) << "one owner holds every request for the key";

  // The bodies complete, the responses end, and the live load returns to zero.
  for (auto& c : held) {
    ASSERT_TRUE(c->send("56789"));
    auto r = readHttpResponse(*c);
    ASSERT_TRUE(r) << r.error;
    EXPECT_EQ(r.body, "0123456789");
  }
  deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    got = prom.queryBy(expr, "backend");
    if (got.size() == 3 && sumAndTop(got).second == 0) break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(sumAndTop(got).first, 0);
}

// conf/grafana/lb.json read from the repository root, or relative to this binary.
std::string readDashboard() {
  for (std::string path : {std::string("conf/grafana/lb.json"),
                           builtBinary("../conf/grafana/lb.json")}) {
    std::ifstream in(path);
    if (!in) continue;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  return "";
}

// Active checks and outlier detection on, so that the Health row's families exist.
constexpr const char* kHealthToml =
    "health = { type = \"http\", interval = \"200ms\", timeout = \"100ms\" }\n"
    "outlier = { consecutive_failures = 5 }\n";

// The dashboard's panels under each row heading ("" before the first row), in order.
std::map<std::string, std::vector<lb::testing::JsonValue>> panelsByRow(
    const lb::testing::JsonValue& dashboard) {
  std::map<std::string, std::vector<lb::testing::JsonValue>> out;
  std::string row;
  for (const auto& panel : dashboard["panels"].items()) {
    if (panel["type"].asString() == "row") {
      row = panel["title"].asString();
      continue;
    }
    out[row].push_back(panel);
  }
  return out;
}

// Grafana's variables, replaced as Grafana would before querying.
std::string withVariables(std::string expr) {
  const std::pair<const char*, const char*> kVars[] = {
      {"$__rate_interval", "1m"}, {"$__range", "1h"}, {"$cluster", ".*"}, {"$backend", ".*"}};
  for (const auto& [from, to] : kVars)
    for (size_t at; (at = expr.find(from)) != std::string::npos;)
      expr.replace(at, strlen(from), to);
  return expr;
}

// Every panel shows something for a live lb: each of its queries is accepted by Prometheus
// and at least one returns series (reload panels show zeros, errors by reason show zero
// rates: present, not empty).
void expectPanelsHaveData(PrometheusServer& prom,
                          const std::vector<lb::testing::JsonValue>& panels) {
  for (const auto& panel : panels) {
    const std::string title = panel["title"].asString();
    bool any = false;
    for (const auto& t : panel["targets"].items()) {
      const std::string expr = withVariables(t["expr"].asString());
      // Wait for data: the first scrapes after the traffic may still be on their way.
      std::optional<std::vector<std::pair<std::map<std::string, std::string>, double>>> rows;
      auto deadline = std::chrono::steady_clock::now() + 10s;
      do {
        rows = prom.query(expr);
        if (rows && !rows->empty()) break;
        std::this_thread::sleep_for(250ms);
      } while (std::chrono::steady_clock::now() < deadline);
      ASSERT_TRUE(rows) << title << ": Prometheus rejected " << expr;
      any = any || !rows->empty();
    }
    EXPECT_TRUE(any) << "panel '" << title << "' has no data";
  }
}

TEST_F(MetricsPrometheusTest, DashboardQueriesReturnDataFromARealLb) {
  startFleet(3, 125, kHealthToml);
  if (IsSkipped() || HasFatalFailure()) return;
  PrometheusServer prom;
  ASSERT_EQ(prom.start(fleet_.adminPort()), "");
  auto dashboard = lb::testing::JsonReader::parse(readDashboard());
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.webPort()));
  // Traffic across at least two scrapes, so every rate() has two samples to work with.
  auto traffic_until = std::chrono::steady_clock::now() + 2500ms;
  for (int i = 0; std::chrono::steady_clock::now() < traffic_until; ++i)
    send(c, std::to_string(i));
  // Every row but Cache, Membership, TLS, Handover and Zones: an HTTP fleet has no redis or
  // memcached listener, no membership cluster, no TLS, no handover and no zones (the tests
  // below).
  for (const auto& [row, panels] : panelsByRow(dashboard))
    if (row != "Cache" && row != "Membership" && row != "TLS" && row != "Handover" &&
        row != "Zones")
      expectPanelsHaveData(prom, panels);
}

TEST_F(MetricsPrometheusTest, DashboardMembershipRowQueriesReturnDataFromAnEtcdBackedLb) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  ASSERT_GT(etcd.put("/lb/dashboard/cache",
                     "{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\"}]}"),
            0);
  const uint16_t admin = freePort(), web = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start("[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
                           std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
                           std::to_string(web) + "\"\ncluster = \"cache\"\n[clusters.cache]\n"
                           "membership = { etcd = [\"" + etcd.clientUrl() +
                           "\"], key = \"/lb/dashboard/cache\" }\n",
                       {web, admin}))
      << lb.output();
  PrometheusServer prom;
  ASSERT_EQ(prom.start(admin), "");
  auto rows = panelsByRow(lb::testing::JsonReader::parse(readDashboard()));
  ASSERT_TRUE(rows.count("Membership")) << "no Membership row";
  expectPanelsHaveData(prom, rows["Membership"]);
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// The Handover row against an lb whose cluster has a handover window, after a reload that
// adds a backend opened one.
TEST_F(MetricsPrometheusTest, DashboardHandoverRowQueriesReturnDataFromALbWithAWindow) {
  const uint16_t admin = freePort(), web = freePort();
  auto config = [&](const std::string& backends) {
    return "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
           std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
           std::to_string(web) + "\"\ncluster = \"c\"\n[clusters.c]\n"
           "handover = { window = \"10m\" }\nbackends = [ " + backends + " ]\n";
  };
  LbProcess lb;
  ASSERT_TRUE(lb.start(config("{ name = \"a\", address = \"127.0.0.1:9001\" }"), {web, admin}))
      << lb.output();
  ASSERT_TRUE(lb.reload(config("{ name = \"a\", address = \"127.0.0.1:9001\" }, "
                               "{ name = \"b\", address = \"127.0.0.1:9002\" }")))
      << lb.output();
  PrometheusServer prom;
  ASSERT_EQ(prom.start(admin), "");
  auto rows = panelsByRow(lb::testing::JsonReader::parse(readDashboard()));
  ASSERT_TRUE(rows.count("Handover")) << "no Handover row";
  expectPanelsHaveData(prom, rows["Handover"]);
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// The Zones row against a redis fleet in two zones, with lb in one of them, two copies of
// each key and local reads.
TEST_F(MetricsPrometheusTest, DashboardZonesRowQueriesReturnDataFromAReplicatedRedisFleet) {
  CacheFleet fleet(CacheServer::kRedis, 4);
  fleet.setZones({"a", "b", "a", "b"}, "a");
  fleet.setSelector("ring_hash");
  ASSERT_TRUE(fleet.start("", "replicas = 2\nread = \"local\"")) << fleet.output();
  PrometheusServer prom;
  ASSERT_EQ(prom.start(fleet.adminPort()), "");
  auto rows = panelsByRow(lb::testing::JsonReader::parse(readDashboard()));
  ASSERT_TRUE(rows.count("Zones")) << "no Zones row";
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  auto traffic_until = std::chrono::steady_clock::now() + 2500ms;
  for (int i = 0; std::chrono::steady_clock::now() < traffic_until; ++i) {
    const std::string key = "user:" + std::to_string(i);
    ASSERT_EQ(redisCall(c, {"SET", key, "v"}), "OK");
    ASSERT_EQ(redisCall(c, {"GET", key}), "v");
  }
  expectPanelsHaveData(prom, rows["Zones"]);
  EXPECT_EQ(fleet.lb().process().stop(), 0) << fleet.output();
}

TEST_F(MetricsPrometheusTest, DashboardCacheRowQueriesReturnDataFromALiveRedisListener) {
  CacheFleet fleet(CacheServer::kRedis, 3);
  ASSERT_TRUE(fleet.start()) << fleet.output();
  PrometheusServer prom;
  ASSERT_EQ(prom.start(fleet.adminPort()), "");
  auto rows = panelsByRow(lb::testing::JsonReader::parse(readDashboard()));
  ASSERT_TRUE(rows.count("Cache")) << "no Cache row";

  // Every lb_* family a Cache-row query names is on the live listener's /metrics page (a
  // histogram by its _bucket, _sum or _count series).
  const std::string page = fleet.metrics();
  ASSERT_NE(page, "");
  for (const auto& panel : rows["Cache"])
    for (const auto& t : panel["targets"].items()) {
      const std::string expr = t["expr"].asString();
      for (size_t at = expr.find("lb_"); at != std::string::npos; at = expr.find("lb_", at)) {
        size_t end = at;
        while (end < expr.size() && (isalnum(static_cast<unsigned char>(expr[end])) ||
                                     expr[end] == '_'))
          ++end;
        std::string family = expr.substr(at, end - at);
        for (const char* suffix : {"_bucket", "_sum", "_count"})
          if (family.size() > strlen(suffix) &&
              family.compare(family.size() - strlen(suffix), std::string::npos, suffix) == 0 &&
              page.find("# TYPE " + family.substr(0, family.size() - strlen(suffix)) +
                        " histogram\n") != std::string::npos)
            family.resize(family.size() - strlen(suffix));
        EXPECT_NE(page.find("# TYPE " + family + " "), std::string::npos)
            << "'" << panel["title"].asString() << "' names " << family
            << ", which a redis listener does not export";
        at = end;
      }
    }

  // Commands to every server, answered and refused ones, across at least two scrapes.
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  auto traffic_until = std::chrono::steady_clock::now() + 2500ms;
  for (int i = 0; std::chrono::steady_clock::now() < traffic_until; ++i) {
    const std::string key = "user:" + std::to_string(i);
    ASSERT_EQ(redisCall(c, {"SET", key, "v"}), "OK");
    ASSERT_EQ(redisCall(c, {"GET", key}), "v");
    if (i % 50 == 0) {   // refused by lb: lb_cache_errors_total{reason="unsupported"}
      ASSERT_EQ(redisCall(c, {"KEYS", "*"}).value_or("").rfind("-ERR lb: ", 0), 0u);
    }
  }
  expectPanelsHaveData(prom, rows["Cache"]);
  EXPECT_EQ(fleet.lb().process().stop(), 0) << fleet.output();
}

TEST_F(MetricsPrometheusTest, DashboardTlsRowQueriesReturnDataFromATlsListenerAndTlsBackends) {
  // lb terminates TLS on a tcp listener and speaks TLS to two redis-servers that speak only
  // TLS: "good" shows a certificate of the CA lb trusts, "untrusted" one of another CA.
  TempDir dir("dashtls");
  ASSERT_TRUE(dir.ok());
  TlsCa ca(dir.path()), other(dir.path(), "other");
  ASSERT_TRUE(ca.ok()) << ca.error();
  ASSERT_TRUE(other.ok()) << other.error();
  const TlsCert edge = ca.issue("edge", {"edge.test"});
  const TlsCert trusted = ca.issue("redis", {"redis.test", "IP:127.0.0.1"});
  const TlsCert untrusted = other.issue("untrusted", {"redis.test", "IP:127.0.0.1"});
  for (const TlsCert* c : {&edge, &trusted, &untrusted}) ASSERT_TRUE(c->ok) << c->error;
  auto tlsRedis = [&](const TlsCert& cert) {
    return std::make_unique<CacheServer>(
        CacheServer::kRedisTls,
        std::vector<std::string>{"--tls-cert-file", cert.cert, "--tls-key-file", cert.key,
                                 "--tls-ca-cert-file", ca.certPath(), "--tls-auth-clients",
                                 "no"});
  };
  auto good = tlsRedis(trusted), bad = tlsRedis(untrusted);
  ASSERT_TRUE(good->ok()) << good->output();
  ASSERT_TRUE(bad->ok()) << bad->output();
  // No hash policy on a tcp listener: each connection picks a backend at random, so some try
  // the untrusted one first (a verify failure, then the good one).
  const uint16_t admin = freePort(), port = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(
      "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
          std::to_string(admin) + "\"\n[listeners.edge]\nlisten = \"127.0.0.1:" +
          std::to_string(port) + "\"\nprotocol = \"tcp\"\ncluster = \"cache\"\n"
          "on_missing_key = \"random\"\ntimeouts = { connect = \"300ms\" }\n"
          "tls = { certificates = [ { cert = \"" + edge.cert + "\", key = \"" + edge.key +
          "\" } ] }\n[clusters.cache]\ntls = { ca = \"" + ca.certPath() +
          "\", server_name = \"redis.test\" }\nbackends = [\n"
          "  { name = \"good\", address = \"" + good->address() + "\" },\n"
          "  { name = \"untrusted\", address = \"" + bad->address() + "\" },\n]\n",
      {port, admin}))
      << lb.output();
  PrometheusServer prom;
  ASSERT_EQ(prom.start(admin), "");
  auto rows = panelsByRow(lb::testing::JsonReader::parse(readDashboard()));
  ASSERT_TRUE(rows.count("TLS")) << "no TLS row";

  // A plaintext client on the TLS port: closed unanswered, a downstream failure.
  TcpClient plain;
  ASSERT_TRUE(plain.connect(port));
  ASSERT_TRUE(plain.send("PING\r\n"));
  EXPECT_TRUE(plain.waitClosed(5s));
  EXPECT_EQ(plain.buffer(), "");

  // openssl s_client pairs across at least two scrapes, TLS 1.2 and 1.3 in turn: a full
  // handshake that saves its session, then one that resumes it. QUIT makes redis close, and
  // lb the client's connection after it. Counted here as the client saw them.
  std::map<std::string, double> by_resumed, by_version;
  int connections = 0;
  auto verifyFailures = [&] {
    auto samples = parseExposition(httpGetLocal(admin, "/metrics").body);
    return byLabel(samples, "lb_upstream_tls_handshake_errors_total", "reason",
                   {{"backend", "untrusted"}})["verify"];
  };
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; std::chrono::steady_clock::now() < start + 20s; ++i) {
    if (std::chrono::steady_clock::now() > start + 2500ms && verifyFailures() > 0) break;
    const std::string version = i % 2 == 0 ? "-tls1_3" : "-tls1_2";
    const std::string sess = dir.path() + "/sess" + std::to_string(i);
    for (const std::string flag : {"-sess_out", "-sess_in"}) {
      auto r = runCommand({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port),
                           "-servername", "edge.test", "-CAfile", ca.certPath(), version, flag,
                           sess, "-ign_eof"},
                          10s, "PING\r\nQUIT\r\n");
      ASSERT_EQ(r.exit_code, 0) << r.err << r.out << lb.output();
      ASSERT_NE(r.out.find("+PONG\r\n+OK\r\n"), std::string::npos) << r.out << lb.output();
      ++connections;
      const bool reused = r.out.find("\nReused, TLSv1.") != std::string::npos;
      ASSERT_TRUE(reused || r.out.find("\nNew, TLSv1.") != std::string::npos) << r.out;
      EXPECT_EQ(reused, flag == "-sess_in") << r.out;
      by_resumed[reused ? "true" : "false"] += 1;
      by_version[version == "-tls1_3" ? "1.3" : "1.2"] += 1;
    }
  }
  ASSERT_GT(verifyFailures(), 0) << "no connection tried the untrusted backend";

  expectPanelsHaveData(prom, rows["TLS"]);

  // And what the panels draw from is what happened: every handshake the clients made, by
  // resumed and version; the one plaintext client, and lb.start's probe of the port (a
  // connection that closes before its first byte: `closed`); a handshake with "good" for
  // every connection and none with "untrusted", whose failures Prometheus sees as lb counted
  // them.
  EXPECT_EQ(waitForQuery(prom, "sum by (resumed) (lb_tls_handshakes_total{listener=\"edge\"})",
                         "resumed", by_resumed),
            by_resumed);
  EXPECT_EQ(waitForQuery(prom, "sum by (version) (lb_tls_handshakes_total{listener=\"edge\"})",
                         "version", by_version),
            by_version);
  const std::map<std::string, double> failures = {
      {"plaintext", 1}, {"protocol", 0}, {"timeout", 0}, {"closed", 1}};
  EXPECT_EQ(waitForQuery(prom, "sum by (reason) (lb_tls_handshake_errors_total)", "reason",
                         failures),
            failures);
  // A tcp listener connects to the backend at accept, beside the client's handshake, so the
  // probe and the plaintext client may each have completed one more before they closed.
  const auto samples = parseExposition(httpGetLocal(admin, "/metrics").body);
  const auto upstream = byLabel(samples, "lb_upstream_tls_handshakes_total", "backend");
  EXPECT_GE(upstream.at("good"), connections);
  EXPECT_LE(upstream.at("good"), connections + 2);
  EXPECT_EQ(upstream.at("untrusted"), 0);
  EXPECT_EQ(waitForQuery(prom, "sum by (backend) (lb_upstream_tls_handshakes_total)", "backend",
                         upstream),
            upstream);
  auto resumed_upstream = prom.queryBy(
      "sum by (resumed) (lb_upstream_tls_handshakes_total{backend=\"good\"})", "resumed");
  EXPECT_GT(resumed_upstream["true"], 0) << "lb resumed no session with the backend";
  const std::map<std::string, double> refused = {
      {"verify", verifyFailures()}, {"protocol", 0}, {"timeout", 0}, {"closed", 0}};
  EXPECT_EQ(waitForQuery(prom,
                         "sum by (reason) (lb_upstream_tls_handshake_errors_total{backend="
                         "\"untrusted\"})",
                         "reason", refused),
            refused);
  // The expiry panel's query: the edge certificate was issued for 30 days a moment ago.
  std::map<std::string, double> days;
  for (const auto& panel : rows["TLS"])
    if (panel["title"].asString() == "Days until certificate expiry")
      days = prom.queryBy(withVariables(panel["targets"][0]["expr"].asString()), "name");
  EXPECT_GT(days["edge.test"], 29.9);
  EXPECT_LE(days["edge.test"], 30);
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

TEST_F(MetricsPrometheusTest, LiveProcessMetricsPassPromtool) {
  startFleet(2, 0, kHealthToml);
  if (IsSkipped() || HasFatalFailure()) return;
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.webPort()));
  send(c, "a");
  auto r = httpGetLocal(fleet_.adminPort(), "/metrics");
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.header("content-type").value_or(""), "text/plain; version=0.0.4; charset=utf-8");
  auto check = runCommand({"promtool", "check", "metrics"}, 10s, r.body);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out + check.err, "");
  auto samples = parseExposition(r.body);
  EXPECT_EQ(byLabel(samples, "lb_build_info", "version").size(), 1u);
  // The health families are there and linted too.
  EXPECT_EQ(byLabel(samples, "lb_backend_health_checks_total", "result").size(), 3u);
  EXPECT_EQ(byLabel(samples, "lb_backend_health_transitions_total", "to").size(), 2u);
  EXPECT_EQ(byLabel(samples, "lb_backend_ejections_total", "backend").size(), 2u);
  EXPECT_EQ(byLabel(samples, "lb_backend_connect_failures_total", "reason").size(), 3u);
  EXPECT_EQ(byLabel(samples, "lb_cluster_panic", "cluster").size(), 1u);
  EXPECT_NE(r.body.find("\nprocess_resident_memory_bytes "), std::string::npos);
}

TEST_F(MetricsPrometheusTest, AdminPathsServedByTheProcess) {
  startFleet(2);
  if (IsSkipped() || HasFatalFailure()) return;
  auto ready = httpGetLocal(fleet_.adminPort(), "/ready");
  EXPECT_EQ(ready.status, 200);
  auto backends = httpGetLocal(fleet_.adminPort(), "/backends");
  ASSERT_EQ(backends.status, 200);
  auto doc = lb::testing::JsonReader::parse(backends.body);
  EXPECT_EQ(doc["clusters"][0]["backends"].items().size(), 2u);
  // /ring's owner is where lb really sends the key.
  auto ring = httpGetLocal(fleet_.adminPort(), "/ring?cluster=cache&key=user%3A42");
  ASSERT_EQ(ring.status, 200);
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.webPort()));
  EXPECT_EQ(send(c, "user:42"), lb::testing::JsonReader::parse(ring.body)["owner"].asString());
}

}  // namespace
}  // namespace lb::test
