// The one pick's steps, in their one order (lb/routing/pick_context.h lists them). A policy that
// joins the pick is a step here, between the ones it must follow and those that must see it.
#include <atomic>

#include "lb/routing/snapshot.h"

namespace lb {

namespace {

// The loads of a cluster stood up without live state (a table alone: lb analyze, tests):
// every host usable, none loaded.
class IdleLoads final : public LoadView {
 public:
  uint64_t load(uint32_t) const noexcept override { return 0; }
  uint64_t totalLoad() const noexcept override { return 0; }
};
const IdleLoads kIdleLoads;

// Step "order", keyless round_robin: table order from the rotation's start, each attempt a
// distinct host (lb/routing/rotation.h). Its walk never wraps, so what it finds is untried.
bool tableOrderStep(uint32_t hosts, uint64_t start, const LoadView& loads, uint32_t from,
                    Pick* out) noexcept {
  *out = pickInTableOrder(hosts, static_cast<uint32_t>(start), loads, from);
  return out->attempt >= from && out->attempt < hosts && loads.usable(out->host);
}

// Step "spread": a hot key's first attempt goes to the least loaded of its first `spread`
// usable hosts, when one of them has room under bounded loads (plugins/selectors/
// hot_spread.h). False: the ordinary steps below decide.
bool spreadStep(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads,
                const PickContext& ctx, Pick* out) noexcept {
  if (ctx.spread < 2 || ctx.from_attempt != 0) return false;
  const BoundedLoad* bounded = c.bounded ? &*c.bounded : nullptr;
  return pickSpread(*c.table, hash, loads, ctx.spread, bounded, ctx.reserve, out);
}

// Step "replicas": a read that may read a copy of a key kept on its first `replicas` hosts,
// in a cluster that reads locally, goes to the first of them in lb's own zone that is usable
// and, under bounded loads, below its cap (the unit taken in the same compare-and-swap with
// Reserve::kYes). None such: the steps below choose, from the owner, as for any key. Keeping
// reads in the zone saves the cross-zone round trip and transfer; Envoy's zone-aware routing
// does this for its load-balanced pools, not for a hash's owners.
bool localReplicaStep(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads,
                      const PickContext& ctx, uint32_t hosts, Pick* out) noexcept {
  if (!c.local_first || !ctx.replica_read || ctx.from_attempt != 0) return false;
  const uint32_t copies = c.replicas < hosts ? c.replicas : hosts;
  for (uint32_t a = 0; a < copies; ++a) {
    const uint32_t h = c.hostAt(hash, a);
    if (!c.backends[h].local_zone || !loads.usable(h)) continue;
    bool reserved = false;
    if (c.bounded) {
      const uint64_t cap = c.bounded->cap(h, loads.totalLoad());
      if (ctx.reserve == Reserve::kYes && loads.reserves()) {
        if (!loads.tryReserve(h, cap)) continue;
        reserved = true;
      } else if (loads.load(h) >= cap) {
        continue;
      }
    }
    *out = {h, a, a == 0 ? PickReason::kOwner : PickReason::kLocalZone, reserved};
    return true;
  }
  return false;
}

// Step "bounded": bounded loads over the preference order (Mirrokni et al., SODA 2018, with
// HAProxy's cap), which walks past down hosts too; without them the health-aware walk.
Pick boundedStep(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads,
                 const PickContext& ctx) noexcept {
  return c.bounded ? c.bounded->pick(*c.table, hash, loads, ctx.from_attempt, ctx.reserve)
                   : pickUsable(*c.table, hash, loads, ctx.from_attempt);
}

// Step "retry": a later attempt takes only an untried usable host. The walks above wrap
// around the order (a position >= hosts is an earlier one again), and bounded loads fall
// back to the least loaded host when all are at their cap, which may be one already tried:
// then the first usable host after the last try, as a plain failover.
bool retryStep(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads, uint32_t from,
               uint32_t hosts, Pick* p) noexcept {
  if (p->attempt >= from && p->attempt < hosts && loads.usable(p->host)) return true;
  // Not taking it after all. Only the cluster's live view reserves, so the unit is there.
  if (p->reserved) c.backends[p->host].state->dropLive();
  for (uint32_t a = from; a < hosts; ++a) {
    const uint32_t h = c.hostAt(hash, a);
    if (loads.usable(h)) {
      *p = {h, a, PickReason::kFailover};
      return true;
    }
  }
  return false;
}

// The three questions the handover steps ask, each once. The wall clock is read into *now
// only when a window may apply (0: not read yet).
//
// The previous owner of a key now at `owner`, while the membership window is open and the
// key moved (the first pick past the window marks it over); kNoHost otherwise, or when the
// previous owner left the cluster.
uint32_t movedFrom(const ClusterSnapshot& c, uint64_t hash, uint32_t owner, int64_t* now) {
  if (!c.handover) return Pick::kNoHost;
  const HandoverWindow& w = *c.handover;
  if (w.over.value.load(std::memory_order_relaxed)) return Pick::kNoHost;
  const uint32_t prev = w.previousOwner(hash);
  if (prev == HandoverWindow::kLeaving || prev == owner) return Pick::kNoHost;
  *now = wallClockMs();
  if (*now >= w.until_ms) {
    w.over.value.store(true, std::memory_order_relaxed);
    return Pick::kNoHost;
  }
  return prev;
}

// How long ago (ms) health brought `owner` back, while its return window is open; -1
// otherwise. One relaxed load while no return window is open in the cluster; the first pick
// past the latest one closes it.
int64_t sinceReturn(const ClusterSnapshot& c, uint32_t owner, int64_t* now) {
  if (!c.state) return -1;
  std::atomic<int64_t>& until = c.state->returns_until_ms;
  int64_t open_until = until.load(std::memory_order_relaxed);
  if (open_until == 0) return -1;
  if (*now == 0) *now = wallClockMs();
  if (*now >= open_until) {
    until.compare_exchange_strong(open_until, 0, std::memory_order_relaxed);
    return -1;
  }
  const int64_t back = c.backends[owner].state->returned_at_ms.load(std::memory_order_relaxed);
  if (back == 0 || *now < back || *now >= back + c.handover_window_ms) return -1;
  return *now - back;
}

// The host that serves a key while its owner is out: the first usable one after the owner in
// the key's order (its position in *attempt); kNoHost when none is.
uint32_t standIn(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads, uint32_t hosts,
                 uint32_t* attempt) {
  for (uint32_t a = 1; a < hosts; ++a) {
    const uint32_t h = c.hostAt(hash, a);
    if (loads.usable(h)) {
      *attempt = a;
      return h;
    }
  }
  return Pick::kNoHost;
}

// Step "handover": inside a handover window a key whose owner changed stays with its previous
// owner until its moment in the ramp (lb/routing/handover.h), while that owner is usable.
// The pick's attempt is the previous owner's position in the new order, so that a retry
// after it fails goes further along the order, never back to it. First attempts only.
bool handoverStep(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads,
                  uint32_t hosts, Pick* out) noexcept {
  int64_t now = 0;
  const uint32_t prev = movedFrom(c, hash, c.hostAt(hash, 0), &now);
  if (prev == Pick::kNoHost || !c.handover->holdsAt(hash, now) || !loads.usable(prev))
    return false;
  uint32_t position = 1;
  while (position < hosts && c.hostAt(hash, position) != prev) ++position;
  *out = {prev, position < hosts ? position : 0, PickReason::kOwner};
  return true;
}

// Step "handover", a returning owner: a backend that health brought back inside the window
// gets its keys back each at its moment of the ramp; until then a key stays with the host
// that served it meanwhile.
bool returnStep(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads, uint32_t hosts,
                Pick* out) noexcept {
  int64_t now = 0;
  const uint32_t owner = c.hostAt(hash, 0);
  const int64_t since = sinceReturn(c, owner, &now);
  if (since < 0 || !loads.usable(owner)) return false;
  if (rampMoment(hash) < static_cast<double>(since) / static_cast<double>(c.handover_window_ms))
    return false;
  uint32_t attempt = 0;
  const uint32_t h = standIn(c, hash, loads, hosts, &attempt);
  if (h == Pick::kNoHost) return false;
  *out = {h, attempt, PickReason::kOwner};
  return true;
}

// Step "handover" for a caller that reads through (redis, memcached): the key goes to its
// owner at once, chosen by the steps after this one as outside a window, and the pick names
// the host a miss there is read from: the key's previous owner while a membership window is
// open, or, while a returned owner's window is, the host that served its keys while it was
// down. Picks that spread a hot key, and retries, read nothing through.
uint32_t readThroughFrom(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads,
                         uint32_t hosts, uint32_t chosen) noexcept {
  int64_t now = 0;
  const uint32_t prev = movedFrom(c, hash, chosen, &now);
  if (prev != Pick::kNoHost && loads.usable(prev)) return prev;
  if (c.hostAt(hash, 0) != chosen || sinceReturn(c, chosen, &now) < 0) return Pick::kNoHost;
  uint32_t attempt = 0;
  return standIn(c, hash, loads, hosts, &attempt);
}

// Step "replicas" for a read that reads through: where a miss or a failure at the chosen host
// is read next, the first other of the key's copies. The copies are the first `replicas`
// usable hosts of the key's order, as a write chose them (pickReplicas below).
uint32_t nextCopy(const ClusterSnapshot& c, uint64_t hash, const LoadView& loads,
                  uint32_t hosts, uint32_t chosen) noexcept {
  uint32_t seen = 0;
  for (uint32_t a = 0; a < hosts && seen < c.replicas; ++a) {
    const uint32_t h = c.hostAt(hash, a);
    if (!loads.usable(h)) continue;
    ++seen;
    if (h != chosen) return h;
  }
  return Pick::kNoHost;
}

}  // namespace

bool ClusterSnapshot::pick(uint64_t hash, const PickContext& ctx, Pick* out) const noexcept {
  const uint32_t hosts = hostCount();
  *out = {0, 0, PickReason::kFallback};
  if (hosts == 0) return false;
  const LoadView& view = ctx.loads     ? *ctx.loads
                         : loads       ? static_cast<const LoadView&>(*loads)
                                       : static_cast<const LoadView&>(kIdleLoads);
  if (ctx.order == PickOrder::kTable)
    return tableOrderStep(hosts, hash, view, ctx.from_attempt, out);
  if (ctx.from_attempt >= hosts) {   // every position of the order was tried
    out->host = hostAt(hash, 0);
    return false;
  }
  const bool read_through = ctx.read_through || reads_through;
  if (ctx.from_attempt == 0 && handover_window_ms > 0 && !read_through) {
    if (handover && handoverStep(*this, hash, view, hosts, out)) return true;
    if (state && returnStep(*this, hash, view, hosts, out)) return true;
  }
  if (spreadStep(*this, hash, view, ctx, out)) return true;
  if (localReplicaStep(*this, hash, view, ctx, hosts, out)) return true;
  Pick p = boundedStep(*this, hash, view, ctx);
  if (ctx.from_attempt > 0) {
    if (!retryStep(*this, hash, view, ctx.from_attempt, hosts, &p)) {
      out->host = hostAt(hash, 0);
      return false;
    }
    *out = p;
    return true;
  }
  *out = p;
  if (!view.usable(p.host)) return false;   // the walk's fallback when every host is down
  if (read_through && handover_window_ms > 0)
    out->from = readThroughFrom(*this, hash, view, hosts, p.host);
  // The next copy is found only when the read needs it (nextCopyOf): most reads hit.
  out->from_copy = read_through && ctx.replica_read && replicas > 1 && out->from == Pick::kNoHost;
  return true;
}

uint32_t ClusterSnapshot::handoverFrom(uint64_t hash, uint32_t owner) const noexcept {
  const uint32_t hosts = hostCount();
  if (hosts == 0 || handover_window_ms <= 0 || owner >= hosts) return Pick::kNoHost;
  const LoadView& view = loads ? static_cast<const LoadView&>(*loads)
                               : static_cast<const LoadView&>(kIdleLoads);
  return readThroughFrom(*this, hash, view, hosts, owner);
}

uint32_t ClusterSnapshot::pickReplicas(uint64_t hash, uint32_t count,
                                       Pick* out) const noexcept {
  const uint32_t hosts = hostCount();
  const LoadView& view = loads ? static_cast<const LoadView&>(*loads)
                               : static_cast<const LoadView&>(kIdleLoads);
  uint32_t n = 0;
  for (uint32_t a = 0; a < hosts && n < count; ++a) {
    const uint32_t h = hostAt(hash, a);
    if (!view.usable(h)) continue;
    out[n++] = {h, a, a < count ? PickReason::kOwner : PickReason::kFailover};
  }
  return n;
}

uint32_t ClusterSnapshot::nextCopyOf(uint64_t hash, uint32_t chosen) const noexcept {
  const uint32_t hosts = hostCount();
  if (hosts == 0 || replicas < 2) return Pick::kNoHost;
  const LoadView& view = loads ? static_cast<const LoadView&>(*loads)
                               : static_cast<const LoadView&>(kIdleLoads);
  return nextCopy(*this, hash, view, hosts, chosen);
}

uint32_t ClusterSnapshot::readCopyOf(uint64_t hash) const noexcept {
  PickContext ctx;
  ctx.read_through = true;
  ctx.replica_read = true;
  Pick p;
  pick(hash, ctx, &p);
  return p.host;
}

uint32_t ClusterSnapshot::spreadSetOf(uint64_t hash, uint32_t spread,
                                      SpreadSet* out) const noexcept {
  return spreadSet(*table, hash, loads.get(), spread, out);
}

BackendWorkerStats& ClusterSnapshot::admit(unsigned worker, const Pick& p,
                                           bool holds) const noexcept {
  BackendState& s = *backends[p.host].state;
  BackendWorkerStats& stats = s.per_worker[worker];
  stats.picks[static_cast<int>(p.reason)].add();
  // The live load every worker's bounded pick reads: a reserving pick took it already
  // (compare-and-swap under the cap).
  if (!holds && !p.reserved) s.addLive();
  if (p.reason == PickReason::kSpread && state)
    state->hot_keys.countPath(worker, HotKeyPath::kSpread);
  return stats;
}

}  // namespace lb
