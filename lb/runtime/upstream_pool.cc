#include "lb/runtime/upstream_pool.h"

#include <algorithm>
#include <cstring>

#include "lb/routing/snapshot.h"
#include "lb/tls/tls_transport.h"

namespace lb {

UpstreamConn::UpstreamConn(UpstreamPool* pool, std::shared_ptr<BackendState> state,
                           const sockaddr* addr, socklen_t len, bool poolable)
    : pool_(pool),
      state_(std::move(state)),
      address_len_(len),
      conn_(*this, pool->loop_),
      poolable_(poolable) {
  memcpy(&address_, addr, len);
  state_->per_worker[pool_->worker_].connections.add(1);
}

UpstreamConn::~UpstreamConn() { state_->per_worker[pool_->worker_].connections.add(-1); }

int UpstreamConn::startRead() noexcept { return conn_.readStart(); }

void UpstreamConn::stopRead() noexcept {
  if (!closing_) conn_.readStop();
}

void UpstreamConn::close() noexcept {
  if (closing_) return;
  closing_ = true;
  owner_ = nullptr;
  if (idle_) pool_->remove(this);
  conn_.close();
}

void UpstreamConn::onClosed() noexcept { delete this; }

int UpstreamConn::write(const char* p, size_t n) noexcept {
  uv_buf_t b = uv_buf_init(const_cast<char*>(p), static_cast<unsigned>(n));
  size_t now = 0;
  return write(&b, 1, &now);
}

int UpstreamConn::write(const uv_buf_t* bufs, unsigned n, size_t* now) noexcept {
  size_t total = 0;
  for (unsigned i = 0; i < n; ++i) total += bufs[i].len;
  const ssize_t w = conn_.write(&write_, bufs, n);
  if (w < 0) return static_cast<int>(w);
  *now = static_cast<size_t>(w);
  if (static_cast<size_t>(w) == total) return 0;
  writing_ = true;
  return 1;
}

void UpstreamConn::onWritten(ConnectionWrite*, int status) noexcept {
  writing_ = false;
  if (status == UV_ECANCELED || closing_) return;
  if (owner_ != nullptr) owner_->onUpstreamWrite(status);
}

void UpstreamConn::onShutdown(int status) noexcept {
  if (owner_ != nullptr) owner_->onUpstreamShutdown(status);
}

// A refused connect, or the connect timeout (the owner closes the connection, which cancels
// the connect).
void UpstreamConn::onConnected(int status) noexcept {
  if (owner_ != nullptr) owner_->onUpstreamConnect(status);
}

void UpstreamConn::onAlloc(uv_buf_t* buf) noexcept {
  if (owner_ != nullptr) {
    owner_->onUpstreamAlloc(buf);
    return;
  }
  // Idle in the pool: whatever arrives ends the connection, so a few bytes of scratch do.
  static thread_local char scratch[64];
  *buf = uv_buf_init(scratch, sizeof scratch);
}

void UpstreamConn::onRead(char* p, size_t n) noexcept {
  if (owner_ != nullptr) {
    const uv_buf_t b = uv_buf_init(p, static_cast<unsigned>(n));
    owner_->onUpstreamRead(static_cast<ssize_t>(n), &b);
    return;
  }
  if (n != 0) close();   // idle: unasked bytes end it
}

void UpstreamConn::onEof() noexcept { onError(UV_EOF); }

// The buffer of this read came back already (onRead(p, 0)): the owner sees none here.
void UpstreamConn::onError(int status) noexcept {
  if (owner_ == nullptr) {
    close();   // idle: EOF or an error ends it
    return;
  }
  const uv_buf_t b = uv_buf_init(nullptr, 0);
  owner_->onUpstreamRead(status, &b);
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
  c->conn_.setNoDelay();
  const auto* addr = reinterpret_cast<const sockaddr*>(&c->address_);
  Transport* tls = nullptr;
  if (backend.tls != nullptr) {
    // The cluster speaks TLS to its backends: the handshake runs inside the connect.
    std::shared_ptr<TlsWorkerStats> stats(backend.state,
                                          &backend.state->per_worker[worker_].tls);
    tls = TlsTransport::connect(backend.tls, std::move(stats), worker_, addr);
    if (tls == nullptr) {
      *err = UV_ENOMEM;
      c->close();
      return nullptr;
    }
  }
  const int rc = c->conn_.connect(addr, timeout_ms, tls);
  if (rc != 0) {
    *err = rc;
    c->close();
    return nullptr;
  }
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
