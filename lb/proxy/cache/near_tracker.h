// How a cache protocol tells the near cache about writes lb does not see (docs/config.md
// "near_cache"): Redis' CLIENT TRACKING in redirect mode (lb/proxy/redis/redis_tracking.h). One per
// backend group of a worker whose cluster has a near cache and whose protocol has one
// (CacheWire::newTracker); memcached has none, and its staleness bound is the ttl.
//
// The contract with the sessions (NearReads::sent): a read may fill the cache only
// while the tracker is up(), and only on a server connection that has sent enableCommand()
// since the tracker's current epoch() began (the server then reports every later change of
// the keys that connection reads). A tracker that goes down flushes its backend's entries
// (NearCache::flushSource) before up() turns false, and a new epoch starts when it is back.
//
// Loop thread only. Owned by its ServerGroup; close() ends it (it frees itself after its
// handles' last callbacks).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

namespace lb {

class NearCache;

class NearTracker {
 public:
  virtual ~NearTracker() = default;
  // The cluster's near cache on this worker, which invalidations and flushes go to (again
  // after a reload that made a new one).
  virtual void attach(const std::shared_ptr<NearCache>& cache) noexcept = 0;
  virtual bool up() const noexcept = 0;
  virtual uint32_t epoch() const noexcept = 0;
  // The command a server connection sends (once per epoch) before its reads may fill, and
  // the framing hint of its reply (CacheFragment::reply_kind; the reply is dropped).
  virtual std::string_view enableCommand() const noexcept = 0;
  virtual uint8_t enableReplyKind() const noexcept = 0;
  virtual void close() noexcept = 0;
};

}  // namespace lb
