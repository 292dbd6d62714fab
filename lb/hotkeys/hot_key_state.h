// A cluster's hot-key detection state that outlives snapshots (it lives in ClusterState, so
// a reload keeps counting): one Space-Saving summary per worker, written by that worker's
// request path alone, a hand-over buffer per worker, and the main thread's merged summary and
// HotKeyTracker (lb/hotkeys/hot_keys.h).
//
// About once a second (lb/app/hot_key_monitor.h) the main thread asks every worker, through
// its mailbox, to hand over: on the worker's loop, between requests, the worker merges its
// summary into its hand-over buffer and clears it (handOver). The main thread then takes
// what each worker handed over (collect) and feeds the merged summary to the tracker. The
// mutex guards the hand-over buffer only: the request path (count) never takes it, and the
// two threads hold it for one copy of a fixed-size summary each, once a second.
//
// The way back: after each observe the main thread turns the tracker's hot set into an
// immutable HotHashes (lb/hotkeys/hot_hashes.h) and, when it changed, publishes it here
// (publishHotSet) and asks every worker through its mailbox to adopt it. A worker adopts it on
// its loop, between requests (adoptHotSet), into its own slot, which only that worker reads
// and writes afterwards: isHot() on the request path is a plain load of the slot's pointer
// and a probe of the table, no lock and no atomic. The worker's previous set is freed there,
// on its loop, off the request path.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "lb/core/stats.h"
#include "lb/hotkeys/hot_hashes.h"
#include "lb/hotkeys/hot_keys.h"
#include "lb/hotkeys/space_saving.h"

namespace lb {

// What became of a request for a hot key; the path label of lb_hotkey_requests_total.
// kSpread: an HTTP GET or HEAD sent to the least loaded of its key's first hot_keys.spread
// hosts. The near cache's paths (near_hit, near_miss, bypass) are counted with its own
// per-worker counters, in NearCacheState (lb/hotkeys/near_cache_state.h), under the same family.
enum class HotKeyPath : uint8_t { kSpread, kCount };
inline constexpr int kHotKeyPaths = static_cast<int>(HotKeyPath::kCount);
inline const char* hotKeyPathName(HotKeyPath p) noexcept {
  static constexpr const char* kNames[] = {"spread"};
  return kNames[static_cast<int>(p)];
}

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

  // Main thread, after tracker().observe(). Builds the hot set workers read from the
  // tracker's hot keys and makes it the one adoptHotSet() takes; true when it differs from
  // the one published before, so the workers need telling (WorkerGroup, through each
  // worker's mailbox: Worker::adoptHotSets). Allocates (off the request path).
  bool publishHotSet();
  // Main thread. What publishHotSet published last (null: no key hot).
  std::shared_ptr<const HotHashes> published() const;

  // Loop thread of worker `worker`, from its mailbox (off the request path): the worker's
  // slot takes the set published last. Frees the worker's previous set when it was the last
  // holder. No-op for a worker index beyond this state's.
  void adoptHotSet(unsigned worker) noexcept;

  // Loop thread of worker `worker`; the request path. Whether the key hash `hash` is in the
  // hot set this worker adopted last: false before any, and for a worker index beyond this
  // state's (a test's hand-built cluster). No allocation, no lock, no atomic.
  bool isHot(unsigned worker, uint64_t hash) const noexcept {
    if (worker >= workers_) return false;
    const HotHashes* set = slots_[worker].hot.get();
    return set != nullptr && set->contains(hash);
  }

  // Loop thread of worker `worker`; the request path. One request for a hot key took `path`
  // (lb_hotkey_requests_total): a single-writer counter in the worker's slot.
  void countPath(unsigned worker, HotKeyPath path) noexcept {
    if (worker < workers_) slots_[worker].paths[static_cast<int>(path)].add();
  }
  // Any thread (the scrape). Requests that took `path`, summed over the workers.
  uint64_t pathCount(HotKeyPath path) const noexcept;

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
    // The hot set this worker adopted: written by adoptHotSet and read by isHot, both on
    // the worker's loop, so a plain pointer load on the request path.
    std::shared_ptr<const HotHashes> hot;
    std::array<StatCounter, kHotKeyPaths> paths;   // the worker's; request path
  };
  const unsigned workers_;
  std::unique_ptr<Slot[]> slots_;
  SpaceSaving merged_;     // main thread
  HotKeyTracker tracker_;  // main thread
  // The set publishHotSet made last: written by the main thread, copied by each worker's
  // adoptHotSet, under publish_mu_ (once per change of the set, off the request path).
  mutable std::mutex publish_mu_;
  std::shared_ptr<const HotHashes> published_;
};

}  // namespace lb
