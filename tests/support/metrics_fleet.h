// Integration helpers for the metrics tests: a fleet of lb-origin backends behind a real lb
// process, a real Prometheus scraping lb's admin listener, and readers for /metrics text and
// Prometheus' HTTP API. All on 127.0.0.1; every process dies with the test (Process).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/json_reader.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lb::test {

// lb with `backends` lb-origin backends named b0..b{n-1} in cluster "cache", an HTTP listener
// "web" keyed on the x-cache-key header, and the admin listener.
class Fleet {
 public:
  // Empty on success; otherwise why the fleet could not start. `skip` is set when the reason
  // is that the proxy or the origin is not built yet (their placeholders exit at once).
  // `cluster_extra`: more lines for [clusters.cache] (health, outlier).
  std::string start(int backends, uint32_t hash_balance_factor, bool* skip,
                    const std::string& cluster_extra = "") {
    *skip = false;
    for (int i = 0; i < backends; ++i) {
      std::string name = "b" + std::to_string(i);
      auto p = std::make_unique<Process>(std::vector<std::string>{
          builtBinary("lb-origin"), "--listen", "127.0.0.1:0", "--name", name});
      auto port = p->waitForListeningPort("listening on", 10s);
      if (!port) {
        *skip = p->output().find("not built yet") != std::string::npos;
        return "lb-origin did not start: " + p->output();
      }
      origin_ports_[name] = *port;
      origins_.push_back(std::move(p));
    }
    web_port_ = freePort();
    const uint16_t admin_port = freePort();   // the config loader wants a real port, not 0
    std::string toml = "[lb]\nworkers = 2\nlog_level = \"info\"\naccess_log = \"\"\n\n"
                       "[admin]\nlisten = \"127.0.0.1:" + std::to_string(admin_port) + "\"\n\n"
                       "[listeners.web]\nlisten = \"127.0.0.1:" + std::to_string(web_port_) +
                       "\"\nprotocol = \"http\"\ncluster = \"cache\"\n"
                       "hash = [ { header = \"x-cache-key\" } ]\n\n"
                       "[clusters.cache]\nselector = \"ring_hash\"\n";
    if (hash_balance_factor > 0)
      toml += "hash_balance_factor = " + std::to_string(hash_balance_factor) + "\n";
    toml += cluster_extra;
    toml += "backends = [\n";
    for (const auto& [name, port] : origin_ports_)
      toml += "  { name = \"" + name + "\", address = \"127.0.0.1:" + std::to_string(port) +
              "\" },\n";
    toml += "]\n";
    config_path_ = dir_.write("lb.toml", toml);
    lb_ = std::make_unique<Process>(
        std::vector<std::string>{builtBinary("lb"), "--config", config_path_});
    auto admin = lb_->waitForListeningPort("admin listening on", 10s);
    if (!admin) {
      *skip = lb_->output().find("not built yet") != std::string::npos;
      return "lb did not start its admin listener: " + lb_->output();
    }
    admin_port_ = *admin;
    if (!waitForPort(web_port_, 10s)) return "lb's listener did not open: " + lb_->output();
    return "";
  }

  uint16_t adminPort() const { return admin_port_; }
  uint16_t webPort() const { return web_port_; }
  Process& lb() { return *lb_; }
  const TempDir& dir() const { return dir_; }
  std::vector<std::string> backendNames() const {
    std::vector<std::string> out;
    for (const auto& [name, _] : origin_ports_) out.push_back(name);
    return out;
  }

 private:
  TempDir dir_;
  std::vector<std::unique_ptr<Process>> origins_;
  std::map<std::string, uint16_t> origin_ports_;
  std::unique_ptr<Process> lb_;
  std::string config_path_;
  uint16_t admin_port_ = 0, web_port_ = 0;
};

// GET path from 127.0.0.1:port on a fresh connection.
inline HttpResponse httpGetLocal(uint16_t port, const std::string& path, Millis timeout = 5s) {
  return httpExchange(port, httpRequest("GET", path, "Connection: close\r\n"), timeout);
}

// One sample of the text exposition format.
struct TextSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses exposition text (lb's own output: label values without '}' or ',' inside quotes
// unescaped is enough here, and escapes are kept as written).
inline std::vector<TextSample> parseExposition(const std::string& text) {
  std::vector<TextSample> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t eol = text.find('\n', at);
    std::string line = text.substr(at, eol == std::string::npos ? std::string::npos : eol - at);
    at = eol == std::string::npos ? text.size() : eol + 1;
    if (line.empty() || line[0] == '#') continue;
    TextSample s;
    size_t brace = line.find('{'), space;
    if (brace != std::string::npos) {
      s.name = line.substr(0, brace);
      size_t close = line.find('}', brace);
      std::string labels = line.substr(brace + 1, close - brace - 1);
      size_t i = 0;
      while (i < labels.size()) {
        size_t eq = labels.find('=', i);
        size_t q2 = labels.find('"', eq + 2);
        while (q2 != std::string::npos && labels[q2 - 1] == '\\') q2 = labels.find('"', q2 + 1);
        s.labels[labels.substr(i, eq - i)] = labels.substr(eq + 2, q2 - eq - 2);
        i = q2 + 2;   // past '",'
      }
      space = close + 1;
    } else {
      space = line.find(' ');
      s.name = line.substr(0, space);
    }
    s.value = strtod(line.c_str() + space + 1, nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

// name{...} values keyed by one label's value.
inline std::map<std::string, double> byLabel(const std::vector<TextSample>& samples,
                                             const std::string& name, const std::string& label,
                                             const std::map<std::string, std::string>& where = {}) {
  std::map<std::string, double> out;
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : where) match = match && s.labels.count(k) && s.labels.at(k) == v;
    if (match && s.labels.count(label)) out[s.labels.at(label)] += s.value;
  }
  return out;
}

// The samples of /metrics, or empty when it did not answer.
inline std::vector<TextSample> scrape(uint16_t admin) {
  HttpResponse r = httpGetLocal(admin, "/metrics", 2s);
  return r && r.status == 200 ? parseExposition(r.body) : std::vector<TextSample>{};
}

// The value of name{labels} (all of `labels` match; others may be present), or nullopt.
inline std::optional<double> sampleValue(const std::vector<TextSample>& samples,
                                         const std::string& name,
                                         const std::map<std::string, std::string>& labels) {
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, val] : labels) match = match && s.labels.count(k) && s.labels.at(k) == val;
    if (match) return s.value;
  }
  return std::nullopt;
}

// The sum of every name{labels} sample (all of `labels` match).
inline double sampleSum(const std::vector<TextSample>& samples, const std::string& name,
                        const std::map<std::string, std::string>& labels) {
  double sum = 0;
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, val] : labels) match = match && s.labels.count(k) && s.labels.at(k) == val;
    if (match) sum += s.value;
  }
  return sum;
}

inline std::optional<double> metricValue(uint16_t admin, const std::string& name,
                                         const std::map<std::string, std::string>& labels) {
  return sampleValue(scrape(admin), name, labels);
}

inline std::string urlEncode(const std::string& s) {
  std::string out;
  static const char* kHex = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// A real Prometheus server scraping lb's admin port every second.
class PrometheusServer {
 public:
  // Empty on success, else why it did not come up.
  std::string start(uint16_t lb_admin_port) {
    std::string config = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                         "scrape_configs:\n  - job_name: lb\n    metrics_path: /metrics\n"
                         "    scrape_interval: 1s\n    scrape_timeout: 900ms\n"
                         "    static_configs:\n      - targets: [\"127.0.0.1:" +
                         std::to_string(lb_admin_port) + "\"]\n";
    std::string config_path = dir_.write("prometheus.yml", config);
    port_ = freePort();
    process_ = std::make_unique<Process>(std::vector<std::string>{
        "prometheus", "--config.file=" + config_path,
        "--storage.tsdb.path=" + dir_.path() + "/data",
        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"});
    // Ready when /-/ready answers 200 (its own readiness endpoint).
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!process_->running()) return "prometheus exited: " + process_->output();
      auto r = httpGetLocal(port_, "/-/ready", 1s);
      if (r && r.status == 200) return "";
      std::this_thread::sleep_for(100ms);   // poll interval, bounded by the deadline
    }
    return "prometheus not ready in 30 s: " + process_->output();
  }

  // Instant query; each result series' labels and value. nullopt on an API error.
  std::optional<std::vector<std::pair<std::map<std::string, std::string>, double>>> query(
      const std::string& promql) {
    auto r = httpGetLocal(port_, "/api/v1/query?query=" + urlEncode(promql));
    if (!r || r.status != 200) return std::nullopt;
    auto doc = lb::testing::JsonReader::parse(r.body);
    if (doc["status"].asString() != "success") return std::nullopt;
    std::vector<std::pair<std::map<std::string, std::string>, double>> out;
    for (const auto& series : doc["data"]["result"].items()) {
      std::map<std::string, std::string> labels;
      for (const auto& [k, v] : series["metric"].members()) labels[k] = v.asString();
      out.emplace_back(labels, strtod(series["value"][1].asString().c_str(), nullptr));
    }
    return out;
  }

  // query() keyed by one label.
  std::map<std::string, double> queryBy(const std::string& promql, const std::string& label) {
    std::map<std::string, double> out;
    if (auto rows = query(promql))
      for (const auto& [labels, v] : *rows)
        if (labels.count(label)) out[labels.at(label)] = v;
    return out;
  }

 private:
  TempDir dir_;
  uint16_t port_ = 0;
  std::unique_ptr<Process> process_;
};

}  // namespace lb::test
