// One backend's active checks on the main loop: a timer that starts one Probe
// (lb/health/probe.h) at a time and hands each outcome to the health manager. One checker per
// backend per process, whatever the number of workers.
//
// Schedule: the first check after a random delay within the first interval (so that a fleet
// of checkers started together spreads out); each next one `interval` after the previous one
// started, less a random jitter of up to an eighth of it, and never before the previous one
// ended. Since timeout <= interval, a check starts at most `interval` after the one before:
// a backend that stops answering fails `fall` checks within fall x interval + timeout.
//
// Lifetime: owns its timer (timer.data = this) and its probe in flight; neither copied nor
// moved; stop() cancels the probe and frees the checker after the timer's close callback.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <memory>

#include "lb/health/check_reply.h"
#include "lb/health/probe.h"
#include "lb/routing/backend_state.h"

namespace lb {

class CheckSink {
 public:
  virtual ~CheckSink() = default;
  // Main thread. A check of `backend` ended. Must not stop the checker that calls it.
  virtual void onCheckDone(const BackendState* backend, const ProbeOutcome& outcome) noexcept = 0;
};

class BackendChecker final : public ProbeOwner {
 public:
  // Main thread. Starts checking the backend at `addr` as `spec` says; the first check after
  // `first_delay_ms`. `seed` feeds the jitter. nullptr only when out of memory.
  static BackendChecker* start(uv_loop_t* loop, CheckSink* sink,
                               std::shared_ptr<BackendState> backend, const CheckSpec& spec,
                               const sockaddr_storage& addr, socklen_t len,
                               uint64_t first_delay_ms, uint64_t seed) noexcept;
  BackendChecker(const BackendChecker&) = delete;
  BackendChecker& operator=(const BackendChecker&) = delete;

  // Main thread. No more checks and no more results; frees itself later. Idempotent.
  void stop() noexcept;
  const CheckSpec& spec() const noexcept { return spec_; }
  // True when this checker probes `addr`: a backend whose name re-resolved elsewhere needs a
  // checker of its own at the new address.
  bool probes(const sockaddr_storage& addr, socklen_t len) const noexcept;

  void onProbeDone(const ProbeOutcome& outcome) noexcept override;

 private:
  BackendChecker(uv_loop_t* loop, CheckSink* sink, std::shared_ptr<BackendState> backend,
                 const CheckSpec& spec, const sockaddr_storage& addr, socklen_t len,
                 uint64_t seed);
  ~BackendChecker() = default;
  static void onTimer(uv_timer_t* t);
  static void onClosed(uv_handle_t* h);
  void runCheck() noexcept;
  uint64_t jitter() noexcept;

  uv_loop_t* loop_;
  CheckSink* sink_;
  std::shared_ptr<BackendState> backend_;
  const CheckSpec spec_;
  sockaddr_storage addr_{};
  socklen_t len_;
  uint64_t rng_;
  Probe* probe_ = nullptr;      // the check in flight
  uint64_t started_at_ = 0;     // uv_now when it started
  bool stopped_ = false;
  uv_timer_t timer_;
};

}  // namespace lb
