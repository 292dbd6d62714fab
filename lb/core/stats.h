// Per-worker statistics. Each slot is written by exactly one worker thread and read by the
// scraper, so an update is a relaxed load plus a relaxed store, never a read-modify-write
// (docs/architecture.md, "Metrics": the hot path pays no atomic RMW for statistics).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace lb {

class StatCounter {
 public:
  void add(uint64_t n = 1) noexcept {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// A single-writer gauge (may go down): the writer's running value.
class StatGauge {
 public:
  void add(int64_t n) noexcept {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  int64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

// Response-time buckets in seconds (Prometheus' defaults, with finer low end for caches).
inline constexpr std::array<double, 14> kLatencyBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

// Code classes 1xx..5xx: index = status / 100 - 1.
inline constexpr int kCodeClasses = 5;
inline int codeClassIndex(int status) noexcept {
  int c = status / 100 - 1;
  return c < 0 ? 0 : (c >= kCodeClasses ? kCodeClasses - 1 : c);
}

// Why lb answered an HTTP error itself; the label of lb_http_errors_total.
enum class HttpErrorReason : uint8_t {
  kMalformed,        // 400
  kMissingKey,       // 400, on_missing_key = reject
  kHeaderTimeout,    // 408
  kBodyTooLarge,     // 413
  kHeaderTooLarge,   // 431
  kBackendFailed,    // 502
  kNoBackend,        // 503
  kBackendTimeout,   // 504
  kOverLimit,        // 503, past limits.max_connections: load shed, not a fleet outage
  kCount
};
// Why lb ended an HTTP/2 connection with GOAWAY other than NO_ERROR; the reason label of
// lb_h2_goaways_total. Floods and bombs are ENHANCE_YOUR_CALM, the rest the RFC's error.
enum class H2GoawayReason : uint8_t {
  kRapidReset,       // streams reset by the client faster than h2 allows (CVE-2023-44487)
  kContinuation,     // a header block in more CONTINUATION frames than allowed (CVE-2024-27316)
  kSettingsFlood,    // SETTINGS frames faster than lb answers them
  kPingFlood,        // PING (or SETTINGS) acknowledgements the client does not read
  kEmptyFrames,      // empty DATA frames, or other frames that carry nothing
  kHeaderList,       // header blocks over h2.max_header_list, again and again (HPACK bombs)
  kProtocolError,    // anything else RFC 9113 calls a connection error
  kStall,            // no progress either way for timeouts.idle with streams open
  kCount
};
inline const char* h2GoawayReasonName(H2GoawayReason r) noexcept {
  static constexpr const char* kNames[] = {"rapid_reset",    "continuation_flood",
                                           "settings_flood", "ping_flood",
                                           "empty_frames",   "header_list",
                                           "protocol_error", "stall"};
  return kNames[static_cast<int>(r)];
}

inline const char* httpErrorReasonName(HttpErrorReason r) noexcept {
  static constexpr const char* kNames[] = {"malformed",        "missing_key",    "header_timeout",
                                           "body_too_large",   "header_too_large",
                                           "backend_failed",   "no_backend",     "backend_timeout",
                                           "over_limit"};
  return kNames[static_cast<int>(r)];
}

// Why lb answered a redis or memcached command itself with an error; the reason label of
// lb_cache_errors_total.
enum class CacheErrorReason : uint8_t {
  kProtocol,         // malformed input: garbage, a bad length, a key memcached forbids
  kTooLarge,         // past limits.max_request_bytes or limits.max_arguments
  kUnsupported,      // a command that cannot work through a sharding proxy
  kUnknownCommand,
  kCrossServer,      // a command whose keys live on different backends
  kNoAuth,           // before AUTH, or a wrong password
  kNoBackend,        // no usable backend for the key
  kBackendFailed,    // connect refused or timed out, reset, closed, malformed reply
  kBackendTimeout,   // no answer within timeouts.response
  kCount
};
inline const char* cacheErrorReasonName(CacheErrorReason r) noexcept {
  static constexpr const char* kNames[] = {"protocol",       "too_large",       "unsupported",
                                           "unknown_command", "cross_server",   "no_auth",
                                           "no_backend",     "backend_failed",  "backend_timeout"};
  return kNames[static_cast<int>(r)];
}

// What became of one command a backend was sent; the result label of
// lb_backend_commands_total.
enum class CommandResult : uint8_t {
  kOk,        // the backend answered (anything but an error reply)
  kError,     // it answered an error, or its connection failed before answering
  kTimeout,   // no answer within timeouts.response
  kCount
};
inline const char* commandResultName(CommandResult r) noexcept {
  static constexpr const char* kNames[] = {"ok", "error", "timeout"};
  return kNames[static_cast<int>(r)];
}

// What went wrong with a backend, as a worker saw it: the kinds passive health counts
// (lb/routing/backend_state.h, noteBackendFailure). The first three are connect failures, the
// reason label of lb_backend_connect_failures_total.
enum class BackendFailure : uint8_t {
  kConnectRefused,    // the connect was refused or could not start
  kConnectTimeout,    // no connect within timeouts.connect
  kConnectReset,      // a new connection closed or reset before the backend sent anything
  kServerError,       // an HTTP 5xx from the backend
  kResponseTimeout,   // no response head within the listener's timeout (lb answered 504)
  kCount
};
inline constexpr int kBackendFailureKinds = static_cast<int>(BackendFailure::kCount);
inline constexpr int kConnectFailureKinds = 3;
inline const char* backendFailureName(BackendFailure f) noexcept {
  static constexpr const char* kNames[] = {"connect refused", "connect timeout", "reset", "5xx",
                                           "response timeout"};
  return kNames[static_cast<int>(f)];
}
// The reason label of lb_backend_connect_failures_total for the first three kinds.
inline const char* connectFailureLabel(BackendFailure f) noexcept {
  static constexpr const char* kNames[] = {"refused", "timeout", "reset"};
  return kNames[static_cast<int>(f) % kConnectFailureKinds];
}

// TLS on a listener, or towards a backend (lb/tls): handshakes by version and resumption,
// failures by reason.
enum class TlsVersion : uint8_t { k12, k13, kCount };
enum class TlsErrorReason : uint8_t {
  kPlaintext,   // the first bytes were not a TLS record (plain HTTP to an HTTPS port, ...)
  kProtocol,    // OpenSSL refused the handshake (garbage ClientHello, no shared cipher ...)
  kTimeout,     // lb closed the connection before the handshake ended (timeouts.header)
  kClosed,      // the client closed or reset mid-handshake
  kVerify,      // towards a backend: its certificate failed verification (CA, name, dates)
  kCount,
};
// As the metric's label spells it.
inline const char* tlsErrorReasonName(TlsErrorReason r) noexcept {
  switch (r) {
    case TlsErrorReason::kPlaintext: return "plaintext";
    case TlsErrorReason::kProtocol: return "protocol";
    case TlsErrorReason::kTimeout: return "timeout";
    case TlsErrorReason::kClosed: return "closed";
    case TlsErrorReason::kVerify: return "verify";
    case TlsErrorReason::kCount: break;
  }
  return "";
}
struct TlsWorkerStats {
  // [version][resumed]
  std::array<std::array<StatCounter, 2>, static_cast<int>(TlsVersion::kCount)> handshakes;
  std::array<StatCounter, static_cast<int>(TlsErrorReason::kCount)> errors;
};

struct alignas(64) BackendWorkerStats {
  std::array<StatCounter, kCodeClasses> requests;     // by code class
  std::array<StatCounter, 6> picks;                   // by PickReason (kPickReasonCount)
  StatCounter bytes_rx;                               // from the backend
  StatCounter bytes_tx;                               // to the backend
  std::array<StatCounter, kLatencyBuckets.size()> latency_le;  // non-cumulative counts
  StatCounter latency_count;
  StatCounter latency_sum_us;
  StatGauge connections;                              // upstream connections this worker holds
  // redis, memcached: commands sent to the backend, by CommandResult.
  std::array<StatCounter, static_cast<int>(CommandResult::kCount)> commands;
  // Passive health: every failure by kind, their running total, and the total as it stood at
  // this worker's last success. failures_total - failures_at_success is the worker's current
  // run of consecutive failures; the main thread reads both (lb/health/outlier.h).
  std::array<StatCounter, kBackendFailureKinds> failures;
  StatCounter failures_total;
  StatCounter failures_at_success;
  // A cluster with `tls`: this worker's handshakes with the backend, and their failures.
  TlsWorkerStats tls;
  // A cluster with replicas: this backend's copies of writes that failed (refused, reset,
  // timed out) while the client's reply came from another copy.
  StatCounter replica_write_failures;
};

struct alignas(64) ListenerWorkerStats {
  TlsWorkerStats tls;
  StatGauge connections_active;
  // Connections accepted past the worker's share of limits.max_connections (and answered
  // 503 on http, closed at once on tcp).
  StatCounter connections_over_limit;
  std::array<StatCounter, kCodeClasses> requests;
  std::array<StatCounter, static_cast<int>(HttpErrorReason::kCount)> http_errors;
  std::array<StatCounter, static_cast<int>(CacheErrorReason::kCount)> cache_errors;
  // HTTP/2: connections open now (also in connections_active), streams begun, and the
  // connections ended by reason.
  StatGauge h2_connections_active;
  StatCounter h2_streams;
  std::array<StatCounter, static_cast<int>(H2GoawayReason::kCount)> h2_goaways;
  // Bytes the listener's connections moved by splice(2), both directions (the rest of
  // lb_backend_bytes_total was copied through user space).
  StatCounter spliced_bytes;
};

// One latency sample into a backend's histogram (lb_backend_response_seconds).
inline void recordLatency(BackendWorkerStats& s, uint64_t us) noexcept {
  const double seconds = static_cast<double>(us) / 1e6;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) {
      s.latency_le[i].add();
      break;
    }
  }
  s.latency_count.add();
  s.latency_sum_us.add(us);
}

}  // namespace lb
