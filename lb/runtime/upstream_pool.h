// Upstream connections of one worker and its idle keep-alive pool, per backend. A pooled
// connection is watched while idle: EOF or any byte from the backend (it closed or sent
// something unasked) drops it, so a request is never written into a dead socket it could have
// known about. A connection that saw a broken exchange is closed, never pooled.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <memory>
#include <vector>

#include "lb/routing/backend_state.h"

namespace lb {

class UpstreamPool;
class Worker;
struct BackendSnapshot;

// Whoever uses an upstream connection (an HTTP session now, a TCP session later).
class UpstreamOwner {
 public:
  virtual ~UpstreamOwner() = default;
  virtual void onUpstreamConnect(int status) noexcept = 0;
  virtual void onUpstreamAlloc(uv_buf_t* buf) noexcept = 0;
  virtual void onUpstreamRead(ssize_t n, const uv_buf_t* buf) noexcept = 0;
  // A write that write() left pending has finished (status < 0: it failed).
  virtual void onUpstreamWrite(int status) noexcept = 0;
};

class UpstreamConn {
 public:
  UpstreamConn(const UpstreamConn&) = delete;
  UpstreamConn& operator=(const UpstreamConn&) = delete;

  uv_stream_t* stream() noexcept { return reinterpret_cast<uv_stream_t*>(&tcp_); }
  BackendState* state() const noexcept { return state_.get(); }
  bool reused() const noexcept { return reused_; }
  void setOwner(UpstreamOwner* owner) noexcept { owner_ = owner; }
  int startRead() noexcept;
  void stopRead() noexcept;
  // Writes [p, p + n): as much as the socket takes now (uv_try_write), the rest queued. 0 when
  // all of it went out now, 1 when a remainder is queued (owner->onUpstreamWrite follows), < 0
  // on error. One write at a time; the bytes must stay valid until onUpstreamWrite, or until
  // close() (after which libuv never touches them again).
  int write(const char* p, size_t n) noexcept;
  bool writing() const noexcept { return writing_; }
  // Loop thread. Idempotent; frees itself after the close callback. The owner gets no more
  // callbacks.
  void close() noexcept;

 private:
  friend class UpstreamPool;
  UpstreamConn(UpstreamPool* pool, std::shared_ptr<BackendState> state, const sockaddr* addr,
               socklen_t len);
  ~UpstreamConn();
  static void onConnect(uv_connect_t* req, int status);
  static void onAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void onWrite(uv_write_t* req, int status);

  UpstreamPool* pool_;
  std::shared_ptr<BackendState> state_;
  sockaddr_storage address_{};
  socklen_t address_len_ = 0;
  UpstreamOwner* owner_ = nullptr;
  uv_tcp_t tcp_;
  uv_connect_t connect_req_;
  uv_write_t write_req_;
  bool writing_ = false;
  bool idle_ = false;      // sits in the pool
  bool reused_ = false;    // came out of the pool
  bool closing_ = false;
};

class UpstreamPool {
 public:
  // max_idle: idle connections kept per backend (per worker).
  UpstreamPool(Worker* worker, size_t max_idle) : worker_(worker), max_idle_(max_idle) {}
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Loop thread. A pooled idle connection to this backend (most recently used first), owned by
  // `owner` from now on; nullptr when there is none.
  UpstreamConn* take(const BackendSnapshot& backend, UpstreamOwner* owner) noexcept;
  // Loop thread. Starts a new connection; owner->onUpstreamConnect(status) follows. nullptr
  // with *err when it cannot even start.
  UpstreamConn* connect(const BackendSnapshot& backend, UpstreamOwner* owner, int* err) noexcept;
  // Loop thread. Parks a healthy connection after a complete exchange (or closes it when the
  // pool for its backend is full).
  void put(UpstreamConn* conn) noexcept;
  // Loop thread. Closes every idle connection (stop).
  void closeAll() noexcept;
  size_t idleCount() const noexcept;

 private:
  friend class UpstreamConn;
  struct Bucket {
    BackendState* backend;
    std::vector<UpstreamConn*> idle;
  };
  Bucket& bucket(BackendState* backend);
  void remove(UpstreamConn* conn) noexcept;

  Worker* worker_;
  size_t max_idle_;
  std::vector<Bucket> buckets_;
};

}  // namespace lb
