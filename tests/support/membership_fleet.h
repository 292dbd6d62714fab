// The fleet of the membership tests: real lb processes whose cluster
// "cache" takes its backends from a real etcd key, real lb-origin backends, and the readers
// the tests judge them by: /backends' "membership" object, /ring's owner, /metrics samples,
// the log. Writes go straight to etcd's v3 JSON gateway (POST /v3/kv/put on a keep-alive
// connection) rather than through etcdctl: each answer carries the header revision the write
// created, which is the revision lb must end up serving, and a thousand writes take a
// fraction of a second instead of a thousand process starts. Test-thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/etcd_process.h"
#include "tests/support/http_client.h"
#include "tests/support/json_reader.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/metrics_fleet.h"
#include "tests/support/origin_fleet.h"
#include "tests/support/process.h"

namespace lb::test {

using Clock = std::chrono::steady_clock;

inline std::string base64Encode(std::string_view in) {
  static const char* kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8 |
                 static_cast<uint8_t>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// The port of "http://127.0.0.1:PORT".
inline uint16_t portOfUrl(const std::string& url) {
  size_t colon = url.rfind(':');
  return colon == std::string::npos ? 0 : static_cast<uint16_t>(atoi(url.c_str() + colon + 1));
}

// An int64 of etcd's gateway: grpc-gateway writes them as JSON strings ("revision":"12"),
// lb's /backends as numbers; either reads here.
inline int64_t jsonInt(const lb::testing::JsonValue& v) {
  if (v.isString()) return atoll(v.asString().c_str());
  if (v.isNumber()) return static_cast<int64_t>(v.asNumber());
  return -1;
}

// One etcd member's JSON gateway, on a keep-alive connection that reconnects when the member
// closed it.
class EtcdGateway {
 public:
  explicit EtcdGateway(uint16_t port) : port_(port) {}
  explicit EtcdGateway(const std::string& url) : port_(portOfUrl(url)) {}

  // The revision the put created, or nullopt (error() says why).
  std::optional<int64_t> put(const std::string& key, const std::string& value) {
    auto r = call("/v3/kv/put", "{\"key\":\"" + base64Encode(key) + "\",\"value\":\"" +
                                    base64Encode(value) + "\"}");
    return r ? headerRevision(*r) : std::nullopt;
  }
  // The revision the delete created (etcd deletes a missing key without a new revision).
  std::optional<int64_t> remove(const std::string& key) {
    auto r = call("/v3/kv/deleterange", "{\"key\":\"" + base64Encode(key) + "\"}");
    return r ? headerRevision(*r) : std::nullopt;
  }
  // Compacts the key space up to `revision` (physical: the call returns once it is done).
  bool compact(int64_t revision) {
    return call("/v3/kv/compaction",
                "{\"revision\":\"" + std::to_string(revision) + "\",\"physical\":true}")
        .has_value();
  }
  // The store's current revision.
  std::optional<int64_t> revision() {
    auto r = call("/v3/kv/range", "{\"key\":\"" + base64Encode("/") + "\",\"count_only\":true}");
    return r ? headerRevision(*r) : std::nullopt;
  }
  const std::string& error() const { return error_; }

 private:
  std::optional<int64_t> headerRevision(const std::string& body) {
    try {
      auto doc = lb::testing::JsonReader::parse(body);
      return jsonInt(doc["header"]["revision"]);
    } catch (const std::exception& e) {
      error_ = std::string(e.what()) + ": " + body;
      return std::nullopt;
    }
  }
  // POSTs `body`; the reply body when etcd answered 200.
  std::optional<std::string> call(const std::string& path, const std::string& body) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!client_) {
        client_ = std::make_unique<TcpClient>();
        if (!client_->connect(port_, 2s)) {
          client_.reset();
          error_ = "cannot connect to etcd on port " + std::to_string(port_);
          return std::nullopt;
        }
      }
      HttpResponse r;
      if (client_->send(httpRequest("POST", path, "Content-Type: application/json\r\n", body)))
        r = readHttpResponse(*client_, false, 5s);
      if (!r) {
        error_ = "etcd " + path + ": " + r.error;
        client_.reset();   // a member restarted or closed an idle connection: once more
        continue;
      }
      if (!r.keep_alive) client_.reset();
      if (r.status != 200) {
        error_ = "etcd " + path + " answered " + std::to_string(r.status) + ": " + r.body;
        return std::nullopt;
      }
      return r.body;
    }
    return std::nullopt;
  }

  uint16_t port_;
  std::unique_ptr<TcpClient> client_;
  std::string error_;
};

// {"backends":[{"name":..,"address":..},..]} for the origins at `indices`.
inline std::string membershipDocument(const OriginFleet& origins,
                                      const std::vector<size_t>& indices) {
  std::string out = "{\"backends\":[";
  for (size_t i = 0; i < indices.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"name\":\"" + origins.name(indices[i]) + "\",\"address\":\"127.0.0.1:" +
           std::to_string(origins.port(indices[i])) + "\"}";
  }
  return out + "]}";
}

inline std::vector<size_t> firstN(size_t n) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(i);
  return out;
}

// What /backends says of one cluster's membership (the contract's "membership" object).
struct MembershipView {
  bool ok = false;           // /backends answered and had the cluster
  std::string error;
  std::string source, state, fingerprint, last_sync, endpoint;
  int64_t revision = -1;     // -1: none yet
  int64_t rejected_revision = -1;
  std::string rejected_reason;
  std::vector<std::string> backends;   // names, in /backends' order
};

inline MembershipView readMembership(uint16_t admin, const std::string& cluster = "cache") {
  MembershipView v;
  HttpResponse r = httpGetLocal(admin, "/backends", 2s);
  if (!r || r.status != 200) {
    v.error = r ? "/backends answered " + std::to_string(r.status) : r.error;
    return v;
  }
  try {
    auto doc = lb::testing::JsonReader::parse(r.body);
    for (const auto& c : doc["clusters"].items()) {
      if (c["name"].asString() != cluster) continue;
      for (const auto& b : c["backends"].items()) v.backends.push_back(b["name"].asString());
      const auto* m = c.find("membership");
      if (m == nullptr || !m->isObject()) {
        v.error = "no \"membership\" object in /backends: " + r.body;
        return v;
      }
      auto str = [&](const char* k) {
        const auto* f = m->find(k);
        return f != nullptr && f->isString() ? f->asString() : std::string();
      };
      v.source = str("source");
      v.state = str("state");
      v.fingerprint = str("fingerprint");
      v.last_sync = str("last_sync");
      v.endpoint = str("endpoint");
      if (const auto* rev = m->find("revision"); rev != nullptr) v.revision = jsonInt(*rev);
      if (const auto* lr = m->find("last_rejected"); lr != nullptr && lr->isObject()) {
        if (const auto* rr = lr->find("revision")) v.rejected_revision = jsonInt(*rr);
        if (const auto* why = lr->find("reason"); why != nullptr && why->isString())
          v.rejected_reason = why->asString();
      }
      v.ok = true;
      return v;
    }
    v.error = "no cluster '" + cluster + "' in /backends: " + r.body;
  } catch (const std::exception& e) {
    v.error = std::string(e.what()) + ": " + r.body;
  }
  return v;
}

// The revisions an lb's log says it applied to `cluster`, in log order: lb logs each build it
// puts live as "membership: cluster C: applied revision R (...)" (at start too).
inline std::vector<int64_t> appliedRevisions(const std::string& log,
                                             const std::string& cluster = "cache") {
  std::vector<int64_t> out;
  const std::string needle = "membership: cluster " + cluster + ": applied revision ";
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1))
    out.push_back(atoll(log.c_str() + at + needle.size()));
  return out;
}

// Polls /backends until the cluster serves `revision` (or a later one) and returns when it
// first saw it; nullopt at the deadline. Polls every 2 ms: the spread test measures with it.
inline std::optional<Clock::time_point> waitForRevision(uint16_t admin, int64_t revision,
                                                        Millis timeout = 5s,
                                                        const std::string& cluster = "cache") {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    MembershipView v = readMembership(admin, cluster);
    if (v.ok && v.revision >= revision) return Clock::now();
    std::this_thread::sleep_for(2ms);
  }
  return std::nullopt;
}

// Polls until pred() holds; false at the deadline.
template <typename Pred>
bool pollUntil(Pred pred, Millis timeout = 5s, Millis every = 10ms) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

// /ring's owner of `key` in cluster "cache", or "error: ...".
inline std::string ringOwner(uint16_t admin, const std::string& key) {
  HttpResponse r = httpGetLocal(admin, "/ring?cluster=cache&key=" + urlEncode(key), 2s);
  if (!r || r.status != 200) return "error: " + (r ? std::to_string(r.status) + r.body : r.error);
  try {
    auto doc = lb::testing::JsonReader::parse(r.body);
    return doc["owner"].isString() ? doc["owner"].asString() : "null";
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

// /ring's "revision" for cluster "cache" (any key), or -1.
inline int64_t ringRevision(uint16_t admin) {
  HttpResponse r = httpGetLocal(admin, "/ring?cluster=cache&key=k", 2s);
  if (!r || r.status != 200) return -1;
  try {
    auto doc = lb::testing::JsonReader::parse(r.body);
    const auto* rev = doc.find("revision");
    return rev == nullptr ? -1 : jsonInt(*rev);
  } catch (const std::exception&) {
    return -1;
  }
}

// One lb process of the fleet: a listener "web" (HTTP keyed on x-cache-key, or redis) in
// front of cluster "cache", whose membership comes from `key` on the etcd `endpoints`.
struct MembershipOptions {
  MembershipOptions(std::vector<std::string> e, std::string k)
      : endpoints(std::move(e)), key(std::move(k)) {}
  MembershipOptions& minApplyInterval(std::string d) { min_apply_interval = std::move(d); return *this; }
  MembershipOptions& clusterExtra(std::string t) { cluster_extra = std::move(t); return *this; }
  MembershipOptions& listenerProtocol(std::string p) { protocol = std::move(p); return *this; }
  // More keys of the membership table itself: ", tls = { ... }", ", user = ..."
  MembershipOptions& membershipExtra(std::string t) { membership_extra = std::move(t); return *this; }

  std::vector<std::string> endpoints;
  std::string key;
  std::string min_apply_interval = "10ms";   // short where coalescing is not the subject
  int max_remove_percent = -1;               // -1: the default
  bool state_file = true;
  std::string cluster_extra;                 // more TOML lines for [clusters.cache]
  std::string protocol = "http";             // the listener's: "http" or "redis"
  std::string membership_extra;              // written inside membership = { ... }
};

class MemberLb {
 public:
  explicit MemberLb(MembershipOptions opts)
      : opts_(std::move(opts)), web_(freePort()), admin_(freePort()) {
    if (opts_.state_file) state_path_ = tempPath("membership-state");
    unlink(state_path_.c_str());   // lb writes it; a test checks lb created it
  }
  ~MemberLb() {
    if (!state_path_.empty()) unlink(state_path_.c_str());
  }

  std::string config() const {
    std::string etcd;
    for (const auto& e : opts_.endpoints) etcd += (etcd.empty() ? "\"" : ", \"") + e + "\"";
    std::string m = "membership = { etcd = [" + etcd + "], key = \"" + opts_.key +
                    "\", min_apply_interval = \"" + opts_.min_apply_interval + "\"";
    if (opts_.max_remove_percent >= 0)
      m += ", max_remove_percent = " + std::to_string(opts_.max_remove_percent);
    if (!state_path_.empty()) m += ", state_file = \"" + state_path_ + "\"";
    m += opts_.membership_extra + " }\n";
    return "[lb]\nworkers = 1\nlog_level = \"info\"\naccess_log = \"\"\n"
           "[admin]\nlisten = \"127.0.0.1:" + std::to_string(admin_) + "\"\n"
           "[listeners.web]\nlisten = \"127.0.0.1:" + std::to_string(web_) +
           "\"\nprotocol = \"" + opts_.protocol + "\"\ncluster = \"cache\"\n" +
           (opts_.protocol == "http" ? "hash = [ { header = \"x-cache-key\" } ]\n" : "") +
           "[clusters.cache]\nselector = \"ring_hash\"\n" + m + opts_.cluster_extra;
  }

  // Starts (or starts again) lb; true once its listener and admin port accept.
  bool start() {
    lb_ = std::make_unique<LbProcess>();
    return lb_->start(config(), {web_, admin_});
  }
  void kill() { lb_.reset(); }
  // SIGHUP with `toml` as the new config; true when lb reloaded it, false when it refused it.
  bool reload(const std::string& toml) { return lb_->reload(toml); }

  uint16_t web() const { return web_; }
  uint16_t admin() const { return admin_; }
  const std::string& statePath() const { return state_path_; }
  Process& process() { return lb_->process(); }
  std::string output() const { return lb_ ? lb_->output() : "(not running)"; }
  MembershipView membership() const { return readMembership(admin_); }

  // Which backend answers a request for `key` (X-Backend), or "error: ...".
  std::string answer(const std::string& key) const {
    HttpResponse r = httpExchange(web_, httpRequest("GET", "/", "x-cache-key: " + key + "\r\n"), 2s);
    if (!r) return "error: " + r.error;
    if (r.status != 200) return "error: status " + std::to_string(r.status);
    return r.header("x-backend").value_or("error: no X-Backend");
  }

 private:
  MembershipOptions opts_;
  uint16_t web_, admin_;
  std::string state_path_;
  std::unique_ptr<LbProcess> lb_;
};

}  // namespace lb::test
