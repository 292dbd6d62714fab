// Bounded loads (Mirrokni, Thorup, Zadimoghaddam, "Consistent Hashing with Bounded Loads",
// SODA 2018) over any SelectorTable, with HAProxy's hash-balance-factor cap (lb_chash.c,
// chash_server_is_eligible), and the plain health-aware walk used when bounded loads are off.
//
// Differences from HAProxy, on purpose:
//  - W is the total weight of the table's hosts, healthy or not (HAProxy uses the weight of the
//    servers currently up). Health changes never rebuild anything here (docs/architecture.md, "Threads and data"), and summing
//    the usable weights per pick would cost O(hosts). With hosts down the healthy ones' caps are
//    lower than HAProxy's; when all of them reach it, the least loaded takes the request
//    (kFallback), so nothing is refused, the spread is just less bounded.
//  - No lock: a request is admitted to a host by a compare-and-swap on the host's live counter
//    (Reserve::kYes), so two workers never both take a host's last slot and the cap holds
//    exactly against the total each of them read. Envoy's hash_balance_factor reads and then
//    adds, and may overshoot by a few requests. The total is one cluster-wide counter kept in
//    step with the hosts' counters (two relaxed atomics per request), not a sum over hosts.
#include "plugins/selectors/bounded_load.h"

#include <algorithm>
#include <cassert>

namespace lb {

const char* pickReasonName(PickReason r) noexcept {
  switch (r) {
    case PickReason::kOwner: return "owner";
    case PickReason::kBounded: return "bounded";
    case PickReason::kFailover: return "failover";
    case PickReason::kFallback: return "fallback";
    case PickReason::kSpread: return "spread";
    case PickReason::kLocalZone: return "local_zone";
  }
  return "owner";
}

Pick pickUsable(const SelectorTable& table, uint64_t hash, const LoadView& loads,
                uint32_t from_attempt) noexcept {
  const uint32_t n = table.hostCount();
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t a = from_attempt + k;
    const uint32_t h = table.pick(hash, a);
    if (!loads.usable(h)) continue;
    return {h, a, a == 0 ? PickReason::kOwner : PickReason::kFailover};
  }
  return {n == 0 ? 0 : table.pick(hash, 0), 0, PickReason::kFallback};
}

BoundedLoad::BoundedLoad(std::span<const HostSpec> hosts, uint32_t balance_factor)
    : factor_(balance_factor) {
  assert(balance_factor > 100);
  weights_.reserve(hosts.size());
  for (const HostSpec& h : hosts) {
    weights_.push_back(std::max<uint32_t>(h.weight, 1));
    total_weight_ += weights_.back();
  }
}

uint64_t BoundedLoad::cap(uint32_t host, uint64_t total) const noexcept {
  // Worked example (HAProxy's documentation of hash-balance-factor: "with 150, a server is
  // never loaded more than 1.5 times the average"): 4 equal servers, 7 requests in flight,
  // F = 150. Fleet slots: ceil((7 + 1) * 150 / 100) = 12; each server's share:
  // ceil(12 * 1 / 4) = 3, so a server carrying 3 is skipped and one carrying 2 takes the 8th.
  const uint64_t w = host < weights_.size() ? weights_[host] : 1;
  // 64-bit arithmetic while it cannot overflow (always, for real loads): the 128-bit divisions
  // below are library calls that would triple the cost of a bounded pick.
  if (total < UINT64_MAX && total_weight_ != 0) {
    uint64_t fleet, share;
    if (!__builtin_mul_overflow(total + 1, uint64_t{factor_}, &fleet)) {
      fleet = fleet / 100 + (fleet % 100 != 0);   // ceil((total + 1) * F / 100)
      if (!__builtin_mul_overflow(fleet, w, &share))
        return share / total_weight_ + (share % total_weight_ != 0);
    }
  }
  // 128-bit intermediates: no overflow for any 64-bit total and 32-bit factor and weights.
  using U = unsigned __int128;
  const U slots = ((U{total} + 1) * factor_ + 99) / 100;
  if (total_weight_ == 0) return slots > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(slots);
  const U share = (slots * w + total_weight_ - 1) / total_weight_;
  return share > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(share);
}

Pick BoundedLoad::pick(const SelectorTable& table, uint64_t hash, const LoadView& loads,
                       uint32_t from_attempt, Reserve reserve) const noexcept {
  const uint32_t n = table.hostCount();
  if (n == 0) return {0, 0, PickReason::kFallback};
  // Every usable host at the caps of the total read means that total was stale (another
  // worker took units between the read and the walk): at a current total the caps sum to at
  // least total + 1, so some host has room. The walk is repeated while the total keeps
  // growing, a bounded number of times, before the least loaded takes the request.
  constexpr int kPasses = 3;
  uint64_t total = loads.totalLoad();
  Pick least{0, 0, PickReason::kFallback};
  bool have_least = false;
  for (int pass = 0; pass < kPasses; ++pass) {
    bool passed_over_cap = false;
    uint64_t least_load = 0;
    have_least = false;
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t a = from_attempt + k;
      const uint32_t h = table.pick(hash, a);
      if (!loads.usable(h)) continue;
      const uint64_t c = cap(h, total);
      const bool admitted =
          reserve == Reserve::kYes ? loads.tryReserve(h, c) : loads.load(h) < c;
      if (admitted) {
        const PickReason reason = a == 0           ? PickReason::kOwner
                                  : passed_over_cap ? PickReason::kBounded
                                                    : PickReason::kFailover;
        return {h, a, reason, reserve == Reserve::kYes && loads.reserves()};
      }
      const uint64_t load = loads.load(h);
      passed_over_cap = true;
      if (!have_least || load < least_load) {   // strict: ties stay with the earliest
        least = {h, a, PickReason::kFallback};
        least_load = load;
        have_least = true;
      }
    }
    if (!have_least) break;   // nothing usable
    const uint64_t fresh = loads.totalLoad();
    if (fresh <= total) break;   // the total was current: the usable hosts are full
    total = fresh;
  }
  if (have_least) return least;
  return {table.pick(hash, 0), 0, PickReason::kFallback};   // nothing usable, as pickUsable
}

}  // namespace lb
