// Hot-key detection's main-thread half (docs/architecture.md, "Hot keys"), on the main loop.
//
// Every kIntervalMs the monitor asks each worker, through its mailbox, to hand its
// per-cluster Space-Saving summaries over (Worker::handOverHotKeys: the copy runs on the
// worker's loop, between requests); kCollectDelayMs later it takes what every worker handed
// over, merges it per cluster (HotKeyState::collect) and feeds each cluster's HotKeyTracker
// with the cluster's hot_keys policy as the live snapshot has it (so a reload's new threshold
// or hold applies from the next window). A worker that has not reached its mailbox by then
// is not waited for: its counts stay in its hand-over buffer and join the next window.
//
// After each observation the cluster's hot set is published to the workers
// (HotKeyState::publishHotSet, then Worker::adoptHotSets through each mailbox) when it
// changed, so that a request path can ask HotKeyState::isHot without a lock.
//
// The window each observation covers is the time between two asks (uv_now), about
// kIntervalMs: the asks are where the workers' counts are cut. The hot sets stay in each cluster's ClusterState, read by /hotkeys and the
// lb_hotkey_* metrics on this same loop. Nothing runs while lb drains.
#pragma once

#include <uv.h>

#include <cstdint>

namespace lb {

class WorkerGroup;

class HotKeyMonitor {
 public:
  static constexpr uint64_t kIntervalMs = 1000;
  // Long enough for an idle worker to reach its mailbox, short enough that /hotkeys lags
  // the traffic by little more than one window.
  static constexpr uint64_t kCollectDelayMs = 50;

  // Main thread. `loop` (the main loop) and `server` outlive this object.
  HotKeyMonitor(uv_loop_t* loop, WorkerGroup& server);
  HotKeyMonitor(const HotKeyMonitor&) = delete;
  HotKeyMonitor& operator=(const HotKeyMonitor&) = delete;

  // Main thread. Starts the timer; it does not keep the loop alive (the drain's end ends
  // the loop regardless).
  void start();
  // Main thread. Closes the timer; the caller runs the loop once more so the close
  // completes before this object is destroyed. Idempotent.
  void stop();

  // Main thread; what the timer does, callable directly (tests). ask: every worker hands
  // over. collect: every cluster of the live snapshot takes what was handed over and
  // observes one window of `window_s` seconds ending at wall-clock `now_ms`.
  void ask();
  void collect(double window_s, int64_t now_ms);

 private:
  enum class Phase : uint8_t { kAsk, kCollect };
  static void onTick(uv_timer_t* timer) { static_cast<HotKeyMonitor*>(timer->data)->tick(); }
  void tick();

  uv_loop_t* loop_;
  WorkerGroup& server_;
  uv_timer_t timer_;   // timer_.data = this
  Phase next_ = Phase::kAsk;
  uint64_t window_start_ms_ = 0;   // uv_now() of the last ask (or of start)
  double window_s_ = 0;            // the window the coming collect closes
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace lb
