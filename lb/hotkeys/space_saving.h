// A fixed-size heavy-hitter summary of the keys one worker routes: the filtered Space-Saving
// of Homem and Carvalho ("HotTraffic"/"Filtered Space-Saving", 2010) over Metwally, Agrawal
// and El Abbadi's Space-Saving ("Efficient computation of frequent and top-k elements in data
// streams", ICDT 2005). Counted on the key hash the pick already computed; a tracked entry
// keeps the first kHotKeyDisplayBytes of its key's bytes for display, nothing else does.
//
// Guarantees (Space-Saving's): every key whose true count exceeds total() / kCapacity is
// tracked; a tracked entry's count overestimates its true count by at most its error, so
// count - error is a lower bound; an untracked key's true count is at most floor().
//
// The request path calls add() on the worker's own summary: no allocation, no lock, no
// syscall. Its cost is bounded, not amortised: one probe of an index at most half full
// (1.5 slots on average) and at most log2(kCapacity) = 7 steps of a min-heap on counts; a
// heavy key sinks to a leaf, where its increments cost one comparison. A small filter in
// front of the counters (256 cells) keeps one-off keys from churning them: an untracked key
// replaces the smallest counter only once its cell has counted up to that count, and the
// guarantees above hold all the same. merge() is the main thread's, off the request path,
// and keeps the error bound (Agarwal et al., "Mergeable Summaries", PODS 2012): a kept
// entry's count and error are the sums of its inputs' counts and errors, taking the floor of
// each input that did not track it for both. It allocates only on a thread's first merge: its
// scratch, as large as a summary, is one per thread that merges, not one per summary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace lb {

inline constexpr size_t kHotKeyDisplayBytes = 200;

struct HotKeyCounter {
  uint64_t hash = 0;
  uint64_t count = 0;   // estimated occurrences (an overestimate by at most `error`)
  uint64_t error = 0;
  uint16_t key_len = 0;   // bytes of key[] in use (the key truncated to kHotKeyDisplayBytes)
  bool truncated = false;
  char key[kHotKeyDisplayBytes];
};

class SpaceSaving {
 public:
  static constexpr size_t kCapacity = 128;

  // Allocates its fixed arrays (off the request path); nothing allocates afterwards but a
  // thread's first merge().
  SpaceSaving();
  ~SpaceSaving();
  SpaceSaving(const SpaceSaving&) = delete;
  SpaceSaving& operator=(const SpaceSaving&) = delete;

  // Request path. One occurrence of the key hashing to `hash`; `key` is its bytes (copied,
  // truncated, only when the entry becomes tracked, or later if it was tracked with none).
  // noexcept, no allocation.
  void add(uint64_t hash, std::string_view key) noexcept;

  // Occurrences added since the last clear(), tracked or not.
  uint64_t total() const noexcept;
  // The most an untracked key can have occurred (the smallest tracked count once the
  // counters are full; 0 before).
  uint64_t floor() const noexcept;
  // The tracked entries, in no particular order.
  std::span<const HotKeyCounter> counters() const noexcept;
  // Forgets everything (the worker's summary is cleared after each hand-over).
  void clear() noexcept;

  // Off the request path (the main thread's collect; a worker's hand-over onto counts the
  // main thread has not taken yet). Adds `other` into this summary, keeping the kCapacity
  // largest counts and the error bound stated above. total() becomes the sum of both. Out of
  // memory for the thread's scratch, the merge is skipped.
  void merge(const SpaceSaving& other) noexcept;
  // What one summary holds (its counters, index, heap and filter), for the memory tests.
  static size_t bytesPerSummary() noexcept;
  // Main thread. Copies `other` wholesale (a worker's summary into a hand-over buffer).
  void copyFrom(const SpaceSaving& other) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lb
