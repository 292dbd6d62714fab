// Redis server-assisted client-side caching for lb's near cache (Redis' "client-side
// caching" document; CLIENT TRACKING, Redis 6): one tracking connection per backend per
// worker, in RESP2 redirect mode. It AUTHs with the cluster's password, learns its CLIENT ID,
// checks that the server tracks at all (CLIENT TRACKINGINFO, 6.2), and SUBSCRIBEs to
// __redis__:invalidate. The worker's data connections to that backend then send
// CLIENT TRACKING on REDIRECT <id> (default mode, not BCAST: the server remembers only the
// keys each data connection read, and tells this connection when one of them changes,
// whoever changed it: a client straight at the server, another lb).
//
//   kConnecting ──hello answered──> kUp ──EOF, error──> kDown ──retry timer──> kConnecting
//   (kDown: the backend's near-cache entries are flushed and nothing fills; retries back off
//   from 100 ms to 1 s)
//
// Invalidation messages drop their keys from the near cache and bump their stripes, so a
// read in flight when the key changed does not fill either. A null message (FLUSHALL,
// FLUSHDB) flushes the backend's entries.
//
// Loop thread only; frees itself after close() once its handles are closed.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lb/proxy/cache/near_tracker.h"
#include "lb/proxy/cache/server_connection.h"
#include "lb/runtime/upstream_pool.h"

namespace lb {

class RedisTracker final : public NearTracker, private ConnectionOwner {
 public:
  // `ok_reply_kind`: the framing hint of a +OK reply (redis::kOkReply, from the wire that
  // makes trackers: redis_replies.h includes this file, not the other way round).
  RedisTracker(WorkerEnv& env, const ServerGroup& group, uint8_t ok_reply_kind);
  RedisTracker(const RedisTracker&) = delete;
  RedisTracker& operator=(const RedisTracker&) = delete;

  void attach(const std::shared_ptr<NearCache>& cache) noexcept override;
  bool up() const noexcept override { return state_ == State::kUp; }
  uint32_t epoch() const noexcept override { return epoch_; }
  std::string_view enableCommand() const noexcept override { return enable_; }
  uint8_t enableReplyKind() const noexcept override { return ok_reply_kind_; }
  void close() noexcept override;

 private:
  enum class State : uint8_t { kConnecting, kUp, kDown, kClosed };
  ~RedisTracker() override;

  void connect() noexcept;
  void down(const char* why) noexcept;
  void onValue(const char* p, size_t n) noexcept;
  void onMessage(const char* p, size_t n) noexcept;
  void flush() noexcept;

  // ConnectionOwner: the tracking connection (conn_'s), its only one.
  void onConnected(Connection& c, int status) noexcept override;
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  // Never comes: a closed UpstreamConn takes its connection's last callbacks.
  void onClosed(Connection&) noexcept override {}
  static void onTimerFired(uv_timer_t* t);
  static void onTimerClosed(uv_handle_t* h);

  WorkerEnv& env_;
  BackendSnapshot target_;
  std::string password_;
  uint32_t source_;                  // the group's id: its entries' source
  uint8_t ok_reply_kind_;
  std::weak_ptr<NearCache> cache_;
  State state_ = State::kConnecting;
  UpstreamConn* conn_ = nullptr;
  std::string hello_;                // written on connect; stays until its write is done
  std::string enable_;               // CLIENT TRACKING on REDIRECT <id>
  std::string in_;                   // read and not yet parsed
  char read_buf_[16384];
  int step_ = 0;                     // hello replies seen
  int64_t id_ = 0;
  uint32_t epoch_ = 0;
  uint64_t backoff_ms_ = 100;
  uv_timer_t timer_;
  bool warned_ = false;
};

}  // namespace lb
