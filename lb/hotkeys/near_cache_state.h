// What every worker's near cache of one cluster shares (docs/config.md "near_cache"), kept
// in ClusterState so that it outlives snapshots: the write stripes that make an invalidation
// seen by every worker at once, and each worker's near-cache counters for the metrics.
//
// Why shared stripes: the near cache itself is per worker (lb/proxy/cache/near_cache.h), but a
// client's SET may go through worker A while its next GET goes through worker B. A write
// through lb bumps the stripe of its key here before it is forwarded; an entry remembers the
// stripe it was filled under, and a worker serves it only while the stripe is unchanged. So a
// write acknowledged to any client is seen by every later read through any worker, without a
// message between workers. A stripe shared by two keys only costs the other key a miss.
//
// Request path: one atomic load per near-cache hit, one fetch_add per write command of a
// cluster with a near cache (no lock); counters are single-writer (lb/core/stats.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "lb/core/stats.h"

namespace lb {

// lb_hotkey_requests_total{path} of a redis or memcached cluster: what a hot key's read did.
enum class NearPath : uint8_t {
  kHit,      // answered from the near cache
  kMiss,     // sent to the backend; its reply fills the cache
  kBypass,   // a hot key whose command cannot use the cache (not a plain read)
  kCount
};
inline const char* nearPathName(NearPath p) noexcept {
  static constexpr const char* kNames[] = {"near_hit", "near_miss", "bypass"};
  return kNames[static_cast<int>(p)];
}

// lb_near_cache_invalidations_total{reason}: why an item left the cache before it was read.
enum class NearInvalidation : uint8_t {
  kWrite,      // a command through lb that can change the key
  kTracking,   // Redis CLIENT TRACKING said the key changed
  kFlush,      // the tracking connection was lost: its backend's items went
  kTtl,        // the item's ttl ran out
  kCount
};
inline const char* nearInvalidationName(NearInvalidation r) noexcept {
  static constexpr const char* kNames[] = {"write", "tracking", "flush", "ttl"};
  return kNames[static_cast<int>(r)];
}

// One worker's near-cache counters (written by that worker only).
struct alignas(64) NearCacheWorkerStats {
  StatCounter paths[static_cast<int>(NearPath::kCount)];
  StatCounter invalidations[static_cast<int>(NearInvalidation::kCount)];
  StatGauge items;
  StatGauge bytes;
};

class NearCacheState {
 public:
  static constexpr uint32_t kStripes = 4096;   // a power of two: 16 KiB per cluster

  explicit NearCacheState(unsigned workers)
      : workers_(workers),
        stripes_(std::make_unique<std::atomic<uint32_t>[]>(kStripes)),
        per_worker_(std::make_unique<NearCacheWorkerStats[]>(workers == 0 ? 1 : workers)) {}
  NearCacheState(const NearCacheState&) = delete;
  NearCacheState& operator=(const NearCacheState&) = delete;

  // The stripe of a key's near-cache hash, as a fill's ticket or an entry remembers it.
  uint32_t stripe(uint64_t hash) const noexcept {
    return stripes_[hash & (kStripes - 1)].load(std::memory_order_acquire);
  }
  // A write of the key is about to be forwarded: every entry and in-flight fill of its stripe
  // is stale from now on, in every worker.
  void bump(uint64_t hash) noexcept {
    stripes_[hash & (kStripes - 1)].fetch_add(1, std::memory_order_acq_rel);
  }

  // Worker `worker`'s counters; a worker beyond the ones this was made for (a test's
  // hand-built cluster) shares the last slot.
  NearCacheWorkerStats& worker(unsigned w) noexcept {
    return per_worker_[w < workers_ ? w : (workers_ == 0 ? 0 : workers_ - 1)];
  }
  const NearCacheWorkerStats& worker(unsigned w) const noexcept {
    return const_cast<NearCacheState*>(this)->worker(w);
  }
  unsigned workers() const noexcept { return workers_ == 0 ? 1 : workers_; }

 private:
  const unsigned workers_;
  std::unique_ptr<std::atomic<uint32_t>[]> stripes_;
  std::unique_ptr<NearCacheWorkerStats[]> per_worker_;
};

}  // namespace lb
