// Upstream connections of one worker and its idle keep-alive pool, per backend. Every
// session's connection to a backend is an UpstreamConn, whatever its protocol: HTTP's are
// pooled between exchanges, TCP's belong to one client connection and are never pooled.
//
// A connect is bounded by a timeout (the listener's timeouts.connect): past it the owner hears
// onUpstreamConnect(UV_ETIMEDOUT). Towards a cluster with `tls` the TLS handshake is part of
// the connect, inside the same timeout (lb/net/connection.h): onUpstreamConnect(0) means TLS
// is up, and a failed handshake is a failed connect. A pooled connection is watched while idle: EOF or any byte
// from the backend (it closed or sent something unasked) drops it, so a request is never
// written into a dead socket it could have known about. A connection that saw a broken
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

// Whoever uses an upstream connection (a session of any protocol).
class UpstreamOwner {
 public:
  virtual ~UpstreamOwner() = default;
  // The connect finished: 0, or < 0 (refused, UV_ETIMEDOUT after the connect timeout, ...).
  // After a failure the connection is of no further use: the owner close()s it.
  virtual void onUpstreamConnect(int status) noexcept = 0;
  virtual void onUpstreamAlloc(uv_buf_t* buf) noexcept = 0;
  virtual void onUpstreamRead(ssize_t n, const uv_buf_t* buf) noexcept = 0;
  // A write that write() left pending has finished (status < 0: it failed).
  virtual void onUpstreamWrite(int status) noexcept = 0;
  // connection().shutdown() finished (status < 0: the backend is gone). Not after close().
  virtual void onUpstreamShutdown(int status) noexcept { (void)status; }
};

// Its socket is a Connection (connection.h); the UpstreamConn adds the pool's part (idle
// watching, the owner that changes between exchanges) and frees itself after the
// connection's last callback.
class UpstreamConn final : private ConnectionOwner {
 public:
  UpstreamConn(const UpstreamConn&) = delete;
  UpstreamConn& operator=(const UpstreamConn&) = delete;

  // The socket, for an owner that queues its own writes or shutdown on it (TCP pipes many
  // writes at once); their callbacks come back with UV_ECANCELED if the connection closes.
  uv_stream_t* stream() noexcept { return conn_.stream(); }
  // Its Connection, for an owner that queues writes with their own completion
  // (ConnectionWrite::done) or shuts the write side (onUpstreamShutdown follows).
  Connection& connection() noexcept { return conn_; }
  BackendState* state() const noexcept { return state_.get(); }
  // Came out of the idle pool (so is connected already: no onUpstreamConnect follows).
  bool reused() const noexcept { return reused_; }
  void setOwner(UpstreamOwner* owner) noexcept { owner_ = owner; }
  int startRead() noexcept;
  void stopRead() noexcept;
  // Writes [p, p + n): as much as the socket takes now (uv_try_write), the rest queued. 0 when
  // all of it went out now, 1 when a remainder is queued (owner->onUpstreamWrite follows), < 0
  // on error. One write at a time; the bytes must stay valid until onUpstreamWrite, or until
  // close() (after which libuv never touches them again).
  int write(const char* p, size_t n) noexcept;
  // The same for [bufs, n) (at most 64 buffers), with the bytes written at once in *now.
  int write(const uv_buf_t* bufs, unsigned n, size_t* now) noexcept;
  bool writing() const noexcept { return writing_; }
  // Loop thread. Idempotent; frees itself after the last close callback. The owner gets no
  // more callbacks through UpstreamOwner (requests it queued itself on stream() come back
  // cancelled).
  void close() noexcept;

 private:
  friend class UpstreamPool;
  UpstreamConn(UpstreamPool* pool, std::shared_ptr<BackendState> state, const sockaddr* addr,
               socklen_t len, bool poolable);
  ~UpstreamConn();

  // ConnectionOwner: forwarded to the owner, or (idle in the pool) anything but an empty
  // read ends the connection.
  void onConnected(int status) noexcept override;
  void onAlloc(uv_buf_t* buf) noexcept override;
  void onRead(char* p, size_t n) noexcept override;
  void onEof() noexcept override;
  void onError(int status) noexcept override;
  void onWritten(ConnectionWrite* w, int status) noexcept override;
  void onShutdown(int status) noexcept override;
  void onClosed() noexcept override;

  UpstreamPool* pool_;
  std::shared_ptr<BackendState> state_;
  sockaddr_storage address_{};
  socklen_t address_len_ = 0;
  UpstreamOwner* owner_ = nullptr;
  // Read interest stays on from the first read to the close, through idle spells in the
  // pool, unless an owner pauses it for flow control: every stop/start pair costs the loop
  // an epoll_ctl (two when libuv re-adds the fd and gets EEXIST).
  Connection conn_;
  ConnectionWrite write_;
  bool poolable_;
  bool writing_ = false;
  bool idle_ = false;      // sits in the pool
  bool reused_ = false;    // came out of the pool
  bool closing_ = false;
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

  // Loop thread. A pooled idle connection to this backend (most recently used first), owned by
  // `owner` from now on; nullptr when there is none.
  UpstreamConn* take(const BackendSnapshot& backend, UpstreamOwner* owner) noexcept;
  // Loop thread. Starts a new connection; owner->onUpstreamConnect(status) follows, with
  // UV_ETIMEDOUT once `timeout_ms` passed without an answer (0: no timeout). A connection
  // that is not `poolable` is never parked (put() closes it). nullptr with *err when it
  // cannot even start. Sessions call this through BackendAttempt::connect.
  UpstreamConn* connect(const BackendSnapshot& backend, UpstreamOwner* owner,
                        uint64_t timeout_ms, bool poolable, int* err) noexcept;
  // Loop thread. Parks a healthy connection after a complete exchange (or closes it when the
  // pool for its backend is full, the worker drains, or the connection is not poolable).
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
