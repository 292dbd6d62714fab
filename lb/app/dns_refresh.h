// Re-resolution of backend host names while lb runs (clusters.NAME.resolve_interval; docs/
// operations.md, "Backends by name"), on the main thread's loop.
//
// Every resolve_interval each cluster that sets one has its backends' host names looked up
// again (one ResolveBatch for every cluster due at that moment, lb/app/resolver.h). A name
// that now resolves to another address moves its backends there the way a reload would: the
// main thread derives a snapshot with the new addresses from the running one (lb/routing/
// readdress.h: same tables, so no key moves; same state, so counters and health stay) and
// hands it to the workers and to the health manager, whose checks move with the backend. A
// name that stops resolving keeps its last address; that is logged once when it starts
// failing and once when it resolves again, never at every interval. Each name looked up
// counts once in lb_dns_resolutions_total{result="ok"|"changed"|"failed"}.
//
// A reload resolves every name itself (a name that fails then refuses the reload, as at
// start), so a round that was in flight across a reload is dropped, and every cluster's
// interval starts again from the reload. Nothing runs while lb drains.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lb/app/resolver.h"
#include "lb/routing/snapshot.h"

namespace lb {

class Admin;
class WorkerGroup;

class DnsRefresh {
 public:
  // Where a snapshot with moved backends goes: to the workers and to the health manager, so
  // that the checks follow the backend (Lifecycle::apply).
  using Apply = std::function<void(std::shared_ptr<const Snapshot>)>;

  // Main thread. `server` and `loop` (the main loop) outlive this object; `server` is read
  // for the running snapshot, `apply` puts a new one live.
  DnsRefresh(uv_loop_t* loop, WorkerGroup& server, Apply apply);
  ~DnsRefresh();
  DnsRefresh(const DnsRefresh&) = delete;
  DnsRefresh& operator=(const DnsRefresh&) = delete;

  // Main thread. Starts watching the running snapshot's intervals. The timer does not keep
  // the loop alive: when everything else has closed, the main loop ends regardless.
  void start();
  // Main thread. Where to count resolutions (null allowed). Cleared by stop().
  void setAdmin(Admin* admin) { admin_ = admin; }
  // Main thread. Stops: drops a round in flight and closes the timer; the caller then runs
  // the loop once more so the close completes before this object is destroyed. Idempotent.
  void stop();

 private:
  static void onTick(uv_timer_t* timer);
  void tick();
  // The round that began on `base` for the clusters `due` (indexes into base->clusters).
  void onAnswers(const std::shared_ptr<const Snapshot>& base, const std::vector<uint32_t>& due,
                 const std::vector<std::string>& names,
                 const std::vector<ResolveAnswer>& answers);
  // Arms the timer for the next cluster due, looking again within a second at most so that a
  // reload's new intervals are seen.
  void schedule();

  uv_loop_t* loop_;
  WorkerGroup& server_;
  Apply apply_;
  Admin* admin_ = nullptr;
  uv_timer_t timer_;
  bool started_ = false;
  bool stopped_ = false;
  ResolveBatch* batch_ = nullptr;       // the round in flight
  uint64_t generation_ = 0;             // of the snapshot the due times below belong to
  std::map<std::string, uint64_t> due_; // cluster name -> uv_now() when it is next due
  std::set<std::string> failing_;       // names whose last lookup failed (logged once)
};

}  // namespace lb
