// A memcached client connection (protocol = "memcached"): the text protocol, each command
// routed by its key through the cluster's selector, as twemproxy does (docs/operations.md,
// "memcached").
//
//   - get, gets, gat, gats with many keys are split by owner and answered with every hit in
//     the order of the keys asked, and one END;
//   - set, add, replace, append, prepend, cas (with their data block), delete, incr, decr,
//     touch and the meta commands mg, ms, md, ma, me go to their key's owner;
//   - every command goes on in its canonical form (memcached_forward.h), and only once every
//     field of its line is one memcached reads the same way (else CLIENT_ERROR bad command
//     line format, and the data block, if any, is dropped: it never runs as a command);
//   - noreply and the meta commands' quiet flag (q) are kept by lb, not sent on: the backend
//     answers every command, and lb drops the answers the client asked not to get. noreply
//     gets nothing at all, errors included (as from memcached); quiet mode gets its errors
//     (the same). Every backend reply then matches one command, so the pipelined server
//     connections stay aligned; a reply the command cannot produce fails the connection;
//   - mn, version and quit are answered by lb (mn in order, after everything before it);
//     flush_all and verbosity go to every server with the listener's fanout on (OK once all
//     said OK, else an error naming the servers that failed), and are refused without it;
//     the other whole-server commands (stats, cache_memlimit, ...) get CLIENT_ERROR with
//     the reason;
//     unknown commands get ERROR, as from memcached;
//   - a key must be 1-250 bytes without control characters or spaces (CLIENT_ERROR bad
//     command line format); a data block past limits.max_request_bytes gets SERVER_ERROR
//     object too large for cache, and is dropped so the next line is read as a command;
//     a line past 2048 bytes (limits.max_request_bytes for get, gets, gat, gats) gets
//     CLIENT_ERROR line too long, and the connection closes;
//   - the binary protocol (a first byte of 0x80) is answered with a binary "not supported"
//     response, and the connection closes.
//
// Loop thread only.
#pragma once

#include <memory>
#include <string_view>

#include "lb/proxy/memcached/memcached_text.h"
#include "lb/proxy/cache/cache_protocol_session.h"

namespace lb {

// accept (a ProtocolTable accept function) is CacheProtocolSession's.
class MemcachedSession final : public CacheProtocolSession<MemcachedSession> {
 public:
  // How a command's reply is made (CacheCommand::kind).
  enum Kind : uint8_t { kPass, kGetMerge, kFanFlushAll, kFanVerbosity };

 private:
  friend class CacheProtocolSession<MemcachedSession>;
  // memcached's own words past maxconns (memcached.c, the maxconns_fast refusal).
  static constexpr std::string_view kOverLimit = "ERROR Too many open connections\r\n";
  static constexpr std::string_view kTooLarge =
      "CLIENT_ERROR lb: request too large (over limits.max_request_bytes)\r\n";
  static constexpr std::string_view kOutOfMemory = "SERVER_ERROR lb: out of memory\r\n";

  MemcachedSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
                   uint32_t listener) noexcept;

  ParseStep parseOne(const char* p, size_t n);
  ReplyUse useReply(const CacheCommand& cmd, const char* p, size_t n) noexcept override;
  void emitMerged(CacheCommand& cmd, ByteChain& out) noexcept override;
  void emitFanOk(CacheCommand& cmd, ByteChain& out) noexcept;

  void dispatch(const mc::Request& r, const char* p) noexcept;
  void routeRetrieval(CacheCommand* cmd, const mc::Request& r) noexcept;
  void routeOneRetrieval(CacheCommand* cmd, const mc::Request& r) noexcept;
  bool nearCacheable(const char* p, size_t n) const noexcept override;
  void routeKey(CacheCommand* cmd, const mc::Request& r, const char* p) noexcept;
  void replicateKey(CacheCommand* cmd, const mc::Request& r, const char* p,
                    std::string_view key) noexcept;
  std::string_view handoverReply(CacheCommand* cmd, const HandoverFound& found,
                                 std::string_view key) noexcept override;
  std::string_view mergedMissReply(CacheCommand* cmd, uint16_t fragment) noexcept override;
  uint32_t handoverMisses(const CacheCommand& cmd, uint32_t* positions,
                          uint32_t cap) noexcept override;
  // CLIENT_ERROR (unsupported) or SERVER_ERROR lb: <what>, counted under `reason`; nothing
  // for a noreply command. lb's own failures (answerFailure) are answered so too.
  void refuse(CacheCommand* cmd, CacheErrorReason reason, std::string_view what) noexcept;

  size_t scanned_ = 0;   // bytes of the pending input known to hold no end of line
};

}  // namespace lb
