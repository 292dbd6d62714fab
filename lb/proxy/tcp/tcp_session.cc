#include "lb/proxy/tcp/tcp_session.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "lb/runtime/access_log.h"
#include "lb/core/log.h"
#include "plugins/keys/key_chain.h"

namespace lb {

const char* tcpOutcomeName(TcpOutcome o) noexcept {
  switch (o) {
    case TcpOutcome::kOk: return "ok";
    case TcpOutcome::kNoKey: return "no_key";
    case TcpOutcome::kConnectFailed: return "connect_failed";
    case TcpOutcome::kIdleTimeout: return "idle_timeout";
    case TcpOutcome::kClientReset: return "client_reset";
    case TcpOutcome::kBackendReset: return "backend_reset";
    case TcpOutcome::kDraining: return "draining";
  }
  return "?";
}

struct TcpSession::WriteOp {
  uv_write_t req;
  TcpSession* session;
  Side* to;
};
namespace {
constexpr size_t kHeader = (sizeof(uv_write_t) + 2 * sizeof(void*) + 15) & ~size_t{15};
}  // namespace

TcpSession::TcpSession(TcpWorkerEnv& env, std::shared_ptr<const Snapshot> snapshot,
                       uint32_t listener)
    : env_(env),
      snapshot_(std::move(snapshot)),
      listener_(snapshot_->listeners[listener]),
      cluster_(snapshot_->clusters[listener_.cluster]) {
  env_.sessions.link(this);
}

TcpSession::~TcpSession() {
  env_.sessions.unlink(this);
}

void TcpSession::closeAll(TcpWorkerEnv& env, TcpOutcome outcome) noexcept {
  // close() never frees synchronously (the free waits for close callbacks), so the walk is
  // safe.
  env.sessions.forEach([outcome](Session* s) { static_cast<TcpSession*>(s)->close(outcome); });
}

TcpSession* TcpSession::accept(TcpWorkerEnv& env, std::shared_ptr<const Snapshot> snapshot,
                               uint32_t listener, uv_stream_t* server) noexcept {
  auto* s = new (std::nothrow) TcpSession(env, std::move(snapshot), listener);
  if (s == nullptr) return nullptr;
  uv_tcp_init(env.loop, &s->down_.tcp);
  s->down_.tcp.data = s;
  s->down_.open = true;
  uv_timer_init(env.loop, &s->timer_);
  s->timer_.data = s;
  s->start_ns_ = uv_hrtime();
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&s->down_.tcp)) != 0) {
    // Another worker took it (SO_REUSEPORT wakeups) or the client is gone: no line to log.
    s->state_ = State::kClosing;
    s->closeHandle(reinterpret_cast<uv_handle_t*>(&s->down_.tcp));
    s->closeHandle(reinterpret_cast<uv_handle_t*>(&s->timer_));
    return nullptr;
  }
  ListenerWorkerStats& ls = s->listener_.state->per_worker[env.worker];
  ls.connections_active.add(1);
  s->start();
  return s;
}

void TcpSession::start() noexcept {
  int len = sizeof peer_;
  uv_tcp_getpeername(&down_.tcp, reinterpret_cast<sockaddr*>(&peer_), &len);
  len = sizeof local_;
  uv_tcp_getsockname(&down_.tcp, reinterpret_cast<sockaddr*>(&local_), &len);
  uv_tcp_nodelay(&down_.tcp, 1);
  has_key_ = computeKey();
  if (!has_key_) {
    switch (listener_.config->on_missing_key) {
      case OnMissingKey::kReject:
        close(TcpOutcome::kNoKey);
        return;
      case OnMissingKey::kRoundRobin:
        // Fibonacci hashing spreads consecutive numbers evenly over the key space, so
        // consecutive connections land on hosts in proportion to their key-space share.
        hash_ = ++env_.round_robin * 0x9E3779B97F4A7C15ull;
        break;
      case OnMissingKey::kRandom: {
        uint64_t x = env_.random_state;   // xorshift64 (Marsaglia 2003): no syscall, no lock
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        env_.random_state = x;
        hash_ = x;
        break;
      }
    }
  }
  connectNext();
}

// The listener's key plugins over the connection's addresses (source_ip, five_tuple); L7
// plugins are a config error on tcp listeners, so none of them sees a request here.
bool TcpSession::computeKey() noexcept {
  if (!listener_.keys || listener_.keys->empty()) return false;
  KeyContext ctx;
  ctx.peer = reinterpret_cast<const sockaddr*>(&peer_);
  ctx.local = reinterpret_cast<const sockaddr*>(&local_);
  return listener_.keys->compute(ctx, cluster_.selector->key_hash, &hash_);
}

BackendWorkerStats* TcpSession::backendStats() noexcept {
  if (!have_backend_) return nullptr;
  return &cluster_.backends[pick_.host].state->per_worker[env_.worker];
}

void TcpSession::connectNext() noexcept {
  const uint32_t hosts = static_cast<uint32_t>(cluster_.backends.size());
  const uint32_t max_attempts = std::min<uint32_t>(hosts, cluster_.config->retries + 1);
  if (hosts == 0 || attempts_ >= max_attempts) {
    close(TcpOutcome::kConnectFailed);
    return;
  }
  // Attempt k starts the walk after the previous pick, so each retry is a distinct host; a
  // walk that wraps back (nothing usable past the last try) ends the retries.
  const uint32_t from = attempts_ == 0 ? 0 : pick_.attempt + 1;
  if (from >= hosts) {
    close(TcpOutcome::kConnectFailed);
    return;
  }
  pick_ = cluster_.pick(hash_, from);
  if (pick_.attempt < from) {
    close(TcpOutcome::kConnectFailed);
    return;
  }
  if (attempts_ > 0 && pick_.reason == PickReason::kOwner) pick_.reason = PickReason::kFailover;
  ++attempts_;
  const BackendSnapshot& b = cluster_.backends[pick_.host];
  b.state->live.fetch_add(1, std::memory_order_relaxed);
  have_backend_ = true;
  b.state->per_worker[env_.worker].picks[static_cast<int>(pick_.reason)].add();

  uv_tcp_init(env_.loop, &up_.tcp);
  up_.tcp.data = this;
  up_.open = true;
  uv_tcp_nodelay(&up_.tcp, 1);
  connect_req_.data = this;
  int rc = uv_tcp_connect(&connect_req_, &up_.tcp,
                          reinterpret_cast<const sockaddr*>(&b.address), onConnect);
  if (rc != 0) {
    LB_DEBUG("tcp %s: connect to %s failed at once: %s", listener_.config->name.c_str(),
             b.config->name.c_str(), uv_strerror(rc));
    failAttempt();
    return;
  }
  uint64_t timeout = static_cast<uint64_t>(listener_.config->timeouts.connect.count());
  if (timeout > 0) uv_timer_start(&timer_, onTimer, timeout, 0);
}

void TcpSession::onConnect(uv_connect_t* req, int status) {
  static_cast<TcpSession*>(req->data)->handleConnect(status);
}

void TcpSession::handleConnect(int status) noexcept {
  if (status == UV_ECANCELED || state_ == State::kClosing) return;
  if (closing_up_for_retry_) return;   // the timer gave up on this attempt already
  uv_timer_stop(&timer_);
  if (status != 0) {
    LB_DEBUG("tcp %s: connect to %s failed: %s", listener_.config->name.c_str(),
             cluster_.backends[pick_.host].config->name.c_str(), uv_strerror(status));
    failAttempt();
    return;
  }
  connected_ = true;
  backendStats()->connections.add(1);
  startPiping();
}

// The current attempt failed (refused, unreachable, timed out): give its live unit back,
// close its socket, and try the next host once the socket is closed (a uv_tcp_t can be
// reused only after its close callback).
void TcpSession::failAttempt() noexcept {
  releaseBackend();
  closing_up_for_retry_ = true;
  closeHandle(reinterpret_cast<uv_handle_t*>(&up_.tcp));
}

void TcpSession::releaseBackend() noexcept {
  if (!have_backend_) return;
  if (connected_) {
    backendStats()->connections.add(-1);
    connected_ = false;
  }
  cluster_.backends[pick_.host].state->live.fetch_sub(1, std::memory_order_relaxed);
  have_backend_ = false;
}

void TcpSession::startPiping() noexcept {
  state_ = State::kPiping;
  last_activity_ms_ = uv_now(env_.loop);
  uint64_t idle = static_cast<uint64_t>(listener_.config->timeouts.idle.count());
  if (idle > 0) uv_timer_start(&timer_, onTimer, idle, 0);
  for (Side* s : {&down_, &up_}) {
    s->reading = true;
    uv_read_start(reinterpret_cast<uv_stream_t*>(&s->tcp), onAlloc, onRead);
  }
}

void TcpSession::onTimer(uv_timer_t* t) { static_cast<TcpSession*>(t->data)->handleTimer(); }

void TcpSession::handleTimer() noexcept {
  if (state_ == State::kClosing) return;
  if (state_ == State::kConnecting) {
    if (closing_up_for_retry_) return;
    LB_DEBUG("tcp %s: connect to %s timed out", listener_.config->name.c_str(),
             cluster_.backends[pick_.host].config->name.c_str());
    failAttempt();   // closing up_ cancels the connect (UV_ECANCELED)
    return;
  }
  // Idle: the timer runs once per idle period rather than being restarted on every read.
  uint64_t idle = static_cast<uint64_t>(listener_.config->timeouts.idle.count());
  uint64_t now = uv_now(env_.loop);
  uint64_t quiet = now - last_activity_ms_;
  if (quiet >= idle) {
    close(TcpOutcome::kIdleTimeout);
    return;
  }
  uv_timer_start(&timer_, onTimer, idle - quiet, 0);
}

void TcpSession::onAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* self = static_cast<TcpSession*>(h->data);
  char* chunk = self->env_.buffers->acquire();
  if (chunk == nullptr) {
    *buf = uv_buf_init(nullptr, 0);   // libuv reports UV_ENOBUFS to onRead
    return;
  }
  *buf = uv_buf_init(chunk + kHeader,
                     static_cast<unsigned>(self->env_.buffers->chunkSize() - kHeader));
}

void TcpSession::onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* self = static_cast<TcpSession*>(s->data);
  Side& from = s == reinterpret_cast<uv_stream_t*>(&self->down_.tcp) ? self->down_ : self->up_;
  self->handleRead(from, n, buf);
}

void TcpSession::handleRead(Side& from, ssize_t n, const uv_buf_t* buf) noexcept {
  char* chunk = buf->base != nullptr ? buf->base - kHeader : nullptr;
  if (n <= 0 || state_ == State::kClosing) {
    env_.buffers->release(chunk);
    if (n == 0 || state_ == State::kClosing) return;
    if (n == UV_EOF) {
      from.eof = true;
      from.reading = false;
      uv_read_stop(reinterpret_cast<uv_stream_t*>(&from.tcp));
      Side& to = other(from);
      if (!to.shut_sent) {
        // Queued after every pending write, so the peer sees all bytes, then EOF.
        to.shut_sent = true;
        to.shutdown.data = this;
        if (uv_shutdown(&to.shutdown, reinterpret_cast<uv_stream_t*>(&to.tcp), onShutdown) != 0)
          to.shut_done = true;
      }
      maybeFinish();
      return;
    }
    close(&from == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  last_activity_ms_ = uv_now(env_.loop);
  from.bytes_read += static_cast<uint64_t>(n);
  if (BackendWorkerStats* bs = backendStats()) {
    if (&from == &down_)
      bs->bytes_tx.add(static_cast<uint64_t>(n));
    else
      bs->bytes_rx.add(static_cast<uint64_t>(n));
  }
  Side& to = other(from);
  auto* op = reinterpret_cast<WriteOp*>(chunk);
  op->req.data = op;
  op->session = this;
  op->to = &to;
  uv_buf_t out = uv_buf_init(buf->base, static_cast<unsigned>(n));
  int rc = uv_write(&op->req, reinterpret_cast<uv_stream_t*>(&to.tcp), &out, 1, onWrite);
  if (rc != 0) {
    env_.buffers->release(chunk);
    close(&to == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  // Backpressure: a slow reader on `to` must not let `from` fill our memory.
  if (to.tcp.write_queue_size > kHighWatermark) {
    from.paused = true;
    from.reading = false;
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&from.tcp));
  }
}

void TcpSession::onWrite(uv_write_t* req, int status) {
  auto* op = static_cast<WriteOp*>(req->data);
  op->session->handleWrite(op, status);
}

void TcpSession::handleWrite(WriteOp* op, int status) noexcept {
  Side& to = *op->to;
  env_.buffers->release(reinterpret_cast<char*>(op));
  if (status == UV_ECANCELED || state_ == State::kClosing) return;
  if (status != 0) {
    close(&to == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  resumeIfDrained(other(to), to);
}

void TcpSession::resumeIfDrained(Side& reader, Side& writer) noexcept {
  if (!reader.paused || writer.tcp.write_queue_size > kLowWatermark) return;
  reader.paused = false;
  if (reader.eof) return;
  reader.reading = true;
  uv_read_start(reinterpret_cast<uv_stream_t*>(&reader.tcp), onAlloc, onRead);
}

void TcpSession::onShutdown(uv_shutdown_t* req, int status) {
  auto* self = static_cast<TcpSession*>(req->data);
  Side& side = req == &self->down_.shutdown ? self->down_ : self->up_;
  self->handleShutdown(side, status);
}

void TcpSession::handleShutdown(Side& side, int status) noexcept {
  if (status == UV_ECANCELED || state_ == State::kClosing) return;
  side.shut_done = true;
  if (status != 0) {   // the peer is gone (ENOTCONN, EPIPE): nothing more can pass
    close(&side == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  maybeFinish();
}

// Both directions done: each side sent EOF and the other side's shutdown went out after the
// last byte.
void TcpSession::maybeFinish() noexcept {
  if (down_.eof && up_.eof && down_.shut_done && up_.shut_done) close(TcpOutcome::kOk);
}

void TcpSession::closeHandle(uv_handle_t* h) noexcept {
  if (uv_is_closing(h)) return;
  ++pending_closes_;
  uv_close(h, onClosed);
}

void TcpSession::onClosed(uv_handle_t* h) {
  auto* self = static_cast<TcpSession*>(h->data);
  --self->pending_closes_;
  if (h == reinterpret_cast<uv_handle_t*>(&self->up_.tcp)) {
    self->up_ = Side{};
    if (self->closing_up_for_retry_) {
      self->closing_up_for_retry_ = false;
      if (self->state_ != State::kClosing) {
        self->connectNext();
        return;
      }
    }
  }
  if (self->pending_closes_ == 0 && self->state_ == State::kClosing) delete self;
}

void TcpSession::close(TcpOutcome outcome) noexcept {
  if (state_ == State::kClosing) return;
  state_ = State::kClosing;
  outcome_ = outcome;
  finishRecord();
  releaseBackend();
  listener_.state->per_worker[env_.worker].connections_active.add(-1);
  uv_timer_stop(&timer_);
  closeHandle(reinterpret_cast<uv_handle_t*>(&timer_));
  closeHandle(reinterpret_cast<uv_handle_t*>(&down_.tcp));
  if (up_.open) closeHandle(reinterpret_cast<uv_handle_t*>(&up_.tcp));
}

void TcpSession::finishRecord() noexcept {
  if (env_.access_log == nullptr || !env_.access_log->enabled()) return;
  AccessRecord r;
  r.listener = listener_.config->name;
  r.http = false;
  r.client = reinterpret_cast<const sockaddr*>(&peer_);
  r.has_key = has_key_;
  r.key_hash = hash_;
  if (attempts_ > 0) r.backend = cluster_.backends[pick_.host].config->name;
  r.outcome = tcpOutcomeName(outcome_);
  r.bytes_in = down_.bytes_read;
  r.bytes_out = up_.bytes_read;
  r.duration_us = (uv_hrtime() - start_ns_) / 1000;
  env_.access_log->write(r);
}

}  // namespace lb
