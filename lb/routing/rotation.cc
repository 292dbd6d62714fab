#include "lb/routing/rotation.h"

namespace lb {

Pick pickInTableOrder(uint32_t hosts, uint32_t start, const LoadView& loads,
                      uint32_t from_attempt) noexcept {
  if (hosts == 0) return {0, 0, PickReason::kFallback};
  start %= hosts;
  for (uint32_t a = from_attempt; a < hosts; ++a) {
    const uint32_t h = (start + a) % hosts;
    if (loads.usable(h)) return {h, a, a == 0 ? PickReason::kOwner : PickReason::kFailover};
  }
  return {start, 0, PickReason::kFallback};
}

}  // namespace lb
