// One active check on the main loop: connect to the backend, send the check's request, read
// until the reply is judged (lb/health/check_reply.h), all within the check's timeout, then
// close. A new connection per check: a check never shares the backend's pools with traffic
// and never reuses a connection the backend might have half-closed.
//
// Lifetime: owns its socket and its timer (handle.data = this); neither copied nor moved;
// frees itself after the last close callback. Its owner hears onProbeDone exactly once,
// unless it cancel()s first, after which it hears nothing.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <string>

#include "lb/health/check_reply.h"
#include "lb/routing/backend_state.h"

namespace lb {

struct ProbeOutcome {
  CheckResult result = CheckResult::kFail;
  std::string detail;     // "status 200", "connection refused", "no reply within 200ms"
  double seconds = 0;     // from the start of the connect to the verdict
};

class ProbeOwner {
 public:
  virtual ~ProbeOwner() = default;
  // Main thread. The check ended; the probe closes itself after this returns.
  virtual void onProbeDone(const ProbeOutcome& outcome) noexcept = 0;
};

class Probe {
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

  Probe(const CheckSpec& spec, ProbeOwner* owner) : spec_(spec), owner_(owner), reply_(spec_) {}
  ~Probe() = default;

  static void onConnect(uv_connect_t* req, int status);
  static void onWrite(uv_write_t* req, int status);
  static void onAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void onTimer(uv_timer_t* t);
  static void onClosed(uv_handle_t* h);

  void handleConnect(int status) noexcept;
  void handleRead(ssize_t n) noexcept;
  void handleTimer() noexcept;
  // Ends the check with its outcome (once) and closes.
  void finish(CheckResult result, std::string detail) noexcept;
  void close() noexcept;

  const CheckSpec spec_;
  ProbeOwner* owner_;
  CheckReply reply_;
  State state_ = State::kConnecting;
  uint64_t start_ns_ = 0;
  // A connect that failed before it started: reported from the timer, never from start().
  int early_error_ = 0;
  bool closing_ = false;
  int open_handles_ = 0;
  uv_tcp_t tcp_;
  uv_timer_t timer_;
  uv_connect_t connect_req_;
  uv_write_t write_req_;
};

}  // namespace lb
