#include "lb/hotkeys/space_saving.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>

namespace lb {

namespace {

constexpr size_t kCap = SpaceSaving::kCapacity;
// Twice the counters: linear probing at load at most 1/2 averages 1.5 probes per hit
// (Knuth, TAOCP 3, 6.4), and a power of two makes the wrap a mask.
constexpr size_t kIndexSlots = 256;
// Homem and Carvalho's alpha array: cells that count the untracked keys hashing to them.
// More cells filter better (a one-off key must fill its cell up to the minimum count before
// it displaces a counter); 256 keep it at 2 KiB.
constexpr size_t kFilterCells = 256;
constexpr uint16_t kNoCounter = 0xffff;
static_assert(kCap < kNoCounter);
static_assert(kIndexSlots >= 2 * kCap && (kIndexSlots & (kIndexSlots - 1)) == 0);
static_assert((kFilterCells & (kFilterCells - 1)) == 0);

// The key hash comes from whichever function the selector uses (XXH64, but also FNV, CRC32,
// MD5 for twemproxy's hashes), so its low bits may be weak: mix before taking a slot. Two odd
// multipliers (Fibonacci hashing, and splitmix64's), top bits, so that a key's index slot and
// its filter cell are unrelated.
inline size_t indexHome(uint64_t hash) noexcept {
  return static_cast<size_t>((hash * 0x9e3779b97f4a7c15ULL) >> 56) & (kIndexSlots - 1);
}
inline size_t filterCell(uint64_t hash) noexcept {
  return static_cast<size_t>((hash * 0xbf58476d1ce4e5b9ULL) >> 56) & (kFilterCells - 1);
}

void copyKey(HotKeyCounter& c, std::string_view key) noexcept {
  const size_t n = std::min(key.size(), kHotKeyDisplayBytes);
  if (n > 0) std::memcpy(c.key, key.data(), n);
  c.key_len = static_cast<uint16_t>(n);
  c.truncated = key.size() > kHotKeyDisplayBytes;
}

void copyKey(HotKeyCounter& to, const HotKeyCounter& from) noexcept {
  std::memcpy(to.key, from.key, from.key_len);
  to.key_len = from.key_len;
  to.truncated = from.truncated;
}

}  // namespace

// Everything the summary is, trivially copyable so that copyFrom() is one assignment.
struct SummaryState {
  struct IndexSlot {
    uint64_t hash;
    uint16_t counter;   // kNoCounter: empty
  };

  // A binary min-heap of the counters on count; pos[c] is counter c's place in it, so an
  // incremented counter sinks from where it is. A heavy key sinks to a leaf and stays there,
  // where an increment costs one comparison. Each node carries a copy of its counter's count,
  // so that sifting reads 2 KiB of nodes rather than the counters' 29 KiB of key bytes.
  struct HeapNode {
    uint64_t count;
    uint8_t counter;
  };

  std::array<HotKeyCounter, kCap> counters;   // [0, size) in use
  std::array<HeapNode, kCap> heap;
  std::array<uint8_t, kCap> pos;
  std::array<IndexSlot, kIndexSlots> index;
  std::array<uint64_t, kFilterCells> filter;
  size_t size;
  uint64_t total;

  void clear() noexcept {
    size = 0;
    total = 0;
    for (auto& s : index) s = {0, kNoCounter};
    filter.fill(0);
  }

  void place(size_t heap_pos, HeapNode node) noexcept {
    heap[heap_pos] = node;
    pos[node.counter] = static_cast<uint8_t>(heap_pos);
  }

  // Counter c's count has grown to counters[c].count: sink it to where it belongs.
  void grew(uint8_t c) noexcept {
    size_t i = pos[c];
    const HeapNode moving{counters[c].count, c};
    for (;;) {
      size_t child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1].count < heap[child].count) ++child;
      if (heap[child].count >= moving.count) break;
      place(i, heap[child]);
      i = child;
    }
    place(i, moving);
  }

  // Counter c, new at the heap's end: rise to where it belongs.
  void pushed(uint8_t c) noexcept {
    size_t i = size - 1;
    const HeapNode moving{counters[c].count, c};
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (heap[parent].count <= moving.count) break;
      place(i, heap[parent]);
      i = parent;
    }
    place(i, moving);
  }

  void heapify() noexcept {
    for (size_t i = 0; i < size; ++i) place(i, {counters[i].count, static_cast<uint8_t>(i)});
    for (size_t i = size / 2; i-- > 0;) grew(heap[i].counter);
  }

  // The counter tracking `hash`, or kNoCounter. The index is at most half full, so the probe
  // always meets an empty slot.
  uint16_t find(uint64_t hash) const noexcept {
    for (size_t i = indexHome(hash);; i = (i + 1) & (kIndexSlots - 1)) {
      const IndexSlot& s = index[i];
      if (s.counter == kNoCounter) return kNoCounter;
      if (s.hash == hash) return s.counter;
    }
  }

  void indexInsert(uint64_t hash, uint16_t counter) noexcept {
    size_t i = indexHome(hash);
    while (index[i].counter != kNoCounter) i = (i + 1) & (kIndexSlots - 1);
    index[i] = {hash, counter};
  }

  // Deletion by backward shift (Knuth's Algorithm R, TAOCP 3, 6.4): every later entry of the
  // run that would no longer be reachable from its home slot moves into the hole, so probe
  // chains stay whole without tombstones and the index never degrades.
  void indexErase(uint64_t hash) noexcept {
    size_t hole = indexHome(hash);
    while (index[hole].hash != hash || index[hole].counter == kNoCounter)
      hole = (hole + 1) & (kIndexSlots - 1);
    for (size_t j = (hole + 1) & (kIndexSlots - 1); index[j].counter != kNoCounter;
         j = (j + 1) & (kIndexSlots - 1)) {
      const size_t home = indexHome(index[j].hash);
      // j's entry stays when its home lies cyclically in (hole, j].
      const bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (stays) continue;
      index[hole] = index[j];
      hole = j;
    }
    index[hole] = {0, kNoCounter};
  }

  void rebuildIndex() noexcept {
    for (auto& s : index) s = {0, kNoCounter};
    for (size_t c = 0; c < size; ++c) indexInsert(counters[c].hash, static_cast<uint16_t>(c));
  }
};

// A candidate of merge(): a key of either input, its merged bounds, and where its bytes are.
struct MergeCandidate {
  uint64_t hash;
  uint64_t count;
  uint64_t error;
  const HotKeyCounter* bytes;   // the entry whose key bytes it keeps
};

struct SpaceSaving::Impl {
  SummaryState state;
};

// merge()'s scratch (as large again as a summary): one per thread that merges, made on its
// first merge, rather than one inside every summary. A cluster keeps 2 x workers + 1
// summaries; only the main thread's collect and a worker's hand-over onto counts not yet
// collected ever merge.
struct MergeScratch {
  std::array<MergeCandidate, 2 * kCap> candidates;
  std::array<HotKeyCounter, kCap> merged;
};
thread_local std::unique_ptr<MergeScratch> t_merge_scratch;

MergeScratch* mergeScratch() noexcept {
  if (!t_merge_scratch) t_merge_scratch.reset(new (std::nothrow) MergeScratch);
  return t_merge_scratch.get();
}

SpaceSaving::SpaceSaving() : impl_(std::make_unique<Impl>()) { impl_->state.clear(); }

SpaceSaving::~SpaceSaving() = default;

size_t SpaceSaving::bytesPerSummary() noexcept { return sizeof(Impl); }

// Filtered Space-Saving, one occurrence:
// - tracked: count + 1 (and sink in the heap);
// - untracked, a counter free: track it with count 1, error 0 (exact until the counters fill);
// - untracked, counters full, its filter cell + 1 exceeds the minimum count: it replaces the
//   minimum with count cell + 1, error cell; the evicted key's count goes into its own cell,
//   which then bounds that key's occurrences while untracked;
// - otherwise: only its filter cell counts it.
// A cell never exceeds the minimum count (it grows only while cell + 1 <= min, and takes an
// evicted count, which was the minimum, and the minimum never falls), so "exceeds" means
// cell == min, and the newcomer enters at min + 1 with error min: Space-Saving's own
// replacement. Counts therefore sum to at most total(), which is what bounds floor() by
// total() / kCapacity; the filter only spares the counters the keys that would have churned
// them.
void SpaceSaving::add(uint64_t hash, std::string_view key) noexcept {
  SummaryState& s = impl_->state;
  ++s.total;
  const uint16_t found = s.find(hash);
  if (found != kNoCounter) {
    HotKeyCounter& c = s.counters[found];
    ++c.count;
    if (c.key_len == 0 && !key.empty()) copyKey(c, key);
    s.grew(static_cast<uint8_t>(found));
    return;
  }
  uint64_t& cell = s.filter[filterCell(hash)];
  if (s.size < kCap) {
    const auto slot = static_cast<uint8_t>(s.size++);
    HotKeyCounter& c = s.counters[slot];
    c.hash = hash;
    c.count = cell + 1;
    c.error = cell;
    copyKey(c, key);
    s.indexInsert(hash, slot);
    s.pushed(slot);
    return;
  }
  if (cell + 1 <= s.heap[0].count) {
    ++cell;
    return;
  }
  const uint8_t slot = s.heap[0].counter;
  HotKeyCounter& c = s.counters[slot];
  uint64_t& evicted_cell = s.filter[filterCell(c.hash)];
  evicted_cell = std::max(evicted_cell, c.count);
  s.indexErase(c.hash);
  c.hash = hash;
  c.error = cell;
  c.count = cell + 1;
  copyKey(c, key);
  s.indexInsert(hash, slot);
  s.grew(slot);
}

uint64_t SpaceSaving::total() const noexcept { return impl_->state.total; }

uint64_t SpaceSaving::floor() const noexcept {
  const SummaryState& s = impl_->state;
  return s.size < kCap ? 0 : s.heap[0].count;
}

std::span<const HotKeyCounter> SpaceSaving::counters() const noexcept {
  return {impl_->state.counters.data(), impl_->state.size};
}

void SpaceSaving::clear() noexcept { impl_->state.clear(); }

void SpaceSaving::copyFrom(const SpaceSaving& other) noexcept {
  if (&other != this) impl_->state = other.impl_->state;
}

// Agarwal et al.'s merge of two Misra-Gries/Space-Saving summaries (PODS 2012, section 3), in
// Space-Saving's form: every key either input tracks gets, from an input that does not track
// it, that input's floor as both count and error (the most it can have occurred there), so
// count stays an upper bound and count - error the sum of the tracked lower bounds. The
// kCapacity largest counts are kept. Each candidate counts at least floor(a) + floor(b) (a
// tracked count is at least its summary's floor), so the smallest kept count, the new floor,
// bounds every key dropped here and every key neither input tracked. Only a full summary has
// a positive floor, and then the union has at least kCapacity keys: the result is full
// whenever a floor was in play.
void SpaceSaving::merge(const SpaceSaving& other) noexcept {
  SummaryState& a = impl_->state;
  if (&other == this) {
    // The stream twice: every bound doubles.
    for (size_t i = 0; i < a.size; ++i) {
      a.counters[i].count *= 2;
      a.counters[i].error *= 2;
      a.heap[i].count *= 2;   // every count doubles: the heap's order holds
    }
    for (auto& cell : a.filter) cell *= 2;
    a.total *= 2;
    return;
  }
  MergeScratch* scratch = mergeScratch();
  if (scratch == nullptr) return;   // out of memory: this window's counts of `other` are lost
  const SummaryState& b = other.impl_->state;
  const uint64_t floor_a = floor();
  const uint64_t floor_b = other.floor();
  auto& cand = scratch->candidates;
  size_t n = 0;
  for (size_t i = 0; i < a.size; ++i) {
    const HotKeyCounter& ca = a.counters[i];
    const uint16_t j = b.find(ca.hash);
    const HotKeyCounter* cb = j == kNoCounter ? nullptr : &b.counters[j];
    cand[n++] = {ca.hash, ca.count + (cb ? cb->count : floor_b),
                 ca.error + (cb ? cb->error : floor_b),
                 ca.key_len == 0 && cb ? cb : &ca};
  }
  for (size_t j = 0; j < b.size; ++j) {
    const HotKeyCounter& cb = b.counters[j];
    if (a.find(cb.hash) != kNoCounter) continue;
    cand[n++] = {cb.hash, cb.count + floor_a, cb.error + floor_a, &cb};
  }
  // Largest first; ties by hash, so that which of equal keys survive does not depend on
  // where they sat in either input.
  const auto order = [](const MergeCandidate& x, const MergeCandidate& y) {
    return x.count != y.count ? x.count > y.count : x.hash < y.hash;
  };
  const size_t kept = std::min(n, kCap);
  std::partial_sort(cand.begin(), cand.begin() + kept, cand.begin() + n, order);

  // Cell by cell the filters add up (an untracked key's occurrences in a plus those in b);
  // a key dropped here is untracked from now on, so its cell must bound its count too.
  for (size_t c = 0; c < kFilterCells; ++c) a.filter[c] += b.filter[c];
  for (size_t i = kept; i < n; ++i) {
    uint64_t& cell = a.filter[filterCell(cand[i].hash)];
    cell = std::max(cell, cand[i].count);
  }

  auto& out = scratch->merged;
  for (size_t i = 0; i < kept; ++i) {
    out[i].hash = cand[i].hash;
    out[i].count = cand[i].count;
    out[i].error = cand[i].error;
    copyKey(out[i], *cand[i].bytes);
  }
  std::copy_n(out.begin(), kept, a.counters.begin());
  a.size = kept;
  a.total += b.total;
  a.heapify();
  a.rebuildIndex();
}

}  // namespace lb
