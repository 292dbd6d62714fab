#include "lb/runtime/backend_attempt.h"

#include <atomic>

#include "lb/runtime/worker_env.h"

namespace lb {

void BackendAttempt::start(WorkerEnv& env, const ListenerSnapshot& listener,
                           const ClusterSnapshot& cluster) noexcept {
  release();
  env_ = &env;
  listener_ = &listener;
  cluster_ = &cluster;
  in_rotation_ = false;
  backend_ = nullptr;
  stats_ = nullptr;
  retries_used_ = 0;
}

void BackendAttempt::begin(WorkerEnv& env, const ListenerSnapshot& listener,
                           const ClusterSnapshot& cluster, uint64_t hash) noexcept {
  start(env, listener, cluster);
  hash_ = hash;
}

void BackendAttempt::beginKeyless(WorkerEnv& env, const ListenerSnapshot& listener,
                                  const ClusterSnapshot& cluster) noexcept {
  start(env, listener, cluster);
  if (listener.config->on_missing_key == OnMissingKey::kRoundRobin) {
    in_rotation_ = true;
    rotation_start_ = cluster.rotation.start(env.index());
  } else {
    hash_ = env.nextRandom();
  }
}

Pick BackendAttempt::walk(uint32_t from_attempt) const noexcept {
  if (in_rotation_)
    return pickInTableOrder(static_cast<uint32_t>(cluster_->backends.size()), rotation_start_,
                            *cluster_->loads, from_attempt);
  return cluster_->pick(hash_, from_attempt, Reserve::kYes);
}

bool BackendAttempt::pickFirst() noexcept {
  release();
  retries_used_ = 0;
  if (cluster_->backends.empty()) return false;
  const Pick p = walk(0);
  if (!cluster_->loads->usable(p.host)) return false;   // the fallback: every host is down
  take(p);
  return true;
}

bool BackendAttempt::pickNext() noexcept {
  release();
  const uint32_t hosts = static_cast<uint32_t>(cluster_->backends.size());
  if (backend_ == nullptr || retries_used_ >= cluster_->config->retries) return false;
  const uint32_t from = pick_.attempt + 1;
  if (from >= hosts) return false;   // every position of the order was tried
  Pick p = walk(from);
  // The selector's walk wraps around the order (position >= hosts is an earlier one again),
  // and bounded loads fall back to the least loaded host when all are at their cap, which may
  // be one already tried. A retry wants an untried host: the first usable one after `from`.
  if (p.attempt < from || p.attempt >= hosts || !cluster_->loads->usable(p.host)) {
    if (p.reserved) cluster_->backends[p.host].state->dropLive();   // not taking it after all
    if (in_rotation_) return false;   // the rotation's walk never wraps: nothing usable left
    bool found = false;
    for (uint32_t a = from; a < hosts; ++a) {
      const uint32_t h = cluster_->table->pick(hash_, a);
      if (cluster_->loads->usable(h)) {
        p = {h, a, PickReason::kFailover};
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  ++retries_used_;
  take(p);
  return true;
}

void BackendAttempt::pickSameAgain() noexcept {
  if (backend_ == nullptr || live_) return;
  backend_->state->addLive();
  live_ = true;
}

void BackendAttempt::take(Pick p) noexcept {
  pick_ = p;
  backend_ = &cluster_->backends[p.host];
  stats_ = &backend_->state->per_worker[env_->index()];
  stats_->picks[static_cast<int>(p.reason)].add();
  // The live load every worker's bounded-load pick reads: already taken when a bounded pick
  // reserved it (compare-and-swap under the cap), else added now.
  if (!p.reserved) backend_->state->addLive();
  live_ = true;
  if (in_rotation_) cluster_->rotation.advancePast(env_->index(), p.host);
}

UpstreamConn* BackendAttempt::connect(UpstreamOwner* owner, Pooling pooling, int* err) noexcept {
  UpstreamPool& pool = env_->upstreams();
  if (pooling == Pooling::kReuseIdle) {
    if (UpstreamConn* c = pool.take(*backend_, owner)) return c;
  }
  const auto timeout = static_cast<uint64_t>(listener_->config->timeouts.connect.count());
  return pool.connect(*backend_, owner, timeout, pooling != Pooling::kNever, err);
}

void BackendAttempt::release() noexcept {
  if (!live_) return;
  backend_->state->dropLive();
  live_ = false;
}

}  // namespace lb
