#include "lb/app/lifecycle.h"

#include <signal.h>

#include <exception>

#include "lb/admin/admin.h"
#include "lb/app/resolver.h"
#include "lb/config/config.h"
#include "lb/core/log.h"
#include "lb/app/worker_group.h"
#include "lb/app/service_notify.h"
#include "lb/upgrade/upgrade.h"
#include "lb/admin/process_metrics.h"
#include "lb/health/health_manager.h"
#include "lb/membership/membership_tls.h"
#include "lb/core/duration.h"
#include "lb/routing/readdress.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/listener.h"

namespace lb {

namespace {
// How often the drain looks at the in-flight count: a drain ends at most this late.
constexpr uint64_t kDrainPollMs = 20;

// The listeners of `next` that the workers would open anew (Worker keeps a listener whose
// name, address and protocol are unchanged), each probed with a bind; an error for each that
// cannot be bound, at its position in the file.
Errors checkNewListenersBind(const Snapshot& next, const Config& running) {
  Errors errors;
  for (const ListenerSnapshot& ls : next.listeners) {
    const ListenerConfig& lc = *ls.config;
    bool kept = false;
    for (const ListenerConfig& old : running.listeners)
      kept |= old.name == lc.name && old.listen == lc.listen && old.protocol == lc.protocol;
    std::string why;
    if (!kept && !probeBind(ls, &why))
      errors.push_back({next.config.file, lc.pos, "listeners." + lc.name + ".listen", why});
  }
  return errors;
}
}  // namespace

Lifecycle::Lifecycle(uv_loop_t* loop, WorkerGroup& server, std::string config_path,
                     uint64_t generation)
    : loop_(loop), server_(server), config_path_(std::move(config_path)), generation_(generation) {}

void Lifecycle::start() {
  if (started_) return;
  started_ = true;
  struct {
    uv_signal_t* handle;
    int signum;
  } signals[] = {{&sighup_, SIGHUP}, {&sigterm_, SIGTERM}, {&sigint_, SIGINT},
                 {&sigusr2_, SIGUSR2}};
  for (auto& s : signals) {
    uv_signal_init(loop_, s.handle);
    s.handle->data = this;
    uv_signal_start(s.handle, onSignal, s.signum);
  }
  uv_timer_init(loop_, &drain_timer_);
  drain_timer_.data = this;
  uv_timer_init(loop_, &leaving_timer_);
  leaving_timer_.data = this;
}

void Lifecycle::onSignal(uv_signal_t* s, int signum) {
  auto* self = static_cast<Lifecycle*>(s->data);
  if (signum == SIGHUP) {
    if (self->draining_) {
      LB_WARN("SIGHUP during drain: ignored");
      return;
    }
    LB_INFO("SIGHUP: reloading %s", self->config_path_.c_str());
    try {
      self->reload();
    } catch (const std::exception& e) {   // out of memory reading or building: nothing applied
      self->reloadFailed({{self->config_path_, {}, "", e.what()}});
    }
    return;
  }
  if (signum == SIGUSR2) {
    LB_INFO("SIGUSR2: upgrading");
    try {
      self->upgrade();
    } catch (const std::exception& e) {   // out of memory: nothing started
      LB_ERROR("upgrade failed: %s; this lb keeps serving", e.what());
    }
    return;
  }
  if (self->draining_) {
    LB_WARN("%s during drain: stopping now", signum == SIGINT ? "SIGINT" : "SIGTERM");
    self->finish();
    return;
  }
  LB_INFO("%s: draining", signum == SIGINT ? "SIGINT" : "SIGTERM");
  self->beginDrain();
}

void Lifecycle::reload() {
  if (batch_ != nullptr) {
    // One reload at a time; the file is read again once this one ends, so the last SIGHUP
    // always sees the last edit.
    reload_again_ = true;
    LB_INFO("reload: the previous one is still resolving names; reloading again after it");
    return;
  }
  notifyReloading();
  Result<std::string> text = readConfigFile(config_path_);
  if (!text.ok()) {
    reloadFailed(text.errors());
    return;
  }
  // The file's host names are looked up on libuv's thread pool while the main loop goes on
  // answering the admin endpoints and running health checks; a slow DNS server once held
  // them all for up to kResolveWait, and checks in flight then timed out. The first read
  // only learns the names; the second, once they have answered, is the reload.
  NameCollector collector;
  (void)loadConfigString(text.value(), config_path_, &collector);
  if (collector.names().empty()) {
    finishReload(text.value(), AnsweredResolver({}, {}));
    return;
  }
  batch_ = ResolveBatch::start(
      loop_, collector.names(), kResolveWait,
      [this, file = std::move(text.value())](const std::vector<std::string>& asked,
                                             const std::vector<ResolveAnswer>& answers) {
        batch_ = nullptr;
        try {
          finishReload(file, AnsweredResolver(asked, answers));
          if (reload_again_ && !draining_ && !finished_) {
            reload_again_ = false;
            reload();
          }
        } catch (const std::exception& e) {   // as in onSignal
          reloadFailed({{config_path_, {}, "", e.what()}});
        }
      });
}

void Lifecycle::reloadFailed(const Errors& errors) {
  for (const auto& e : errors) LB_ERROR("reload: %s", e.format().c_str());
  LB_ERROR("reload failed (%zu error%s): still running generation %llu", errors.size(),
           errors.size() == 1 ? "" : "s", static_cast<unsigned long long>(generation_));
  noteReload(admin_, false);
  // READY=1 follows a refused reload too: lb keeps serving the generation it had.
  notifyReady(generation_);
}

void Lifecycle::finishReload(const std::string& text, AnsweredResolver resolver) {
  auto loaded = loadConfigString(text, config_path_, &resolver);
  if (!loaded.ok()) return reloadFailed(loaded.errors());
  Errors warnings;
  if (Errors errors = checkServes(loaded.value(), &warnings); !errors.empty())
    return reloadFailed(errors);
  for (const auto& w : warnings) LB_WARN("reload: %s", w.format().c_str());
  Config config = std::move(loaded.value());
  const Config& running = server_.snapshot()->config;
  // Worker threads and the admin socket are set up once; say so rather than half-apply.
  if (config.workers != running.workers)
    LB_WARN("reload: lb.workers changed (%u -> %u): takes effect on restart", running.workers,
            config.workers);
  if (config.admin_listen != running.admin_listen)
    LB_WARN("reload: admin.listen changed (%s -> %s): takes effect on restart",
            running.admin_listen.c_str(), config.admin_listen.c_str());
  // A membership cluster keeps what etcd (or the state file) gave it: the file's backends are
  // only its fallback.
  BackendOrigins origins;
  ResolvedHosts hosts = resolver.hosts();
  if (membership_.overlay)
    if (Errors kept = membership_.overlay(config, origins, hosts); !kept.empty())
      return reloadFailed(kept);
  // A membership's CA or client certificate that does not load is refused like a cluster's
  // own tls files: the reload changes nothing, and the watch keeps its client.
  if (Errors tls = checkMembershipTls(config); !tls.empty()) return reloadFailed(tls);
  auto built = buildSnapshot(std::move(config), server_.registry(), generation_ + 1, &hosts,
                             &origins, server_.snapshot().get());
  if (!built.ok()) return reloadFailed(built.errors());
  std::shared_ptr<const Snapshot> snap = built.value();
  // Every listener the workers would open must be bindable before anything changes: a
  // worker that cannot bind leaves its listener closed, and the old one is gone by then.
  if (Errors unbindable = checkNewListenersBind(*snap, running); !unbindable.empty())
    return reloadFailed(unbindable);
  ++generation_;
  setLogLevel(snap->config.log_level);
  apply(snap);
  if (membership_.reloaded) membership_.reloaded(*snap);
  noteReload(admin_, true);
  LB_INFO("reloaded %s: generation %llu, %zu listener%s, %zu cluster%s", config_path_.c_str(),
          static_cast<unsigned long long>(generation_), snap->listeners.size(),
          snap->listeners.size() == 1 ? "" : "s", snap->clusters.size(),
          snap->clusters.size() == 1 ? "" : "s");
  notifyReady(generation_);
}

void Lifecycle::apply(std::shared_ptr<const Snapshot> snapshot) {
  server_.applySnapshot(snapshot);
  if (health_ != nullptr) health_->apply(std::move(snapshot));
  scheduleLeaving();
}

void Lifecycle::scheduleLeaving() {
  const std::shared_ptr<const Snapshot> running = server_.snapshot();
  if (!started_ || finished_ || running == nullptr) return;
  const int64_t until = leavingUntil(*running);
  if (until == 0) {
    uv_timer_stop(&leaving_timer_);
    return;
  }
  const int64_t wait = until - wallClockMs();
  uv_timer_start(&leaving_timer_, onLeavingTimer, wait > 0 ? static_cast<uint64_t>(wait) : 0, 0);
}

void Lifecycle::onLeavingTimer(uv_timer_t* t) {
  static_cast<Lifecycle*>(t->data)->dropLeaving();
}

void Lifecycle::dropLeaving() {
  if (finished_) return;
  const std::shared_ptr<const Snapshot> running = server_.snapshot();
  if (running == nullptr) return;
  const int64_t now = wallClockMs();
  const int64_t until = leavingUntil(*running);
  if (until == 0 || now < until) return scheduleLeaving();   // the wall clock stepped back
  try {
    std::shared_ptr<const Snapshot> next = withoutLeaving(*running, generation_ + 1, now);
    for (size_t ci = 0; ci < running->clusters.size(); ++ci) {
      const ClusterSnapshot& was = running->clusters[ci];
      for (size_t bi = next->clusters[ci].backends.size(); bi < was.backends.size(); ++bi)
        LB_INFO("cluster %s: handover window over; leaving backend %s is no longer contacted",
                was.config->name.c_str(), was.backends[bi].config->name.c_str());
    }
    ++generation_;
    apply(std::move(next));
  } catch (const std::exception& e) {   // out of memory: try again in a second
    LB_WARN("handover: cannot drop the leaving backends yet: %s", e.what());
    uv_timer_start(&leaving_timer_, onLeavingTimer, 1000, 0);
  }
}

bool Lifecycle::applyConfig(Config config, const ResolvedHosts& hosts,
                            const BackendOrigins& origins, Errors* errors) {
  if (draining_ || finished_) {
    errors->push_back({config.file, {}, "", "lb is stopping"});
    return false;
  }
  auto built = buildSnapshot(std::move(config), server_.registry(), generation_ + 1, &hosts,
                             &origins, server_.snapshot().get());
  if (!built.ok()) {
    *errors = built.errors();
    return false;
  }
  ++generation_;
  apply(built.value());
  return true;
}

void Lifecycle::dropReload() {
  if (batch_ == nullptr) return;
  batch_->abandon();
  batch_ = nullptr;
  reload_again_ = false;
  LB_WARN("reload: dropped while resolving names (lb is stopping)");
}

void Lifecycle::upgrade() {
  if (upgrade_ != nullptr) {
    // Its outcome is the one `lb upgrade` waits for: nothing is written over it.
    LB_WARN("upgrade refused: one is already running");
    return;
  }
  if (draining_ || finished_) return Upgrade::refuse("this lb is draining");
  UpgradeHooks hooks;
  hooks.sockets = [this](std::vector<int>* fds, int* admin) {
    for (unsigned i = 0; i < server_.workerCount(); ++i) server_.worker(i).dupListeningSockets(fds);
    *admin = dupAdminSocket(admin_);
  };
  hooks.health = [this] { return health_ != nullptr ? health_->carry() : std::vector<HealthCarry>{}; };
  hooks.generation = processGeneration();
  hooks.ready = [this](pid_t pid) {
    // systemd follows the new process; this one leaves quietly (no STOPPING=1: the service
    // is not stopping), and its admin socket is the new one's to answer from now on.
    notifyMainPid(pid);
    upgraded_ = true;
    stopAdminAccepting(admin_);
    beginDrain();
  };
  hooks.done = [this](Upgrade* u) {
    if (upgrade_ == u) upgrade_ = nullptr;
  };
  upgrade_ = Upgrade::start(loop_, {"lb", "--config", config_path_}, std::move(hooks));
}

void Lifecycle::beginDrain() {
  if (draining_ || finished_) return;
  draining_ = true;
  if (upgrade_ != nullptr) upgrade_->abandon();   // no-op when it is the upgrade that drains us
  if (!upgraded_) notifyStopping();
  dropReload();
  if (membership_.stop) membership_.stop();
  const Duration timeout = server_.snapshot()->config.drain_timeout;
  server_.beginDrain();
  drain_deadline_ = uv_now(loop_) + static_cast<uint64_t>(timeout.count());
  LB_INFO("draining: %zu in flight, waiting up to %lld ms", server_.inFlight(),
          static_cast<long long>(timeout.count()));
  drainTick();
}

void Lifecycle::onDrainTick(uv_timer_t* t) { static_cast<Lifecycle*>(t->data)->drainTick(); }

void Lifecycle::drainTick() {
  if (finished_) return;
  size_t left = server_.inFlight();
  // After an upgrade the admin socket is the new process's, but the connections this one
  // accepted before are answered to the end (each answer closes its connection).
  if (upgraded_) left += adminConnections(admin_);
  if (left == 0) {
    LB_INFO("drained: nothing in flight");
    finish();
    return;
  }
  if (uv_now(loop_) >= drain_deadline_) {
    LB_WARN("drain timeout: closing %zu still in flight", left);
    finish();
    return;
  }
  uv_timer_start(&drain_timer_, onDrainTick, kDrainPollMs, 0);
}

void Lifecycle::finish() {
  if (finished_) return;
  finished_ = true;
  dropReload();
  if (membership_.stop) membership_.stop();
  stopAdmin(admin_);
  admin_ = nullptr;
  if (health_ != nullptr) health_->stop();
  health_ = nullptr;
  if (upgrade_ != nullptr) upgrade_->abandon();
  for (uv_signal_t* s : {&sighup_, &sigterm_, &sigint_, &sigusr2_})
    uv_close(reinterpret_cast<uv_handle_t*>(s), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&drain_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&leaving_timer_), nullptr);
}

}  // namespace lb
