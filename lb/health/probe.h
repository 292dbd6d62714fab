// One active check on the main loop: connect to the backend (with the cluster's TLS, when it
// has `tls`, the handshake being part of the connect, as HAProxy's check-ssl), send the
// check's request, read until the reply is judged (lb/health/check_reply.h), all within the
// check's timeout, then close. A new connection per check: a check never shares the
// backend's pools with traffic and never reuses a connection the backend might have
// half-closed.
//
// Lifetime: owns its Connection (lb/net/connection.h) and its deadline timer (handle.data =
// this); neither copied nor moved; frees itself after the last close callback. Its owner
// hears onProbeDone exactly once, unless it cancel()s first, after which it hears nothing.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <string>

#include "lb/core/stats.h"
#include "lb/health/check_reply.h"
#include "lb/net/connection.h"
#include "lb/routing/backend_state.h"

namespace lb {

class TlsTransport;

struct ProbeOutcome {
  CheckResult result = CheckResult::kFail;
  std::string detail;     // "status 200", "connection refused", "no reply within 200ms"
  double seconds = 0;     // from the start of the connect to the verdict
  std::string identity;   // a pass's server identity, when the spec asked (CheckReply)
};

class ProbeOwner {
 public:
  virtual ~ProbeOwner() = default;
  // Main thread. The check ended; the probe closes itself after this returns.
  virtual void onProbeDone(const ProbeOutcome& outcome) noexcept = 0;
};

class Probe final : private ConnectionOwner {
 public:
  // Main thread. Starts one check of the backend at `addr` as `spec` says; the outcome
  // comes later through owner->onProbeDone, also when the connect cannot even start. nullptr
  // only when out of memory.
  static Probe* start(uv_loop_t* loop, const sockaddr* addr, socklen_t len,
                      const CheckSpec& spec, ProbeOwner* owner) noexcept;
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  // Main thread. The owner is going away: no callback from now on; closes and frees itself.
  void cancel() noexcept;

 private:
  enum class State : uint8_t { kConnecting, kExchanging, kDone };

  Probe(uv_loop_t* loop, const CheckSpec& spec, ProbeOwner* owner);
  ~Probe() = default;

  // ConnectionOwner: the check's connection (conn_), its only one.
  void onConnected(Connection& c, int status) noexcept override;
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  void onClosed(Connection& c) noexcept override;

  static void onDeadline(uv_timer_t* t);
  static void onTimerClosed(uv_handle_t* h);

  // The reply's bytes (n > 0) or its end (UV_EOF, an error): judged as they come.
  void handleRead(ssize_t n) noexcept;
  void handleTimer() noexcept;
  // Ends the check with its outcome (once) and closes.
  void finish(CheckResult result, std::string detail, std::string identity = {}) noexcept;
  void close() noexcept;
  void closedOne() noexcept;

  const CheckSpec spec_;
  ProbeOwner* owner_;
  CheckReply reply_;
  State state_ = State::kConnecting;
  uint64_t start_ns_ = 0;
  // A connect that failed before it started: reported from the timer, never from start().
  int early_error_ = 0;
  bool closing_ = false;
  int open_ = 2;                       // the timer and the connection
  TlsTransport* tls_ = nullptr;        // under conn_ when the cluster has tls; released by it
  // Health checks' handshakes are not the workers': their counts stay here, unexported (a
  // failed check says why in its detail, the log and /backends).
  TlsWorkerStats tls_stats_;
  Connection conn_;
  ConnectionWrite write_;
  uv_timer_t timer_;
};

}  // namespace lb
