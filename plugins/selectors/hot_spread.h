// Spreading one hot key over a few hosts (docs/config.md, `spread`): the
// request goes to the least loaded of the first `spread` distinct usable hosts of the key's
// preference order (SelectorTable::pick(hash, 0), pick(hash, 1), ...), ties to the earliest.
// For HTTP caches, which fill themselves from the origin on a miss, this puts up to `spread`
// copies of the key in the fleet and divides its load among them, where consistent hashing
// alone gives all of it to the owner and bounded loads hand the overflow to whichever host
// has room (a fresh miss each time the spill moves). The candidates are the key's own
// replica order, so they are the same on every worker and every lb instance, and the same
// hosts a failover for the key would reach.
//
// The "power of d choices" (Mitzenmacher, "The Power of Two Choices in Randomized Load
// Balancing", IEEE TPDS 2001) among a fixed set rather than a random one: the set must stay
// fixed so that each copy stays warm.
//
// With bounded loads on, a candidate at its cap is skipped (the cap is the cluster's,
// BoundedLoad::cap over the current total), and with Reserve::kYes the chosen host's unit of
// live load is taken by the same compare-and-swap a bounded pick uses; a host that lost that
// race is dropped and the next least loaded tried. When every candidate is at its cap, or
// none is usable, pickSpread says so and the caller makes its ordinary pick (bounded loads
// then walk past the spread hosts as they would for any key).
#pragma once

#include <array>
#include <cstdint>

#include "plugins/selector.h"
#include "plugins/selectors/bounded_load.h"

namespace lb {

// The most hosts one key spreads over: the walk remembers its candidates in a stack array of
// this size (the distinct walk's small range, plugins/selectors/distinct_walk.h).
inline constexpr uint32_t kMaxSpread = 16;

// One host of a key's spread set, and its position in the key's preference order.
struct SpreadCandidate {
  uint32_t host;
  uint32_t attempt;
};
using SpreadSet = std::array<SpreadCandidate, kMaxSpread>;

// The key's spread set: its first min(spread, kMaxSpread, hosts) usable hosts (any host when
// `loads` is null) in preference order, into *out; returns how many. Attempts below
// hostCount() are distinct hosts (SelectorTable::pick), and a down host does not count, so
// a key keeps `spread` copies while a host of its set is out, as a failover would reach the
// next one. What pickSpread chooses among, and what /hotkeys lists as serving the key.
uint32_t spreadSet(const SelectorTable& table, uint64_t hash, const LoadView* loads,
                   uint32_t spread, SpreadSet* out) noexcept;

// Hot path: no allocation, no lock; O(spread) picks of the table plus one load per candidate.
// `spread` is clamped to [1, kMaxSpread] and to the table's hosts. `bounded` is null when
// bounded loads are off. On success *out is {host, its position in the order, kSpread,
// whether the unit was reserved}; false (nothing taken) when no candidate could be chosen.
bool pickSpread(const SelectorTable& table, uint64_t hash, const LoadView& loads,
                uint32_t spread, const BoundedLoad* bounded, Reserve reserve,
                Pick* out) noexcept;

}  // namespace lb
