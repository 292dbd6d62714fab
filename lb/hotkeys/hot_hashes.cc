#include "lb/hotkeys/hot_hashes.h"

#include <algorithm>

#include "lb/hotkeys/hot_keys.h"

namespace lb {

HotHashes::HotHashes(std::span<const uint64_t> hashes) : members_(hashes.begin(), hashes.end()) {
  std::sort(members_.begin(), members_.end());
  members_.erase(std::unique(members_.begin(), members_.end()), members_.end());
  // The smallest power of two of at least 8 slots and twice the members: the probe loop in
  // contains() ends because at least half the slots stay empty.
  size_t slots = 8;
  unsigned bits = 3;
  while (slots < 2 * members_.size()) {
    slots *= 2;
    ++bits;
  }
  slots_.assign(slots, kEmpty);
  mask_ = slots - 1;
  shift_ = 64 - bits;
  for (uint64_t h : members_) {
    if (h == kEmpty) {
      has_empty_ = true;
      continue;
    }
    size_t i = slotOf(h);
    while (slots_[i] != kEmpty) i = (i + 1) & mask_;
    slots_[i] = h;
  }
}

std::shared_ptr<const HotHashes> hotHashesOf(const HotSet& set) {
  std::vector<uint64_t> hot;
  for (const HotKey& k : set.keys)
    if (k.hot) hot.push_back(k.hash);
  if (hot.empty()) return nullptr;
  return std::make_shared<const HotHashes>(hot);
}

}  // namespace lb
