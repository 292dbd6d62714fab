#include "lb/proxy/tcp/tcp_session.h"

#include <new>

#include "lb/core/log.h"
#include "lb/core/sys_error.h"
#include "lb/runtime/access_log.h"
#include "lb/runtime/worker_env.h"
#include "plugins/keys/key_chain.h"

namespace lb {

const char* tcpOutcomeName(TcpOutcome o) noexcept {
  switch (o) {
    case TcpOutcome::kOk: return "ok";
    case TcpOutcome::kNoKey: return "no_key";
    case TcpOutcome::kOverLimit: return "over_limit";
    case TcpOutcome::kNoBackend: return "no_backend";
    case TcpOutcome::kConnectFailed: return "connect_failed";
    case TcpOutcome::kIdleTimeout: return "idle_timeout";
    case TcpOutcome::kClientReset: return "client_reset";
    case TcpOutcome::kBackendReset: return "backend_reset";
    case TcpOutcome::kDraining: return "draining";
    case TcpOutcome::kBackendDown: return "backend_down";
  }
  return "?";
}

// A read goes into a pool block after this header, and the same block carries its write to
// the other side: relaying a read allocates nothing once the pool is warm, and a block is
// held only from the read to the end of its write (an idle connection holds none).
struct TcpSession::WriteOp {
  uv_write_t req;
  TcpSession* session;
  Side* to;
};
namespace {
constexpr size_t kHeader = (sizeof(uv_write_t) + 2 * sizeof(void*) + 15) & ~size_t{15};
static_assert(kHeader < BufferPool::kBlockSize / 16);
}  // namespace

TcpSession::TcpSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
                       uint32_t listener)
    : env_(env),
      snapshot_(snapshot),
      listener_(snapshot_->listeners[listener]),
      cluster_(snapshot_->clusters[listener_.cluster]) {
  env_.link(this);
}

TcpSession::~TcpSession() { env_.unlink(this); }

void TcpSession::accept(WorkerEnv& env, uv_stream_t* server,
                        const std::shared_ptr<const Snapshot>& snapshot, uint32_t listener,
                        Admission admission) noexcept {
  auto* s = new (std::nothrow) TcpSession(env, snapshot, listener);
  if (s == nullptr) return;
  uv_tcp_init(env.loop(), &s->down_tcp_);
  s->down_tcp_.data = s;
  s->down_.stream = reinterpret_cast<uv_stream_t*>(&s->down_tcp_);
  uv_timer_init(env.loop(), &s->timer_);
  s->timer_.data = s;
  s->start_ns_ = uv_hrtime();
  if (uv_accept(server, s->down_.stream) != 0) {
    // Another worker took it (SO_REUSEPORT wakeups) or the client is gone: no line to log.
    s->state_ = State::kClosing;
    s->closeHandle(reinterpret_cast<uv_handle_t*>(&s->down_tcp_));
    s->closeHandle(reinterpret_cast<uv_handle_t*>(&s->timer_));
    return;
  }
  env.noteAccepted();
  s->listener_.state->per_worker[env.index()].connections_active.add(1);
  s->start(admission);
}

void TcpSession::start(Admission admission) noexcept {
  int len = sizeof peer_;
  uv_tcp_getpeername(&down_tcp_, reinterpret_cast<sockaddr*>(&peer_), &len);
  len = sizeof local_;
  uv_tcp_getsockname(&down_tcp_, reinterpret_cast<sockaddr*>(&local_), &len);
  if (admission == Admission::kOverLimit) {
    close(TcpOutcome::kOverLimit);
    return;
  }
  uv_tcp_nodelay(&down_tcp_, 1);
  has_key_ = computeKey();
  if (has_key_) {
    attempt_.begin(env_, listener_, cluster_, hash_);
  } else if (listener_.config->on_missing_key == OnMissingKey::kReject) {
    close(TcpOutcome::kNoKey);
    return;
  } else {
    attempt_.beginKeyless(env_, listener_, cluster_);
  }
  if (!attempt_.pickFirst()) {
    close(TcpOutcome::kNoBackend);
    return;
  }
  connectPicked();
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

// A new connection to the host attempt_ picked; never a pooled one, never pooled after.
void TcpSession::connectPicked() noexcept {
  int err = 0;
  conn_ = attempt_.connect(this, Pooling::kNever, &err);
  if (conn_ == nullptr) {
    LB_DEBUG("tcp %s: connect to %s failed at once: %s", listener_.config->name.c_str(),
             attempt_.backend()->config->name.c_str(), sysErrorText(err));
    attempt_.reportConnectFailure(err);
    failAttempt();
  }
}

void TcpSession::onUpstreamConnect(int status) noexcept {
  if (state_ != State::kConnecting) return;
  if (status != 0) {
    LB_DEBUG("tcp %s: connect to %s failed: %s", listener_.config->name.c_str(),
             attempt_.backend()->config->name.c_str(), sysErrorText(status));
    attempt_.reportConnectFailure(status);
    failAttempt();
    return;
  }
  attempt_.reportSuccess();
  startPiping();
}

void TcpSession::backendDown(const BackendState& backend) noexcept {
  const BackendSnapshot* b = attempt_.backend();
  if (b == nullptr || b->state.get() != &backend) return;
  if (state_ == State::kConnecting && conn_ != nullptr)
    failAttempt();   // the next host of the key's order, while retries last
  else if (state_ == State::kPiping)
    close(TcpOutcome::kBackendDown);
}

// The current attempt failed (refused, unreachable, timed out): its connection closes (the
// UpstreamConn frees itself), and the next distinct host gets a new one, while retries last.
void TcpSession::failAttempt() noexcept {
  if (conn_ != nullptr) {
    conn_->close();
    conn_ = nullptr;
  }
  if (attempt_.pickNext())
    connectPicked();
  else
    close(TcpOutcome::kConnectFailed);
}

void TcpSession::startPiping() noexcept {
  state_ = State::kPiping;
  up_.stream = conn_->stream();
  last_activity_ms_ = uv_now(env_.loop());
  uint64_t idle = static_cast<uint64_t>(listener_.config->timeouts.idle.count());
  if (idle > 0) uv_timer_start(&timer_, onTimer, idle, 0);
  startReading(down_);
  startReading(up_);
}

void TcpSession::startReading(Side& side) noexcept {
  side.reading = true;
  if (&side == &down_)
    uv_read_start(down_.stream, onAlloc, onRead);
  else
    conn_->startRead();   // onUpstreamAlloc / onUpstreamRead
}

void TcpSession::stopReading(Side& side) noexcept {
  side.reading = false;
  if (&side == &down_)
    uv_read_stop(down_.stream);
  else
    conn_->stopRead();
}

void TcpSession::onTimer(uv_timer_t* t) { static_cast<TcpSession*>(t->data)->handleTimer(); }

void TcpSession::handleTimer() noexcept {
  if (state_ != State::kPiping) return;
  // Idle: the timer runs once per idle period rather than being restarted on every read.
  uint64_t idle = static_cast<uint64_t>(listener_.config->timeouts.idle.count());
  uint64_t now = uv_now(env_.loop());
  uint64_t quiet = now - last_activity_ms_;
  if (quiet >= idle) {
    close(TcpOutcome::kIdleTimeout);
    return;
  }
  uv_timer_start(&timer_, onTimer, idle - quiet, 0);
}

void TcpSession::allocBlock(uv_buf_t* buf) noexcept {
  char* block = env_.buffers().get();
  *buf = uv_buf_init(block + kHeader, static_cast<unsigned>(BufferPool::kBlockSize - kHeader));
}

void TcpSession::onAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  static_cast<TcpSession*>(h->data)->allocBlock(buf);
}

void TcpSession::onUpstreamAlloc(uv_buf_t* buf) noexcept { allocBlock(buf); }

void TcpSession::onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* self = static_cast<TcpSession*>(s->data);
  self->handleRead(self->down_, n, buf);
}

void TcpSession::onUpstreamRead(ssize_t n, const uv_buf_t* buf) noexcept {
  handleRead(up_, n, buf);
}

void TcpSession::handleRead(Side& from, ssize_t n, const uv_buf_t* buf) noexcept {
  char* block = buf->base != nullptr ? buf->base - kHeader : nullptr;
  if (n <= 0 || state_ != State::kPiping) {
    env_.buffers().put(block);
    if (n == 0 || state_ != State::kPiping) return;
    if (n == UV_EOF) {
      from.eof = true;
      stopReading(from);
      Side& to = other(from);
      if (!to.shut_sent) {
        // Queued after every pending write, so the peer sees all bytes, then EOF.
        to.shut_sent = true;
        to.shutdown.data = this;
        if (uv_shutdown(&to.shutdown, to.stream, onShutdown) == 0)
          ++pending_;
        else
          to.shut_done = true;
      }
      maybeFinish();
      return;
    }
    // The backend reset the connection before it sent a byte: counted like a reset connect.
    if (&from == &up_ && up_.bytes_read == 0)
      attempt_.reportFailure(BackendFailure::kConnectReset);
    close(&from == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  last_activity_ms_ = uv_now(env_.loop());
  from.bytes_read += static_cast<uint64_t>(n);
  if (&from == &down_)
    attempt_.stats()->bytes_tx.add(static_cast<uint64_t>(n));
  else
    attempt_.stats()->bytes_rx.add(static_cast<uint64_t>(n));
  Side& to = other(from);
  auto* op = reinterpret_cast<WriteOp*>(block);
  op->req.data = op;
  op->session = this;
  op->to = &to;
  uv_buf_t out = uv_buf_init(buf->base, static_cast<unsigned>(n));
  if (uv_write(&op->req, to.stream, &out, 1, onWrite) != 0) {
    env_.buffers().put(block);
    close(&to == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  ++pending_;
  // Backpressure: a slow reader on `to` must not let `from` fill our memory.
  if (to.stream->write_queue_size > kHighWatermark) {
    from.paused = true;
    stopReading(from);
  }
}

void TcpSession::onWrite(uv_write_t* req, int status) {
  auto* op = static_cast<WriteOp*>(req->data);
  op->session->handleWrite(op, status);
}

void TcpSession::handleWrite(WriteOp* op, int status) noexcept {
  Side& to = *op->to;
  env_.buffers().put(reinterpret_cast<char*>(op));
  if (status == UV_ECANCELED || state_ != State::kPiping) {
    callbackDone();
    return;
  }
  --pending_;   // the session stays: it is piping
  if (status != 0) {
    close(&to == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  resumeIfDrained(other(to), to);
}

void TcpSession::resumeIfDrained(Side& reader, Side& writer) noexcept {
  if (!reader.paused || writer.stream->write_queue_size > kLowWatermark) return;
  reader.paused = false;
  if (reader.eof) return;
  startReading(reader);
}

void TcpSession::onShutdown(uv_shutdown_t* req, int status) {
  auto* self = static_cast<TcpSession*>(req->data);
  Side& side = req == &self->down_.shutdown ? self->down_ : self->up_;
  self->handleShutdown(side, status);
}

void TcpSession::handleShutdown(Side& side, int status) noexcept {
  if (status == UV_ECANCELED || state_ != State::kPiping) {
    callbackDone();
    return;
  }
  --pending_;
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
  ++pending_;
  uv_close(h, onClosed);
}

void TcpSession::onClosed(uv_handle_t* h) { static_cast<TcpSession*>(h->data)->callbackDone(); }

void TcpSession::callbackDone() noexcept {
  --pending_;
  if (pending_ == 0 && state_ == State::kClosing) delete this;
}

void TcpSession::close(TcpOutcome outcome) noexcept {
  if (state_ == State::kClosing) return;
  state_ = State::kClosing;
  outcome_ = outcome;
  finishRecord();
  attempt_.release();
  listener_.state->per_worker[env_.index()].connections_active.add(-1);
  uv_timer_stop(&timer_);
  closeHandle(reinterpret_cast<uv_handle_t*>(&timer_));
  closeHandle(reinterpret_cast<uv_handle_t*>(&down_tcp_));
  if (conn_ != nullptr) {
    // Writes and a shutdown queued on it call back cancelled (counted in pending_).
    conn_->close();
    conn_ = nullptr;
  }
  up_.stream = nullptr;
}

void TcpSession::finishRecord() noexcept {
  AccessLog* log = env_.accessLog();
  if (log == nullptr || !log->enabled()) return;
  AccessRecord r;
  r.listener = listener_.config->name;
  r.http = false;
  r.client = reinterpret_cast<const sockaddr*>(&peer_);
  r.has_key = has_key_;
  r.key_hash = hash_;
  if (const BackendSnapshot* b = attempt_.backend()) r.backend = b->config->name;
  r.outcome = tcpOutcomeName(outcome_);
  r.bytes_in = down_.bytes_read;
  r.bytes_out = up_.bytes_read;
  r.duration_us = (uv_hrtime() - start_ns_) / 1000;
  log->write(r);
}

}  // namespace lb
