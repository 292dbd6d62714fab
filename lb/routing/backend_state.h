// The state of one backend that outlives snapshots: its live-load counter (shared by every
// worker, read by bounded loads and the metrics), its health, and one statistics slot per
// worker. A reload that keeps a backend (same cluster and name) keeps its BackendState, so
// live counts, counters and health carry over.
//
// Health is written by one thread, the main thread's health manager (lb/health), and read by
// every worker's pick: the `healthy` flag, and the cluster's `panic` flag (ClusterState).
// Workers report what they saw of a backend (noteBackendFailure / noteBackendSuccess) into
// their own statistics slot, never into shared state: passive health costs the request path
// a few plain loads and stores, no lock and no read-modify-write.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "lb/core/stats.h"
#include "lb/hotkeys/hot_key_state.h"
#include "lb/routing/membership_status.h"
#include "lb/hotkeys/near_cache_state.h"
#include "lb/routing/handover_stats.h"

namespace lb {

// One active check's outcome; the result label of lb_backend_health_checks_total.
enum class CheckResult : uint8_t { kOk, kFail, kTimeout };
inline constexpr int kCheckResults = 3;
inline const char* checkResultName(CheckResult r) noexcept {
  static constexpr const char* kNames[] = {"ok", "fail", "timeout"};
  return kNames[static_cast<int>(r)];
}

// Why a backend is or is not picked, as /backends shows it.
enum class HealthStatus : uint8_t {
  kUp,        // picked
  kDown,      // its active checks failed `fall` times in a row
  kEjected,   // passive outlier detection took it out for a while
};
inline const char* healthStatusName(HealthStatus s) noexcept {
  static constexpr const char* kNames[] = {"up", "down", "ejected"};
  return kNames[static_cast<int>(s)];
}

// What the health manager knows of a backend, for /metrics and /backends. The counters may
// be read from any thread; the other fields are written and read on the main thread only
// (the health manager and the admin server share its loop).
struct HealthRecord {
  std::array<StatCounter, kCheckResults> checks;   // lb_backend_health_checks_total
  std::array<StatCounter, 2> transitions;          // [0] to up, [1] to down
  StatCounter ejections;                           // lb_backend_ejections_total
  // Restarts its checks saw only by the server's new identity (lb_backend_restarts_total).
  StatCounter restarts;

  HealthStatus status = HealthStatus::kUp;
  std::string reason;                  // the last health event's reason; "" before any
  bool checked = false;                // a check has completed
  CheckResult last_result = CheckResult::kOk;
  double last_check_at = 0;            // seconds since the epoch, when the last check ended
  double last_check_seconds = 0;       // how long it took
  uint64_t ejection_ms = 0;            // the length of the current (or last) ejection
};

// The live load of a whole cluster, kept equal to the sum of its backends' `live` as they
// change, so a bounded-load pick reads one counter instead of summing every host (a scattered
// cache line per host: O(hosts) per request at 1,000-host fleets). Shared by the cluster's
// BackendStates and, like them, kept across reloads.
struct ClusterLoadState {
  std::atomic<int64_t> live{0};
};

struct BackendState {
  BackendState(std::string cluster_name, std::string backend_name, unsigned worker_count,
               std::shared_ptr<ClusterLoadState> cluster_state =
                   std::make_shared<ClusterLoadState>())
      : cluster(std::move(cluster_name)),
        name(std::move(backend_name)),
        cluster_load(std::move(cluster_state)),
        workers(worker_count),
        per_worker(std::make_unique<BackendWorkerStats[]>(worker_count)) {}
  BackendState(const BackendState&) = delete;
  BackendState& operator=(const BackendState&) = delete;

  const std::string cluster;
  const std::string name;
  // In-flight requests (L7) plus open connections (L4): the live load bounded loads see.
  // Changed only through addLive/tryAddLive/dropLive, which keep cluster_load in step: two
  // relaxed read-modify-writes per request, the only atomics on the request path.
  std::atomic<int64_t> live{0};
  const std::shared_ptr<ClusterLoadState> cluster_load;

  void addLive() noexcept {
    live.fetch_add(1, std::memory_order_relaxed);
    cluster_load->live.fetch_add(1, std::memory_order_relaxed);
  }
  void dropLive(int64_t units = 1) noexcept {
    live.fetch_sub(units, std::memory_order_relaxed);
    cluster_load->live.fetch_sub(units, std::memory_order_relaxed);
  }
  // One more unit of live load, only while that keeps it at or under `cap`: a compare-and-swap,
  // so of two workers racing for a host's last slot exactly one gets it, and the bounded-load
  // cap holds across workers (a load-then-add could overshoot it by workers - 1).
  bool tryAddLive(uint64_t cap) noexcept {
    int64_t cur = live.load(std::memory_order_relaxed);
    while (cur < 0 || static_cast<uint64_t>(cur) < cap) {
      if (live.compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed)) {
        cluster_load->live.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }
  // False while health takes the backend out of every key's preference order (its checks
  // failed, or it is ejected). Written by the main thread; a new backend starts healthy.
  std::atomic<bool> healthy{true};
  // When health last brought the backend back (wall clock, ms; 0: never): a cluster with a
  // handover window ramps the backend's keys back to it from then (lb/routing/handover.h).
  // Written by the main thread.
  std::atomic<int64_t> returned_at_ms{0};
  const unsigned workers;
  const std::unique_ptr<BackendWorkerStats[]> per_worker;
  HealthRecord health;
};

// Loop thread of the worker that owns `s`. One failure of the backend (a failed connect, a
// reset before the answer, a 5xx, a timeout): counted by kind and added to the worker's run
// of consecutive failures. Single-writer stores only.
inline void noteBackendFailure(BackendWorkerStats& s, BackendFailure f) noexcept {
  s.failures[static_cast<int>(f)].add();
  s.failures_total.add();
}

// Loop thread of the worker that owns `s`. The backend answered: the worker's run of
// failures ends. Two loads and, only after a failure, one store.
inline void noteBackendSuccess(BackendWorkerStats& s) noexcept {
  const uint64_t total = s.failures_total.get();
  const uint64_t at = s.failures_at_success.get();
  if (at != total) s.failures_at_success.add(total - at);
}

// Cluster-wide state that outlives snapshots, keyed by cluster name.
struct ClusterState {
  explicit ClusterState(std::string cluster_name, unsigned worker_count = 1)
      : name(std::move(cluster_name)),
        hot_keys(worker_count),
        near_cache(worker_count),
        handover(worker_count) {}
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  const std::string name;
  // Fewer than panic_threshold percent of the backends are healthy: every pick ignores
  // health and routes by the table (lb_cluster_panic). Written by the main thread.
  std::atomic<bool> panic{false};
  // The cluster's membership source, as /backends and the metrics show it. Main thread only.
  MembershipStatus membership;
  // Hot-key detection: each worker's summary (request path) and the main thread's hot set
  // (/hotkeys, lb_hotkey_* metrics). Kept across reloads with the rest of this state.
  HotKeyState hot_keys;
  // The near cache's shared write stripes and per-worker counters (hot_keys.near_cache).
  NearCacheState near_cache;
  // The redis and memcached read-through's counters (lb_handover_reads_total, ...).
  HandoverStats handover;
  // The end of the latest return window among the cluster's backends (wall clock, ms; 0:
  // none open): the pick reads only this until a backend comes back. The main thread raises
  // it; the first pick past it sets it back to 0.
  std::atomic<int64_t> returns_until_ms{0};
};

// Listener-side state that outlives snapshots, keyed by listener name.
struct ListenerState {
  ListenerState(std::string listener_name, unsigned worker_count)
      : name(std::move(listener_name)),
        workers(worker_count),
        per_worker(std::make_unique<ListenerWorkerStats[]>(worker_count)) {}
  ListenerState(const ListenerState&) = delete;
  ListenerState& operator=(const ListenerState&) = delete;

  const std::string name;
  const unsigned workers;
  const std::unique_ptr<ListenerWorkerStats[]> per_worker;
};

}  // namespace lb
