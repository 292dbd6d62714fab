#include "lb/health/outlier.h"

#include <algorithm>

namespace lb {

FailureStreak::FailureStreak(const BackendState& state)
    : consumed_(state.workers, 0), kinds_at_reset_(state.workers) {
  reset(state);
}

uint64_t FailureStreak::current(const BackendState& state) const noexcept {
  uint64_t run = 0;
  for (unsigned w = 0; w < state.workers && w < consumed_.size(); ++w) {
    const BackendWorkerStats& s = state.per_worker[w];
    // The total first: a success the worker records between the two loads can only make the
    // base look newer than the total, which clamps this worker's run to 0 (one read late).
    const uint64_t total = s.failures_total.get();
    const uint64_t base = std::max(s.failures_at_success.get(), consumed_[w]);
    if (total > base) run += total - base;
  }
  return run;
}

void FailureStreak::reset(const BackendState& state) noexcept {
  for (unsigned w = 0; w < state.workers && w < consumed_.size(); ++w) {
    const BackendWorkerStats& s = state.per_worker[w];
    consumed_[w] = s.failures_total.get();
    for (int k = 0; k < kBackendFailureKinds; ++k) kinds_at_reset_[w][k] = s.failures[k].get();
  }
}

std::array<uint64_t, kBackendFailureKinds> FailureStreak::kindsSinceReset(
    const BackendState& state) const {
  std::array<uint64_t, kBackendFailureKinds> out{};
  for (unsigned w = 0; w < state.workers && w < kinds_at_reset_.size(); ++w)
    for (int k = 0; k < kBackendFailureKinds; ++k) {
      const uint64_t now = state.per_worker[w].failures[k].get();
      if (now > kinds_at_reset_[w][k]) out[k] += now - kinds_at_reset_[w][k];
    }
  return out;
}

uint64_t Ejection::lengthFor(uint32_t repeats, const OutlierConfig& policy) noexcept {
  const uint64_t base = static_cast<uint64_t>(policy.base_ejection.count());
  const uint64_t max = std::max(base, static_cast<uint64_t>(policy.max_ejection.count()));
  uint64_t length = base;
  // Doubling stops at the cap, so no shift can overflow whatever `repeats` is.
  for (uint32_t i = 0; i < repeats && length < max; ++i) length *= 2;
  return std::min(length, max);
}

uint64_t Ejection::eject(uint64_t now, const OutlierConfig& policy) noexcept {
  last_length_ = lengthFor(repeats_, policy);
  ejected_ = true;
  until_ = now + last_length_;
  if (repeats_ < UINT32_MAX) ++repeats_;
  return last_length_;
}

void Ejection::end(uint64_t now) noexcept {
  ejected_ = false;
  returned_at_ = now;
}

void Ejection::forgive(uint64_t now, const OutlierConfig& policy) noexcept {
  if (ejected_ || repeats_ == 0) return;
  if (now - returned_at_ >= static_cast<uint64_t>(policy.max_ejection.count())) repeats_ = 0;
}

}  // namespace lb
