// A Redis client connection (protocol = "redis"): RESP2 commands, each routed by its own key
// through the cluster's selector, as twemproxy does (docs/operations.md, "Redis").
//
//   - a single-key command goes to its key's owner: byte for byte when it came as an array
//     (lb's parse accepts only the canonical encoding, as Redis 7.0 reads it), re-encoded as
//     an array when it came inline (an inline line is never forwarded; one with a NUL byte is
//     refused, since Redis' inline reader would stall on it);
//   - MGET, DEL, UNLINK, EXISTS, TOUCH and MSET are split by owner and their replies merged
//     in key order (values, a sum, +OK); commands whose keys must be together (RENAME,
//     SINTER, EVAL's declared keys, MSETNX, ...) go to their common owner, or get -CROSSSLOT
//     when the keys live on different servers (a hash tag puts them together);
//   - EVAL and friends with numkeys 0 have no key: they go by on_missing_key (a random
//     backend by default; "reject" refuses them);
//   - PING, ECHO, QUIT, SELECT 0, AUTH and CONFIG GET are answered by lb; COMMAND, TIME and
//     LOLWUT, the same on every server, by one usable server; FLUSHDB, FLUSHALL, DBSIZE and
//     SCRIPT LOAD|EXISTS|FLUSH go to every server with the listener's fanout on, their
//     replies merged (redis_fanout.cc), and are refused without it; commands that cannot
//     work through a sharding proxy (transactions, pub/sub, blocking commands, the other
//     whole-server commands) get -ERR with the reason, and the connection stays usable;
//   - with a listener password, every command but AUTH and QUIT gets -NOAUTH until the
//     client has authenticated, and until then a command of more than 10 arguments or a
//     bulk over 16384 bytes is a protocol error that closes the connection (Redis 7.0's
//     unauthenticated limits);
//   - a backend reply that is not one the command can produce fails that server connection
//     (redis::ReplyKind); a split command's parts are checked against their key counts;
//   - input lb cannot resynchronise on (a bad multibulk or bulk length, a bulk past
//     limits.max_request_bytes, garbage) gets Redis' own "-ERR Protocol error: ..." and the
//     connection closes after the replies before it, as Redis does.
//
// The engine's CacheSession does the I/O, the ordering and the limits, CacheProtocolSession
// the accept, the parse loop and the split by owner; this is the protocol.
// Loop thread only.
#pragma once

#include <memory>
#include <string_view>

#include "lb/proxy/redis/redis_commands.h"
#include "lb/proxy/redis/resp.h"
#include "lb/proxy/cache/cache_protocol_session.h"

namespace lb {

// accept (a ProtocolTable accept function) is CacheProtocolSession's.
class RedisSession final : public CacheProtocolSession<RedisSession> {
 private:
  friend class CacheProtocolSession<RedisSession>;
  // Redis' own words past maxclients (networking.c, acceptCommonHandler).
  static constexpr std::string_view kOverLimit = "-ERR max number of clients reached\r\n";
  static constexpr std::string_view kTooLarge =
      "-ERR lb: request too large (over limits.max_request_bytes)\r\n";
  static constexpr std::string_view kOutOfMemory = "-ERR lb: out of memory\r\n";

  RedisSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
               uint32_t listener) noexcept;

  ParseStep parseOne(const char* p, size_t n);
  ReplyUse useReply(const CacheCommand& cmd, const char* p, size_t n) noexcept override;
  void emitMerged(CacheCommand& cmd, ByteChain& out) noexcept override;
  std::string_view mergedMissReply(CacheCommand* cmd, uint16_t fragment) noexcept override;
  uint32_t handoverMisses(const CacheCommand& cmd, uint32_t* positions,
                          uint32_t cap) noexcept override;

  void dispatch(std::string_view raw, bool inline_form) noexcept;
  void dispatchGet(std::string_view raw, std::string_view key) noexcept;
  void sendReplicated(CacheCommand* cmd, std::string_view raw, std::string_view key,
                      uint64_t hash) noexcept;
  void replicateSplit(const redis::CommandSpec& spec, size_t per_key, size_t keys,
                      uint8_t reply_kind) noexcept;
  void sendGet(CacheCommand* cmd, std::string_view raw, std::string_view key, uint64_t hash,
               NearLook look = {}) noexcept;
  bool nearCacheable(const char* p, size_t n) const noexcept override;
  void nearInvalidate(CacheCommand* cmd, const redis::CommandSpec& spec) noexcept;
  void routeKeys(CacheCommand* cmd, const redis::CommandSpec& spec, std::string_view raw) noexcept;
  void routeNumkeys(CacheCommand* cmd, const redis::CommandSpec& spec,
                    std::string_view raw) noexcept;
  // SORT and GEORADIUS[BYMEMBER] with the keys their options name (redis_option_keys.cc).
  void routeOptionKeys(CacheCommand* cmd, std::string_view raw) noexcept;
  void splitByOwner(CacheCommand* cmd, const redis::CommandSpec& spec,
                    std::string_view raw) noexcept;
  void handoverWrote(const redis::CommandSpec& spec, size_t per_key, size_t keys) noexcept;
  // MGET with a near cache (redis_near_mget.cc): hot keys the near cache has are answered
  // from it, the others go to their owners; a hot key it lacks fills from its element.
  void nearMget(CacheCommand* cmd, std::string_view raw, size_t keys) noexcept;
  void nearFillsReplied(CacheCommand* cmd, uint16_t fragment, const char* p,
                        size_t n) noexcept override;
  // Commands that address every server, and server metadata (redis_fanout.cc).
  void routeEveryServer(CacheCommand* cmd, std::string_view raw) noexcept;
  void routeAnyServer(CacheCommand* cmd, std::string_view raw) noexcept;
  void emitFanOut(CacheCommand& cmd, ByteChain& out) noexcept;
  void answerLocal(CacheCommand* cmd, const redis::CommandSpec& spec) noexcept;
  void answerAuth(CacheCommand* cmd) noexcept;
  void sendRaw(CacheCommand* cmd, uint32_t host, std::string_view raw,
               uint8_t reply_kind) noexcept;
  // -ERR lb: <what>, counted under `reason`; lb's own failures (answerFailure) too.
  void refuse(CacheCommand* cmd, CacheErrorReason reason, std::string_view what) noexcept;
  void wrongArity(CacheCommand* cmd) noexcept;
  void crossServer(CacheCommand* cmd, std::string_view command) noexcept;
  void answerBulk(CacheCommand* cmd, std::string_view s) noexcept;

  bool authenticated_;
  bool inline_ = false;   // the command being dispatched came inline
  resp::RequestProgress progress_;   // the multibulk command still arriving
};

}  // namespace lb
