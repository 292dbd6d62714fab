#include "lb/runtime/upstream_pool.h"

#include <algorithm>
#include <cstring>

#include "lb/core/log.h"
#include "lb/routing/snapshot.h"
#include "lb/tls/tls_transport.h"

namespace lb {

const char* upstreamStateName(UpstreamState s) noexcept {
  switch (s) {
    case UpstreamState::kDialled: return "dialled";
    case UpstreamState::kReused: return "reused";
    case UpstreamState::kIdle: return "idle";
    case UpstreamState::kClosing: return "closing";
  }
  return "?";
}

UpstreamConn::UpstreamConn(UpstreamPool* pool, std::shared_ptr<BackendState> backend,
                           const sockaddr* addr, socklen_t len, bool poolable)
    : pool_(pool),
      backend_(std::move(backend)),
      address_len_(len),
      conn_(*this, pool->loop_),
      poolable_(poolable) {
  memcpy(&address_, addr, len);
  backend_->per_worker[pool_->worker_].connections.add(1);
}

UpstreamConn::~UpstreamConn() { backend_->per_worker[pool_->worker_].connections.add(-1); }

void UpstreamConn::enter(UpstreamState next) noexcept {
  LB_DEBUG("upstream %s: %s -> %s", backend_->name.c_str(), upstreamStateName(state_),
           upstreamStateName(next));
  state_ = next;
}

int UpstreamConn::startRead() noexcept { return conn_.readStart(); }

void UpstreamConn::stopRead() noexcept {
  if (state_ != UpstreamState::kClosing) conn_.readStop();
}

// From here the connection's callbacks are the UpstreamConn's: writes still queued come back
// cancelled and are dropped, and its onClosed frees it, whatever became of the session.
void UpstreamConn::close() noexcept {
  if (state_ == UpstreamState::kClosing) return;
  if (state_ == UpstreamState::kIdle) pool_->remove(this);
  enter(UpstreamState::kClosing);
  conn_.setOwner(*this);
  conn_.close();
}

void UpstreamConn::onClosed(Connection&) noexcept { delete this; }

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
  return static_cast<size_t>(w) == total ? 0 : 1;
}

// The idle watch. Whatever arrives ends the connection, so a few bytes of scratch do.
void UpstreamConn::onAlloc(Connection&, uv_buf_t* buf) noexcept {
  static thread_local char scratch[64];
  *buf = uv_buf_init(scratch, sizeof scratch);
}

void UpstreamConn::onRead(Connection&, char*, size_t n) noexcept {
  if (n != 0) close();   // unasked bytes end it
}

void UpstreamConn::onEof(Connection&) noexcept { close(); }

void UpstreamConn::onError(Connection&, int) noexcept { close(); }

UpstreamPool::~UpstreamPool() = default;

UpstreamPool::Bucket& UpstreamPool::bucket(BackendState* backend) {
  for (auto& b : buckets_)
    if (b.backend == backend) return b;
  buckets_.push_back({backend, {}});
  buckets_.back().idle.reserve(max_idle_);
  return buckets_.back();
}

UpstreamConn* UpstreamPool::take(const BackendSnapshot& backend, ConnectionOwner& owner) noexcept {
  for (auto& b : buckets_) {
    if (b.backend != backend.state.get()) continue;
    while (!b.idle.empty()) {
      UpstreamConn* c = b.idle.back();
      b.idle.pop_back();
      // A reload may have moved the backend to another address: never reuse across that.
      if (c->address_len_ != backend.address_len ||
          memcmp(&c->address_, &backend.address, backend.address_len) != 0) {
        c->close();   // out of the list already: remove() finds nothing
        continue;
      }
      // Read interest stays on: from here the new owner takes whatever arrives (nothing can
      // before it writes its request, as the callbacks only run on a later loop turn).
      c->enter(UpstreamState::kReused);
      c->conn_.setOwner(owner);
      return c;
    }
    return nullptr;
  }
  return nullptr;
}

UpstreamConn* UpstreamPool::connect(const BackendSnapshot& backend, ConnectionOwner& owner,
                                    uint64_t timeout_ms, bool poolable, int* err) noexcept {
  auto* c = new (std::nothrow) UpstreamConn(this, backend.state,
                                            reinterpret_cast<const sockaddr*>(&backend.address),
                                            backend.address_len, poolable);
  if (c == nullptr) {
    *err = UV_ENOMEM;
    return nullptr;
  }
  c->conn_.setOwner(owner);   // kDialled from the start
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
  if (c->state_ == UpstreamState::kClosing) return;
  c->conn_.setOwner(*c);
  c->conn_.readIntoPool(nullptr);   // the idle watch reads into its scratch
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
  // Watch the idle socket: EOF or stray bytes drop it (the UpstreamConn's own onRead).
  // Usually reading is on already and this costs nothing.
  if (c->startRead() != 0) {
    c->close();
    return;
  }
  c->enter(UpstreamState::kIdle);
  b->idle.push_back(c);
}

void UpstreamPool::remove(UpstreamConn* c) noexcept {
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
