#include "lb/proxy/cache/near_cache.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "lb/core/hash.h"

namespace lb {

namespace {
// A seed of its own, so that the near cache's hash never equals the routing hash of a cluster
// whose key hash is xxh64 (a stripe would then track one backend's keys).
constexpr uint64_t kSeed = 0x6e656172;   // "near"

size_t indexSizeFor(uint32_t items) {
  size_t n = 16;
  while (n < size_t{2} * items) n <<= 1;   // at most half full: short probes
  return n;
}
}  // namespace

uint64_t NearCache::hashOf(std::string_view key) noexcept { return xxh64(key, kSeed); }

NearCache::NearCache(NearCacheState& shared, unsigned worker, const NearCacheLimits& limits,
                     std::shared_ptr<const void> keep)
    : keep_(std::move(keep)),
      shared_(shared), stats_(shared.worker(worker)), limits_(limits) {
  const uint32_t items = limits_.items == 0 ? 1 : limits_.items;
  entries_.resize(items);
  free_.reserve(items);
  for (uint32_t i = items; i-- > 0;) free_.push_back(i);
  index_.assign(indexSizeFor(items), kEmpty);
  index_mask_ = index_.size() - 1;
}

NearCache::~NearCache() {
  for (Entry& e : entries_)
    if (e.used) std::free(e.data);
  stats_.items.add(-static_cast<int64_t>(used_));
  stats_.bytes.add(-static_cast<int64_t>(bytes_));
}

int32_t NearCache::lookup(uint64_t hash, std::string_view key) const noexcept {
  for (size_t i = home(hash);; i = (i + 1) & index_mask_) {
    const int32_t s = index_[i];
    if (s == kEmpty) return kEmpty;
    const Entry& e = entries_[static_cast<size_t>(s)];
    if (e.hash == hash && e.key_len == key.size() && memcmp(e.data, key.data(), key.size()) == 0)
      return s;
  }
}

void NearCache::indexInsert(uint32_t slot) noexcept {
  size_t i = home(entries_[slot].hash);
  while (index_[i] != kEmpty) i = (i + 1) & index_mask_;
  index_[i] = static_cast<int32_t>(slot);
}

// Backward-shift deletion (Knuth, TAOCP vol. 3, 6.4 Algorithm R): no tombstones, so probes
// stay as short as the load allows however many entries came and went.
void NearCache::indexErase(uint32_t slot) noexcept {
  size_t i = home(entries_[slot].hash);
  while (index_[i] != static_cast<int32_t>(slot)) i = (i + 1) & index_mask_;
  for (size_t j = (i + 1) & index_mask_; index_[j] != kEmpty; j = (j + 1) & index_mask_) {
    const size_t k = home(entries_[static_cast<size_t>(index_[j])].hash);
    // Entry j may move back to i unless its home lies cyclically in (i, j].
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    index_[i] = index_[j];
    i = j;
  }
  index_[i] = kEmpty;
}

void NearCache::remove(uint32_t slot, NearInvalidation* reason) noexcept {
  Entry& e = entries_[slot];
  indexErase(slot);
  const uint64_t size = uint64_t{e.key_len} + e.reply_len;
  std::free(e.data);
  e = Entry{};
  bytes_ -= size;
  --used_;
  free_.push_back(slot);   // reserved for every slot: never allocates
  stats_.items.add(-1);
  stats_.bytes.add(-static_cast<int64_t>(size));
  if (reason != nullptr) stats_.invalidations[static_cast<int>(*reason)].add();
}

uint32_t NearCache::victim() noexcept {
  const uint32_t n = static_cast<uint32_t>(entries_.size());
  // Two sweeps at most: the first clears every bit it passes.
  for (uint32_t step = 0; step < 2 * n + 1; ++step) {
    Entry& e = entries_[hand_];
    const uint32_t at = hand_;
    hand_ = hand_ + 1 == n ? 0 : hand_ + 1;
    if (!e.used) continue;
    if (e.referenced) {
      e.referenced = false;
      continue;
    }
    return at;
  }
  return 0;   // not reached while used_ > 0
}

std::string_view NearCache::find(uint64_t hash, std::string_view key, uint64_t now_ms) noexcept {
  const int32_t s = lookup(hash, key);
  if (s == kEmpty) return {};
  Entry& e = entries_[static_cast<size_t>(s)];
  NearInvalidation why;
  if (now_ms >= e.expires_ms) {
    why = NearInvalidation::kTtl;
  } else if (shared_.stripe(hash) != e.stripe) {
    why = NearInvalidation::kWrite;   // a write through lb, maybe on another worker
  } else {
    e.referenced = true;
    return {e.data + e.key_len, e.reply_len};
  }
  remove(static_cast<uint32_t>(s), &why);
  return {};
}

NearTicket NearCache::ticket(uint64_t hash) const noexcept {
  return {shared_.stripe(hash), flushes_};
}

bool NearCache::fill(uint64_t hash, std::string_view key, std::string_view reply,
                     NearTicket ticket, uint64_t now_ms, uint32_t source) noexcept {
  if (ticket.flushes != flushes_ || shared_.stripe(hash) != ticket.stripe) return false;
  const uint64_t size = uint64_t{key.size()} + reply.size();
  if (size > limits_.bytes || reply.size() > UINT32_MAX || key.size() > UINT32_MAX) return false;
  if (const int32_t s = lookup(hash, key); s != kEmpty) remove(static_cast<uint32_t>(s), nullptr);
  while (used_ > 0 && (free_.empty() || bytes_ + size > limits_.bytes))
    remove(victim(), nullptr);
  char* data = static_cast<char*>(std::malloc(size == 0 ? 1 : size));
  if (data == nullptr) return false;
  memcpy(data, key.data(), key.size());
  memcpy(data + key.size(), reply.data(), reply.size());
  const uint32_t slot = free_.back();
  free_.pop_back();
  Entry& e = entries_[slot];
  e.data = data;
  e.hash = hash;
  e.expires_ms = now_ms + limits_.ttl_ms;
  e.key_len = static_cast<uint32_t>(key.size());
  e.reply_len = static_cast<uint32_t>(reply.size());
  e.stripe = ticket.stripe;
  e.source = source;
  e.used = true;
  e.referenced = false;
  indexInsert(slot);
  ++used_;
  bytes_ += size;
  stats_.items.add(1);
  stats_.bytes.add(static_cast<int64_t>(size));
  return true;
}

void NearCache::invalidateWrite(uint64_t hash, std::string_view key) noexcept {
  shared_.bump(hash);
  invalidate(hash, key, NearInvalidation::kWrite);
}

void NearCache::invalidate(uint64_t hash, std::string_view key,
                           NearInvalidation reason) noexcept {
  if (const int32_t s = lookup(hash, key); s != kEmpty) remove(static_cast<uint32_t>(s), &reason);
}

void NearCache::flushSource(uint32_t source) noexcept {
  ++flushes_;
  NearInvalidation why = NearInvalidation::kFlush;
  for (uint32_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].used && entries_[i].source == source) remove(i, &why);
}

void NearCache::flushAll() noexcept {
  ++flushes_;
  NearInvalidation why = NearInvalidation::kFlush;
  for (uint32_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].used) remove(i, &why);
}

}  // namespace lb
