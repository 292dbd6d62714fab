#include "lb/net/connection.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lb/core/log.h"

namespace lb {

// --- PlainTransport ----------------------------------------------------------------------

void PlainTransport::allocRead(Connection& c, uv_buf_t* buf) noexcept { c.ownerBuffer(buf); }

void PlainTransport::readDone(Connection& c, ssize_t n, const uv_buf_t* buf) noexcept {
  c.deliver(n, buf);
}

int PlainTransport::tryWrite(Connection& c, const uv_buf_t* bufs, unsigned n) noexcept {
  return uv_try_write(c.stream(), bufs, n);
}

int PlainTransport::queueWrite(Connection& c, uv_write_t* req, const uv_buf_t* bufs, unsigned n,
                               uv_write_cb cb) noexcept {
  return uv_write(req, c.stream(), bufs, n, cb);
}

int PlainTransport::shutdown(Connection& c, uv_shutdown_t* req, uv_shutdown_cb cb) noexcept {
  return uv_shutdown(req, c.stream(), cb);
}

size_t PlainTransport::queued(Connection& c) noexcept { return c.stream()->write_queue_size; }

// --- Connection --------------------------------------------------------------------------

namespace {
// What a lingering connection reads is dropped: one scratch block per thread serves every
// one of them (a read is copied out of the kernel and forgotten in one call). Nobody's
// buffer: never the pool's, never an owner's.
thread_local char t_linger_scratch[BufferPool::kBlockSize];
}  // namespace

const char* connStateName(ConnState s) noexcept {
  switch (s) {
    case ConnState::kNew: return "new";
    case ConnState::kConnecting: return "connecting";
    case ConnState::kHandshaking: return "handshaking";
    case ConnState::kAccepting: return "accepting";
    case ConnState::kOpen: return "open";
    case ConnState::kFailed: return "failed";
    case ConnState::kLingering: return "lingering";
    case ConnState::kClosing: return "closing";
  }
  return "?";
}

Connection::Connection(ConnectionOwner& owner, uv_loop_t* loop) noexcept
    : owner_(&owner), transport_(&PlainTransport::instance()) {
  uv_tcp_init(loop, &tcp_);
  uv_timer_init(loop, &timer_);
  tcp_.data = this;
  timer_.data = this;
  connect_req_.data = this;
  shutdown_req_.data = this;
}

void Connection::enter(ConnState next) noexcept {
  LB_DEBUG("connection fd %d: %s -> %s", fd(), connStateName(state_), connStateName(next));
  state_ = next;
}

int Connection::accept(uv_stream_t* server, const AcceptTransport* transport) noexcept {
  const int rc = uv_accept(server, stream());
  if (rc != 0) return rc;
  int len = sizeof peer_;
  uv_tcp_getpeername(&tcp_, reinterpret_cast<sockaddr*>(&peer_), &len);
  if (transport != nullptr && transport->make != nullptr) {
    Transport* t = transport->make(transport->ctx, *this);
    if (t == nullptr) return UV_ENOMEM;
    transport_ = t;
  }
  enter(transport_->established() ? ConnState::kOpen : ConnState::kAccepting);
  return 0;
}

void Connection::established() noexcept {
  if (state_ == ConnState::kAccepting) enter(ConnState::kOpen);
  if (!closing()) owner_->onEstablished(*this);
}

int Connection::connect(const sockaddr* address, uint64_t timeout_ms,
                        Transport* transport) noexcept {
  // Set before anything can fail, so that close() releases it whatever happens.
  if (transport != nullptr) transport_ = transport;
  const int rc = uv_tcp_connect(&connect_req_, &tcp_, address, onConnect);
  if (rc != 0) return rc;
  ++pending_;
  enter(ConnState::kConnecting);
  if (timeout_ms > 0) uv_timer_start(&timer_, onTimerFired, timeout_ms, 0);
  memcpy(&peer_, address,
         address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
  return 0;
}

const sockaddr* Connection::readLocal() noexcept {
  local_read_ = true;
  int len = sizeof local_;
  uv_tcp_getsockname(&tcp_, reinterpret_cast<sockaddr*>(&local_), &len);
  return reinterpret_cast<const sockaddr*>(&local_);
}

void Connection::onConnect(uv_connect_t* req, int status) {
  auto* c = static_cast<Connection*>(req->data);
  if (c->state_ == ConnState::kConnecting) {   // else closed meanwhile: nothing to tell
    if (status == 0 && c->transport_->handshakes())
      c->beginHandshake();
    else
      c->connectDone(status == UV_ECANCELED ? UV_ECONNABORTED : status);
  }
  c->callbackDone();
}

// TCP is up and the transport has an opening of its own: it reads for itself (the owner's
// buffers are not asked for until there is plaintext) under the connect's timer.
void Connection::beginHandshake() noexcept {
  enter(ConnState::kHandshaking);
  owner_reads_ = false;
  int rc = uv_read_start(stream(), onAlloc, onRead);
  reading_ = rc == 0;
  if (rc == 0) rc = transport_->startHandshake(*this);
  if (rc < 0 && state_ == ConnState::kHandshaking) connectDone(rc);
}

void Connection::handshakeDone(int status) noexcept {
  if (state_ != ConnState::kHandshaking) return;
  connectDone(status);
}

void Connection::connectDone(int status) noexcept {
  const bool handshook = state_ == ConnState::kHandshaking;
  enter(status == 0 ? ConnState::kOpen : ConnState::kFailed);
  uv_timer_stop(&timer_);
  if (handshook && status == 0 && !owner_reads_) readStop();
  owner_->onConnected(*this, status);
}

// --- Reading -----------------------------------------------------------------------------

int Connection::readStart() noexcept {
  if (state_ == ConnState::kHandshaking) {
    owner_reads_ = true;   // the handshake reads already; the owner's reads follow it
    return 0;
  }
  if (reading_ || closing()) return 0;
  const int rc = uv_read_start(stream(), onAlloc, onRead);
  reading_ = rc == 0;
  if (reading_) transport_->readResumed(*this);
  return rc;
}

void Connection::readStop() noexcept {
  if (state_ == ConnState::kHandshaking) {
    owner_reads_ = false;
    return;
  }
  if (!reading_) return;
  uv_read_stop(stream());
  reading_ = false;
}

void Connection::onAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* c = static_cast<Connection*>(h->data);
  if (c->ready_fn_ != nullptr) {   // a splice pump reads: libuv only says "readable"
    *buf = uv_buf_init(nullptr, 0);
    return;
  }
  if (c->plain())   // the transport's own answer, without the virtual call
    c->ownerBuffer(buf);
  else
    c->transport_->allocRead(*c, buf);
}

void Connection::ownerBuffer(uv_buf_t* buf) noexcept {
  if (state_ == ConnState::kLingering) {   // read only to be dropped
    *buf = uv_buf_init(t_linger_scratch, sizeof t_linger_scratch);
    return;
  }
  if (pool_ != nullptr) {
    char* block = pool_->get();
    *buf = uv_buf_init(block + header_, static_cast<unsigned>(BufferPool::kBlockSize - header_));
    return;
  }
  owner_->onAlloc(*this, buf);
}

void Connection::onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* c = static_cast<Connection*>(s->data);
  if (c->ready_fn_ != nullptr && buf->base == nullptr) {
    // UV_ENOBUFS: readable. Anything else libuv reports without reading (its EOF on POLLHUP
    // after a partial read) has stopped its read: the pump's splice finds out what is left.
    if (n != UV_ENOBUFS) c->readStop();
    c->ready_fn_(c->ready_ctx_);
    return;
  }
  if (c->plain())
    c->deliver(n, buf);
  else
    c->transport_->readDone(*c, n, buf);
}

// --- Readiness for a splice pump ------------------------------------------------------------

int Connection::fd() noexcept {
  uv_os_fd_t fd;
  return uv_fileno(reinterpret_cast<uv_handle_t*>(&tcp_), &fd) == 0 ? fd : -1;
}

int Connection::watchWritable(ReadyFn fn, void* ctx) noexcept {
  if (closing()) return UV_ECANCELED;
  if (write_dup_ < 0) {
    const int sock = fd();
    if (sock < 0) return UV_EBADF;
    const int dup = fcntl(sock, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return -errno;
    if (const int rc = uv_poll_init(tcp_.loop, &write_poll_, dup); rc != 0) {
      ::close(dup);
      return rc;
    }
    write_poll_.data = this;
    write_dup_ = dup;
    ++pending_;   // its close callback
  }
  writable_fn_ = fn;
  writable_ctx_ = ctx;
  if (!write_armed_) {
    const int rc = uv_poll_start(&write_poll_, UV_WRITABLE, onWritable);
    if (rc != 0) return rc;
    write_armed_ = true;
  }
  return 0;
}

void Connection::unwatchWritable() noexcept {
  if (!write_armed_) return;
  write_armed_ = false;
  uv_poll_stop(&write_poll_);
}

void Connection::onWritable(uv_poll_t* h, int status, int) {
  auto* c = static_cast<Connection*>(h->data);
  if (status < 0) c->write_armed_ = false;   // libuv stopped the poll on POLLERR
  if (c->writable_fn_ != nullptr) c->writable_fn_(c->writable_ctx_);
}

void Connection::deliver(ssize_t n, const uv_buf_t* buf) noexcept {
  const bool scratch = buf->base == t_linger_scratch;
  const bool pooled = pool_ != nullptr && !scratch && buf->base != nullptr;
  if (closing()) {
    if (pooled) pool_->put(buf->base - header_);
    return;
  }
  if (n > 0) {
    bytes_read_ += static_cast<uint64_t>(n);
    if (state_ == ConnState::kLingering) return;
    owner_->onRead(*this, buf->base, static_cast<size_t>(n));
    return;
  }
  if (pooled) pool_->put(buf->base - header_);
  // The owner's buffer comes back empty, on EAGAIN and before EOF or an error alike, so
  // that an owner which took a block for it gives it back in one place.
  if (!pooled && !scratch && (n == 0 || buf->base != nullptr)) {
    owner_->onRead(*this, buf->base, 0);
    if (closing()) return;
  }
  if (n == 0) return;
  readStop();
  if (state_ == ConnState::kLingering) {
    lingerEnd();   // the peer has read lb's answer and closed (or reset)
    return;
  }
  if (n == UV_EOF)
    owner_->onEof(*this);
  else
    owner_->onError(*this, static_cast<int>(n));
}

// --- Writing -----------------------------------------------------------------------------

ssize_t Connection::writeRest(ConnectionWrite* w, const uv_buf_t* bufs, unsigned n,
                              bool try_first, int tried) noexcept {
  if (closing()) return UV_ECANCELED;
  size_t total = 0;
  for (unsigned i = 0; i < n; ++i) total += bufs[i].len;
  size_t done = 0;
  uv_buf_t rest[kMaxBuffers];
  const uv_buf_t* out = bufs;
  unsigned count = n;
  if (try_first && n <= kMaxBuffers) {
    int t = tried != kNotTried ? tried : transport_->tryWrite(*this, bufs, n);
    if (t == UV_EAGAIN) t = 0;
    if (t < 0) return t;
    done = static_cast<size_t>(t);
    bytes_written_ += done;
    if (done == total) return static_cast<ssize_t>(done);
    // Skip what went out: whole buffers, then the front of the first one left.
    unsigned i = 0;
    size_t skip = done;
    while (skip >= bufs[i].len) skip -= bufs[i++].len;
    count = 0;
    for (; i < n; ++i) {
      rest[count] = bufs[i];
      rest[count].base += skip;
      rest[count].len -= skip;
      skip = 0;
      ++count;
    }
    out = rest;
  }
  w->conn = this;
  w->bytes = total - done;
  w->req.data = w;
  const int rc = transport_->queueWrite(*this, &w->req, out, count, onWrite);
  if (rc != 0) return rc;
  ++pending_;
  ++writes_;
  if (queued() > high_) above_ = true;
  return static_cast<ssize_t>(done);
}

void Connection::onWrite(uv_write_t* req, int status) {
  auto* w = static_cast<ConnectionWrite*>(req->data);
  w->conn->handleWrite(w, status);
}

void Connection::handleWrite(ConnectionWrite* w, int status) noexcept {
  --writes_;
  if (closing()) {
    if (w->done != nullptr)
      w->done(w, UV_ECANCELED);
    else
      owner_->onWritten(*this, w, UV_ECANCELED);
    callbackDone();
    return;
  }
  --pending_;   // not the last: the handles are open
  if (status == 0) bytes_written_ += w->bytes;
  if (w->done != nullptr)
    w->done(w, status);
  else
    owner_->onWritten(*this, w, status);
  if (closing() || status != 0) return;
  if (above_ && queued() <= low_) {
    above_ = false;
    owner_->onDrained(*this);
  }
}

int Connection::shutdown() noexcept {
  if (closing()) return UV_ECANCELED;
  const int rc = transport_->shutdown(*this, &shutdown_req_, onShutdownDone);
  if (rc == 0) ++pending_;
  return rc;
}

void Connection::onShutdownDone(uv_shutdown_t* req, int status) {
  auto* c = static_cast<Connection*>(req->data);
  if (c->state_ != ConnState::kClosing && c->state_ != ConnState::kLingering)
    c->owner_->onShutdown(*c, status);
  c->callbackDone();
}

// --- Timer, linger, close ----------------------------------------------------------------

void Connection::onTimerFired(uv_timer_t* t) {
  auto* c = static_cast<Connection*>(t->data);
  switch (c->state_) {
    case ConnState::kClosing:
      return;
    case ConnState::kHandshaking:
      // A transport mid-handshake hears of the deadline first: only it can tell this real
      // timeout from an owner that closes early (its client left), which is no failure.
      c->transport_->handshakeTimedOut(*c);   // normally ends the connect itself
      if (c->state_ != ConnState::kHandshaking) return;
      [[fallthrough]];
    case ConnState::kConnecting:
      // The connect (or its handshake) is still pending at its deadline. The owner closes,
      // which cancels it.
      c->connectDone(UV_ETIMEDOUT);
      return;
    case ConnState::kLingering:
      c->lingerEnd();
      return;
    default:
      c->owner_->onTimer(*c);
      return;
  }
}

bool Connection::lingerClose(uint64_t ms) noexcept {
  if (closing()) return false;
  const bool shut = shutdown() == 0;
  enter(ConnState::kLingering);
  readStart();
  uv_timer_start(&timer_, onTimerFired, ms, 0);
  return shut;
}

void Connection::lingerEnd() noexcept {
  owner_->onLingerDone(*this);
  close();
}

void Connection::close() noexcept {
  if (closing()) return;
  enter(ConnState::kClosing);
  readStop();
  uv_timer_stop(&timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onHandleClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), onHandleClosed);
  ready_fn_ = nullptr;
  writable_fn_ = nullptr;
  if (write_dup_ >= 0) {
    // uv_close on a poll handle takes its descriptor out of epoll at once (uv__poll_stop),
    // so the duplicate can close now; the socket itself closes with tcp_.
    write_armed_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&write_poll_), onHandleClosed);
    ::close(write_dup_);
    write_dup_ = -1;
  }
  transport_->closing(*this);
}

void Connection::onHandleClosed(uv_handle_t* h) {
  static_cast<Connection*>(h->data)->callbackDone();
}

// The owner may free itself (and this) in onClosed: nothing touches `this` after it.
void Connection::callbackDone() noexcept {
  if (--pending_ == 0 && closing()) {
    Transport* t = transport_;
    transport_ = &PlainTransport::instance();
    t->release(*this);
    owner_->onClosed(*this);
  }
}

}  // namespace lb
