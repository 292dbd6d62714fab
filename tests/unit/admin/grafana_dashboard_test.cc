// conf/grafana/lb.json: what Grafana's import needs, every query parses as PromQL
// (promtool check rules), and every metric and label a query names is one lb exports, so a
// renamed metric breaks this test rather than a production dashboard.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "lb/admin/metrics.h"
#include "lb/app/tls_setup.h"
#include "tests/support/json_reader.h"
#include "tests/support/metrics_test_snapshot.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb {
namespace {

using testing::JsonReader;
using testing::JsonValue;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// conf/grafana/lb.json from the repository root (make test's working directory), or relative
// to this binary (<root>/<build>/tests/unit_tests) when run from elsewhere.
std::string readDashboard() {
  std::string text = readFile("conf/grafana/lb.json");
  if (!text.empty()) return text;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));   // <build>/tests
  return readFile(dir + "/../../conf/grafana/lb.json");
}

// Every series name lb's /metrics can carry, with each one's label names: histograms expand
// to _bucket (with le), _sum and _count. Prometheus adds job and instance to every series.
std::map<std::string, std::set<std::string>> exportedSeries() {
  StateRegistry registry(1);
  // Bounded loads (load_cap), active checks and outlier detection: every conditional family.
  Config config = testing::metricsTestConfig();
  config.clusters[0].health = HealthConfig{};
  config.clusters[0].outlier = OutlierConfig{};
  // A membership: the lb_membership_* families.
  config.clusters[0].membership = MembershipConfig{};
  // A handover window: the lb_handover_* families.
  config.clusters[0].handover = HandoverConfig{};
  // Replicas and zones, lb's own among them: the lb_replica_* and lb_cross_zone_* families.
  config.clusters[0].replicas = 2;
  config.zone = "a";
  for (size_t i = 0; i < config.clusters[0].backends.size(); ++i)
    config.clusters[0].backends[i].zone = i % 2 ? "b" : "a";
  // A redis listener: the cache families (commands by result, lb's own cache errors).
  ListenerConfig redis;
  redis.name = "redis";
  redis.listen = "127.0.0.1:6380";
  redis.protocol = Protocol::kRedis;
  redis.cluster = "cache";
  config.listeners.push_back(redis);
  // TLS on listener "web" and towards cluster "cache": the lb_tls_* and lb_upstream_tls_*
  // families. Their contexts need real files, so a certificate is made for the purpose, and
  // the builders main() installs are installed for this one snapshot.
  test::TempDir dir("dashboard_tls");
  test::TlsCa ca(dir.path());
  test::TlsCert cert = ca.issue("web", {"web.test"});
  EXPECT_TRUE(cert.ok) << ca.error() << cert.error;
  config.listeners[0].tls.enabled = true;
  config.listeners[0].tls.certificates.push_back({});
  config.listeners[0].tls.certificates.back().cert = cert.cert;
  config.listeners[0].tls.certificates.back().key = cert.key;
  config.clusters[0].tls.enabled = true;
  config.clusters[0].tls.ca = ca.certPath();
  setListenerTlsBuilder(buildListenerTls);
  setClusterTlsBuilder(buildClusterTls);
  auto snap = testing::buildTestSnapshot(registry, config);
  setListenerTlsBuilder(nullptr);
  setClusterTlsBuilder(nullptr);
  Metrics metrics([snap] { return snap; }, 0);
  std::map<std::string, std::set<std::string>> out;
  for (const auto& f : metrics.collect()) {
    std::set<std::string> labels = {"job", "instance"};
    for (const auto& m : f.metric)
      for (const auto& l : m.label) labels.insert(l.name);
    if (f.type == prometheus::MetricType::Histogram) {
      auto with_le = labels;
      with_le.insert("le");
      out[f.name + "_bucket"] = with_le;
      out[f.name + "_sum"] = labels;
      out[f.name + "_count"] = labels;
    } else {
      out[f.name] = labels;
    }
  }
  return out;
}

// What a PromQL expression refers to: metric names, and label names per metric (from
// {matchers}) and in grouping clauses (by, without, on, ignoring, group_left/right).
struct PromqlRefs {
  std::map<std::string, std::set<std::string>> selectors;   // metric -> matcher label names
  std::set<std::string> grouping;
};

bool identStart(char c) { return isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool identChar(char c) { return identStart(c) || isdigit(static_cast<unsigned char>(c)); }

// A scanner, not a parser: promtool checks the syntax; this only finds the names.
PromqlRefs scanPromql(const std::string& e) {
  static const std::set<std::string> kKeywords = {
      "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
      "unless", "offset", "inf", "nan"};
  // Aggregations may be followed by "by (...)" before their '(': never metric names.
  static const std::set<std::string> kAggregations = {
      "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
      "bottomk", "topk", "quantile"};
  PromqlRefs refs;
  size_t i = 0;
  auto skipSpace = [&] {
    while (i < e.size() && isspace(static_cast<unsigned char>(e[i]))) ++i;
  };
  auto ident = [&] {
    size_t s = i;
    while (i < e.size() && identChar(e[i])) ++i;
    return e.substr(s, i - s);
  };
  auto labelList = [&](std::set<std::string>* into) {   // at '(' of "by (a, b)"
    ++i;
    while (i < e.size() && e[i] != ')') {
      skipSpace();
      if (identStart(e[i])) into->insert(ident());
      else ++i;
    }
    ++i;
  };
  auto matchers = [&](std::set<std::string>* into) {   // at '{'
    ++i;
    while (i < e.size() && e[i] != '}') {
      skipSpace();
      if (identStart(e[i])) {
        into->insert(ident());
      } else if (e[i] == '"') {
        for (++i; i < e.size() && e[i] != '"'; ++i)
          if (e[i] == '\\') ++i;
        ++i;
      } else {
        ++i;
      }
    }
    ++i;
  };
  while (i < e.size()) {
    char c = e[i];
    if (c == '$') {   // a Grafana variable: $cluster, $__rate_interval
      ++i;
      ident();
    } else if (c == '[') {
      while (i < e.size() && e[i] != ']') ++i;
      ++i;
    } else if (c == '"') {
      for (++i; i < e.size() && e[i] != '"'; ++i)
        if (e[i] == '\\') ++i;
      ++i;
    } else if (isdigit(static_cast<unsigned char>(c))) {
      while (i < e.size() && (isalnum(static_cast<unsigned char>(e[i])) || e[i] == '.')) ++i;
    } else if (identStart(c)) {
      std::string name = ident();
      skipSpace();
      bool call = i < e.size() && e[i] == '(';
      if (kKeywords.count(name)) {
        if (call) labelList(&refs.grouping);
      } else if (!call && !kAggregations.count(name)) {
        auto& labels = refs.selectors[name];
        if (i < e.size() && e[i] == '{') matchers(&labels);
      }
    } else if (c == '{') {   // a selector without a name: {__name__=...}
      matchers(&refs.selectors[""]);
    } else {
      ++i;
    }
  }
  return refs;
}

// Grafana's built-in and dashboard variables, replaced as Grafana would before querying.
std::string substituteVariables(std::string e) {
  const std::pair<const char*, const char*> kVars[] = {
      {"$__rate_interval", "1m"}, {"$__interval", "15s"}, {"$__range", "1h"},
      {"$cluster", ".*"},         {"$backend", ".*"}};
  for (const auto& [from, to] : kVars)
    for (size_t at; (at = e.find(from)) != std::string::npos;)
      e.replace(at, strlen(from), to);
  return e;
}

class GrafanaDashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string text = readDashboard();
    ASSERT_FALSE(text.empty()) << "conf/grafana/lb.json is missing";
    doc_ = JsonReader::parse(text);   // throws (and fails the test) on invalid JSON
    for (const auto& p : doc_["panels"].items()) {
      if (p["type"].asString() == "row") continue;   // a row is a heading: no queries
      for (const auto& t : p["targets"].items()) exprs_.push_back(t["expr"].asString());
    }
  }

  // label_values(<selector>, <label>) of a query variable, split.
  static std::pair<std::string, std::string> labelValues(const std::string& q) {
    size_t open = q.find('('), comma = q.rfind(','), close = q.rfind(')');
    EXPECT_EQ(q.rfind("label_values(", 0), 0u) << q;
    std::string label = q.substr(comma + 1, close - comma - 1);
    label.erase(0, label.find_first_not_of(' '));
    return {q.substr(open + 1, comma - open - 1), label};
  }

  // The panels under the row titled `title`, up to the next row; empty when there is none.
  std::vector<const JsonValue*> rowPanels(const std::string& title) const {
    std::vector<const JsonValue*> out;
    bool in_row = false;
    for (const auto& p : doc_["panels"].items()) {
      if (p["type"].asString() == "row") in_row = p["title"].asString() == title;
      else if (in_row) out.push_back(&p);
    }
    return out;
  }

  JsonValue doc_;
  std::vector<std::string> exprs_;
};

TEST_F(GrafanaDashboardTest, HasWhatImportNeeds) {
  EXPECT_FALSE(doc_["title"].asString().empty());
  EXPECT_FALSE(doc_["uid"].asString().empty());
  EXPECT_LE(doc_["uid"].asString().size(), 40u);   // Grafana's uid limit
  EXPECT_GE(doc_["schemaVersion"].asNumber(), 30);
  const auto& inputs = doc_["__inputs"].items();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0]["name"].asString(), "DS_PROMETHEUS");
  EXPECT_EQ(inputs[0]["type"].asString(), "datasource");
  EXPECT_EQ(inputs[0]["pluginId"].asString(), "prometheus");
}

TEST_F(GrafanaDashboardTest, PanelsHaveUniqueIdsGridPosAndTargets) {
  std::set<double> ids;
  const auto& panels = doc_["panels"].items();
  ASSERT_GE(panels.size(), 8u);
  for (const auto& p : panels) {
    const std::string title = p["title"].asString();
    EXPECT_TRUE(ids.insert(p["id"].asNumber()).second) << "duplicate id in " << title;
    const std::string type = p["type"].asString();
    const JsonValue& g = p["gridPos"];
    if (type == "row") {   // a heading across the dashboard, without queries
      EXPECT_FALSE(title.empty());
      EXPECT_FALSE(p.has("targets")) << title;
      EXPECT_EQ(g["x"].asNumber(), 0) << title;
      EXPECT_EQ(g["w"].asNumber(), 24) << title;
      continue;
    }
    EXPECT_TRUE(type == "timeseries" || type == "stat" || type == "state-timeline") << title;
    EXPECT_GE(g["x"].asNumber(), 0) << title;
    EXPECT_LE(g["x"].asNumber() + g["w"].asNumber(), 24) << title;
    EXPECT_GT(g["h"].asNumber(), 0) << title;
    EXPECT_GE(g["y"].asNumber(), 0) << title;
    ASSERT_FALSE(p["targets"].items().empty()) << title;
    std::set<std::string> refs;
    for (const auto& t : p["targets"].items()) {
      EXPECT_TRUE(refs.insert(t["refId"].asString()).second) << title;
      EXPECT_FALSE(t["expr"].asString().empty()) << title;
    }
    EXPECT_EQ(p["datasource"]["uid"].asString(), "${datasource}") << title;
  }
}

TEST_F(GrafanaDashboardTest, HasDatasourceClusterAndBackendVariables) {
  std::map<std::string, const JsonValue*> vars;
  for (const auto& v : doc_["templating"]["list"].items()) vars[v["name"].asString()] = &v;
  ASSERT_TRUE(vars.count("datasource") && vars.count("cluster") && vars.count("backend"));
  EXPECT_EQ((*vars["datasource"])["type"].asString(), "datasource");
  EXPECT_EQ((*vars["datasource"])["query"].asString(), "prometheus");
  EXPECT_EQ((*vars["cluster"])["definition"].asString(),
            "label_values(lb_backend_weight, cluster)");
  EXPECT_EQ((*vars["backend"])["definition"].asString(),
            "label_values(lb_backend_weight{cluster=~\"$cluster\"}, backend)");
}

TEST_F(GrafanaDashboardTest, QueriesUseOnlyExportedMetricsAndLabels) {
  auto exported = exportedSeries();
  for (const auto& e : exprs_) {
    PromqlRefs refs = scanPromql(e);
    std::set<std::string> labels_in_expr = {"job", "instance"};
    for (const auto& [metric, labels] : refs.selectors) {
      ASSERT_TRUE(exported.count(metric)) << "'" << metric << "' is not exported; in: " << e;
      for (const auto& l : labels)
        EXPECT_TRUE(exported[metric].count(l)) << metric << " has no label " << l << "; in: " << e;
      labels_in_expr.insert(exported[metric].begin(), exported[metric].end());
    }
    for (const auto& l : refs.grouping)
      EXPECT_TRUE(labels_in_expr.count(l)) << "grouping by unknown label " << l << "; in: " << e;
  }
}

TEST_F(GrafanaDashboardTest, VariablesQueryExportedLabels) {
  auto exported = exportedSeries();
  for (const auto& v : doc_["templating"]["list"].items()) {
    if (v["type"].asString() != "query") continue;
    auto [selector, label] = labelValues(v["definition"].asString());
    PromqlRefs refs = scanPromql(selector);
    ASSERT_EQ(refs.selectors.size(), 1u) << selector;
    const std::string& metric = refs.selectors.begin()->first;
    ASSERT_TRUE(exported.count(metric)) << metric;
    EXPECT_TRUE(exported[metric].count(label)) << metric << " has no label " << label;
  }
}

TEST_F(GrafanaDashboardTest, CoversTheIssueTopics) {
  std::set<std::string> used;
  for (const auto& e : exprs_)
    for (const auto& [m, _] : scanPromql(e).selectors) used.insert(m);
  for (const char* m : {"lb_backend_requests_total", "lb_backend_active_requests",
                        "lb_backend_load_cap", "lb_backend_keyspace_share",
                        "lb_backend_picks_total", "lb_http_errors_total",
                        "lb_backend_response_seconds_bucket", "lb_backend_healthy",
                        "lb_config_reloads_total", "lb_backend_health_transitions_total",
                        "lb_backend_health_checks_total", "lb_backend_ejections_total",
                        "lb_backend_connect_failures_total", "lb_cluster_panic",
                        "lb_backend_commands_total", "lb_cache_errors_total"})
    EXPECT_TRUE(used.count(m)) << "no panel shows " << m;
}

TEST_F(GrafanaDashboardTest, HasACacheRowOfTheCacheFamilies) {
  // The Cache row, last: commands by result, the failed share, command latency (the response
  // histogram, limited to backends that take commands) and lb's own cache errors.
  const auto panels = rowPanels("Cache");
  EXPECT_EQ(panels.size(), 4u) << "the Cache row is missing or changed";
  std::set<std::string> below;
  for (const JsonValue* p : panels)
    for (const auto& t : (*p)["targets"].items())
      for (const auto& [m, _] : scanPromql(t["expr"].asString()).selectors) below.insert(m);
  EXPECT_EQ(below, (std::set<std::string>{"lb_backend_commands_total",
                                           "lb_backend_response_seconds_bucket",
                                           "lb_cache_errors_total"}));
}

TEST_F(GrafanaDashboardTest, HasAMembershipRowOfRevisionSyncAgeAndUpdates) {
  // The Membership row: the revision per instance, the last sync's age (and the watch), the
  // updates by result (and how many distinct tables the fleet serves).
  const auto panels = rowPanels("Membership");
  EXPECT_EQ(panels.size(), 3u) << "the Membership row is missing or changed";
  std::set<std::string> below;
  for (const JsonValue* p : panels)
    for (const auto& t : (*p)["targets"].items())
      for (const auto& [m, _] : scanPromql(t["expr"].asString()).selectors) below.insert(m);
  EXPECT_EQ(below, (std::set<std::string>{"lb_membership_revision",
                                           "lb_membership_last_sync_timestamp_seconds",
                                           "lb_membership_watch_up", "lb_membership_updates_total",
                                           "lb_cluster_table_fingerprint"}));
}

TEST_F(GrafanaDashboardTest, HasAZonesRowOfCrossZoneShareReplicaReadsAndWriteFailures) {
  // The Zones row: the share of picks that cross zones, replica reads by result, and the
  // replica write failures by backend.
  const auto panels = rowPanels("Zones");
  EXPECT_EQ(panels.size(), 3u) << "the Zones row is missing or changed";
  std::set<std::string> below;
  for (const JsonValue* p : panels)
    for (const auto& t : (*p)["targets"].items())
      for (const auto& [m, _] : scanPromql(t["expr"].asString()).selectors) below.insert(m);
  EXPECT_EQ(below, (std::set<std::string>{"lb_cross_zone_requests_total",
                                           "lb_backend_picks_total", "lb_replica_reads_total",
                                           "lb_replica_write_failures_total"}));
}

TEST_F(GrafanaDashboardTest, HasAHotKeysRowOfActiveSharesDetectionsAndBackendShare) {
  // The Hot keys row: active hot keys per cluster, the top ranks' shares, the
  // detections, and the hottest key's share beside each backend's share of requests.
  const auto panels = rowPanels("Hot keys");
  EXPECT_EQ(panels.size(), 4u) << "the Hot keys row is missing or changed";
  std::set<std::string> below;
  for (const JsonValue* p : panels)
    for (const auto& t : (*p)["targets"].items())
      for (const auto& [m, _] : scanPromql(t["expr"].asString()).selectors) below.insert(m);
  EXPECT_EQ(below, (std::set<std::string>{"lb_hotkeys_active", "lb_hotkey_share_ratio",
                                           "lb_hotkey_detections_total",
                                           "lb_backend_requests_total"}));
}

TEST_F(GrafanaDashboardTest, HasAHealthRowWithStateTimelines) {
  // The Health row: backend state and cluster panic as state timelines, then transitions,
  // ejections, failed checks and connect failures.
  const auto panels = rowPanels("Health");
  ASSERT_FALSE(panels.empty()) << "no Health row";
  std::map<std::string, std::string> below;   // metric -> panel type, for the panels after it
  for (const JsonValue* p : panels)
    for (const auto& t : (*p)["targets"].items())
      for (const auto& [m, _] : scanPromql(t["expr"].asString()).selectors)
        below[m] = (*p)["type"].asString();
  EXPECT_EQ(below["lb_backend_healthy"], "state-timeline");
  EXPECT_EQ(below["lb_cluster_panic"], "state-timeline");
  for (const char* m : {"lb_backend_health_transitions_total", "lb_backend_ejections_total",
                        "lb_backend_health_checks_total", "lb_backend_connect_failures_total"})
    EXPECT_EQ(below[m], "timeseries") << m;
}

TEST_F(GrafanaDashboardTest, HasATlsRowOfHandshakesFailuresExpiryAndResumption) {
  // The TLS row: listeners' handshakes by version and resumed, their failures by reason, the
  // days left on each certificate; the same handshakes and failures towards backends, and the
  // resumed share on both sides.
  const auto panels = rowPanels("TLS");
  EXPECT_EQ(panels.size(), 6u) << "the TLS row is missing or changed";
  std::set<std::string> below;
  for (const JsonValue* p : panels)
    for (const auto& t : (*p)["targets"].items())
      for (const auto& [m, _] : scanPromql(t["expr"].asString()).selectors) below.insert(m);
  EXPECT_EQ(below, (std::set<std::string>{"lb_tls_handshakes_total",
                                           "lb_tls_handshake_errors_total",
                                           "lb_tls_certificate_expiry_timestamp_seconds",
                                           "lb_upstream_tls_handshakes_total",
                                           "lb_upstream_tls_handshake_errors_total"}));
}

TEST_F(GrafanaDashboardTest, RowsFollowEachOtherAndNoPanelsOverlap) {
  // Grafana places panels by gridPos alone, whatever their order in the file: a row heading
  // must sit below everything listed before it and its panels below it, or Grafana draws a
  // panel under the wrong heading; two panels sharing a cell are drawn over each other.
  struct Box {
    std::string title;
    double x, y, w, h;
  };
  std::vector<Box> boxes;
  double bottom = 0;      // the lowest edge of everything listed so far
  double row_end = -1;    // the edge of the last row heading (-1: no row yet)
  for (const auto& p : doc_["panels"].items()) {
    const JsonValue& g = p["gridPos"];
    Box b{p["title"].asString(), g["x"].asNumber(), g["y"].asNumber(), g["w"].asNumber(),
          g["h"].asNumber()};
    if (p["type"].asString() == "row") {
      EXPECT_GE(b.y, bottom) << "row '" << b.title << "' is above a panel listed before it";
      row_end = b.y + b.h;
    } else {
      EXPECT_GE(b.y, row_end) << "'" << b.title << "' is above its row heading";
    }
    for (const Box& o : boxes)
      EXPECT_FALSE(b.x < o.x + o.w && o.x < b.x + b.w && b.y < o.y + o.h && o.y < b.y + b.h)
          << "'" << b.title << "' overlaps '" << o.title << "'";
    bottom = std::max(bottom, b.y + b.h);
    boxes.push_back(b);
  }
}

TEST_F(GrafanaDashboardTest, ScannerCatchesAnUnknownMetric) {
  // The check above can fail: a misspelt name is found and is not exported.
  auto refs = scanPromql("sum by (backend) (rate(lb_backend_request_total{cluster=~\"$c\"}[5m]))");
  ASSERT_EQ(refs.selectors.size(), 1u);
  EXPECT_EQ(refs.selectors.begin()->first, "lb_backend_request_total");
  EXPECT_FALSE(exportedSeries().count("lb_backend_request_total"));
  EXPECT_EQ(refs.grouping, std::set<std::string>{"backend"});
}

TEST_F(GrafanaDashboardTest, EveryQueryParsesAsPromql) {
  // promtool check rules parses each recording rule's expression with Prometheus' own parser.
  char path[] = "/tmp/lb_dashboard_rules_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string yaml = "groups:\n  - name: dashboard\n    rules:\n";
  for (size_t i = 0; i < exprs_.size(); ++i) {
    std::string e = substituteVariables(exprs_[i]);
    std::string quoted;   // YAML single-quoted: '' is a quote
    for (char c : e) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    yaml += "      - record: dashboard:query" + std::to_string(i) + "\n        expr: '" +
            quoted + "'\n";
  }
  ASSERT_EQ(write(fd, yaml.data(), yaml.size()), static_cast<ssize_t>(yaml.size()));
  close(fd);
  std::string cmd = std::string("promtool check rules ") + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  int status = pclose(p);
  unlink(path);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("SUCCESS: " + std::to_string(exprs_.size()) + " rules found"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace lb
