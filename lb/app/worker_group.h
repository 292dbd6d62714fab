// The proxy process: loads the config, starts the workers and the admin server, handles
// SIGHUP (reload) and SIGTERM/SIGINT (drain), and returns the exit code.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lb/app/builtin_protocols.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/worker.h"

namespace lb {

// `workers = 0` means one per core.
unsigned resolveWorkerCount(uint32_t configured);

// The workers and the snapshot they route with. Main thread only.
class WorkerGroup {
 public:
  explicit WorkerGroup(unsigned workers, const ProtocolTable& protocols = builtinProtocols());
  ~WorkerGroup();   // stops the workers
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  // Starts every worker on `snapshot`; false with *error when a listener cannot be bound
  // (the workers already started are stopped again).
  bool start(std::shared_ptr<const Snapshot> snapshot, std::string* error);
  // Hands a new snapshot to every worker (reload). Requests in flight finish on theirs.
  void applySnapshot(std::shared_ptr<const Snapshot> snapshot);
  // Every worker stops accepting; connections close after their current response.
  void beginDrain();
  // Active checks took `backend` down: every worker's sessions hear it (the health manager's
  // checked_down hook, lb/health/health_manager.h).
  void backendDown(const std::shared_ptr<BackendState>& backend);
  // Closes everything now and joins the threads. Idempotent.
  void stop();

  StateRegistry& registry() { return registry_; }
  std::shared_ptr<const Snapshot> snapshot() const { return snapshot_; }
  bool draining() const { return draining_; }
  // Any thread. Sessions still open on all workers: a drain ends when this reaches 0.
  size_t inFlight() const;
  unsigned workerCount() const { return static_cast<unsigned>(workers_.size()); }
  Worker& worker(unsigned i) { return *workers_[i]; }

 private:
  StateRegistry registry_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::shared_ptr<const Snapshot> snapshot_;
  bool draining_ = false;
};

int runServer(const std::string& config_path);

}  // namespace lb
