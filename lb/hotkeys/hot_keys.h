// The main thread's per-cluster hot set: the workers' Space-Saving summaries, merged about
// once a second, turned into rates smoothed over windows (exponential decay, so one noisy
// second neither makes nor unmakes a hot key) and a hot set with hysteresis: a key enters
// when its smoothed share of the cluster's requests reaches `threshold`, and leaves only
// after it has stayed below it for `hold`.
//
// Main thread only; no request path code touches it. What workers read of it is published
// like any snapshot (HotSet is a value).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "lb/hotkeys/space_saving.h"

namespace lb {

struct HotKeyPolicy {
  double threshold = 0.02;   // share of the cluster's requests
  std::chrono::milliseconds hold{10000};
};

struct HotKey {
  uint64_t hash = 0;
  std::string key;          // the tracked bytes, at most kHotKeyDisplayBytes
  bool truncated = false;
  double rps = 0;           // smoothed estimated rate
  double rps_lower = 0;     // smoothed (count - error) rate: at most the true rate
  double share = 0;         // rps / the cluster's smoothed request rate
  bool hot = false;         // in the hot set (entered above threshold, not yet held out)
  int64_t hot_since_ms = 0; // unix ms when it entered (0 when not hot)
};

struct HotSet {
  double window_s = 0;      // the last window's length
  double total_rps = 0;     // the cluster's smoothed request rate
  double floor_rps = 0;     // the rate an untracked key may have (the summary's floor)
  size_t summary_size = 0;  // SpaceSaving::kCapacity per worker
  // Every tracked key worth showing, highest rps first: the hot ones and the rest of the
  // top ranks (at most kShown). HotKey::hot says which are hot.
  std::vector<HotKey> keys;
  static constexpr size_t kShown = 50;
};

class HotKeyTracker {
 public:
  explicit HotKeyTracker(HotKeyPolicy policy);

  // One window: `merged` holds every worker's counts for the last `window_s` seconds,
  // ending at wall-clock `now_ms` (unix ms). Updates the smoothed rates and the hot set.
  // Rates decay with a half-life of one second (new = 0.5 old + 0.5 window at 1 s windows);
  // the cluster's total decays alike, so a share is exact from the first window. A key the
  // window did not track counts 0 in it, and once it is not hot and its rate is below the
  // floor, 1e-4 of the total or 0.001/s, it is forgotten. `hold` runs from the end of the
  // first window that found a hot key below the threshold. A window of 0 s changes nothing.
  void observe(const SpaceSaving& merged, double window_s, int64_t now_ms);

  const HotSet& hotSet() const noexcept { return set_; }
  size_t activeCount() const noexcept;    // keys with hot == true
  uint64_t detections() const noexcept { return detections_; }   // entries into the hot set
  void setPolicy(HotKeyPolicy policy) noexcept { policy_ = policy; }   // a reload

 private:
  // Defined here, not in the .cc, so that HotKeyTracker stays an ordinary value wherever it
  // is destroyed, moved or copied (a vector needs its element type complete there).
  struct Entry {
    uint64_t hash = 0;
    std::string key;
    bool truncated = false;
    double rps = 0;
    double rps_lower = 0;
    double share = 0;
    bool hot = false;
    int64_t hot_since_ms = 0;
    int64_t below_since_ms = -1;   // while hot: the first window end it was below; else -1
    bool seen = false;             // tracked in the last window
  };
  HotKeyPolicy policy_;
  HotSet set_;
  uint64_t detections_ = 0;
  std::vector<Entry> entries_;   // the tracker's own memory of keys across windows
};

}  // namespace lb
