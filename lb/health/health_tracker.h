// The health of every backend of the running config, and what follows from it: the health
// manager (lb/health/health_manager.h) feeds it check results and a timer; it decides, and
// publishes what it decided where the workers and the admin server read it.
//
// A backend is picked (BackendState::healthy) while its active checks say up (rise/fall
// hysteresis, lb/health/hysteresis.h) and it is not ejected (lb/health/outlier.h). Each
// change of that is one transition: counted (lb_backend_health_transitions_total), logged
// once with its reason ("backend cache-b down: 3 checks timed out after 200ms (cluster
// cache)"), and shown in /backends. After each one the cluster's panic flag is recomputed:
// under panic_threshold percent healthy, every pick ignores health.
//
// Health only sets flags: no selector table is ever rebuilt for it, so a down backend's keys
// go to the next hosts of their own preference orders and nobody else's keys move.
//
// A reload keeps the state of every backend that stays (same cluster and name): its check
// runs, its ejection and its history. A new backend starts up (see CheckHysteresis).
//
// Pure: no libuv, time is a parameter (a monotonic clock in ms, and the wall clock for
// /backends), so the tests drive it with a fake clock. Main thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lb/health/hysteresis.h"
#include "lb/health/outlier.h"
#include "lb/routing/snapshot.h"

namespace lb {

// One backend's health as the lb before an upgrade saw it (lb/upgrade/upgrade.h): only backends
// out of rotation are carried, so that the new process does not try again what the old one
// knew was down (HAProxy's server-state-file does the same across a reload).
struct HealthCarry {
  std::string cluster;
  std::string backend;
  HealthStatus status = HealthStatus::kDown;   // kDown or kEjected
  bool checks_down = false;     // its active checks said down (also while ejected)
  uint64_t ejected_left_ms = 0;
  uint64_t ejection_ms = 0;     // the current ejection's whole length
  uint32_t repeats = 0;         // ejections in a row, for the next one's length
  std::string reason;
};

class HealthTracker {
 public:
  struct Backend {
    Backend(std::shared_ptr<BackendState> s, const ClusterConfig& cluster);

    std::shared_ptr<BackendState> state;
    size_t cluster = 0;                // index into the tracker's clusters
    std::string address;               // as configured, for the checker
    CheckHysteresis checks;
    Ejection ejection;
    FailureStreak streak;
    uint32_t timeouts_in_run = 0;      // how many of the current failed run timed out
    std::string last_detail;           // the last check's detail
    bool blocked_logged = false;       // max_ejected_percent kept it in; said so once
    bool usable = true;                // what BackendState::healthy says
    std::string identity;              // the server process its last identified pass named
    bool leaving = false;              // past its cluster's members: a return opens no window
  };

  struct Cluster {
    std::shared_ptr<ClusterState> state;
    const ClusterConfig* config = nullptr;   // in the snapshot the tracker holds
    std::vector<Backend*> backends;          // in config order
    // The first `members` backends are the table's hosts; those after are leaving
    // (lb/routing/handover.h): checked, but not counted for panic or max_ejected_percent.
    uint32_t members = 0;
  };

  HealthTracker() = default;
  HealthTracker(const HealthTracker&) = delete;
  HealthTracker& operator=(const HealthTracker&) = delete;

  // Takes the clusters and backends of `snapshot` (held until the next one): backends that
  // stay keep their state and get the new thresholds; checks or outlier detection that a
  // cluster no longer has stop counting against its backends (they come back at once); new
  // backends start up; the others are dropped. Panic flags are recomputed.
  void reconcile(std::shared_ptr<const Snapshot> snapshot);

  // One check of `backend` ended (`wall_seconds`: the time it ended, for /backends).
  // `identity`: the server process that passed, when the check learns it (CheckReply): a
  // new one while the backend stayed up is a restart its checks did not see fail, counted
  // (lb_backend_restarts_total), logged, and a return for the handover.
  void recordCheck(const BackendState* backend, CheckResult result, std::string_view detail,
                   double seconds, double wall_seconds, std::string_view identity = {});

  // Outlier detection, every few tens of milliseconds: ejections whose time is up end,
  // backends whose failure runs reached consecutive_failures are ejected (within
  // max_ejected_percent).
  void sweep(uint64_t now_ms);

  // Backends that their active checks took down since the last call, in a cluster not in
  // panic: the connections to them are dead weight (the manager has the workers end them).
  std::vector<std::shared_ptr<BackendState>> takeCheckedDown();

  // The backends out of rotation now, for the process that replaces this one.
  std::vector<HealthCarry> carry(uint64_t now_ms) const;
  // After the first reconcile of a process started by an upgrade: each carried backend that
  // this config still has (same cluster and name) starts down or ejected as it was. Its checks
  // go on as usual: `rise` passes bring it back. Returns how many were taken.
  size_t adopt(const std::vector<HealthCarry>& carried, uint64_t now_ms);

  Backend* find(const BackendState* state);
  const std::vector<Cluster>& clusters() const { return clusters_; }
  bool anyOutlierDetection() const;

 private:
  // Recomputes the backend's status and flag; a change is a transition (counted, logged
  // with `reason`, panic recomputed).
  void publish(Backend& b, const std::string& reason);
  // `b` is back (up again, or restarted under its checks): with a handover, its keys come
  // back warm over the window.
  void openReturnWindow(Backend& b, const Cluster& c);
  void updatePanic(Cluster& c);
  void endEjection(Backend& b, uint64_t now_ms, const Cluster& c);
  void maybeEject(Backend& b, uint64_t now_ms, Cluster& c, uint32_t* ejected);

  std::shared_ptr<const Snapshot> snapshot_;
  std::unordered_map<const BackendState*, std::unique_ptr<Backend>> backends_;
  std::vector<Cluster> clusters_;
  std::vector<std::shared_ptr<BackendState>> checked_down_;
};

}  // namespace lb
