// The cache session's one handle on its worker's near cache (near_cache.h): serving and
// filling plain reads of hot keys, and invalidating before every write is forwarded. The
// protocols say which of their commands are which (RedisSession, MemcachedSession) and reach
// the near cache only through this handle (CacheSession::near()); the rules are here, once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lb/proxy/cache/command.h"

namespace lb {

class CacheSession;
class NearCache;

// What NearReads::answerNow found for a read, handed on to NearReads::read so that it does
// not look twice: nothing yet, a cold key (not in the hot set), or a hot key's miss
// (`hash`: its near-cache hash).
struct NearLook {
  enum class State : uint8_t { kUnknown, kCold, kMissed };
  State state = State::kUnknown;
  uint64_t hash = 0;
};

class NearReads {
 public:
  explicit NearReads(CacheSession& session) noexcept : s_(session) {}
  NearReads(const NearReads&) = delete;
  NearReads& operator=(const NearReads&) = delete;

  // The session's cluster has a near cache.
  bool enabled() const noexcept { return near_ != nullptr; }

  // A plain read of one key (Redis GET, memcached get) routed by `route_hash`: true when
  // answered from the near cache; else, for a hot key, its reply will fill the cache once
  // sent(cmd, host) has said where it went.
  bool read(CacheCommand* cmd, std::string_view key, uint64_t route_hash,
            NearLook look = {}) noexcept;
  // The same read before any command is made for it (the near-hit fast path): when nothing
  // of this client waits ahead of it in reply order and the near cache has the key, the
  // stored reply is appended to the output now (no command, no copy into the arena, no
  // second copy when emitted) and the key and the hit are counted as for read. False:
  // nothing was done and nothing counted (what was looked at is in *look, for read); make
  // the command (beginCommand) and go on.
  bool answerNow(std::string_view key, uint64_t route_hash, NearLook* look) noexcept;
  void sent(CacheCommand* cmd, uint32_t host) noexcept;

  // The same steps for one key of a multi-key read (Redis MGET; redis_near_mget.cc): hot
  // says whether the key routed by `route_hash` uses the near cache at all; find gives its
  // stored reply ("" when none), counting the hit or the miss; ticket takes a miss's ticket
  // into `fill` (false: no room for the key's copy, no fill); fillSent, before any byte of
  // the read goes to `host`, says where the fill comes from and whether it may fill.
  bool hot(uint64_t route_hash) const noexcept;
  std::string_view find(std::string_view key, uint64_t* hash) noexcept;
  bool ticket(CacheCommand* cmd, std::string_view key, uint64_t hash, NearFill* fill) noexcept;
  bool fillSent(uint32_t host, uint32_t* source) noexcept;
  // One fill of a multi-key read's reply (CacheSession::nearFillsReplied): stored if its
  // ticket holds.
  void store(const CacheCommand* cmd, const NearFill& fill, std::string_view reply) noexcept;

  // A command that may change `keys` of its keys is about to be forwarded: writeBegin once
  // (room to remember them), then write for each key, before any fragment is sent.
  void writeBegin(CacheCommand* cmd, size_t keys) noexcept;
  void write(CacheCommand* cmd, std::string_view key) noexcept;
  // A flush of every server is on its way: this worker's near cache goes at once (the other
  // workers' within their ttl, or at once through Redis' tracking, which announces flushes).
  void flush() noexcept;
  // A hot key's command that the near cache cannot serve (lb_hotkey_requests_total bypass).
  void bypass(uint64_t route_hash) noexcept;

 private:
  friend class CacheSession;
  // A backend answered a command of the session that uses the near cache (`p` null: it
  // failed): a write's stripes move again, a read's reply fills if its ticket holds.
  void replied(CacheCommand* cmd, const char* p, size_t n) noexcept;

  CacheSession& s_;
  NearCache* near_ = nullptr;   // the session's table's, while held; null: none
};

}  // namespace lb
