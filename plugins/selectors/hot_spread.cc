#include "plugins/selectors/hot_spread.h"

#include <algorithm>
#include <array>

namespace lb {

uint32_t spreadSet(const SelectorTable& table, uint64_t hash, const LoadView* loads,
                   uint32_t spread, SpreadSet* out) noexcept {
  const uint32_t n = table.hostCount();
  const uint32_t want = std::min({std::max(spread, 1u), kMaxSpread, n});
  uint32_t count = 0;
  for (uint32_t a = 0; a < n && count < want; ++a) {
    const uint32_t h = table.pick(hash, a);
    if (loads == nullptr || loads->usable(h)) (*out)[count++] = {h, a};
  }
  return count;
}

bool pickSpread(const SelectorTable& table, uint64_t hash, const LoadView& loads,
                uint32_t spread, const BoundedLoad* bounded, Reserve reserve,
                Pick* out) noexcept {
  SpreadSet cands;
  const uint32_t count = spreadSet(table, hash, &loads, spread, &cands);
  if (count == 0) return false;

  const bool reserving = bounded != nullptr && reserve == Reserve::kYes;
  const uint64_t total = bounded != nullptr ? loads.totalLoad() : 0;
  // Each round takes the least loaded candidate left (strictly less: ties stay with the
  // earliest in the order) and, when reserving, tries to take its unit under the cap; a
  // candidate at its cap or one that lost the compare-and-swap to another worker leaves the
  // set. At most `count` rounds.
  uint32_t left = count;
  while (left > 0) {
    uint32_t best = 0;
    uint64_t best_load = 0;
    bool have = false;
    for (uint32_t i = 0; i < left;) {
      const uint64_t load = loads.load(cands[i].host);
      if (bounded != nullptr && load >= bounded->cap(cands[i].host, total)) {
        // At its cap: out for this pick. Removing keeps the order of the rest, so that ties
        // still go to the earliest.
        std::copy(cands.begin() + i + 1, cands.begin() + left, cands.begin() + i);
        --left;
        continue;
      }
      if (!have || load < best_load) {
        best = i;
        best_load = load;
        have = true;
      }
      ++i;
    }
    if (!have) return false;
    const SpreadCandidate c = cands[best];
    if (reserving && !loads.tryReserve(c.host, bounded->cap(c.host, total))) {
      std::copy(cands.begin() + best + 1, cands.begin() + left, cands.begin() + best);
      --left;
      continue;
    }
    *out = {c.host, c.attempt, PickReason::kSpread, reserving && loads.reserves()};
    return true;
  }
  return false;
}

}  // namespace lb
