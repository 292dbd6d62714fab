// What the health tests read from a running lb, and how they freeze a backend: /backends and
// /ring through the admin listener, one metric sample from /metrics, a bounded wait for a
// condition, and SIGSTOP/SIGCONT on a backend process (the kernel still accepts connections
// to a stopped process; nothing answers). Test-thread only.
#pragma once

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/json_reader.h"
#include "tests/support/process.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {

using Clock = std::chrono::steady_clock;

inline double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Polls `done` every `step` until it is true (true) or `timeout` passed (false).
inline bool waitUntil(const std::function<bool()>& done, Millis timeout, Millis step = 10ms) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
}

inline std::optional<lb::testing::JsonValue> adminJson(uint16_t admin, const std::string& path) {
  auto r = httpExchange(admin, httpRequest("GET", path, "Connection: close\r\n"), 2s);
  if (!r.ok || r.status != 200) return std::nullopt;
  return lb::testing::JsonReader::parse(r.body);
}

// One backend of /backends, as the health tests read it.
struct BackendHealthView {
  bool found = false;
  bool healthy = true;
  std::string health;     // up, down, ejected
  std::string reason;
  bool checked = false;   // last_check is not null
  std::string last_result;   // last_check.result: ok, fail, timeout ("" before the first)
  double ejections = 0;
  double ejection_ms = 0;
};

inline BackendHealthView backendHealth(uint16_t admin, const std::string& cluster,
                                       const std::string& backend) {
  BackendHealthView v;
  auto doc = adminJson(admin, "/backends");
  if (!doc) return v;
  for (const auto& c : (*doc)["clusters"].items()) {
    if (c["name"].asString() != cluster) continue;
    for (const auto& b : c["backends"].items()) {
      if (b["name"].asString() != backend) continue;
      v.found = true;
      v.healthy = b["healthy"].asBool();
      v.health = b["health"].asString();
      v.reason = b["reason"].isNull() ? "" : b["reason"].asString();
      v.checked = !b["last_check"].isNull();
      if (v.checked) v.last_result = b["last_check"]["result"].asString();
      v.ejections = b["ejections"].asNumber();
      v.ejection_ms = b["ejection_ms"].asNumber();
    }
  }
  return v;
}

// The cluster's "panic" in /backends (nullopt when the admin does not answer).
inline std::optional<bool> clusterPanic(uint16_t admin, const std::string& cluster) {
  auto doc = adminJson(admin, "/backends");
  if (!doc) return std::nullopt;
  for (const auto& c : (*doc)["clusters"].items())
    if (c["name"].asString() == cluster) return c["panic"].asBool();
  return std::nullopt;
}

// The key's preference order under the running table (/ring's "order").
inline std::vector<std::string> ringOrder(uint16_t admin, const std::string& cluster,
                                          const std::string& key) {
  std::vector<std::string> out;
  auto doc = adminJson(admin, "/ring?cluster=" + cluster + "&key=" + key);
  if (!doc) return out;
  for (const auto& b : (*doc)["order"].items()) out.push_back(b.asString());
  return out;
}

// The value of the sample `name{labels}` on /metrics (labels written as Prometheus prints
// them, sorted: `backend="b",cluster="c",to="down"`), or -1 when it is absent.
inline double metricSample(uint16_t admin, const std::string& name, const std::string& labels) {
  auto r = httpExchange(admin, httpRequest("GET", "/metrics", "Connection: close\r\n"), 2s);
  if (!r.ok) return -1;
  const std::string needle = name + (labels.empty() ? "" : "{" + labels + "}") + " ";
  size_t at = r.body.find("\n" + needle);
  if (at == std::string::npos) return -1;
  return strtod(r.body.c_str() + at + 1 + needle.size(), nullptr);
}

// Four lb-origin backends a, b, c, d and lb in front of them: two workers, the admin listener
// and one HTTP listener keyed on the x-key header for cluster c. `tail` ends the listener's
// table (more listener keys) and holds [clusters.c] without its backends, which follow.
// Empty on success, else why not.
inline std::string startKeyedFleet(ProxyHarness& h, const std::string& tail) {
  std::string why;
  for (const char* n : {"a", "b", "c", "d"})
    if (!h.startOrigin(n, &why)) return why.empty() ? std::string("origin ") + n : why;
  if (!h.startLb("[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                 "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
                 "hash = [ { header = \"x-key\" } ]\n" +
                     tail + h.backendsToml({"a", "b", "c", "d"}),
                 &why))
    return why.empty() ? "lb did not start" : why;
  return "";
}

// From now on the origin answers every request (lb's or anyone's, checks included) with
// `status`; 0: 200 again (lb-origin's set_status switch). False when it did not answer.
inline bool setOriginStatus(ProxyHarness& h, const std::string& origin, int status) {
  return httpExchange(h.originPort(origin),
                      httpRequest("GET", "/?set_status=" + std::to_string(status)))
      .ok;
}

// Stops (SIGSTOP) or resumes (SIGCONT) a backend process.
// SIGSTOP takes effect when the kernel next schedules the process, not when kill returns: a
// busy machine can let it answer one more request after the call. freeze returns once
// /proc says the process is stopped (bounded: 5 s).
inline void freeze(Process& p) {
  kill(p.pid(), SIGSTOP);
  const std::string stat_path = "/proc/" + std::to_string(p.pid()) + "/stat";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    FILE* f = fopen(stat_path.c_str(), "r");
    if (f == nullptr) return;
    char line[512] = {};
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    // "pid (comm) S ...": the state follows the last ')'.
    const char* close = strrchr(line, ')');
    if (n == 0 || close == nullptr || close[1] == 0) return;
    if (close[2] == 'T' || close[2] == 't') return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
inline void thaw(Process& p) { kill(p.pid(), SIGCONT); }

// Resumes a frozen process when it goes out of scope, so that a failing test never leaves a
// stopped backend behind (lb's SIGTERM drain would wait on it).
class ThawOnExit {
 public:
  explicit ThawOnExit(Process& p) : p_(p) {}
  ~ThawOnExit() { thaw(p_); }
  ThawOnExit(const ThawOnExit&) = delete;
  ThawOnExit& operator=(const ThawOnExit&) = delete;

 private:
  Process& p_;
};

}  // namespace lb::test
