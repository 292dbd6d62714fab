#include "lb/runtime/backend_attempt.h"

#include <atomic>
#include <tuple>

#include "lb/runtime/worker_env.h"

namespace lb {

// Every reason a pick can have has its counter in each worker's slot.
static_assert(std::tuple_size_v<decltype(BackendWorkerStats::picks)> == kPickReasonCount);

namespace {
// The cluster's loads as one command's pick sees them: a host the command already holds a
// unit on admits its further keys without taking another (CommandPicks' comment says why).
// Which admission, if any, took a unit is left in took_: BoundedLoad::pick reports
// reserved for every admission through a reserving view.
class CommandLoads final : public LoadView {
 public:
  CommandLoads(const ClusterLoads& base, const uint8_t* held, uint64_t held_units) noexcept
      : base_(base), held_(held), held_units_(held_units) {}
  uint64_t load(uint32_t host) const noexcept override { return base_.load(host); }
  // Without the command's own units: they raise every cap, which would move its later keys
  // back to a host its first keys found full, and split one command into two fragments.
  uint64_t totalLoad() const noexcept override {
    const uint64_t total = base_.totalLoad();
    return total > held_units_ ? total - held_units_ : 0;
  }
  bool usable(uint32_t host) const noexcept override { return base_.usable(host); }
  bool tryReserve(uint32_t host, uint64_t cap) const noexcept override {
    took_ = !held_[host] && base_.tryReserve(host, cap);
    return took_ || held_[host];
  }
  bool reserves() const noexcept override { return true; }
  bool took() const noexcept { return took_; }

 private:
  const ClusterLoads& base_;
  const uint8_t* held_;
  const uint64_t held_units_;
  mutable bool took_ = false;
};
}  // namespace

void CommandPicks::reserveHosts(size_t hosts) {
  if (held_.size() < hosts) held_.resize(hosts, 0);
  if (taken_.capacity() < hosts) taken_.reserve(hosts);
}

void CommandPicks::begin(WorkerEnv& env, const ListenerConfig& listener,
                         const ClusterSnapshot& cluster) noexcept {
  release();
  env_ = &env;
  listener_ = &listener;
  cluster_ = &cluster;
}

bool CommandPicks::pickForKey(uint64_t hash, uint32_t* host, uint32_t* from, bool read,
                              bool* from_copy) noexcept {
  const ClusterSnapshot& c = *cluster_;
  const CommandLoads loads(*c.loads, held_.data(), held_units_);
  PickContext ctx;
  ctx.reserve = Reserve::kYes;
  // A cache command never ramps a key over: its reads read through (handover_reads.h), its
  // writes go to the new owner.
  ctx.read_through = true;
  ctx.replica_read = read;
  // Only bounded loads weigh the command's own units; the health walk reads the cluster's
  // view directly, as every other pick does.
  if (c.bounded) ctx.loads = &loads;
  Pick p;
  if (!c.pick(hash, ctx, &p)) return false;
  p.reserved = loads.took();   // false unless the bounded step reserved through `loads`
  take(p);
  *host = p.host;
  if (from != nullptr) *from = p.from;
  if (from_copy != nullptr) *from_copy = p.from_copy;
  return true;
}

uint32_t CommandPicks::pickReplicas(uint64_t hash, uint32_t count, uint32_t* hosts) noexcept {
  Pick picks[kMaxCopies];
  if (count > kMaxCopies) count = kMaxCopies;
  const uint32_t n = cluster_->pickReplicas(hash, count, picks);
  for (uint32_t i = 0; i < n; ++i) {
    take(picks[i]);
    hosts[i] = picks[i].host;
  }
  return n;
}

bool CommandPicks::pickWithoutKey(uint32_t* host) noexcept {
  const ClusterSnapshot& c = *cluster_;
  if (c.backends.empty()) return false;
  switch (listener_->on_missing_key) {
    case OnMissingKey::kReject:
      return false;
    case OnMissingKey::kRandom:
      return pickForKey(env_->nextRandom(), host);
    case OnMissingKey::kRoundRobin: {
      PickContext ctx;
      ctx.order = PickOrder::kTable;
      Pick p;
      if (!c.pick(c.rotation.start(env_->index()), ctx, &p)) return false;
      c.rotation.advancePast(env_->index(), p.host);
      take(p);
      *host = p.host;
      return true;
    }
  }
  return false;
}

// The admission, as BackendAttempt::take: a host the command holds already is counted and
// not loaded twice.
void CommandPicks::take(const Pick& p) noexcept {
  const bool holds = held_[p.host] != 0;
  cluster_->admit(env_->index(), p, holds);
  if (holds) return;
  held_[p.host] = 1;
  ++held_units_;
  taken_.push_back(p.host);
}

bool CommandPicks::handOver(uint32_t host) noexcept {
  if (host >= held_.size() || !held_[host]) return false;
  held_[host] = 0;
  --held_units_;
  return true;
}

void CommandPicks::release() noexcept {
  for (uint32_t h : taken_) {
    if (!held_[h]) continue;
    held_[h] = 0;
    cluster_->backends[h].state->dropLive();
  }
  taken_.clear();
  held_units_ = 0;
}

void BackendAttempt::start(WorkerEnv& env, const ListenerSnapshot& listener,
                           const ClusterSnapshot& cluster) noexcept {
  release();
  env_ = &env;
  listener_ = &listener;
  cluster_ = &cluster;
  spread_ = 0;
  in_rotation_ = false;
  backend_ = nullptr;
  stats_ = nullptr;
  retries_used_ = 0;
}

void BackendAttempt::begin(WorkerEnv& env, const ListenerSnapshot& listener,
                           const ClusterSnapshot& cluster, uint64_t hash,
                           uint32_t spread) noexcept {
  start(env, listener, cluster);
  hash_ = hash;
  spread_ = spread;
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

PickContext BackendAttempt::context(uint32_t from_attempt) const noexcept {
  PickContext ctx;
  ctx.from_attempt = from_attempt;
  ctx.reserve = Reserve::kYes;
  ctx.spread = from_attempt == 0 ? spread_ : 0;
  ctx.order = in_rotation_ ? PickOrder::kTable : PickOrder::kKey;
  // Any copy of the key may answer a request (HTTP replicas: the one in lb's zone first).
  ctx.replica_read = true;
  return ctx;
}

bool BackendAttempt::pickFirst() noexcept {
  release();
  retries_used_ = 0;
  const ClusterSnapshot& c = *cluster_;
  Pick p;
  if (!c.pick(in_rotation_ ? rotation_start_ : hash_, context(0), &p)) return false;
  take(p);
  return true;
}

bool BackendAttempt::pickNext() noexcept {
  release();
  if (backend_ == nullptr || retries_used_ >= cluster_->config->retries) return false;
  const ClusterSnapshot& c = *cluster_;
  Pick p;
  if (!c.pick(in_rotation_ ? rotation_start_ : hash_, context(pick_.attempt + 1), &p))
    return false;
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
  stats_ = &cluster_->admit(env_->index(), p);
  live_ = true;
  if (in_rotation_) cluster_->rotation.advancePast(env_->index(), p.host);
}

UpstreamConn* BackendAttempt::connect(ConnectionOwner& owner, Pooling pooling, int* err) noexcept {
  UpstreamPool& pool = env_->upstreams();
  if (pooling == Pooling::kReuseIdle) {
    if (UpstreamConn* c = pool.take(*backend_, owner)) return c;
  }
  const auto timeout = static_cast<uint64_t>(listener_->config->timeouts.connect.count());
  return pool.connect(*backend_, owner, timeout, pooling != Pooling::kNever, err);
}

void BackendAttempt::reportConnectFailure(int status) noexcept {
  BackendFailure kind = BackendFailure::kConnectRefused;
  if (status == UV_ETIMEDOUT)
    kind = BackendFailure::kConnectTimeout;
  else if (status == UV_ECONNRESET || status == UV_EPIPE || status == UV_ECONNABORTED ||
           status == UV_EOF)
    kind = BackendFailure::kConnectReset;
  reportFailure(kind);
}

void BackendAttempt::reportFailure(BackendFailure kind) noexcept {
  if (stats_ != nullptr) noteBackendFailure(*stats_, kind);
}

void BackendAttempt::reportSuccess() noexcept {
  if (stats_ != nullptr) noteBackendSuccess(*stats_);
}

void BackendAttempt::release() noexcept {
  if (!live_) return;
  backend_->state->dropLive();
  live_ = false;
}

}  // namespace lb
