// Handover: the table that served before a change of owners, kept beside the new one for the
// cluster's `handover.window` (docs/architecture.md, "Handover"), so that moved keys reach
// their new owner gradually instead of all at once.
//
// A change is a new table whose owners differ from the serving one's (a reload or an etcd
// revision that adds, removes or re-weighs a backend); a new address or a rebuilt table that
// puts every key where it was is not one. A second change inside a window opens a new window
// from the table serving at that moment.
//
// The ramp (the pick's "handover" step, lb/routing/pick.cc): a key whose owner changed moves
// when rampMoment(hash) < elapsed / window, and stays moved. The moment comes from the key's
// hash alone, so every lb instance moves a key at the same moment of the same window, and the
// cold misses at the new owners arrive spread over the window (HAProxy's slowstart and
// Varnish's shard director rampup spread a returning server's keys alike). A key whose
// previous owner left the cluster moves at once: no key is routed to a leaving backend.
//
// Leaving backends: a cluster that reads through (redis, memcached) keeps each backend the
// change removed for the window, as a host past the table's (ClusterSnapshot::backends
// after hostCount()): no key is routed to it, a miss at a key's new owner is read from it,
// writes through lb delete there, and health checks it. The window keeps their settings
// (leaving_backends), and the snapshot derived at its end drops them (lb/routing/readdress.h).
//
// Built on the main thread with the snapshot; immutable and shared by every worker after.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/core/duration.h"
#include "plugins/selector.h"

namespace lb {

struct HandoverWindow {
  static constexpr uint32_t kLeaving = UINT32_MAX;

  // The table that served before the change, and each of its hosts' index in the new
  // snapshot's backends (kLeaving: not a member any more, and not kept as a leaving host).
  std::shared_ptr<const SelectorTable> previous;
  std::vector<std::string> previous_names;   // its hosts' names, by its host index
  std::vector<uint32_t> to_current;
  uint64_t from_fingerprint = 0;     // the previous table's tableFingerprint()
  // The window, in milliseconds since the Unix epoch (the wall clock, which instances fed by
  // one membership share).
  int64_t since_ms = 0;
  int64_t until_ms = 0;
  std::vector<std::string> leaving;  // names of the previous table's hosts that left
  // The settings of the leaving hosts a cluster that reads through keeps, in the order they
  // follow the table's hosts in ClusterSnapshot::backends (their configs point here).
  std::vector<BackendConfig> leaving_backends;
  // The share of the key space whose owner changed, and the sorted ramp moments of the
  // sampled keys that moved (lb_handover_moved_ratio, lb_handover_ramp_ratio).
  double moved_ratio = 0;
  std::vector<double> moved_moments;
  // Set by the first pick that finds the window over, so that the picks after it skip the
  // step with one relaxed load until the next snapshot drops the window. A copy starts
  // unset (a carried window is checked afresh).
  struct OverFlag {
    mutable std::atomic<bool> value{false};
    OverFlag() = default;
    OverFlag(const OverFlag&) noexcept {}
    OverFlag& operator=(const OverFlag&) noexcept { return *this; }
  } over;

  // The key's owner under the previous table as a host of the new snapshot (a leaving one
  // past the table's hosts); kLeaving when it left and is not kept.
  uint32_t previousOwner(uint64_t hash) const noexcept {
    return to_current[previous->pick(hash, 0)];
  }
  // Whether a moved key hashing to `hash` still goes to its previous owner at `now_ms`.
  bool holdsAt(uint64_t hash, int64_t now_ms) const noexcept;
  // The share of the window elapsed at `now_ms`, in [0, 1].
  double progressAt(int64_t now_ms) const noexcept;
  // The share of the moved sampled keys that have moved at `now_ms`.
  double rampRatioAt(int64_t now_ms) const noexcept;
};

// A key's moment in a ramp, in [0, 1): SplitMix64's finalizer (Steele, Lea and Flood,
// OOPSLA 2014) over its hash, so that it does not follow the table's use of the same hash.
double rampMoment(uint64_t hash) noexcept;

// The handover of a cluster whose table goes from `previous` (its hosts named
// `previous_names`, fingerprint `previous_fingerprint`, its window `open` or null) to
// `current` (hosts `current_names`) at `now_ms`, with `window_ms` > 0: a new window when the
// owner of any of kHandoverSamples evenly spaced hashes over the key hash's `hash_bits`
// changed; else `open`, re-aimed at the new table's host indices, while it lasts; else null.
// A new window starts at `stamped_ms` (the membership document's changed_at_ms) when that is
// within the window before now and at most kMaxStampAhead after it (clocks a little apart),
// else at now.
inline constexpr uint64_t kHandoverSamples = 16384;
inline constexpr int64_t kMaxStampAheadMs = 5000;
std::shared_ptr<HandoverWindow> handoverAcross(
    const std::shared_ptr<const SelectorTable>& previous,
    const std::vector<std::string>& previous_names, uint64_t previous_fingerprint,
    const std::shared_ptr<const HandoverWindow>& open, const SelectorTable& current,
    const std::vector<std::string>& current_names, int hash_bits, int64_t now_ms,
    int64_t window_ms, int64_t stamped_ms = 0);

}  // namespace lb
