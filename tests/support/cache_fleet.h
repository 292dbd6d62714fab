// A cache fleet behind lb for the redis and memcached listener tests: N redis-server or
// memcached processes on free loopback ports, lb with one listener of that protocol in front
// of them, its admin port for /ring and /metrics; plus a RESP reader that understands arrays.
// Test-thread only.
//
//   CacheFleet fleet(CacheServer::kRedis, 3);
//   ASSERT_TRUE(fleet.start()) << fleet.output();
//   TcpClient c;
//   ASSERT_TRUE(c.connect(fleet.port()));
#pragma once

#include <signal.h>

#include <cctype>
#include <chrono>
#include <cstdio>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/analyze_json_test_util.h"
#include "tests/support/cache_server.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"

namespace lb::test {

class CacheFleet {
 public:
  // `workers`: lb's worker count; 1 puts every client on one server connection per backend,
  // so that what one client sends can reach what another gets back (the hostile-input tests).
  CacheFleet(CacheServer::Kind kind, int servers, int workers = 2)
      : kind_(kind), count_(servers), workers_(workers) {}
  ~CacheFleet() {
    for (auto& s : servers_)
      if (s->ok()) kill(s->pid(), SIGCONT);   // a test that froze one and failed early
  }

  // Backend weights for start() (server i gets weights[i]; absent: the default, 1).
  void setWeights(std::vector<int> weights) { weights_ = std::move(weights); }
  // Extra command-line arguments for every server start() runs ({"--requirepass", "pw"}).
  void setServerArgs(std::vector<std::string> args) { server_args_ = std::move(args); }
  // Server i's zone (zones[i]; absent or "": none), lb's own zone ("" : none), and the
  // cluster's selector (default twemproxy), for start().
  void setZones(std::vector<std::string> zones, std::string lb_zone = "") {
    zones_ = std::move(zones);
    lb_zone_ = std::move(lb_zone);
  }
  void setSelector(std::string selector) { selector_ = std::move(selector); }

  // Starts the servers and lb; `listener_extra` and `cluster_extra` are TOML lines added to
  // the listener's and the cluster's tables. True once lb's ports accept.
  bool start(const std::string& listener_extra = "", const std::string& cluster_extra = "") {
    for (int i = 0; i < count_; ++i) {
      servers_.push_back(std::make_unique<CacheServer>(kind_, server_args_));
      if (!servers_.back()->ok()) {
        error_ = servers_.back()->output();
        return false;
      }
    }
    port_ = freePort();
    admin_ = freePort();
    listener_extra_ = listener_extra;
    cluster_extra_ = cluster_extra;
    if (!lb_.start(config(), {port_, admin_})) {
      error_ = lb_.output();
      return false;
    }
    return true;
  }

  // One more server, started and added to the cluster by a reload (SIGHUP). True once lb
  // says it reloaded.
  bool grow() {
    servers_.push_back(std::make_unique<CacheServer>(kind_, server_args_));
    if (!servers_.back()->ok()) {
      error_ = servers_.back()->output();
      return false;
    }
    ++count_;
    return lb_.reload(config());
  }

  // Server i taken out of the cluster by a reload (SIGHUP), its process left running. True
  // once lb says it reloaded.
  bool remove(int i) {
    removed_.resize(servers_.size(), false);
    removed_[static_cast<size_t>(i)] = true;
    return lb_.reload(config());
  }

  // The TOML of the fleet as it is now.
  std::string config() const {
    const char* proto = kind_ == CacheServer::kRedis ? "redis" : "memcached";
    std::string toml = "[lb]\nworkers = " + std::to_string(workers_) + "\naccess_log = \"" + lb_.accessLogPath() +
                       "\"\n" + (lb_zone_.empty() ? "" : "zone = \"" + lb_zone_ + "\"\n") +
                       "[admin]\nlisten = \"127.0.0.1:" + std::to_string(admin_) +
                       "\"\n[listeners.cache]\nlisten = \"127.0.0.1:" + std::to_string(port_) +
                       "\"\nprotocol = \"" + proto + "\"\ncluster = \"fleet\"\n" +
                       listener_extra_ + "\n[clusters.fleet]\nselector = \"" + selector_ + "\"\n" +
                       cluster_extra_ + "\nbackends = [\n";
    for (int i = 0; i < count_; ++i) {
      if (static_cast<size_t>(i) < removed_.size() && removed_[static_cast<size_t>(i)]) continue;
      toml += "  { name = \"" + name(i) + "\", address = \"" + servers_[i]->address() + "\"" +
              (static_cast<size_t>(i) < weights_.size()
                   ? ", weight = " + std::to_string(weights_[static_cast<size_t>(i)])
                   : std::string()) +
              (zoneOf(i).empty() ? std::string() : ", zone = \"" + zoneOf(i) + "\"") +
              " },\n";
    }
    toml += "]\n";
    return toml;
  }

  uint16_t port() const { return port_; }
  uint16_t adminPort() const { return admin_; }
  std::string zoneOf(int i) const {
    return static_cast<size_t>(i) < zones_.size() ? zones_[static_cast<size_t>(i)] : "";
  }
  CacheServer& server(int i) { return *servers_[static_cast<size_t>(i)]; }
  int size() const { return count_; }
  static std::string name(int i) { return "s" + std::to_string(i + 1); }
  int indexOf(const std::string& name) const { return std::stoi(name.substr(1)) - 1; }
  LbProcess& lb() { return lb_; }
  std::string output() const { return error_.empty() ? lb_.output() : error_; }

  // Each key's owner as GET /ring names it (one curl run, one connection), "?" when the
  // answer had none.
  std::vector<std::string> ringOwners(const std::vector<std::string>& keys) {
    std::vector<std::string> owners;
    for (const auto& doc : ringAnswers(keys)) owners.push_back(doc ? (*doc)["owner"].text : "?");
    return owners;
  }

  // Each key's copies as GET /ring names them ("replicas": empty without replicas).
  std::vector<std::vector<std::string>> ringReplicas(const std::vector<std::string>& keys) {
    std::vector<std::vector<std::string>> out;
    for (const auto& doc : ringAnswers(keys)) {
      std::vector<std::string> copies;
      if (doc)
        for (const auto& item : (*doc)["replicas"].items) copies.push_back(item.text);
      out.push_back(copies);
    }
    return out;
  }

  // Where read = "local" sends each read of keys with these copies (ringReplicas), counted
  // per server: a key's first copy in `zone`, else its first copy. *local: the keys with a
  // copy in `zone`. An empty result when a key has no copies.
  std::vector<int> localReadsByServer(const std::vector<std::vector<std::string>>& copies,
                                      const std::string& zone, int* local = nullptr) const {
    std::vector<int> reads(static_cast<size_t>(count_), 0);
    if (local != nullptr) *local = 0;
    for (const auto& key_copies : copies) {
      if (key_copies.empty()) return {};
      int target = indexOf(key_copies[0]);
      for (const auto& name : key_copies)
        if (zoneOf(indexOf(name)) == zone) {
          target = indexOf(name);
          if (local != nullptr) ++*local;
          break;
        }
      ++reads[static_cast<size_t>(target)];
    }
    return reads;
  }

  // GET /ring for each key, parsed, in order (one curl run); nullopt where it did not answer.
  std::vector<std::optional<testjson::Value>> ringAnswers(const std::vector<std::string>& keys) {
    std::vector<std::string> argv = {"curl", "-s", "--max-time", "60"};
    for (const auto& k : keys) {
      std::string escaped;
      for (unsigned char c : k) {
        char hex[4];
        snprintf(hex, sizeof hex, "%%%02X", c);
        escaped += isalnum(c) ? std::string(1, static_cast<char>(c)) : hex;
      }
      argv.push_back("http://127.0.0.1:" + std::to_string(admin_) +
                     "/ring?cluster=fleet&key=" + escaped);
    }
    const auto r = runCommand(argv, 90s);
    std::vector<std::optional<testjson::Value>> docs;
    size_t start = 0;
    while (start < r.out.size() && docs.size() < keys.size()) {
      size_t end = r.out.find('\n', start);
      if (end == std::string::npos) end = r.out.size();
      docs.push_back(testjson::parse(r.out.substr(start, end - start)));
      start = end + 1;
    }
    docs.resize(keys.size());
    return docs;
  }

  // The metrics page, or "" when the scrape failed.
  std::string metrics() {
    return runCommand({"curl", "-s", "--max-time", "10", localUrl(admin_, "/metrics")}).out;
  }

 private:
  CacheServer::Kind kind_;
  int count_;
  int workers_;
  std::vector<int> weights_;
  std::vector<bool> removed_;   // by server index: out of the cluster (remove)
  std::vector<std::string> server_args_;
  std::vector<std::string> zones_;
  std::string lb_zone_;
  std::string selector_ = "twemproxy";
  std::vector<std::unique_ptr<CacheServer>> servers_;
  std::string listener_extra_;
  std::string cluster_extra_;
  LbProcess lb_;
  uint16_t port_ = 0;
  uint16_t admin_ = 0;
  std::string error_;
};

// One RESP reply, parsed: for arrays, the elements; for the others, `text` is the simple
// string, the error with its '-', the integer as text or the bulk string's bytes.
struct RespValue {
  char type = 0;                // '+', '-', ':', '$', '*'
  bool nil = false;             // $-1 or *-1
  std::string text;
  std::vector<RespValue> items;
};

// Parses one reply at `at` of `buf`; returns the end, or npos when incomplete.
inline size_t parseResp(const std::string& buf, size_t at, RespValue* v) {
  const size_t eol = buf.find("\r\n", at);
  if (eol == std::string::npos || eol == at) return std::string::npos;
  v->type = buf[at];
  const std::string line = buf.substr(at + 1, eol - at - 1);
  size_t pos = eol + 2;
  if (v->type == '$') {
    const long len = std::stol(line);
    if (len < 0) {
      v->nil = true;
      return pos;
    }
    if (buf.size() < pos + static_cast<size_t>(len) + 2) return std::string::npos;
    v->text = buf.substr(pos, static_cast<size_t>(len));
    return pos + static_cast<size_t>(len) + 2;
  }
  if (v->type == '*') {
    const long n = std::stol(line);
    if (n < 0) {
      v->nil = true;
      return pos;
    }
    v->items.resize(static_cast<size_t>(n));
    for (auto& item : v->items) {
      pos = parseResp(buf, pos, &item);
      if (pos == std::string::npos) return pos;
    }
    return pos;
  }
  v->text = v->type == '-' ? "-" + line : line;
  return pos;
}

// Reads one whole reply from c (arrays too); nullopt at the deadline or on EOF first.
inline std::optional<RespValue> readResp(TcpClient& c, Millis timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    RespValue v;
    const size_t end = c.buffer().empty() ? std::string::npos : parseResp(c.buffer(), 0, &v);
    if (end != std::string::npos) {
      c.take(end);
      return v;
    }
    const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !c.readAtLeast(c.buffer().size() + 1, left)) return std::nullopt;
  }
}

}  // namespace lb::test
