#include "lb/runtime/upstream_pool.h"

#include <algorithm>
#include <cstring>

#include "lb/routing/snapshot.h"

namespace lb {

UpstreamConn::UpstreamConn(UpstreamPool* pool, std::shared_ptr<BackendState> state,
                           const sockaddr* addr, socklen_t len, bool poolable)
    : pool_(pool), state_(std::move(state)), address_len_(len), poolable_(poolable) {
  memcpy(&address_, addr, len);
  tcp_.data = this;
  connect_timer_.data = this;
  connect_req_.data = this;
  write_req_.data = this;
  state_->per_worker[pool_->worker_].connections.add(1);
}

UpstreamConn::~UpstreamConn() { state_->per_worker[pool_->worker_].connections.add(-1); }

int UpstreamConn::startRead() noexcept {
  if (reading_) return 0;
  int rc = uv_read_start(stream(), onAlloc, onRead);
  reading_ = rc == 0;
  return rc;
}

void UpstreamConn::stopRead() noexcept {
  if (closing_ || !reading_) return;
  uv_read_stop(stream());
  reading_ = false;
}

void UpstreamConn::close() noexcept {
  if (closing_) return;
  closing_ = true;
  connecting_ = false;
  owner_ = nullptr;
  if (idle_) pool_->remove(this);
  uv_read_stop(stream());
  reading_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), onClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&connect_timer_), onClosed);
}

void UpstreamConn::onClosed(uv_handle_t* h) {
  auto* c = static_cast<UpstreamConn*>(h->data);
  if (--c->open_handles_ == 0) delete c;
}

int UpstreamConn::write(const char* p, size_t n) noexcept {
  uv_buf_t b = uv_buf_init(const_cast<char*>(p), static_cast<unsigned>(n));
  int w = uv_try_write(stream(), &b, 1);
  if (w == static_cast<int>(n)) return 0;
  if (w < 0 && w != UV_EAGAIN) return w;
  if (w > 0) {
    b.base += w;
    b.len -= w;
  }
  int rc = uv_write(&write_req_, stream(), &b, 1, onWrite);
  if (rc != 0) return rc;
  writing_ = true;
  return 1;
}

void UpstreamConn::onWrite(uv_write_t* req, int status) {
  auto* c = static_cast<UpstreamConn*>(req->data);
  c->writing_ = false;
  if (status == UV_ECANCELED || c->closing_) return;
  if (c->owner_ != nullptr) c->owner_->onUpstreamWrite(status);
}

void UpstreamConn::onConnect(uv_connect_t* req, int status) {
  auto* c = static_cast<UpstreamConn*>(req->data);
  if (status == UV_ECANCELED || c->closing_ || !c->connecting_) return;
  c->connecting_ = false;
  uv_timer_stop(&c->connect_timer_);
  if (c->owner_ != nullptr) c->owner_->onUpstreamConnect(status);
}

// The connect is still pending at the deadline. The owner closes the connection, which
// cancels the connect (onConnect then sees UV_ECANCELED).
void UpstreamConn::onConnectTimeout(uv_timer_t* t) {
  auto* c = static_cast<UpstreamConn*>(t->data);
  if (c->closing_ || !c->connecting_) return;
  c->connecting_ = false;
  if (c->owner_ != nullptr) c->owner_->onUpstreamConnect(UV_ETIMEDOUT);
}

void UpstreamConn::onAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* c = static_cast<UpstreamConn*>(h->data);
  if (c->owner_ != nullptr) {
    c->owner_->onUpstreamAlloc(buf);
    return;
  }
  // Idle in the pool: whatever arrives ends the connection, so a few bytes of scratch do.
  static thread_local char scratch[64];
  *buf = uv_buf_init(scratch, sizeof scratch);
}

void UpstreamConn::onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* c = static_cast<UpstreamConn*>(s->data);
  if (c->closing_) return;
  if (c->owner_ != nullptr) {
    c->owner_->onUpstreamRead(n, buf);
    return;
  }
  if (n != 0) c->close();   // idle: EOF, an error or unasked bytes all end it
}

UpstreamPool::~UpstreamPool() = default;

UpstreamPool::Bucket& UpstreamPool::bucket(BackendState* backend) {
  for (auto& b : buckets_)
    if (b.backend == backend) return b;
  buckets_.push_back({backend, {}});
  buckets_.back().idle.reserve(max_idle_);
  return buckets_.back();
}

UpstreamConn* UpstreamPool::take(const BackendSnapshot& backend, UpstreamOwner* owner) noexcept {
  for (auto& b : buckets_) {
    if (b.backend != backend.state.get()) continue;
    while (!b.idle.empty()) {
      UpstreamConn* c = b.idle.back();
      b.idle.pop_back();
      c->idle_ = false;
      // A reload may have moved the backend to another address: never reuse across that.
      if (c->address_len_ != backend.address_len ||
          memcmp(&c->address_, &backend.address, backend.address_len) != 0) {
        c->close();
        continue;
      }
      // Read interest stays on: from here the new owner takes whatever arrives (nothing can
      // before it writes its request, as the callbacks only run on a later loop turn).
      c->reused_ = true;
      c->owner_ = owner;
      return c;
    }
    return nullptr;
  }
  return nullptr;
}

UpstreamConn* UpstreamPool::connect(const BackendSnapshot& backend, UpstreamOwner* owner,
                                    uint64_t timeout_ms, bool poolable, int* err) noexcept {
  auto* c = new (std::nothrow) UpstreamConn(this, backend.state,
                                            reinterpret_cast<const sockaddr*>(&backend.address),
                                            backend.address_len, poolable);
  if (c == nullptr) {
    *err = UV_ENOMEM;
    return nullptr;
  }
  c->owner_ = owner;
  uv_tcp_init(loop_, &c->tcp_);
  uv_timer_init(loop_, &c->connect_timer_);
  c->open_handles_ = 2;
  uv_tcp_nodelay(&c->tcp_, 1);
  int rc = uv_tcp_connect(&c->connect_req_, &c->tcp_,
                          reinterpret_cast<const sockaddr*>(&c->address_), UpstreamConn::onConnect);
  if (rc != 0) {
    *err = rc;
    c->close();
    return nullptr;
  }
  c->connecting_ = true;
  if (timeout_ms > 0)
    uv_timer_start(&c->connect_timer_, UpstreamConn::onConnectTimeout, timeout_ms, 0);
  return c;
}

void UpstreamPool::put(UpstreamConn* c) noexcept {
  if (c->closing_) return;
  c->owner_ = nullptr;
  if (!c->poolable_ || draining_) {
    c->close();
    return;
  }
  Bucket* b = nullptr;
  try {
    b = &bucket(c->state());
  } catch (...) {
  }
  if (b == nullptr || b->idle.size() >= max_idle_) {
    c->close();
    return;
  }
  // Watch the idle socket: EOF or stray bytes drop it (onRead with no owner). Usually reading
  // is on already and this costs nothing.
  if (c->startRead() != 0) {
    c->close();
    return;
  }
  c->idle_ = true;
  b->idle.push_back(c);
}

void UpstreamPool::remove(UpstreamConn* c) noexcept {
  c->idle_ = false;
  for (auto& b : buckets_) {
    if (b.backend != c->state()) continue;
    auto it = std::find(b.idle.begin(), b.idle.end(), c);
    if (it != b.idle.end()) b.idle.erase(it);
    return;
  }
}

void UpstreamPool::drain() noexcept {
  draining_ = true;
  closeAll();
}

void UpstreamPool::closeAll() noexcept {
  for (auto& b : buckets_)
    while (!b.idle.empty()) b.idle.back()->close();   // close() removes it from the list
}

size_t UpstreamPool::idleCount() const noexcept {
  size_t n = 0;
  for (const auto& b : buckets_) n += b.idle.size();
  return n;
}

}  // namespace lb
