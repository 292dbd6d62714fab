#include "lb/routing/hot_key_state.h"

namespace lb {

HotKeyState::HotKeyState(unsigned workers)
    : workers_(workers), slots_(std::make_unique<Slot[]>(workers)), tracker_(HotKeyPolicy{}) {}

void HotKeyState::handOver(unsigned worker) noexcept {
  if (worker >= workers_) return;
  Slot& s = slots_[worker];
  {
    std::lock_guard<std::mutex> lock(s.mu);
    // The buffer was taken: this window's counts replace it; not yet: they join it.
    if (s.pending)
      s.handed.merge(s.live);
    else
      s.handed.copyFrom(s.live);
    s.pending = true;
  }
  s.live.clear();
}

const SpaceSaving& HotKeyState::collect(unsigned* workers_in) noexcept {
  merged_.clear();
  unsigned in = 0;
  for (unsigned w = 0; w < workers_; ++w) {
    Slot& s = slots_[w];
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.pending) continue;
    merged_.merge(s.handed);
    s.pending = false;
    ++in;
  }
  if (workers_in != nullptr) *workers_in = in;
  return merged_;
}

}  // namespace lb
