// What a pipelined server connection (lb/proxy/cache/server_connection.h) needs to know of its
// protocol, and nothing more: where each reply ends, whether it is an error, and the
// handshake it sends first on every new connection (Redis' AUTH). Each cache protocol
// (lb/proxy/redis, lb/proxy/memcached) has one static instance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lb {

class NearTracker;
class WorkerEnv;
struct ServerGroup;

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
  // For a group of a cluster with a near cache: what tells it about writes that bypass lb
  // (near_tracker.h), started now on `env`'s loop; nullptr when the protocol has none.
  virtual NearTracker* newTracker(WorkerEnv& env, const ServerGroup& group) const {
    (void)env;
    (void)group;
    return nullptr;
  }
};

}  // namespace lb
