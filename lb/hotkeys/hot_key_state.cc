#include "lb/hotkeys/hot_key_state.h"

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

bool HotKeyState::publishHotSet() {
  std::shared_ptr<const HotHashes> fresh = hotHashesOf(tracker_.hotSet());
  std::lock_guard<std::mutex> lock(publish_mu_);
  const bool same = fresh == nullptr ? published_ == nullptr
                                     : published_ != nullptr && published_->sameAs(*fresh);
  if (same) return false;   // the workers keep theirs: no mailbox round for nothing
  published_ = std::move(fresh);
  return true;
}

std::shared_ptr<const HotHashes> HotKeyState::published() const {
  std::lock_guard<std::mutex> lock(publish_mu_);
  return published_;
}

void HotKeyState::adoptHotSet(unsigned worker) noexcept {
  if (worker >= workers_) return;
  std::shared_ptr<const HotHashes> set;
  {
    std::lock_guard<std::mutex> lock(publish_mu_);
    set = published_;
  }
  // The swap keeps the old set alive past the assignment, so that it is freed here, outside
  // the lock, if this worker held it last.
  slots_[worker].hot.swap(set);
}

uint64_t HotKeyState::pathCount(HotKeyPath path) const noexcept {
  uint64_t n = 0;
  for (unsigned w = 0; w < workers_; ++w) n += slots_[w].paths[static_cast<int>(path)].get();
  return n;
}

}  // namespace lb
