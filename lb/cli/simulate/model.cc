#include "lb/cli/simulate/model.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "lb/cli/simulate/lru_fleet.h"
#include "lb/cli/simulate/membership_plan.h"
#include "lb/cli/simulate/replica_model.h"
#include "lb/cli/simulate/workload.h"
#include "lb/routing/handover.h"
#include "lb/routing/snapshot.h"

namespace lb {

namespace {

// One membership as one proxy routes with it: the built table, the global server id of each
// table index, and bounded loads when on.
struct Ring {
  ClusterSnapshot routed;   // its table and bounded loads; the loads are the model's (SimLoads)
  std::vector<uint32_t> ids;
  // Each sampled key's owner (global id), filled on first use: keys are few and fixed, and a
  // pick can cost O(servers) (rendezvous), so a run picks each key once per ring.
  mutable std::vector<uint32_t> owner;
};

// What the picker sees: live load as the servers' share of the last kWindow requests (the
// in-flight requests of a real proxy), health as lb's checks have marked it.
class SimLoads final : public LoadView {
 public:
  SimLoads(const Ring& ring, const std::vector<uint64_t>& load, uint64_t total,
           const std::vector<uint8_t>& usable)
      : ring_(ring), load_(load), total_(total), usable_(usable) {}
  uint64_t load(uint32_t host) const noexcept override { return load_[ring_.ids[host]]; }
  uint64_t totalLoad() const noexcept override { return total_; }
  bool usable(uint32_t host) const noexcept override { return usable_[ring_.ids[host]] != 0; }

 private:
  const Ring& ring_;
  const std::vector<uint64_t>& load_;
  uint64_t total_;
  const std::vector<uint8_t>& usable_;
};

struct Action {
  enum class Kind { kSwitch, kCheck, kReach, kClear, kStop } kind;
  double t;
  uint32_t arg = 0;     // proxy (switch), server (reach, clear)
  bool value = false;   // reach: reachable
};

class Run {
 public:
  Run(const SimScenario& s, const SimSelector& sel, uint32_t factor, SimHandover handover,
      uint32_t replicas)
      : s_(s), sel_(sel), factor_(factor), handover_(handover), replicas_(replicas),
        rng_(s.seed * 0x9e3779b97f4a7c15ULL + 7) {}

  std::optional<SimResult> go(std::string& error);

 private:
  bool build(Ring& ring, const std::vector<uint32_t>& ids, std::string& error) const;
  uint32_t route(const Ring& ring, uint32_t key, bool count_retry);
  uint32_t ownerOf(const Ring& ring, uint32_t key) const;
  uint32_t previousOwner(const Ring& ring, uint32_t proxy, uint32_t key, uint32_t now,
                         double t, double& since);
  void request(double t);
  void apply(const Action& a);
  void setUp();

  const SimScenario& s_;
  const SimSelector& sel_;
  uint32_t factor_;
  SimHandover handover_;
  uint32_t replicas_;
  SimRng rng_;
  std::unique_ptr<SimWorkload> work_;
  std::unique_ptr<LruFleet> fleet_;
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> version_;
  std::vector<uint32_t> weights_;
  Ring old_, new_;
  std::vector<double> switch_at_;      // per proxy
  std::vector<uint8_t> on_new_;        // per proxy
  uint32_t proxies_on_new_ = 0;
  std::vector<uint8_t> reachable_, marked_, passes_, fails_;
  std::vector<uint8_t> in_new_;        // per server: a member of the new membership
  std::vector<double> back_at_;        // per server: when health last brought it back up
  std::vector<uint32_t> watched_;      // servers whose health may change
  std::vector<uint64_t> load_;
  std::vector<uint32_t> window_;
  size_t window_pos_ = 0;
  uint64_t window_total_ = 0;
  std::vector<Action> actions_;
  size_t next_action_ = 0;
  double writes_ = 0;
  // Per-step counters.
  uint64_t reads_ = 0, hits_ = 0, misses_ = 0, misdirected_ = 0, stale_ = 0, retries_ = 0,
           total_ = 0, handover_reads_ = 0, replica_reads_ = 0;
  std::vector<uint64_t> served_;
  uint32_t before_n_ = 0, after_n_ = 0;
  double last_change_ = 0;
  double event_t_ = 0;
};

bool Run::build(Ring& ring, const std::vector<uint32_t>& ids, std::string& error) const {
  std::vector<HostSpec> specs;
  for (const uint32_t id : ids) specs.push_back({"b" + std::to_string(id), weights_[id]});
  ring.ids = ids;
  ring.owner.assign(hashes_.size(), UINT32_MAX);
  ring.routed.table = simZoneTable(sel_.build(specs, sel_.options), ids, s_.zones);
  if (!ring.routed.table || ring.routed.hostCount() != specs.size()) {
    error = sel_.name + ": cannot build a table over " + std::to_string(specs.size()) + " hosts";
    return false;
  }
  if (factor_ > 0) ring.routed.bounded.emplace(specs, factor_);
  return true;
}

// lb's pick (ClusterSnapshot::pick) over what the checks have marked up;
// a server marked up but unreachable fails the attempt and lb retries further along the key's
// preference order (counted once per request as a retry).
uint32_t Run::ownerOf(const Ring& ring, uint32_t key) const {
  uint32_t& o = ring.owner[key];
  if (o == UINT32_MAX) o = ring.ids[ring.routed.hostAt(hashes_[key], 0)];
  return o;
}

uint32_t Run::route(const Ring& ring, uint32_t key, bool count_retry) {
  if (!ring.routed.bounded) {
    const uint32_t o = ownerOf(ring, key);
    if (marked_[o] && reachable_[o]) return o;
  }
  const uint64_t hash = hashes_[key];
  const SimLoads view(ring, load_, window_total_, marked_);
  PickContext ctx;
  ctx.loads = &view;
  Pick p;
  ring.routed.pick(hash, ctx, &p);   // with every server marked down: the owner, to fail
  uint32_t g = ring.ids[p.host];
  if (reachable_[g]) return g;
  if (count_retry) ++retries_;
  const uint32_t n = ring.routed.hostCount();
  for (uint32_t a = p.attempt + 1; a < p.attempt + n; ++a) {
    const uint32_t h = ring.routed.hostAt(hash, a);
    const uint32_t id = ring.ids[h];
    if (reachable_[id] && marked_[id]) return id;
  }
  return g;
}

// The key's owner before the change whose handover window holds `t`, when it differs from
// its owner now; LruFleet::kNone when there is none. A change is a new membership (this
// proxy's switch to it starts the window) or a server health brought back up (its keys come
// back to it from the host that served them while it was down). `since` is the window's
// start.
uint32_t Run::previousOwner(const Ring& ring, uint32_t proxy, uint32_t key, uint32_t now,
                            double t, double& since) {
  const double w = s_.handover_window_s;
  if (handover_ == SimHandover::kOff || w <= 0) return LruFleet::kNone;
  uint32_t p = LruFleet::kNone;
  if (&ring == &new_ && t >= switch_at_[proxy] && t < switch_at_[proxy] + w) {
    since = switch_at_[proxy];
    p = route(old_, key, false);
  } else if (t >= back_at_[now] && t < back_at_[now] + w) {
    since = back_at_[now];
    marked_[now] = 0;
    p = route(ring, key, false);
    marked_[now] = 1;
  }
  return p != now ? p : LruFleet::kNone;
}

void Run::request(double t) {
  while (next_action_ < actions_.size() && actions_[next_action_].t <= t)
    apply(actions_[next_action_++]);
  const uint32_t k = work_->next(rng_);
  uint32_t proxy = 0;
  const Ring* ring = &old_;
  if (switch_at_.size() > 1) {
    proxy = rng_.below(static_cast<uint32_t>(switch_at_.size()));
    if (on_new_[proxy]) ring = &new_;
  } else if (proxies_on_new_ > 0) {
    ring = &new_;
  }
  const bool write = writes_ > 0 && rng_.uniform() < writes_;
  uint32_t g = route(*ring, k, true);
  // With replicas a key's copies take the place of its one host: a write reaches each, a
  // read the first reachable one (and the next ones on a miss).
  SimCopies copies;
  if (replicas_ > 1) {
    copies = simCopies(ring->routed, ring->ids, hashes_[k], replicas_, marked_);
    for (uint32_t i = 0; i < copies.n; ++i)
      if (reachable_[copies.ids[i]]) {
        g = copies.ids[i];
        break;
      }
  }
  double since = 0;
  uint32_t prev = previousOwner(*ring, proxy, k, g, t, since);
  // The ramp holds a moved key at its previous owner until its moment, unless that owner is
  // leaving the fleet (no key is routed to a leaving server).
  if (handover_ == SimHandover::kRamp && prev != LruFleet::kNone) {
    if (in_new_[prev] && rampMoment(hashes_[k]) >= (t - since) / s_.handover_window_s)
      g = prev;
    prev = LruFleet::kNone;
  }
  ++served_[g];
  ++total_;
  if (factor_ > 0) {
    // The in-flight window: the oldest request finishes as this one starts.
    if (window_total_ == window_.size()) --load_[window_[window_pos_]]; else ++window_total_;
    window_[window_pos_] = g;
    ++load_[g];
    window_pos_ = (window_pos_ + 1) % window_.size();
  }
  if (write) {
    // Cache-aside: the writer updates the database and deletes the key where it routes.
    // Through lb a write also deletes at the previous owner, so that a later handover read
    // cannot copy a value older than it.
    ++version_[k];
    fleet_->erase(g, k);
    for (uint32_t i = 0; i < copies.n; ++i) fleet_->erase(copies.ids[i], k);
    if (prev != LruFleet::kNone) fleet_->erase(prev, k);
    return;
  }
  ++reads_;
  if (replicas_ > 1) {
    const SimCopyRead cr = simReadCopies(*fleet_, copies, reachable_, k);
    if (cr.value == LruFleet::kNone) {
      // The application fills the key through lb after its miss: every reachable copy.
      ++misses_;
      fleet_->fill(g, k, version_[k]);
      for (uint32_t i = 0; i < copies.n; ++i)
        if (reachable_[copies.ids[i]]) fleet_->fill(copies.ids[i], k, version_[k]);
    } else {
      ++hits_;
      if (cr.from_replica) ++replica_reads_;
      if (cr.value != version_[k]) ++stale_;
    }
    return;
  }
  uint32_t v = fleet_->touch(g, k);
  if (v == LruFleet::kNone && prev != LruFleet::kNone && reachable_[prev]) {
    // Read-through: the previous owner answers, and its value is copied to the new owner.
    v = fleet_->touch(prev, k);
    if (v != LruFleet::kNone) {
      ++handover_reads_;
      fleet_->fill(g, k, v);
    }
  }
  if (v == LruFleet::kNone) {
    ++misses_;
    fleet_->fill(g, k, version_[k]);
  } else {
    ++hits_;
    if (v != version_[k]) ++stale_;
  }
  // Split fleet: would a writer on another proxy send this key elsewhere?
  if (switch_at_.size() > 1 && proxies_on_new_ > 0 && proxies_on_new_ < switch_at_.size()) {
    const uint32_t q = rng_.below(static_cast<uint32_t>(switch_at_.size()));
    if (on_new_[q] != on_new_[proxy] && route(on_new_[q] ? new_ : old_, k, false) != g)
      ++misdirected_;
  }
}

void Run::apply(const Action& a) {
  switch (a.kind) {
    case Action::Kind::kSwitch:
      if (!on_new_[a.arg]) {
        on_new_[a.arg] = 1;
        ++proxies_on_new_;
      }
      break;
    case Action::Kind::kReach:
      reachable_[a.arg] = a.value;
      break;
    case Action::Kind::kClear:
      fleet_->clear(a.arg);
      break;
    case Action::Kind::kCheck:
      // lb's hysteresis (lb/health): `fall` failures in a row take a server down, `rise`
      // passes bring it back.
      for (const uint32_t id : watched_) {
        if (reachable_[id]) {
          fails_[id] = 0;
          if (passes_[id] < 255) ++passes_[id];
          if (!marked_[id] && passes_[id] >= s_.rise) {
            marked_[id] = 1;
            back_at_[id] = a.t;
          }
        } else {
          passes_[id] = 0;
          if (fails_[id] < 255) ++fails_[id];
          if (marked_[id] && fails_[id] >= s_.fall) marked_[id] = 0;
        }
      }
      break;
    case Action::Kind::kStop:
      break;
  }
}

std::optional<SimResult> Run::go(std::string& error) {
  SimResult r;
  r.selector = sel_.name;
  r.balance_factor = factor_;
  r.handover = handover_;
  r.handover_window_s = handover_ == SimHandover::kOff ? 0 : s_.handover_window_s;
  r.replicas = replicas_;
  writes_ = s_.writes;

  // Spatial sampling: simulate about samples_per_step requests a step, with every server's
  // capacity scaled by the same key rate, so that each server's hit ratio is the full one's.
  double rate = std::min(1.0, static_cast<double>(s_.samples_per_step) / (s_.rate * s_.step_s));
  if (s_.capacity > 0) rate = std::max(rate, std::min(1.0, 32.0 / s_.capacity));
  work_ = std::make_unique<SimWorkload>(s_, rate);
  if (work_->sampledKeys() == 0 || work_->requestMass() <= 0) {
    error = "no key sampled: raise --keys or --samples";
    return std::nullopt;
  }
  const double mass = work_->requestMass();
  const auto per_step = static_cast<uint64_t>(std::max(1.0, std::round(s_.rate * mass * s_.step_s)));
  r.key_rate = rate;
  r.requests_per_step = per_step;
  hashes_ = work_->sampledHashes(sel_.key_hash);
  version_.assign(work_->sampledKeys(), 0);

  const SimMembershipPlan plan = planMembership(s_);
  event_t_ = plan.event_t;
  weights_ = plan.old_weights;
  const std::vector<uint32_t>& old_ids = plan.old_ids;
  const std::vector<uint32_t>& new_ids = plan.new_ids;
  const std::vector<uint32_t>& new_weights = plan.new_weights;
  const bool change = plan.change;
  const SimEvent* rollout = plan.rollout;
  const uint32_t servers = plan.servers;
  // Capacities scale by the fraction of keys actually kept, not the rate asked for, which
  // removes the sampling error of the key count (SHARDS' adjustment, ibid.).
  const double kept = static_cast<double>(work_->sampledKeys()) /
                      static_cast<double>(work_->totalKeys());
  const double copies = s_.capacity_per_copy ? replicas_ : 1;
  std::vector<uint32_t> caps(servers, static_cast<uint32_t>(std::max<long>(
                                          1, std::lround(s_.capacity * copies * kept))));
  fleet_ = std::make_unique<LruFleet>(caps);
  reachable_.assign(servers, 1);
  marked_.assign(servers, 1);
  passes_.assign(servers, static_cast<uint8_t>(std::min<uint32_t>(255, s_.rise)));
  fails_.assign(servers, 0);
  back_at_.assign(servers, -1e300);
  in_new_.assign(servers, 0);
  for (const uint32_t id : change ? new_ids : old_ids) in_new_[id] = 1;
  load_.assign(servers, 0);
  served_.assign(servers, 0);
  window_.assign(std::max<size_t>(64, size_t{16} * servers), 0);

  if (!build(old_, old_ids, error)) return std::nullopt;
  const std::vector<uint32_t> before_weights = weights_;
  weights_ = new_weights;
  if (change && !build(new_, new_ids, error)) return std::nullopt;
  weights_ = before_weights;

  // The timeline's actions.
  last_change_ = event_t_;
  if (change) {
    const uint32_t p = rollout ? std::max<uint32_t>(1, rollout->proxies) : 1;
    const double over = rollout ? rollout->over_s : 0;
    switch_at_.assign(p, 0);
    on_new_.assign(p, 0);
    for (uint32_t j = 0; j < p; ++j) {
      switch_at_[j] = event_t_ + (p > 1 ? over * j / (p - 1) : 0);
      actions_.push_back({Action::Kind::kSwitch, switch_at_[j], j});
    }
    last_change_ = event_t_ + over;
    // A removed server is stopped at once, or, with a handover, leaves at the window's end.
    const double stop = last_change_ + (handover_ != SimHandover::kOff ? s_.handover_window_s : 0);
    for (const uint32_t id : plan.removed) actions_.push_back({Action::Kind::kClear, stop, id});
  }
  std::vector<uint32_t> failed;
  for (const auto& e : s_.events) {
    if (e.kind != SimEvent::Kind::kFail && e.kind != SimEvent::Kind::kFlap &&
        e.kind != SimEvent::Kind::kFailZone)
      continue;
    const double t = e.at_s >= 0 ? e.at_s : s_.event_at_s;
    event_t_ = change ? std::min(event_t_, t) : t;
    // fail-zone:N: every server of the last N zones crashes at once.
    std::vector<uint32_t> hit;
    if (e.kind == SimEvent::Kind::kFailZone) {
      for (const uint32_t id : old_ids)
        if (s_.zones > 0 && id % s_.zones >= s_.zones - std::min(e.count, s_.zones))
          hit.push_back(id);
    } else {
      for (uint32_t i = 0; i < e.count && i < old_ids.size(); ++i)
        hit.push_back(old_ids[old_ids.size() - 1 - i]);
    }
    for (const uint32_t id : hit) {
      watched_.push_back(id);
      failed.push_back(id);
      if (e.kind != SimEvent::Kind::kFlap) {
        // A crash: the cache is lost; the restarted server comes back empty.
        actions_.push_back({Action::Kind::kReach, t, id, false});
        actions_.push_back({Action::Kind::kClear, t, id});
        if (e.recover_s >= 0) {
          actions_.push_back({Action::Kind::kReach, t + e.recover_s, id, true});
          last_change_ = std::max(last_change_, t + e.recover_s + s_.rise * s_.check_interval_s);
        } else {
          last_change_ = std::max(last_change_, t + s_.fall * s_.check_interval_s);
        }
      } else {
        // A network flap: unreachable for the first third of each period, cache kept, for
        // half of the time left after it starts.
        const double until = t + (s_.duration_s - t) / 2;
        for (double p0 = t; p0 < until; p0 += e.period_s) {
          actions_.push_back({Action::Kind::kReach, p0, id, false});
          actions_.push_back({Action::Kind::kReach, p0 + e.period_s / 3, id, true});
        }
        last_change_ = std::max(last_change_, until + s_.rise * s_.check_interval_s);
      }
    }
  }
  if (!watched_.empty())
    for (double t = 0; t <= s_.duration_s; t += s_.check_interval_s)
      actions_.push_back({Action::Kind::kCheck, t});
  std::stable_sort(actions_.begin(), actions_.end(),
                   [](const Action& a, const Action& b) { return a.t < b.t; });

  // Warm-up to steady state: whole steps of requests until, twice in a row, the caches stop
  // growing (0.1%) or the hit ratio stops moving (0.1 point). Under Zipf the coldest keys
  // keep trickling in long after the hit ratio has settled.
  double last_hit = -1;
  for (int chunk = 0, quiet = 0; chunk < 100 && (quiet < 2 || chunk < 3); ++chunk) {
    const uint64_t size = fleet_->totalSize();
    reads_ = hits_ = 0;
    for (uint64_t i = 0; i < per_step; ++i) request(-1);
    const uint64_t grown = fleet_->totalSize() - size;
    const double hit = reads_ ? static_cast<double>(hits_) / static_cast<double>(reads_) : 0;
    const bool still = grown * 1000 <= fleet_->totalSize() || std::fabs(hit - last_hit) < 0.001;
    quiet = still ? quiet + 1 : 0;
    last_hit = hit;
  }

  // The timeline.
  const auto steps = static_cast<uint64_t>(std::ceil(s_.duration_s / s_.step_s - 1e-9));
  const auto window = static_cast<uint64_t>(std::max(
      1.0, std::round(static_cast<double>(per_step) * s_.after_window_s / s_.step_s)));
  uint64_t aw_reads = 0, aw_hits = 0, aw_n = 0, aw_misses = 0;
  double before_reads = 0, before_hits = 0, before_misses = 0, before_busy = 0;
  uint64_t before_steps = 0, after_steps = 0;
  double after_busy = 0, after_reads = 0, after_hits = 0;
  const double scale = 1 / mass / s_.step_s;
  for (uint64_t i = 0; i < steps; ++i) {
    const double t0 = static_cast<double>(i) * s_.step_s;
    reads_ = hits_ = misses_ = misdirected_ = stale_ = retries_ = total_ = handover_reads_ = 0;
    replica_reads_ = 0;
    std::fill(served_.begin(), served_.end(), 0);
    for (uint64_t j = 0; j < per_step; ++j) {
      const double t = t0 + s_.step_s * static_cast<double>(j) / static_cast<double>(per_step);
      const uint64_t r0 = reads_, h0 = hits_, m0 = misses_;
      request(t);
      if (t >= event_t_ && aw_n < window) {
        ++aw_n;
        aw_reads += reads_ - r0;
        aw_hits += hits_ - h0;
        aw_misses += misses_ - m0;
      }
    }
    SimPoint p;
    p.t = t0;
    p.hit_ratio = reads_ ? static_cast<double>(hits_) / static_cast<double>(reads_) : 0;
    p.backend_reads_per_s = static_cast<double>(misses_) * scale;
    p.busiest_share = static_cast<double>(*std::max_element(served_.begin(), served_.end())) /
                      static_cast<double>(std::max<uint64_t>(1, total_));
    p.misdirected_reads_per_s = static_cast<double>(misdirected_) * scale;
    p.stale_reads_per_s = static_cast<double>(stale_) * scale;
    p.retries_per_s = static_cast<double>(retries_) * scale;
    p.handover_reads_per_s = static_cast<double>(handover_reads_) * scale;
    const Ring& now = proxies_on_new_ > 0 ? new_ : old_;
    for (const uint32_t id : now.ids) p.servers += reachable_[id] && marked_[id];
    r.timeline.push_back(p);
    r.misdirected_reads += p.misdirected_reads_per_s * s_.step_s;
    r.stale_reads += p.stale_reads_per_s * s_.step_s;
    r.handover_reads += p.handover_reads_per_s * s_.step_s;
    r.replica_reads += static_cast<double>(replica_reads_) * scale * s_.step_s;
    if (misdirected_ > 0) r.split_brain_s += s_.step_s;
    if (t0 + s_.step_s <= event_t_ + 1e-9) {
      before_reads += static_cast<double>(reads_);
      before_hits += static_cast<double>(hits_);
      before_misses += p.backend_reads_per_s;
      before_busy += p.busiest_share;
      ++before_steps;
    } else if (t0 >= event_t_ - 1e-9) {
      after_busy += p.busiest_share;
      after_reads += static_cast<double>(reads_);
      after_hits += static_cast<double>(hits_);
      ++after_steps;
      r.backend_reads_per_s_peak = std::max(r.backend_reads_per_s_peak, p.backend_reads_per_s);
    }
  }
  r.servers_before = static_cast<uint32_t>(old_ids.size());
  r.servers_after = static_cast<uint32_t>(change ? new_ids.size() : old_ids.size() - failed.size());
  r.hit_ratio_before = before_reads > 0 ? before_hits / before_reads : 0;
  r.backend_reads_per_s_before = before_steps ? before_misses / static_cast<double>(before_steps) : 0;
  r.busiest_share_before = before_steps ? before_busy / static_cast<double>(before_steps) : 0;
  r.busiest_share_after = after_steps ? after_busy / static_cast<double>(after_steps) : 0;
  r.hit_ratio_mean_after = after_reads > 0 ? after_hits / after_reads : 0;
  r.hit_ratio_after_event =
      aw_reads ? static_cast<double>(aw_hits) / static_cast<double>(aw_reads) : 0;
  if (aw_n > 0)
    r.backend_reads_per_s_peak =
        std::max(r.backend_reads_per_s_peak, static_cast<double>(aw_misses) / mass /
                                                 (s_.step_s * static_cast<double>(aw_n) /
                                                  static_cast<double>(per_step)));
  const double reads_per_step = static_cast<double>(per_step) * (1 - s_.writes);
  const double p = r.hit_ratio_before;
  r.hit_ratio_stderr = std::sqrt(p * (1 - p) / std::max(1.0, reads_per_step));
  const double pa = r.hit_ratio_after_event;
  r.after_window_stderr = std::sqrt(pa * (1 - pa) / std::max<double>(1, static_cast<double>(aw_reads)));

  // Back to the old hit ratio: the first whole step after the last change within three
  // standard errors (or half a point) of it.
  const double tol = std::max(0.005, 3 * r.hit_ratio_stderr);
  for (const auto& pt : r.timeline)
    if (pt.t >= last_change_ - 1e-9 && pt.hit_ratio >= r.hit_ratio_before - tol) {
      r.recovery_s = pt.t + s_.step_s - event_t_;
      break;
    }

  // Keys moved, over the sampled keys (binomial error at most 0.5 / sqrt(sampled keys)):
  // where each one is served with the whole fleet healthy on the old membership, and after
  // the change.
  std::fill(marked_.begin(), marked_.end(), 1);
  std::fill(reachable_.begin(), reachable_.end(), 1);
  const Ring& after_ring = change ? new_ : old_;
  // Idle servers: under bounded loads every one is below its cap, so the pick is the
  // health-aware walk alone and the figure counts only the moves membership and health make.
  const std::vector<uint64_t> idle(load_.size(), 0);
  uint64_t moved = 0;
  for (uint32_t k = 0; k < hashes_.size(); ++k) {
    const uint32_t a = ownerOf(old_, k);
    uint32_t b = ownerOf(after_ring, k);
    if (std::find(failed.begin(), failed.end(), b) != failed.end()) {
      for (const uint32_t id : failed) marked_[id] = 0;
      const SimLoads view(after_ring, idle, 0, marked_);
      PickContext ctx;
      ctx.loads = &view;
      Pick p;
      after_ring.routed.pick(hashes_[k], ctx, &p);
      b = after_ring.ids[p.host];
      for (const uint32_t id : failed) marked_[id] = 1;
    }
    moved += a != b;
  }
  r.keys_moved = hashes_.empty() ? 0 : static_cast<double>(moved) / static_cast<double>(hashes_.size());
  return r;
}

}  // namespace

std::optional<SimResult> simulateSelector(const SimScenario& scenario, const SimSelector& sel,
                                          uint32_t balance_factor, std::string& error,
                                          SimHandover handover, uint32_t replicas) {
  Run run(scenario, sel, balance_factor, handover, replicas);
  return run.go(error);
}

}  // namespace lb
