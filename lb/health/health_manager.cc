#include "lb/health/health_manager.h"

#include <chrono>

namespace lb {

namespace {

double wallSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

HealthManager* HealthManager::create(uv_loop_t* loop, HealthHooks hooks) {
  return new HealthManager(loop, std::move(hooks));
}

HealthManager::HealthManager(uv_loop_t* loop, HealthHooks hooks)
    : loop_(loop), hooks_(std::move(hooks)), rng_(uv_hrtime() | 1) {
  uv_timer_init(loop_, &sweep_);
  sweep_.data = this;
}

// xorshift64 (Marsaglia 2003): first-check delays and the checkers' jitter seeds.
uint64_t HealthManager::random() noexcept {
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  return rng_;
}

void HealthManager::apply(std::shared_ptr<const Snapshot> snapshot) {
  if (stopped_) return;
  tracker_.reconcile(snapshot);
  std::unordered_map<const BackendState*, BackendChecker*> next;
  for (const ClusterSnapshot& cs : snapshot->clusters) {
    if (!cs.config->health) continue;
    for (const BackendSnapshot& bs : cs.backends) {
      // A cluster with a handover gets its keys back warm after a return, so its checks
      // learn the server's identity: a restart quicker than `fall` is a return too.
      const bool identity = cs.config->handover && cs.config->handover->window.count() > 0;
      CheckSpec spec = checkSpecOf(*cs.config->health, bs.config->address, cs.config->password,
                                   identity);
      spec.tls = bs.tls;
      auto it = checkers_.find(bs.state.get());
      if (it != checkers_.end()) {
        BackendChecker* running = it->second;
        checkers_.erase(it);
        if (running->spec() == spec && running->probes(bs.address, bs.address_len)) {
          next.emplace(bs.state.get(), running);
          continue;
        }
        // New checks (type, target, timing), or the backend's name re-resolved to another
        // address: a new schedule there. The backend keeps its health state meanwhile.
        running->stop();
      }
      BackendChecker* c =
          BackendChecker::start(loop_, this, bs.state, spec, bs.address, bs.address_len,
                                random() % spec.interval_ms, random());
      if (c != nullptr) next.emplace(bs.state.get(), c);
    }
  }
  for (auto& [_, c] : checkers_) c->stop();   // backends (or checks) the config dropped
  checkers_ = std::move(next);

  const bool want_sweep = tracker_.anyOutlierDetection();
  if (want_sweep && !sweeping_)
    uv_timer_start(&sweep_, onSweep, kSweepMs, kSweepMs);
  else if (!want_sweep && sweeping_)
    uv_timer_stop(&sweep_);
  sweeping_ = want_sweep;
}

void HealthManager::onCheckDone(const BackendState* backend,
                                const ProbeOutcome& outcome) noexcept {
  try {
    tracker_.recordCheck(backend, outcome.result, outcome.detail, outcome.seconds,
                         wallSeconds(), outcome.identity);
    tellCheckedDown();
  } catch (...) {
    // Out of memory building a log line or a reason: the next check tries again.
  }
}

void HealthManager::onSweep(uv_timer_t* t) {
  auto* self = static_cast<HealthManager*>(t->data);
  try {
    self->tracker_.sweep(uv_now(self->loop_));
  } catch (...) {
  }
}

void HealthManager::tellCheckedDown() {
  for (const auto& s : tracker_.takeCheckedDown())
    if (hooks_.checked_down) hooks_.checked_down(s);
}

void HealthManager::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& [_, c] : checkers_) c->stop();
  checkers_.clear();
  uv_timer_stop(&sweep_);
  uv_close(reinterpret_cast<uv_handle_t*>(&sweep_), onClosed);
}

void HealthManager::onClosed(uv_handle_t* h) { delete static_cast<HealthManager*>(h->data); }

}  // namespace lb
