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

struct BackendState {
  BackendState(std::string cluster_name, std::string backend_name, unsigned worker_count)
      : cluster(std::move(cluster_name)),
        name(std::move(backend_name)),
        workers(worker_count),
        per_worker(std::make_unique<BackendWorkerStats[]>(worker_count)) {}
  BackendState(const BackendState&) = delete;
  BackendState& operator=(const BackendState&) = delete;

  const std::string cluster;
  const std::string name;
  // In-flight requests (L7) plus open connections (L4): the live load bounded loads see.
  // The only atomic read-modify-write on the request path.
  std::atomic<int64_t> live{0};
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
