#include "lb/membership/membership_source.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <utility>

#include "lb/core/log.h"
#include "lb/membership/etcd_client.h"

namespace lb {

namespace {

// The backoff after a failure: 100 ms doubling to 5 s (etcd's own clients back off from
// tens of milliseconds to a few seconds; a lost etcd is not lb's outage, so there is no hurry).
constexpr uint64_t kBackoffFirstMs = 100;
constexpr uint64_t kBackoffMaxMs = 5000;
// Each request's attempt: connect plus the whole reply. A member without a leader times out;
// the client then tries the next one.
constexpr Duration kRequestTimeout{1500};

double nowSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

uint64_t backoffMs(uint32_t failures) {
  uint64_t d = kBackoffFirstMs;
  for (uint32_t i = 1; i < failures && d < kBackoffMaxMs; ++i) d *= 2;
  d = std::min(d, kBackoffMaxMs);
  // Jitter: a random point in [d/2, d].
  static thread_local std::minstd_rand rng{std::random_device{}()};
  return d / 2 + rng() % (d / 2 + 1);
}

}  // namespace

const char* sourceStateName(SourceState s) noexcept {
  static constexpr const char* kNames[] = {"starting", "ranging", "watching", "reconnecting",
                                           "stopped"};
  return kNames[static_cast<int>(s)];
}

MembershipSource* MembershipSource::start(uv_loop_t* loop, std::string cluster,
                                          MembershipConfig config, int64_t served, Hooks hooks,
                                          std::shared_ptr<const TlsClientContext> tls,
                                          std::string* error) {
  std::vector<EtcdEndpoint> endpoints;
  for (const std::string& url : config.etcd) {
    EtcdEndpoint ep;
    if (!parseEtcdUrl(url, &ep, error)) return nullptr;
    endpoints.push_back(std::move(ep));
  }
  if (endpoints.empty()) {
    *error = "no etcd endpoint";
    return nullptr;
  }
  EtcdCredentials credentials;
  credentials.tls = std::move(tls);
  credentials.user = config.user;
  credentials.password = config.password;
  auto client = std::make_unique<EtcdClient>(loop, std::move(endpoints), kRequestTimeout,
                                             std::move(credentials));
  auto* s = new MembershipSource(loop, std::move(cluster), std::move(config), served,
                                 std::move(hooks), std::move(client));
  s->range(false);
  return s;
}

MembershipSource::MembershipSource(uv_loop_t* loop, std::string cluster, MembershipConfig config,
                                   int64_t served, Hooks hooks,
                                   std::unique_ptr<EtcdClient> client)
    : loop_(loop),
      cluster_(std::move(cluster)),
      config_(std::move(config)),
      hooks_(std::move(hooks)),
      client_(std::move(client)),
      plan_(served, static_cast<uint64_t>(config_.min_apply_interval.count())) {
  for (uv_timer_t* t : {&retry_, &apply_, &reconcile_}) {
    uv_timer_init(loop_, t);
    t->data = this;
    ++open_handles_;
  }
  const auto every = static_cast<uint64_t>(config_.reconcile_interval.count());
  uv_timer_start(&reconcile_, onReconcile, every, every);
  status_.endpoint = client_->currentEndpoint().url;
}

MembershipSource::~MembershipSource() = default;

void MembershipSource::setState(SourceState s) {
  if (status_.state == s) return;
  status_.state = s;
  if (hooks_.changed) hooks_.changed();
}

void MembershipSource::synced() {
  status_.last_sync = nowSeconds();
  if (hooks_.changed) hooks_.changed();
}

void MembershipSource::range(bool reconciling) {
  if (stopped_ || ranging_) return;
  ranging_ = true;
  if (!reconciling) setState(SourceState::kRanging);
  client_->range(config_.key, [this, reconciling](const EtcdRangeReply* reply,
                                                  const EtcdError* error) {
    ranging_ = false;
    onRange(reply, error, reconciling);
  });
}

void MembershipSource::onRange(const EtcdRangeReply* reply, const EtcdError* error,
                               bool reconciling) {
  if (stopped_) return;
  status_.endpoint = client_->currentEndpoint().url;
  if (error != nullptr) {
    settled_ = true;
    if (reconciling && status_.watch_up) {
      // The watch still runs; the next reconciliation tries again.
      LB_WARN("membership: cluster %s: reconciling range failed at %s: %s", cluster_.c_str(),
              error->endpoint.c_str(), error->message.c_str());
      return;
    }
    failed("range", *error);
    return;
  }
  failures_ = 0;
  synced();
  if (reply->kv && reply->kv->mod_revision == plan_.served() && hooks_.confirmed) {
    hooks_.confirmed(reply->kv->mod_revision);
  } else if (reply->kv) {
    MembershipUpdate u;
    u.revision = reply->kv->mod_revision;
    u.document = reply->kv->value;
    offer(std::move(u));
  } else if (!settled_ || !reconciling) {
    LB_WARN("membership: cluster %s: key %s not found in etcd (revision %lld); keeping what "
            "it serves",
            cluster_.c_str(), config_.key.c_str(), static_cast<long long>(reply->revision));
  }
  settled_ = true;
  // A reconciling Range answered by another member than the watch's: the watch's member may
  // be gone without its stream saying so; watch from where the Range read, there.
  const bool moved = reconciling && status_.watch_up && watch_endpoint_ != status_.endpoint;
  if (!reconciling || !client_->watching() || moved) watchFrom(reply->revision + 1);
}

void MembershipSource::watchFrom(int64_t revision) {
  if (stopped_) return;
  watch_endpoint_ = client_->currentEndpoint().url;
  status_.watch_up = false;
  setState(SourceState::kWatching);
  client_->watch(
      config_.key, revision,
      [this] {
        status_.watch_up = true;
        synced();
      },
      [this](const EtcdWatchBatch& batch) { onBatch(batch); },
      [this](const EtcdError& error) { onWatchEnd(error); });
}

void MembershipSource::onBatch(const EtcdWatchBatch& batch) {
  if (stopped_) return;
  synced();
  // All events of one message together: the last one of the key decides.
  const EtcdWatchEvent* last = nullptr;
  for (const EtcdWatchEvent& e : batch.events)
    if (e.kv.key == config_.key) last = &e;
  if (last == nullptr) return;
  MembershipUpdate u;
  u.revision = last->kv.mod_revision;
  u.deleted = last->deleted;
  if (!u.deleted) u.document = last->kv.value;
  offer(std::move(u));
}

void MembershipSource::onWatchEnd(const EtcdError& error) {
  if (stopped_) return;
  status_.watch_up = false;
  watch_endpoint_.clear();
  if (error.kind == EtcdFailure::kCompacted) {
    // Revisions we have not seen are gone from the history: the key as it is now is what
    // counts, and a Range reads it.
    LB_WARN("membership: cluster %s: watch start compacted (compact_revision %lld); reading "
            "the key again",
            cluster_.c_str(), static_cast<long long>(error.compact_revision));
    range(false);
    return;
  }
  failed("watch", error);
}

void MembershipSource::failed(const std::string& what, const EtcdError& error) {
  ++failures_;
  const uint64_t wait = backoffMs(failures_);
  LB_WARN("membership: cluster %s: %s failed at %s: %s; retrying in %llu ms at the next "
          "endpoint",
          cluster_.c_str(), what.c_str(), error.endpoint.c_str(), error.message.c_str(),
          static_cast<unsigned long long>(wait));
  client_->cancelWatch();
  client_->useNextEndpoint();
  status_.endpoint = client_->currentEndpoint().url;
  status_.watch_up = false;
  setState(SourceState::kReconnecting);
  uv_timer_start(&retry_, onRetry, wait, 0);
}

void MembershipSource::onRetry(uv_timer_t* t) {
  static_cast<MembershipSource*>(t->data)->range(false);
}

void MembershipSource::onReconcile(uv_timer_t* t) {
  auto* self = static_cast<MembershipSource*>(t->data);
  // Only beside a running watch: otherwise a Range is already on its way.
  if (self->status_.state == SourceState::kWatching) self->range(true);
}

void MembershipSource::offer(MembershipUpdate u) {
  const int64_t revision = u.revision;
  if (!plan_.offer(std::move(u))) {
    if (revision < plan_.newest() && hooks_.older) {
      hooks_.older(revision, plan_.newest());
      return;
    }
    LB_DEBUG("membership: cluster %s: revision %lld is not newer than %lld: ignored",
             cluster_.c_str(), static_cast<long long>(revision),
             static_cast<long long>(plan_.newest()));
    return;
  }
  pump();
}

void MembershipSource::pump() {
  if (stopped_ || building_) return;
  uint64_t wait = 0;
  if (!plan_.ready(uv_now(loop_), &wait)) {
    if (plan_.waiting() && wait > 0) uv_timer_start(&apply_, onApply, wait, 0);
    return;
  }
  MembershipUpdate u = plan_.take(uv_now(loop_));
  building_ = true;
  hooks_.build(u);
}

void MembershipSource::onApply(uv_timer_t* t) { static_cast<MembershipSource*>(t->data)->pump(); }

void MembershipSource::done(bool applied) {
  if (!building_) return;
  building_ = false;
  plan_.done(applied);
  pump();
}

void MembershipSource::reconfigure(const MembershipConfig& config) {
  const bool every_changed = config.reconcile_interval != config_.reconcile_interval;
  config_.max_remove_percent = config.max_remove_percent;
  config_.min_apply_interval = config.min_apply_interval;
  config_.reconcile_interval = config.reconcile_interval;
  config_.state_file = config.state_file;
  plan_.setInterval(static_cast<uint64_t>(config_.min_apply_interval.count()));
  if (every_changed && !stopped_) {
    const auto every = static_cast<uint64_t>(config_.reconcile_interval.count());
    uv_timer_start(&reconcile_, onReconcile, every, every);
  }
}

void MembershipSource::stop() {
  if (stopped_) return;
  stopped_ = true;
  status_.state = SourceState::kStopped;
  status_.watch_up = false;
  hooks_ = Hooks();
  for (uv_timer_t* t : {&retry_, &apply_, &reconcile_}) {
    uv_timer_stop(t);
    uv_close(reinterpret_cast<uv_handle_t*>(t), onClosed);
  }
  ++open_handles_;   // the client's close counts as one more
  client_->close([this] {
    if (--open_handles_ == 0) delete this;
  });
}

void MembershipSource::onClosed(uv_handle_t* h) {
  auto* self = static_cast<MembershipSource*>(h->data);
  if (--self->open_handles_ == 0) delete self;
}

}  // namespace lb
