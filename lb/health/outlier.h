// Passive outlier detection (Envoy's outlier_detection with consecutive failures; HAProxy's
// `observe` + `error-limit`): workers count what goes wrong with a backend in their own
// statistics slots, and the main thread reads those slots on a timer, ejects a backend whose
// failures run past `consecutive_failures`, and lets it back when its time is up.
//
//   FailureStreak  the backend's current run of consecutive failures, summed over workers
//   Ejection       one backend's ejection: how long, until when, how many times in a row
//   mayEject       the cluster-wide cap, max_ejected_percent
//
// All pure: time is a parameter (milliseconds of a monotonic clock), so the tests drive
// them with a fake one. Main thread only.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "lb/config/config.h"
#include "lb/routing/backend_state.h"

namespace lb {

// A worker keeps, per backend, the running count of its failures and that count as it stood
// at its last success (noteBackendFailure / noteBackendSuccess), so its current run is their
// difference. The run of the backend is the sum of its workers' runs: every worker sees only
// failures while a backend fails everything, and any success ends that worker's run. With
// several workers this can count failures that were interleaved with another worker's
// successes; a backend that fails only some requests still resets the runs too often to be
// ejected, which is the point of "consecutive".
//
// The main thread cannot write the workers' slots, so it forgets runs (at an ejection and at
// its end) by remembering each worker's count at that moment.
class FailureStreak {
 public:
  // `state` is read now: failures so far are forgotten.
  explicit FailureStreak(const BackendState& state);

  // The current run of failures, not counting any before the last reset().
  uint64_t current(const BackendState& state) const noexcept;
  // Forgets the runs so far.
  void reset(const BackendState& state) noexcept;
  // Failures of each kind since the last reset(), for the log line of an ejection.
  std::array<uint64_t, kBackendFailureKinds> kindsSinceReset(const BackendState& state) const;

 private:
  std::vector<uint64_t> consumed_;   // per worker: failures_total at the last reset
  std::vector<std::array<uint64_t, kBackendFailureKinds>> kinds_at_reset_;
};

// One backend's ejections. The n-th ejection in a row lasts base_ejection * 2^(n-1), at most
// max_ejection; a backend that stays in for max_ejection after it returned starts over at
// base_ejection (Envoy shortens its multiplier one step per quiet interval instead; one reset
// after a full max_ejection is easier to predict and to read in the log).
class Ejection {
 public:
  bool ejected() const noexcept { return ejected_; }
  uint64_t until() const noexcept { return until_; }
  // The length of the current ejection, or of the last one.
  uint64_t lastLengthMs() const noexcept { return last_length_; }
  // Ejections in a row (since the last reset to base_ejection).
  uint32_t repeats() const noexcept { return repeats_; }

  // base * 2^repeats, at most max (and never less than base).
  static uint64_t lengthFor(uint32_t repeats, const OutlierConfig& policy) noexcept;

  // Ejects from `now`; returns how long.
  uint64_t eject(uint64_t now, const OutlierConfig& policy) noexcept;
  // Its time is up at `now` (it may still wait for its active checks).
  bool due(uint64_t now) const noexcept { return ejected_ && now >= until_; }
  // It is back in from `now`.
  void end(uint64_t now) noexcept;
  // Called while it is in: after max_ejection in, the next ejection is base_ejection again.
  void forgive(uint64_t now, const OutlierConfig& policy) noexcept;
  // Outlier detection was turned off: in at once, history forgotten.
  void clear() noexcept { *this = Ejection(); }
  // An ejection the lb before an upgrade had running: `left_ms` more of it, its repeat count.
  void restore(uint64_t now, uint64_t left_ms, uint64_t length_ms, uint32_t repeats) noexcept {
    ejected_ = true;
    until_ = now + left_ms;
    last_length_ = length_ms;
    repeats_ = repeats;
  }

 private:
  bool ejected_ = false;
  uint64_t until_ = 0;
  uint64_t returned_at_ = 0;
  uint64_t last_length_ = 0;
  uint32_t repeats_ = 0;
};

// max_ejected_percent: may one more backend of a cluster of `total` be ejected while
// `ejected` are? Integers only: (ejected + 1) * 100 <= percent * total. With 4 backends and
// 50%, 2 may be out at once; with one backend, none (ejecting the only host achieves nothing
// but a panic).
inline bool mayEject(uint32_t ejected, uint32_t total, uint32_t max_percent) noexcept {
  return (uint64_t{ejected} + 1) * 100 <= uint64_t{max_percent} * total;
}

// panic_threshold: is a cluster with `healthy` of `total` backends healthy in panic? Below
// the threshold (strictly): 1 of 4 healthy is 25%, under 50; 2 of 4 is not. 0 = never.
inline bool inPanic(uint32_t healthy, uint32_t total, uint32_t threshold) noexcept {
  return threshold > 0 && total > 0 && uint64_t{healthy} * 100 < uint64_t{threshold} * total;
}

}  // namespace lb
