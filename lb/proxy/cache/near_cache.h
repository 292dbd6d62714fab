// One worker's near cache of one redis or memcached cluster (docs/config.md "near_cache"):
// the exact reply bytes a backend gave a plain read of a hot
// key (Redis GET, memcached get without CAS; a string's element of an MGET reply is the
// same bytes), so that the next read of that key is answered from lb's memory, byte for
// byte what the server said. Fan et al., "Small cache, big effect" (SoCC 2011): a
// front-end cache of the few hottest items is what keeps one server from taking a skewed
// load.
//
// Bounds, fixed when the cache is made: at most `items` entries (their slots and index are
// allocated up front) and `bytes` of key and reply bytes (each entry's bytes are allocated
// when it is stored, exactly its size, and freed when it goes: never more than `bytes` in
// all). Eviction is CLOCK (Corbató's second chance): a hit sets the entry's bit, the hand
// clears bits until it finds an entry without one.
//
// Correctness, in order:
//   - every entry lives at most `ttl`;
//   - a write through lb of a key (any worker) bumps its stripe in the cluster's
//     NearCacheState before it is forwarded; an entry is served only while its stripe is
//     the one it was filled under, so the write is seen by every read sent after it;
//   - a fill carries the ticket taken when its read was sent (the stripe then, and this
//     cache's flush count): a reply to a read that raced a write or a flush is not stored;
//   - an invalidation lb learns of otherwise (Redis CLIENT TRACKING) drops the key here;
//     a lost tracking connection flushes the entries of its backend (`source`).
//
// Loop thread of its worker only, apart from the shared stripes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "lb/hotkeys/near_cache_state.h"

namespace lb {

struct NearCacheLimits {
  uint32_t items = 1024;
  uint64_t bytes = uint64_t{64} << 20;
  uint64_t ttl_ms = 1000;
};

// What a read takes when it is sent, for its fill to be checked against.
struct NearTicket {
  uint32_t stripe = 0;
  uint32_t flushes = 0;
};

class NearCache {
 public:
  // Allocates the slots and the index now. `shared` (the cluster's; worker `worker`'s
  // counters are in it) must outlive this: `keep` holds what owns it, when given.
  NearCache(NearCacheState& shared, unsigned worker, const NearCacheLimits& limits,
            std::shared_ptr<const void> keep = nullptr);
  ~NearCache();
  NearCache(const NearCache&) = delete;
  NearCache& operator=(const NearCache&) = delete;

  // The near cache's hash of a key (the whole key, whatever hash tag routes it).
  static uint64_t hashOf(std::string_view key) noexcept;

  // The stored reply for `key`, valid until the next call that changes this cache; empty
  // when there is none, or it is expired or invalidated (then dropped, and counted).
  std::string_view find(uint64_t hash, std::string_view key, uint64_t now_ms) noexcept;

  // Before a read of `key` that may fill is sent.
  NearTicket ticket(uint64_t hash) const noexcept;
  // Its reply: stored unless the ticket is stale, it cannot fit the bounds, or memory is
  // exhausted. `source` names where it came from (the backend, for flushSource). True when
  // stored.
  bool fill(uint64_t hash, std::string_view key, std::string_view reply, NearTicket ticket,
            uint64_t now_ms, uint32_t source) noexcept;

  // A command through lb that can change `key` is about to be forwarded.
  void invalidateWrite(uint64_t hash, std::string_view key) noexcept;
  // Something else said `key` changed (Redis CLIENT TRACKING). Counted as `reason`.
  void invalidate(uint64_t hash, std::string_view key, NearInvalidation reason) noexcept;
  // Every entry of `source` goes, and no fill ticketed before this is stored.
  void flushSource(uint32_t source) noexcept;
  void flushAll() noexcept;

  size_t items() const noexcept { return used_; }
  uint64_t bytes() const noexcept { return bytes_; }
  const NearCacheLimits& limits() const noexcept { return limits_; }
  NearCacheState& shared() noexcept { return shared_; }
  NearCacheWorkerStats& stats() noexcept { return stats_; }

 private:
  struct Entry {
    char* data = nullptr;       // key, then reply
    uint64_t hash = 0;
    uint64_t expires_ms = 0;
    uint32_t key_len = 0;
    uint32_t reply_len = 0;
    uint32_t stripe = 0;
    uint32_t source = 0;
    bool used = false;
    bool referenced = false;    // CLOCK's bit
  };
  static constexpr int32_t kEmpty = -1;

  int32_t lookup(uint64_t hash, std::string_view key) const noexcept;   // slot, or kEmpty
  void remove(uint32_t slot, NearInvalidation* reason) noexcept;
  uint32_t victim() noexcept;
  void indexInsert(uint32_t slot) noexcept;
  void indexErase(uint32_t slot) noexcept;
  size_t home(uint64_t hash) const noexcept { return static_cast<size_t>(hash) & index_mask_; }

  std::shared_ptr<const void> keep_;
  NearCacheState& shared_;
  NearCacheWorkerStats& stats_;
  const NearCacheLimits limits_;
  std::vector<Entry> entries_;      // limits_.items slots
  std::vector<uint32_t> free_;      // unused slots
  std::vector<int32_t> index_;      // open addressing (linear probing) into entries_
  size_t index_mask_ = 0;
  uint32_t hand_ = 0;               // CLOCK
  size_t used_ = 0;
  uint64_t bytes_ = 0;
  uint32_t flushes_ = 0;
};

}  // namespace lb
