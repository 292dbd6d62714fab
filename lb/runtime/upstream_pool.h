// Upstream connections of one worker and its idle keep-alive pool, per backend. Every
// session's connection to a backend is an UpstreamConn, whatever its protocol: HTTP's are
// pooled between exchanges, TCP's belong to one client connection and are never pooled.
//
// A session holding one is its Connection's owner (lb/net/connection.h): it hears the
// backend side's events in the same dialect, and through the same override set, as its
// client's, and tells the two apart by the connection they name. The pool takes the
// connection back by becoming its owner again (Connection::setOwner): to watch it while it
// is idle, and to free it after its last callback once closed.
//
// A connect is bounded by a timeout (the listener's timeouts.connect): past it the owner hears
// onConnected(UV_ETIMEDOUT). Towards a cluster with `tls` the TLS handshake is part of the
// connect, inside the same timeout (lb/net/connection.h): onConnected(0) means TLS is up, and
// a failed handshake is a failed connect. A pooled connection is watched while idle: EOF or
// any byte from the backend (it closed or sent something unasked) drops it, so a request is
// never written into a dead socket it could have known about. A connection that saw a broken
// exchange is closed, never pooled.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "lb/routing/backend_state.h"
#include "lb/net/connection.h"

namespace lb {

class UpstreamPool;
struct BackendSnapshot;

// How a session uses the connection it asks for (BackendAttempt::connect).
enum class Pooling : uint8_t {
  kReuseIdle,     // request/response: an idle pooled one if any, else new; may be put() back
  kNewPoolable,   // a new one even if idle ones exist (a retry after a stale one); may be put()
  kNever,         // one client's own pipe (TCP): always new, never pooled (put() closes it)
};

// An UpstreamConn's life, one state at a time. What holds in each:
//
//   UpstreamPool::connect ──> kDialled ──put()──> kIdle ──take()──> kReused ──put()──> kIdle
//   any state ──close() (put() of one it cannot park; an idle one's EOF, error or byte)──>
//   kClosing ──its Connection's onClosed──> freed
enum class UpstreamState : uint8_t {
  kDialled,   // made by UpstreamPool::connect for a session, its Connection's owner: the
              // connect is in flight or done (onConnected says which); never idle yet
  kReused,    // taken from the pool by a session, its Connection's owner: connected
              // already, so no onConnected follows
  kIdle,      // parked in the pool, no session: the UpstreamConn owns its Connection and
              // watches it; EOF, an error or any byte closes it
  kClosing,   // close(): the Connection is closing under the UpstreamConn, which frees
              // itself at its onClosed; no session hears of it again
};
// The state's name for debug logs ("idle", "reused", ...).
const char* upstreamStateName(UpstreamState s) noexcept;

// Its socket is a Connection (connection.h), lent to the session that uses it; the
// UpstreamConn adds the pool's part (the idle watch, the backend and address it is pooled
// under) and frees itself after the connection's last callback.
class UpstreamConn final : private ConnectionOwner {
 public:
  UpstreamConn(const UpstreamConn&) = delete;
  UpstreamConn& operator=(const UpstreamConn&) = delete;

  // The socket, for an owner that queues its own writes or shutdown on it (TCP pipes many
  // writes at once); their callbacks come back with UV_ECANCELED if the connection closes.
  uv_stream_t* stream() noexcept { return conn_.stream(); }
  // Its Connection, whose callbacks go to the session using it: for an owner that tells it
  // from its client's, queues writes with their own completion (ConnectionWrite::done) or
  // shuts the write side (onShutdown follows).
  Connection& connection() noexcept { return conn_; }
  BackendState* state() const noexcept { return backend_.get(); }
  UpstreamState upstreamState() const noexcept { return state_; }
  // Came out of the idle pool (so is connected already: no onConnected follows).
  bool reused() const noexcept { return state_ == UpstreamState::kReused; }
  int startRead() noexcept;
  void stopRead() noexcept;
  // Writes [p, p + n): as much as the socket takes now (uv_try_write), the rest queued. 0 when
  // all of it went out now, 1 when a remainder is queued (the owner's onWritten follows), < 0
  // on error. One write at a time; the bytes must stay valid until onWritten, or until
  // close() (after which libuv never touches them again).
  int write(const char* p, size_t n) noexcept;
  // The same for [bufs, n) (at most 64 buffers), with the bytes written at once in *now.
  int write(const uv_buf_t* bufs, unsigned n, size_t* now) noexcept;
  // A write is queued and has not called back.
  bool writing() const noexcept { return conn_.writesInFlight() != 0; }
  // Loop thread. Idempotent; frees itself after the last close callback. The session hears
  // nothing more from it (writes it queued with their own completion come back cancelled).
  void close() noexcept;

 private:
  friend class UpstreamPool;
  UpstreamConn(UpstreamPool* pool, std::shared_ptr<BackendState> backend, const sockaddr* addr,
               socklen_t len, bool poolable);
  ~UpstreamConn();

  // The one place the state changes (and says so in the debug log).
  void enter(UpstreamState next) noexcept;

  // ConnectionOwner, while no session holds the connection: idle in the pool, anything but
  // an empty read ends it; closing, the cancelled writes are dropped and onClosed frees it.
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onClosed(Connection& c) noexcept override;

  UpstreamPool* pool_;
  std::shared_ptr<BackendState> backend_;
  sockaddr_storage address_{};
  socklen_t address_len_ = 0;
  UpstreamState state_ = UpstreamState::kDialled;
  // Read interest stays on from the first read to the close, through idle spells in the
  // pool, unless an owner pauses it for flow control: every stop/start pair costs the loop
  // an epoll_ctl (two when libuv re-adds the fd and gets EEXIST).
  Connection conn_;
  ConnectionWrite write_;
  bool poolable_;
};

class UpstreamPool {
 public:
  // One per worker (WorkerEnv): `loop` is its loop, `worker` the index of its statistics
  // slot. max_idle: idle connections kept per backend.
  UpstreamPool(uv_loop_t* loop, unsigned worker, size_t max_idle)
      : loop_(loop), worker_(worker), max_idle_(max_idle) {}
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Loop thread. A pooled idle connection to this backend (most recently used first), its
  // Connection owned by `owner` from now on; nullptr when there is none.
  UpstreamConn* take(const BackendSnapshot& backend, ConnectionOwner& owner) noexcept;
  // Loop thread. Starts a new connection owned by `owner`; its onConnected(status) follows,
  // with UV_ETIMEDOUT once `timeout_ms` passed without an answer (0: no timeout). A
  // connection that is not `poolable` is never parked (put() closes it). nullptr with *err
  // when it cannot even start. Sessions call this through BackendAttempt::connect.
  UpstreamConn* connect(const BackendSnapshot& backend, ConnectionOwner& owner,
                        uint64_t timeout_ms, bool poolable, int* err) noexcept;
  // Loop thread. Takes the connection back from its session and parks it after a complete
  // exchange (or closes it when the pool for its backend is full, the worker drains, or the
  // connection is not poolable). Reads go to the owner's buffers again (readIntoPool off).
  void put(UpstreamConn* conn) noexcept;
  // Loop thread. Closes every idle connection and parks none from now on (drain).
  void drain() noexcept;
  // Loop thread. Closes every idle connection (stop).
  void closeAll() noexcept;
  size_t idleCount() const noexcept;
  unsigned worker() const noexcept { return worker_; }

 private:
  friend class UpstreamConn;
  struct Bucket {
    BackendState* backend;
    std::vector<UpstreamConn*> idle;
  };
  Bucket& bucket(BackendState* backend);
  void remove(UpstreamConn* conn) noexcept;

  uv_loop_t* loop_;
  unsigned worker_;
  size_t max_idle_;
  bool draining_ = false;
  std::vector<Bucket> buckets_;
};

}  // namespace lb
