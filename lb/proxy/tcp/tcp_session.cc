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
    case TcpOutcome::kTlsHandshake: return "tls_handshake_failed";
  }
  return "?";
}

// A read goes into a pool block after this header, and the same block carries its write to
// the other side: relaying a read allocates nothing once the pool is warm, and a block is
// held only from the read to the end of its write (an idle connection holds none).
struct TcpSession::WriteOp {
  ConnectionWrite w;
  TcpSession* session;
  Side* to;
};
namespace {
constexpr size_t kHeader = (sizeof(ConnectionWrite) + 2 * sizeof(void*) + 15) & ~size_t{15};
static_assert(kHeader < BufferPool::kBlockSize / 16);
}  // namespace

TcpSession::TcpSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
                       uint32_t listener)
    : env_(env),
      snapshot_(snapshot),
      listener_(snapshot_->listeners[listener]),
      cluster_(snapshot_->clusters[listener_.cluster]),
      client_(*this, env.loop()),
      pump_up_(*this, env.loop()),
      pump_down_(*this, env.loop()) {
  env_.link(this);
  client_.readIntoPool(&env.buffers(), kHeader);
  down_.conn = &client_;
}

TcpSession::~TcpSession() { env_.unlink(this); }

void TcpSession::accept(WorkerEnv& env, uv_stream_t* server, const AcceptTransport* transport,
                        const std::shared_ptr<const Snapshot>& snapshot, uint32_t listener,
                        Admission admission) noexcept {
  auto* s = new (std::nothrow) TcpSession(env, snapshot, listener);
  if (s == nullptr) return;
  s->start_ns_ = uv_hrtime();
  if (s->client_.accept(server, transport) != 0) {
    // Another worker took it (SO_REUSEPORT wakeups) or the client is gone: no line to log.
    s->state_ = State::kClosing;
    s->client_.close();
    return;
  }
  env.noteAccepted();
  s->listener_.state->per_worker[env.index()].connections_active.add(1);
  s->start(admission);
}

void TcpSession::start(Admission admission) noexcept {
  if (admission == Admission::kOverLimit) {
    close(TcpOutcome::kOverLimit);
    return;
  }
  client_.setNoDelay();
  if (!client_.open()) {
    // A TLS listener: the backend is dialled once the client's handshake is over, as
    // HAProxy's ssl binds do, so that a client that never finishes one (a port scan,
    // plaintext to the TLS port) costs no backend connection. The idle timeout bounds the
    // handshake (docs/config.md); reading runs for it and stops when it ends.
    state_ = State::kHandshaking;
    const uint64_t idle = static_cast<uint64_t>(listener_.config->timeouts.idle.count());
    if (idle > 0) client_.startTimer(idle);
    if (client_.readStart() != 0) close(TcpOutcome::kClientReset);
    return;
  }
  pickAndConnect();
}

// The client's TLS handshake has ended; its first plaintext stays with the transport until
// piping starts reading again.
void TcpSession::onEstablished(Connection&) noexcept {
  if (state_ != State::kHandshaking) return;
  client_.readStop();
  client_.stopTimer();
  state_ = State::kConnecting;
  pickAndConnect();
}

void TcpSession::pickAndConnect() noexcept {
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
  ctx.peer = client_.peer();
  ctx.local = client_.local();
  KeyText text;   // the address as text, in its scratch: no allocation
  ctx.text_out = &text;
  if (!listener_.keys->compute(ctx, cluster_.selector->key_hash, &hash_)) return false;
  cluster_.countKey(env_.index(), hash_, text.bytes);   // once per connection
  return true;
}

// A new connection to the host attempt_ picked; never a pooled one, never pooled after. It
// reads into pool blocks after the write header, as the client's does.
void TcpSession::connectPicked() noexcept {
  int err = 0;
  conn_ = attempt_.connect(*this, Pooling::kNever, &err);
  if (conn_ == nullptr) {
    LB_DEBUG("tcp %s: connect to %s failed at once: %s", listener_.config->name.c_str(),
             attempt_.backend()->config->name.c_str(), sysErrorText(err));
    attempt_.reportConnectFailure(err);
    failAttempt();
    return;
  }
  conn_->connection().readIntoPool(&env_.buffers(), kHeader);
}

// Only the backend's connection connects.
void TcpSession::onConnected(Connection&, int status) noexcept {
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
  up_.conn = &conn_->connection();
  last_activity_ms_ = uv_now(env_.loop());
  uint64_t idle = static_cast<uint64_t>(listener_.config->timeouts.idle.count());
  if (idle > 0) client_.startTimer(idle);
  startPump(down_);
  if (state_ == State::kPiping) startPump(up_);
}

// Splices `from`'s bytes to the other side, or reads them through libuv when the pump cannot
// start (a transport that is not plain, no pipe or descriptor left).
void TcpSession::startPump(Side& from) noexcept {
  SplicePump& p = &from == &down_ ? pump_up_ : pump_down_;
  if (p.start(*from.conn, *other(from).conn, SplicePump::kUnbounded) == 0) {
    from.pump = &p;
    from.reading = true;
    p.pumpNow();
    return;
  }
  startReading(from);
}

void TcpSession::stopPump(Side& from) noexcept {
  if (from.pump == nullptr) return;
  from.pump->stop();
  from.pump = nullptr;
  from.reading = false;
}

void TcpSession::onPumpRead(SplicePump& p, size_t n) noexcept {
  Side& from = sourceOf(p);
  listener_.state->per_worker[env_.index()].spliced_bytes.add(n);
  last_activity_ms_ = uv_now(env_.loop());
  from.bytes_read += n;
  if (&from == &down_)
    attempt_.stats()->bytes_tx.add(n);
  else
    attempt_.stats()->bytes_rx.add(n);
}

void TcpSession::onPumpDone(SplicePump& p, int status) noexcept {
  Side& from = sourceOf(p);
  stopPump(from);
  if (state_ != State::kPiping) return;
  if (status == SplicePump::kUnsupported) {
    startReading(from);   // the copy path, from the first byte (none has moved)
    return;
  }
  if (status == UV_EOF) {
    ended(from);   // every byte before the EOF is on the other side, as on the copy path
    return;
  }
  bool client_side = p.errorOnSource() == (&from == &down_);
  if (!client_side && &from == &up_ && up_.bytes_read == 0 && p.errorOnSource())
    attempt_.reportFailure(BackendFailure::kConnectReset);
  close(client_side ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
}

void TcpSession::startReading(Side& side) noexcept {
  side.reading = true;
  side.conn->readStart();
}

void TcpSession::stopReading(Side& side) noexcept {
  side.reading = false;
  side.conn->readStop();
}

void TcpSession::onTimer(Connection&) noexcept {
  if (state_ == State::kHandshaking) {
    close(TcpOutcome::kTlsHandshake);
    return;
  }
  if (state_ != State::kPiping) return;
  // Idle: the timer runs once per idle period rather than being restarted on every read.
  uint64_t idle = static_cast<uint64_t>(listener_.config->timeouts.idle.count());
  uint64_t now = uv_now(env_.loop());
  uint64_t quiet = now - last_activity_ms_;
  if (quiet >= idle) {
    close(TcpOutcome::kIdleTimeout);
    return;
  }
  client_.startTimer(idle - quiet);
}

// Either side's bytes, n > 0 of them at p, in a pool block that is ours now; relayed in it.
void TcpSession::onRead(Connection& c, char* p, size_t n) noexcept {
  char* block = p - kHeader;
  if (state_ != State::kPiping) {   // nothing is relayed outside kPiping
    env_.buffers().put(block);
    return;
  }
  Side& from = sideOf(c);
  last_activity_ms_ = uv_now(env_.loop());
  from.bytes_read += static_cast<uint64_t>(n);
  if (&from == &down_)
    attempt_.stats()->bytes_tx.add(static_cast<uint64_t>(n));
  else
    attempt_.stats()->bytes_rx.add(static_cast<uint64_t>(n));
  Side& to = other(from);
  static_assert(sizeof(WriteOp) <= kHeader);
  auto* op = new (block) WriteOp;
  op->session = this;
  op->to = &to;
  if (&to == &up_) op->w.done = onUpWritten;
  uv_buf_t out = uv_buf_init(p, static_cast<unsigned>(n));
  // Queued whole (no uv_try_write first): libuv writes at once what the socket takes.
  if (to.conn->write(&op->w, &out, 1, /*try_first=*/false) < 0) {
    env_.buffers().put(block);
    close(&to == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  if (&to == &up_) ++up_writes_;
  // Backpressure: a slow reader on `to` must not let `from` fill our memory.
  if (to.conn->aboveHigh()) {
    from.paused = true;
    stopReading(from);
  }
}

// A side will send no more: the other side hears so once its bytes are out. During a TLS
// client's handshake it is the handshake's end.
void TcpSession::onEof(Connection& c) noexcept {
  if (state_ == State::kHandshaking) {
    close(TcpOutcome::kTlsHandshake);
    return;
  }
  if (state_ != State::kPiping) return;
  Side& from = sideOf(c);
  stopReading(from);
  ended(from);
}

void TcpSession::onError(Connection& c, int) noexcept {
  if (state_ == State::kHandshaking) {   // a failed handshake, or the client left it
    close(TcpOutcome::kTlsHandshake);
    return;
  }
  if (state_ != State::kPiping) return;
  Side& from = sideOf(c);
  // The backend reset the connection before it sent a byte: counted like a reset connect.
  if (&from == &up_ && up_.bytes_read == 0) attempt_.reportFailure(BackendFailure::kConnectReset);
  close(&from == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
}

void TcpSession::onWritten(Connection&, ConnectionWrite* w, int status) noexcept {
  handleWrite(reinterpret_cast<WriteOp*>(w), status);
}

void TcpSession::onUpWritten(ConnectionWrite* w, int status) noexcept {
  auto* op = reinterpret_cast<WriteOp*>(w);
  TcpSession* self = op->session;
  --self->up_writes_;
  self->handleWrite(op, status);
  if (self->state_ == State::kClosing) self->maybeFree();
}

void TcpSession::handleWrite(WriteOp* op, int status) noexcept {
  Side& to = *op->to;
  env_.buffers().put(reinterpret_cast<char*>(op));
  if (status == UV_ECANCELED || state_ != State::kPiping) return;
  if (status != 0) {
    close(&to == &down_ ? TcpOutcome::kClientReset : TcpOutcome::kBackendReset);
    return;
  }
  resumeIfDrained(other(to), to);
}

void TcpSession::resumeIfDrained(Side& reader, Side& writer) noexcept {
  if (!reader.paused || writer.conn->queued() > kLowWatermark) return;
  reader.paused = false;
  if (reader.eof) return;
  startReading(reader);
}

void TcpSession::onShutdown(Connection& c, int status) noexcept {
  handleShutdown(sideOf(c), status);
}

// `from` sent EOF: it will send no more, and the other side hears so once every byte before
// it is out (the shutdown queues behind pending writes).
void TcpSession::ended(Side& from) noexcept {
  from.eof = true;
  from.sent_at_eof = other(from).bytes_read;
  Side& to = other(from);
  if (!to.shut_sent) {
    to.shut_sent = true;
    if (to.conn->shutdown() != 0) to.shut_done = true;
  }
  maybeFinish();
}

void TcpSession::handleShutdown(Side& side, int status) noexcept {
  if (state_ != State::kPiping) return;
  side.shut_done = true;
  // The peer is gone (ENOTCONN, EPIPE): nothing more can pass. When it had ended its own
  // stream and nothing was sent to it since, it only closed outright once done, and nothing
  // was lost: a TLS client that exits without waiting (redis-cli) meets lb's close_notify
  // with a reset, and its session is as complete as a plain one.
  if (status != 0 && !(side.eof && other(side).bytes_read == side.sent_at_eof)) {
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

void TcpSession::onClosed(Connection&) noexcept {
  client_closed_ = true;
  maybeFree();
}

void TcpSession::maybeFree() noexcept {
  if (client_closed_ && up_writes_ == 0) delete this;
}

void TcpSession::close(TcpOutcome outcome) noexcept {
  if (state_ == State::kClosing) return;
  state_ = State::kClosing;
  outcome_ = outcome;
  finishRecord();
  attempt_.release();
  listener_.state->per_worker[env_.index()].connections_active.add(-1);
  // The pumps first: they work on both connections.
  stopPump(down_);
  stopPump(up_);
  client_.close();
  if (conn_ != nullptr) {
    // Writes queued on it call back cancelled (counted in up_writes_).
    conn_->close();
    conn_ = nullptr;
  }
  up_.conn = nullptr;
}

void TcpSession::finishRecord() noexcept {
  AccessLog* log = env_.accessLog();
  if (log == nullptr || !log->enabled()) return;
  AccessRecord r;
  r.listener = listener_.config->name;
  r.http = false;
  r.client = client_.peer();
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
