// What the near-cache tests (near_cache_redis_test.cc, near_cache_memcached_test.cc) share: a
// raw request and the exact bytes of its one reply, and the near-cache counters off /metrics.
// Test-thread only.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "tests/support/cache_fleet.h"
#include "tests/support/metrics_fleet.h"

namespace lb::test {

// Sends `request` on `c` and returns the exact bytes of its RESP reply ("" on timeout).
inline std::string nearRespExchange(TcpClient& c, const std::string& request,
                                    Millis timeout = 5s) {
  if (!c.send(request)) return "";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    RespValue v;
    const size_t end = c.buffer().empty() ? std::string::npos : parseResp(c.buffer(), 0, &v);
    if (end != std::string::npos) {
      std::string raw = c.buffer().substr(0, end);
      c.take(end);
      return raw;
    }
    const auto left =
        std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !c.readAtLeast(c.buffer().size() + 1, left)) return "";
  }
}

// Sends a memcached command and returns its reply up to and including `terminator` (the
// first one after the request; "" on timeout).
inline std::string nearMcExchange(TcpClient& c, const std::string& request,
                                  const std::string& terminator, Millis timeout = 5s) {
  if (!c.send(request)) return "";
  if (!c.readUntil(terminator, timeout)) return "";
  const size_t end = c.buffer().find(terminator) + terminator.size();
  std::string raw = c.buffer().substr(0, end);
  c.take(end);
  return raw;
}

// The sum over workers of one near-cache family's sample for cluster "fleet", by its one
// other label (path or reason); 0 when absent.
inline double nearMetric(CacheFleet& fleet, const std::string& name, const std::string& label,
                         const std::string& value) {
  double sum = 0;
  for (const TextSample& s : parseExposition(fleet.metrics())) {
    if (s.name != name) continue;
    auto c = s.labels.find("cluster");
    if (c == s.labels.end() || c->second != "fleet") continue;
    if (!label.empty()) {
      auto l = s.labels.find(label);
      if (l == s.labels.end() || l->second != value) continue;
    }
    sum += s.value;
  }
  return sum;
}

// Reads a key through one connection (read() sends one read and takes its reply) until the
// key is hot on that connection's worker: the near cache's hit and miss counters move across
// one read (only hot keys' reads are counted there). The reads before make it hot: the
// hot-key monitor merges about once a second, then each worker adopts the set. False when
// that has not happened within `timeout`. The test must be the only client meanwhile.
template <class Read>
bool nearWarm(CacheFleet& fleet, Read&& read, Millis timeout = 15s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto used = [&] {
    return nearMetric(fleet, "lb_hotkey_requests_total", "path", "near_hit") +
           nearMetric(fleet, "lb_hotkey_requests_total", "path", "near_miss");
  };
  while (std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 200; ++i)
      if (!read()) return false;
    const double before = used();
    if (!read()) return false;
    if (used() > before) return true;
  }
  return false;
}

// Milliseconds from now until seen() first holds (it is asked again and again, as fast as it
// answers), or nullopt if it has not within `timeout`: how long a write that bypassed lb
// took to show through it.
template <class Seen>
std::optional<long long> nearMsUntil(Seen&& seen, Millis timeout = 5s) {
  const auto sent = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - sent < timeout)
    if (seen())
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - sent).count();
  return std::nullopt;
}

}  // namespace lb::test
