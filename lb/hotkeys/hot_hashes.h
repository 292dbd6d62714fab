// A cluster's hot set as the request path reads it: the key hashes of the keys the main
// thread's HotKeyTracker (lb/hotkeys/hot_keys.h) holds hot, in an immutable open-addressed
// table. Built on the main thread after each window (HotKeyState::publishHotSet), handed to
// every worker through its mailbox, and read by that worker alone while a newer one is not
// adopted (HotKeyState::isHot). Nothing in it changes once built, so sharing it needs no
// lock, and contains() needs neither a lock nor an allocation.
//
// The table holds at most half its slots (linear probing; Knuth, TAOCP vol. 3, §6.4: at load
// 1/2 an unsuccessful search probes 2.5 slots on average), at least 8 slots, so a hot set of
// the usual size (a threshold of 2% admits at most 50 keys) fits in a few cache lines and a
// miss, the common case, usually ends at the first slot. Hashes are mixed before indexing
// (Fibonacci hashing, the top bits of hash * 2^64/phi): the key hashes of 32-bit selectors
// (ketama's, twemproxy's) and twemproxy's 15-bit crc32 leave the top bits empty, and an index
// taken from them unmixed would put every key into the first slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace lb {

struct HotSet;

class HotHashes {
 public:
  // Main thread. A set of `hashes` (duplicates are kept once).
  explicit HotHashes(std::span<const uint64_t> hashes);

  // Any thread; the request path. No allocation, no lock.
  bool contains(uint64_t hash) const noexcept {
    if (hash == kEmpty) return has_empty_;
    for (size_t i = slotOf(hash);; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == hash) return true;
      if (s == kEmpty) return false;
    }
  }

  size_t size() const noexcept { return members_.size(); }
  // The hashes, ascending.
  std::span<const uint64_t> members() const noexcept { return members_; }
  // The same hashes as `other`.
  bool sameAs(const HotHashes& other) const noexcept { return members_ == other.members_; }
  size_t slotCount() const noexcept { return slots_.size(); }

 private:
  // An empty slot. A key may hash to it (it is a valid XXH64 and CRC32 value), so it is
  // never stored in the table: has_empty_ says whether it is in the set.
  static constexpr uint64_t kEmpty = 0;
  size_t slotOf(uint64_t hash) const noexcept {
    return static_cast<size_t>((hash * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  std::vector<uint64_t> slots_;
  std::vector<uint64_t> members_;
  size_t mask_ = 0;
  unsigned shift_ = 64;
  bool has_empty_ = false;
};

// Main thread. The hashes of the keys `set` holds hot (HotKey::hot); null when none is.
std::shared_ptr<const HotHashes> hotHashesOf(const HotSet& set);

}  // namespace lb
