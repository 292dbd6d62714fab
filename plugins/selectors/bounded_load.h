// Bounded loads (Mirrokni, Thorup, Zadimoghaddam, "Consistent Hashing with Bounded Loads",
// SODA 2018) as a decorator over any SelectorTable, with HAProxy's hash-balance-factor cap.
// Also the plain health-aware walk used when bounded loads are off.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plugins/selector.h"

namespace lb {

// Live loads as a picker sees them. The proxy implements it over the shared per-backend
// atomic counters; tests implement it over plain vectors.
class LoadView {
 public:
  virtual ~LoadView() = default;
  virtual uint64_t load(uint32_t host) const noexcept = 0;    // live load of one host
  virtual uint64_t totalLoad() const noexcept = 0;            // sum over all hosts
  virtual bool usable(uint32_t host) const noexcept { (void)host; return true; }  // healthy
  // Takes one unit of `host`'s live load if its load is below `cap`, atomically, and says
  // whether it did. Views without live counters (tests, lb analyze, the admin's "where would
  // this key go") take nothing and only compare.
  virtual bool tryReserve(uint32_t host, uint64_t cap) const noexcept { return load(host) < cap; }
  virtual bool reserves() const noexcept { return false; }
};

// Why a host was picked; the label of lb_backend_picks_total.
// kSpread: a hot key's HTTP GET or HEAD, sent to the least loaded of the first
// hot_keys.spread hosts of its order (plugins/selectors/hot_spread.h), the owner included.
// kLocalZone: a replica of the key in lb's own zone, not its owner (read = "local").
enum class PickReason : uint8_t { kOwner, kBounded, kFailover, kFallback, kSpread, kLocalZone };
inline constexpr int kPickReasonCount = 6;
const char* pickReasonName(PickReason r) noexcept;

struct Pick {
  uint32_t host;       // index into the table's hosts
  uint32_t attempt;    // position in the key's preference order
  PickReason reason;
  bool reserved = false;   // the pick already took a unit of the host's live load
  // A pick that reads through (PickContext::read_through) inside a handover window: the host
  // that served the key before (its previous owner, or the host that stood in for a returned
  // one), where a miss at `host` is read from; kNoHost when there is none.
  static constexpr uint32_t kNoHost = UINT32_MAX;
  uint32_t from = kNoHost;
  // A read of a key with copies (replicas) and no `from`: a miss or a failure at `host` is
  // read at the key's next copy (ClusterSnapshot::nextCopyOf, found when needed), and a hit
  // copied back without a TTL cap.
  bool from_copy = false;
};

// Whether a bounded pick takes the unit of live load it admits (a request about to go) or
// only says where a key would go (admin, analysis).
enum class Reserve : uint8_t { kNo, kYes };

// Walks the key's preference order from `from_attempt` and returns the first usable host
// (kOwner at attempt 0, kFailover after). When no host is usable, returns attempt 0's host
// with kFallback so the caller still has somewhere to try.
Pick pickUsable(const SelectorTable& table, uint64_t hash, const LoadView& loads,
                uint32_t from_attempt = 0) noexcept;

class BoundedLoad {
 public:
  // balance_factor: percent, > 100 (125 lets a host take 25% over its fair share).
  BoundedLoad(std::span<const HostSpec> hosts, uint32_t balance_factor);

  // The most live load host may carry once one more request is added:
  // ceil(ceil((total + 1) * F / 100) * w / W), all in integers as HAProxy does.
  uint64_t cap(uint32_t host, uint64_t total) const noexcept;

  // First usable host in the key's preference order, from from_attempt, whose live load is
  // below its cap (kOwner at attempt 0, kBounded past an over-cap host, kFailover past only
  // unusable ones). When every usable host is at cap: the least loaded one, earliest in
  // preference order on ties (kFallback); but first the total is read again and the walk
  // repeated (up to three passes) while it grew: a stale total, not a full fleet. Hot path:
  // no allocation, O(1) reads of the total.
  // With Reserve::kYes the below-cap test and the increment are one compare-and-swap
  // (LoadView::tryReserve) and Pick::reserved says the unit was taken; the fallback never
  // reserves (the caller adds its unit).
  Pick pick(const SelectorTable& table, uint64_t hash, const LoadView& loads,
            uint32_t from_attempt = 0, Reserve reserve = Reserve::kNo) const noexcept;

  uint32_t balanceFactor() const noexcept { return factor_; }

 private:
  std::vector<uint32_t> weights_;
  uint64_t total_weight_ = 0;
  uint32_t factor_;
};

}  // namespace lb
