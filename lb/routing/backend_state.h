// The state of one backend that outlives snapshots: its live-load counter (shared by every
// worker, read by bounded loads and the metrics), its health, and one statistics slot per
// worker. A reload that keeps a backend (same cluster and name) keeps its BackendState, so
// live counts and counters carry over.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "lb/core/stats.h"

namespace lb {

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
  void dropLive() noexcept {
    live.fetch_sub(1, std::memory_order_relaxed);
    cluster_load->live.fetch_sub(1, std::memory_order_relaxed);
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
  std::atomic<bool> healthy{true};
  const unsigned workers;
  const std::unique_ptr<BackendWorkerStats[]> per_worker;
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
