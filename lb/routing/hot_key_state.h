// A cluster's hot-key detection state that outlives snapshots (it lives in ClusterState, so
// a reload keeps counting): one Space-Saving summary per worker, written by that worker's
// request path alone, a hand-over buffer per worker, and the main thread's merged summary and
// HotKeyTracker (lb/routing/hot_keys.h).
//
// About once a second (lb/app/hot_key_monitor.h) the main thread asks every worker, through
// its mailbox, to hand over: on the worker's loop, between requests, the worker merges its
// summary into its hand-over buffer and clears it (handOver). The main thread then takes
// what each worker handed over (collect) and feeds the merged summary to the tracker. The
// mutex guards the hand-over buffer only: the request path (count) never takes it, and the
// two threads hold it for one copy of a fixed-size summary each, once a second.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "lb/routing/hot_keys.h"
#include "lb/routing/space_saving.h"

namespace lb {

class HotKeyState {
 public:
  // Allocates every summary now (off the request path): nothing allocates afterwards.
  explicit HotKeyState(unsigned workers);
  HotKeyState(const HotKeyState&) = delete;
  HotKeyState& operator=(const HotKeyState&) = delete;

  // Loop thread of worker `worker`; the request path. One request (HTTP), connection (TCP)
  // or command key (redis, memcached) whose key hashed to `hash`; `key` is its bytes, copied
  // only if the summary starts tracking it. A worker index beyond the ones this state was
  // made for (a test's hand-built cluster) is not counted. No allocation, no lock.
  void count(unsigned worker, uint64_t hash, std::string_view key) noexcept {
    if (worker < workers_) slots_[worker].live.add(hash, key);
  }

  // Loop thread of worker `worker`, from its mailbox (off the request path): adds what the
  // worker counted since its last hand-over to its hand-over buffer (merged into what the
  // main thread has not taken yet, so a late collect loses nothing) and clears its summary.
  void handOver(unsigned worker) noexcept;

  // Main thread. Takes every worker's hand-over buffer into one summary (the Space-Saving
  // merge keeps the error bound) and returns it; it stays valid until the next collect.
  // *workers_in, when given, is how many workers had handed something over.
  const SpaceSaving& collect(unsigned* workers_in = nullptr) noexcept;

  // Main thread only: the cluster's hot set, as /hotkeys and the metrics show it.
  HotKeyTracker& tracker() noexcept { return tracker_; }
  const HotKeyTracker& tracker() const noexcept { return tracker_; }

  unsigned workers() const noexcept { return workers_; }

 private:
  // Its own cache lines: one worker's counting must not bounce another's.
  struct alignas(64) Slot {
    SpaceSaving live;      // the worker's; request path
    std::mutex mu;         // guards handed and pending
    SpaceSaving handed;
    bool pending = false;  // handed holds counts the main thread has not taken
  };
  const unsigned workers_;
  std::unique_ptr<Slot[]> slots_;
  SpaceSaving merged_;     // main thread
  HotKeyTracker tracker_;  // main thread
};

}  // namespace lb
