// Health on the main thread: one BackendChecker per backend of every cluster with `health`
// (lb/health/backend_checker.h), a sweep timer for passive outlier detection, and the
// HealthTracker that turns both into the flags every worker's pick reads
// (lb/health/health_tracker.h). The workers never wait for any of it: they read
// BackendState::healthy and ClusterState::panic, and report failures into their own
// statistics slots, which the sweep reads.
//
// The manager is told about every snapshot (at start and after each reload) and keeps what
// stays: a backend whose checks are unchanged keeps its checker and its schedule.
//
// Lifetime: created by create(), on the heap; owns its sweep timer (data = this); stop()
// stops every checker and frees the manager after the timer's close callback. Main thread
// only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>

#include "lb/health/backend_checker.h"
#include "lb/health/health_tracker.h"

namespace lb {

struct HealthHooks {
  // Main thread. The active checks took `backend` down (its cluster not in panic): the
  // connections already open to it will not be answered; the caller has the workers end
  // them (HAProxy's `on-marked-down shutdown-sessions`).
  std::function<void(const std::shared_ptr<BackendState>&)> checked_down;
};

class HealthManager final : public CheckSink {
 public:
  // How often outlier detection reads the workers' failure counts: an ejection follows a
  // backend's consecutive_failures-th failure within this, and ends at most this late.
  static constexpr uint64_t kSweepMs = 100;

  static HealthManager* create(uv_loop_t* loop, HealthHooks hooks);
  HealthManager(const HealthManager&) = delete;
  HealthManager& operator=(const HealthManager&) = delete;

  // Main thread. The snapshot the workers route with now: after a reload, and after a
  // re-resolution moved backends to new addresses (each then checked at its new one).
  void apply(std::shared_ptr<const Snapshot> snapshot);
  // Main thread. Stops every check and frees the manager once its timer has closed (the
  // loop must run on). Idempotent.
  void stop();

  // Main thread. The backends out of rotation, for an upgrade's new process; and, in that
  // process, taking them (HealthTracker::carry, adopt).
  std::vector<HealthCarry> carry() const { return tracker_.carry(uv_now(loop_)); }
  size_t adopt(const std::vector<HealthCarry>& carried) {
    return tracker_.adopt(carried, uv_now(loop_));
  }

  void onCheckDone(const BackendState* backend, const ProbeOutcome& outcome) noexcept override;

 private:
  HealthManager(uv_loop_t* loop, HealthHooks hooks);
  ~HealthManager() = default;
  static void onSweep(uv_timer_t* t);
  static void onClosed(uv_handle_t* h);
  void tellCheckedDown();
  uint64_t random() noexcept;

  uv_loop_t* loop_;
  HealthHooks hooks_;
  HealthTracker tracker_;
  std::unordered_map<const BackendState*, BackendChecker*> checkers_;
  uv_timer_t sweep_;
  bool sweeping_ = false;
  bool stopped_ = false;
  uint64_t rng_;
};

}  // namespace lb
