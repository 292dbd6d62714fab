#include "lb/app/hot_key_monitor.h"

#include <chrono>

#include "lb/app/worker_group.h"
#include "lb/core/duration.h"

namespace lb {

namespace {

HotKeyPolicy policyOf(const HotKeysConfig& c) {
  HotKeyPolicy p;
  p.threshold = c.threshold;
  p.hold = std::chrono::duration_cast<std::chrono::milliseconds>(c.hold);
  return p;
}

}  // namespace

HotKeyMonitor::HotKeyMonitor(uv_loop_t* loop, WorkerGroup& server)
    : loop_(loop), server_(server) {
  timer_.data = this;
}

void HotKeyMonitor::start() {
  if (started_ || stopped_) return;
  started_ = true;
  uv_timer_init(loop_, &timer_);
  uv_unref(reinterpret_cast<uv_handle_t*>(&timer_));
  window_start_ms_ = uv_now(loop_);
  next_ = Phase::kAsk;
  uv_timer_start(&timer_, onTick, kIntervalMs, 0);
}

void HotKeyMonitor::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (started_) uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
}

void HotKeyMonitor::tick() {
  if (stopped_ || server_.draining()) return;   // the timer stays off
  const uint64_t now = uv_now(loop_);
  if (next_ == Phase::kAsk) {
    // The asks cut the workers' counts into windows: a window runs from one ask to the next.
    ask();
    window_s_ = static_cast<double>(now - window_start_ms_) / 1000.0;
    window_start_ms_ = now;
    next_ = Phase::kCollect;
    uv_timer_start(&timer_, onTick, kCollectDelayMs, 0);
    return;
  }
  collect(window_s_, wallClockMs());
  next_ = Phase::kAsk;
  // The next ask kIntervalMs after this one, whatever the collect cost.
  const uint64_t since_ask = now - window_start_ms_;
  uv_timer_start(&timer_, onTick, since_ask < kIntervalMs ? kIntervalMs - since_ask : 0, 0);
}

void HotKeyMonitor::ask() {
  for (unsigned i = 0; i < server_.workerCount(); ++i) server_.worker(i).handOverHotKeys();
}

void HotKeyMonitor::collect(double window_s, int64_t now_ms) {
  std::shared_ptr<const Snapshot> snap = server_.snapshot();
  if (!snap || window_s <= 0) return;
  bool changed = false;
  for (const ClusterSnapshot& c : snap->clusters) {
    if (!c.state) continue;
    HotKeyState& hk = c.state->hot_keys;
    hk.tracker().setPolicy(policyOf(c.config->hot_keys));
    hk.tracker().observe(hk.collect(), window_s, now_ms);
    changed |= hk.publishHotSet();
  }
  // The workers' request paths see a new hot set once their loops reach the mailbox: one
  // round for every cluster that changed, none while no set did.
  if (changed)
    for (unsigned i = 0; i < server_.workerCount(); ++i) server_.worker(i).adoptHotSets();
}

}  // namespace lb
