#include "lb/hotkeys/hot_keys.h"

#include <algorithm>
#include <cmath>

namespace lb {

namespace {

// Smoothing: an exponentially weighted rate with a half-life of one second, old * 2^(-w/h) +
// window * (1 - 2^(-w/h)). At the usual one-second window that is new = 0.5 * old + 0.5 *
// window: a steady key reaches 75% of its rate in 2 windows and 94% in 4, so a key that turns
// hot is reported within seconds, while one noisy window moves a share by only half its
// excursion (a key must reach twice the threshold for a single second to enter on it alone).
// Taking the decay from the window's length keeps the half-life in seconds when a window is
// shorter or longer (a reload, a late timer). The cluster's total is smoothed the same way
// and from the same start, so a share is the exact ratio of the two from the first window.
constexpr double kHalfLifeS = 1.0;
// Below this share of the cluster, or the summary's floor, an entry says nothing the summary
// does not (any untracked key may have that much), and once it is not hot it is forgotten.
// A threshold smaller than this acts as this.
constexpr double kForgetShare = 1e-4;
// And below this rate in any case, so that an idle cluster's entries go too.
constexpr double kForgetRps = 1e-3;

}  // namespace

HotKeyTracker::HotKeyTracker(HotKeyPolicy policy) : policy_(policy) {
  set_.summary_size = SpaceSaving::kCapacity;
}

size_t HotKeyTracker::activeCount() const noexcept {
  return static_cast<size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.hot; }));
}

// Main thread, once a window. entries_ is kept sorted by hash between calls, so each of the
// summary's counters finds its entry by binary search; new keys go to the end until the
// vector is sorted again at the end of the call.
void HotKeyTracker::observe(const SpaceSaving& merged, double window_s, int64_t now_ms) {
  if (!(window_s > 0) || !std::isfinite(window_s)) return;
  const double keep = std::exp2(-window_s / kHalfLifeS);
  const double fresh = 1 - keep;
  const auto smooth = [&](double old, double count) { return keep * old + fresh * count / window_s; };

  set_.window_s = window_s;
  set_.total_rps = smooth(set_.total_rps, static_cast<double>(merged.total()));
  set_.floor_rps = smooth(set_.floor_rps, static_cast<double>(merged.floor()));
  set_.summary_size = SpaceSaving::kCapacity;

  for (Entry& e : entries_) e.seen = false;
  const size_t known = entries_.size();
  for (const HotKeyCounter& c : merged.counters()) {
    auto it = std::lower_bound(entries_.begin(), entries_.begin() + static_cast<ptrdiff_t>(known),
                               c.hash, [](const Entry& e, uint64_t h) { return e.hash < h; });
    Entry* e;
    if (it != entries_.begin() + static_cast<ptrdiff_t>(known) && it->hash == c.hash) {
      e = &*it;
    } else {
      e = &entries_.emplace_back();
      e->hash = c.hash;
    }
    e->seen = true;
    e->rps = smooth(e->rps, static_cast<double>(c.count));
    // count - error <= the true count in every window, so its smoothed rate is at most the
    // smoothed true rate (a sum with the same non-negative weights).
    e->rps_lower = smooth(e->rps_lower, static_cast<double>(c.count - std::min(c.error, c.count)));
    if (c.key_len > 0) {
      e->key.assign(c.key, c.key_len);
      e->truncated = c.truncated;
    }
  }

  // A key the summary did not track this window counts 0 for it: its true count was at most
  // the floor, which rps_lower cannot claim and rps need not (floor_rps says it).
  const double negligible =
      std::max({set_.floor_rps, kForgetShare * set_.total_rps, kForgetRps});
  for (Entry& e : entries_) {
    if (!e.seen) {
      e.rps *= keep;
      e.rps_lower *= keep;
    }
    e.share = set_.total_rps > 0 ? e.rps / set_.total_rps : 0;
    const bool above = e.share >= policy_.threshold && e.rps > negligible;
    if (!e.hot) {
      if (above) {
        e.hot = true;
        e.hot_since_ms = now_ms;
        e.below_since_ms = -1;
        ++detections_;
      }
    } else if (above) {
      e.below_since_ms = -1;
    } else {
      // Hysteresis: out only once it has been below for `hold` without a break, counted from
      // the end of the first window that found it below.
      if (e.below_since_ms < 0) e.below_since_ms = now_ms;
      if (now_ms - e.below_since_ms >= policy_.hold.count()) {
        e.hot = false;
        e.hot_since_ms = 0;
        e.below_since_ms = -1;
      }
    }
  }
  std::erase_if(entries_,
                [&](const Entry& e) { return !e.hot && !e.seen && e.rps <= negligible; });
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.hash < b.hash; });

  // What to show: the hot keys first (a hot key that fell in rank is still shown while it is
  // held), then the highest rates, at most kShown, ordered by rate.
  std::vector<const Entry*> order;
  order.reserve(entries_.size());
  for (const Entry& e : entries_) order.push_back(&e);
  const auto byRate = [](const Entry* a, const Entry* b) {
    return a->rps != b->rps ? a->rps > b->rps : a->hash < b->hash;
  };
  const size_t shown = std::min(order.size(), HotSet::kShown);
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(shown), order.end(),
                    [&](const Entry* a, const Entry* b) {
                      return a->hot != b->hot ? a->hot : byRate(a, b);
                    });
  order.resize(shown);
  std::sort(order.begin(), order.end(), byRate);

  set_.keys.resize(shown);
  for (size_t i = 0; i < shown; ++i) {
    const Entry& e = *order[i];
    HotKey& k = set_.keys[i];
    k.hash = e.hash;
    k.key = e.key;
    k.truncated = e.truncated;
    k.rps = e.rps;
    k.rps_lower = e.rps_lower;
    k.share = e.share;
    k.hot = e.hot;
    k.hot_since_ms = e.hot_since_ms;
  }
}

}  // namespace lb
