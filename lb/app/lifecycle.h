// The config lifecycle on the main thread's loop (docs/operations.md):
//   SIGHUP           reload: read the file, look its host names up on libuv's thread pool
//                    (the main loop keeps serving the admin endpoints and health checks),
//                    then validate the whole file, build a snapshot, bind-probe every
//                    listener it adds, hand it to every worker and to the health manager
//                    (backends that stay keep their health); a bad file or a listener that
//                    cannot be bound logs every error and changes nothing (counted as
//                    lb_config_reloads_total{result="failure"}). A SIGHUP during the lookups
//                    is answered by one more reload after this one.
//   SIGTERM, SIGINT  drain: stop accepting, /ready turns 503, wait for the in-flight
//                    requests and connections to finish or lb.drain_timeout to pass, then
//                    let the main loop end (the caller stops the workers and exits 0).
//                    A second signal during the drain ends it at once.
//   SIGUSR2          upgrade (lb/upgrade/upgrade.h): the binary at lb's own path takes the
//                    listening sockets and the health view; once it says ready this process
//                    drains as above (its admin socket is the new one's already, and /ready
//                    stays 200: the service is ready, only this process leaves).
// Each step is also told to the service manager (lb/app/service_notify.h): RELOADING=1 then
// READY=1 around a reload, STOPPING=1 when a drain begins.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "lb/core/result.h"
#include "lb/routing/snapshot.h"

namespace lb {

class Admin;
class Upgrade;
class AnsweredResolver;
class HealthManager;
class ResolveBatch;
class WorkerGroup;

// What a reload and a drain ask of the clusters' membership sources (lb/app/memberships.h).
struct MembershipHooks {
  // Before a reload builds: each membership cluster of `config` keeps the backends it
  // serves (its origins), with their names' addresses added to `hosts`. Errors refuse the
  // reload (a membership the new settings would not accept).
  std::function<Errors(Config& config, BackendOrigins& origins, ResolvedHosts& hosts)> overlay;
  // After a reload went live: start, restart or stop each cluster's source.
  std::function<void(const Snapshot& snapshot)> reloaded;
  // A drain began: every source stops.
  std::function<void()> stop;
};

class Lifecycle {
 public:
  // Main thread. `generation` is the running snapshot's.
  Lifecycle(uv_loop_t* loop, WorkerGroup& server, std::string config_path, uint64_t generation);
  Lifecycle(const Lifecycle&) = delete;
  Lifecycle& operator=(const Lifecycle&) = delete;

  // Main thread. Installs the signal handlers. The loop keeps running until the drain ends.
  void start();
  // Main thread. The admin server to tell about reloads and to stop when the drain ends
  // (null allowed). Lifecycle stops it; the caller must not.
  void setAdmin(Admin* admin) { admin_ = admin; }
  // Main thread. The health manager to hand each reloaded snapshot to and to stop when the
  // drain ends (null allowed). Lifecycle stops it; the caller must not.
  void setHealth(HealthManager* health) { health_ = health; }

  // Main thread. One reload attempt. Reads the file, looks its host names up without blocking
  // the loop, then validates, builds and applies (or refuses) it. A SIGHUP while names are
  // being looked up is not lost: one more reload follows this one.
  void reload();
  // Main thread. Puts `snapshot` live: to every worker, then to the health manager (a reload,
  // or DNS re-resolution moving backends to new addresses, lb/app/dns_refresh.h).
  void apply(std::shared_ptr<const Snapshot> snapshot);
  // Main thread. Builds `config` as the next generation, as a reload does (the registry keeps
  // the state of backends that stay), and puts it live: a cluster's new membership (lb/app/
  // memberships.h). False with *errors, and nothing changed, when it does not build.
  bool applyConfig(Config config, const ResolvedHosts& hosts, const BackendOrigins& origins,
                   Errors* errors);
  // Main thread. What reloads and the drain tell the membership sources.
  void setMembershipHooks(MembershipHooks hooks) { membership_ = std::move(hooks); }
  uint64_t generation() const { return generation_; }
  // Main thread. Starts the drain (idempotent).
  void beginDrain();
  bool draining() const { return draining_; }
  // Main thread. SIGUSR2: starts an upgrade unless one runs or lb drains.
  void upgrade();
  // Whether this process drains because an upgrade's new process serves in its place.
  bool upgraded() const { return upgraded_; }
  // Main thread. Closes every handle of ours (and the admin server); the main loop then
  // ends. Idempotent.
  void finish();

 private:
  static void onSignal(uv_signal_t* s, int signum);
  // The reload's second half, once its names have answered: live, or refused whole.
  void finishReload(const std::string& text, AnsweredResolver resolver);
  void reloadFailed(const Errors& errors);
  // A drain or a stop abandons a reload still resolving names: nothing may go live after.
  void dropReload();
  static void onDrainTick(uv_timer_t* t);
  void drainTick();
  // A handover window that keeps leaving backends ends: the running snapshot without them
  // goes live as the next generation (lb/routing/readdress.h, withoutLeaving).
  void scheduleLeaving();
  static void onLeavingTimer(uv_timer_t* t);
  void dropLeaving();

  uv_loop_t* loop_;
  WorkerGroup& server_;
  std::string config_path_;
  uint64_t generation_;
  Admin* admin_ = nullptr;
  HealthManager* health_ = nullptr;
  MembershipHooks membership_;
  ResolveBatch* batch_ = nullptr;   // a reload's names being looked up
  bool reload_again_ = false;       // a SIGHUP came meanwhile
  uv_signal_t sighup_;
  uv_signal_t sigterm_;
  uv_signal_t sigint_;
  uv_signal_t sigusr2_;
  Upgrade* upgrade_ = nullptr;      // the attempt running, if any
  bool upgraded_ = false;
  uv_timer_t drain_timer_;
  uv_timer_t leaving_timer_;
  bool started_ = false;
  bool draining_ = false;
  bool finished_ = false;
  uint64_t drain_deadline_ = 0;   // uv_now() when the drain gives up waiting
};

}  // namespace lb
