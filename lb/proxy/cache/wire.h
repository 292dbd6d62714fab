// What a pipelined server connection (lb/proxy/cache/server_connection.h) needs to know of its
// protocol, and nothing more: where each reply ends, whether it is an error, and the
// handshake it sends first on every new connection (Redis' AUTH). Each cache protocol
// (lb/proxy/redis, lb/proxy/memcached) has one static instance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lb/routing/handover_stats.h"

namespace lb {

class ByteChain;
class NearTracker;
struct FragmentReply;
class WorkerEnv;
struct ServerGroup;

// What a read at a key's previous host found (CacheWire::handoverFound).
struct HandoverFound {
  static constexpr int64_t kNoTtl = -1;
  HandoverRead result = HandoverRead::kMiss;
  // kHit: the client's reply, byte for byte the previous host's (a view into its replies).
  std::string_view reply;
  // kHit: the remaining time to live in ms (kNoTtl: none; 0: gone since, copy nothing),
  // and what the copy needs of the value (the protocol's: the value's bytes and flags).
  int64_t ttl_ms = kNoTtl;
  std::string_view value;
  uint32_t flags = 0;
};

// How a copy or a delete sent by a handover read fared (CacheWire::handoverWritten).
enum class HandoverWrite : uint8_t { kDone, kNotDone, kError };

// What a handover sends a server (CacheWire::handoverKind): the read at the previous host,
// the copy to the owner, the delete at the previous host.
enum class HandoverOp : uint8_t { kRead, kCopy, kDelete };

// A reply scan's progress between reads, so that a large reply arriving in pieces is scanned
// once, not from its start on every read. Zeroed for every new reply.
struct ReplyScan {
  static constexpr uint32_t kMaxDepth = 32;
  size_t pos = 0;                  // bytes of the reply scanned so far
  uint32_t depth = 0;              // open aggregates (RESP arrays)
  int64_t left[kMaxDepth] = {};    // elements still to come in each
};

class CacheWire {
 public:
  virtual ~CacheWire() = default;
  // As the config spells the protocol: "redis", "memcached".
  virtual const char* name() const noexcept = 0;
  // The reply at the start of [p, p + n) to a command whose framing hint is `kind`
  // (CacheFragment::reply_kind): its length when complete; 0 when more bytes are needed
  // (`scan` keeps the progress); -1 when the bytes cannot be a reply (the connection is
  // closed: nothing after them can be trusted). Pure.
  virtual int64_t frameReply(uint8_t kind, const char* p, size_t n,
                             ReplyScan& scan) const noexcept = 0;
  // Whether a complete reply is an error (counted as result="error").
  virtual bool isError(const char* p, size_t n) const noexcept = 0;
  // Bytes sent first on every new connection, before any command (empty: none); its reply
  // is checked by handshakeOk and never reaches a client.
  virtual std::string handshake(std::string_view password) const = 0;
  virtual bool handshakeOk(const char* p, size_t n) const noexcept = 0;
  // The framing hint of the handshake's reply.
  virtual uint8_t handshakeKind() const noexcept { return 0; }
  // Handover reads (handover_reads.h), for a protocol that has them (handsOver()): whether
  // a reply to a plain read of one key is a miss; the read of `key` at its previous host,
  // appended to `out`, and how many replies it has (each framed with handoverKind); what they
  // found; the copy of a hit to the new owner that overwrites nothing, expiring in `ttl_ms`
  // (kNoTtl: never, a replica's copy of an item without one); the delete that follows a
  // write of a moved key; and how a copy or a delete fared. missReply: a plain read's miss,
  // the answer when a key's primary failed and its replica missed too.
  virtual bool handsOver() const noexcept { return false; }
  virtual bool isMiss(const char* /*p*/, size_t /*n*/) const noexcept { return false; }
  virtual std::string_view missReply() const noexcept { return {}; }
  virtual uint32_t appendHandoverRead(ByteChain& /*out*/,
                                      std::string_view /*key*/) const noexcept {
    return 0;
  }
  // How many replies appendHandoverRead's read has, known before it is written.
  virtual uint32_t handoverReadReplies() const noexcept { return 1; }
  virtual uint8_t handoverKind(HandoverOp /*op*/) const noexcept { return 0; }
  virtual HandoverFound handoverFound(const FragmentReply* /*replies*/,
                                      uint32_t /*count*/) const noexcept {
    return {};
  }
  virtual void appendCopy(ByteChain& /*out*/, std::string_view /*key*/,
                          const HandoverFound& /*found*/, int64_t /*ttl_ms*/) const noexcept {}
  virtual void appendDelete(ByteChain& /*out*/, std::string_view /*key*/) const noexcept {}
  virtual HandoverWrite handoverWritten(const char* /*p*/, size_t /*n*/) const noexcept {
    return HandoverWrite::kError;
  }

  // For a group of a cluster with a near cache: what tells it about writes that bypass lb
  // (near_tracker.h), started now on `env`'s loop; nullptr when the protocol has none.
  virtual NearTracker* newTracker(WorkerEnv& env, const ServerGroup& group) const {
    (void)env;
    (void)group;
    return nullptr;
  }
};

}  // namespace lb
