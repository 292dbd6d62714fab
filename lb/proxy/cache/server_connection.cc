#include "lb/proxy/cache/server_connection.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "lb/core/log.h"
#include "lb/core/sys_error.h"
#include "lb/runtime/worker_env.h"

namespace lb {

namespace {
// Buffers per writev: each is a pool block of up to 64 KiB, so this is megabytes per write.
constexpr int kMaxWriteBuffers = 32;
}  // namespace

ServerConnection::ServerConnection(ServerConnectionHost& worker, ServerGroup& group) noexcept
    : worker_(worker),
      group_(group),
      stats_(group.state->per_worker[worker.env().index()]),
      out_(worker.env().buffers()) {
  uv_timer_init(worker.env().loop(), &timer_);
  timer_.data = this;
}

ServerConnection::~ServerConnection() { releaseBuffer(); }

const char* ServerConnection::name() const noexcept { return group_.state->name.c_str(); }

ByteChain& ServerConnection::open(uint64_t connect_timeout_ms) noexcept {
  if (state_ == State::kIdle) connect(connect_timeout_ms);
  return out_;
}

void ServerConnection::connect(uint64_t timeout_ms) noexcept {
  int err = 0;
  state_ = State::kConnecting;
  tracking_epoch_ = 0;   // a new connection: the server tracks nothing for it yet
  conn_ = worker_.env().upstreams().connect(group_.target, *this, timeout_ms, false, &err);
  if (conn_ == nullptr) {
    // Not even a connect could start (out of descriptors). The fragments pushed this turn
    // fail from the timer, not from inside the session's parse; until then the server stays
    // kConnecting, so that no second connect slips in under them.
    LB_DEBUG("cache: connect to %s failed at once: %s", name(), sysErrorText(err));
    armTimer(uv_now(worker_.env().loop()));
    return;
  }
  if (!group_.handshake.empty()) {
    out_.append(group_.handshake);
    handshake_pending_ = true;
  }
}

void ServerConnection::push(CacheFragment* f) noexcept {
  const uint64_t now = uv_now(worker_.env().loop());
  f->deadline_ms = now + f->timeout_ms;
  f->next = nullptr;
  if (tail_ != nullptr)
    tail_->next = f;
  else
    head_ = f;
  tail_ = f;
  ++queued_;
  // The fragment comes with its unit of live load, taken when its host was picked
  // (CommandPicks); it goes back when the fragment leaves the queue (readReplies, fail).
  if (timer_at_ == 0 || f->deadline_ms < timer_at_) armTimer(f->deadline_ms);
  if (state_ == State::kReady) worker_.flushes().add(this);
}

void ServerConnection::armTimer(uint64_t deadline_ms) noexcept {
  const uint64_t now = uv_now(worker_.env().loop());
  timer_at_ = deadline_ms > now ? deadline_ms : now;
  uv_timer_start(&timer_, onTimerFired, timer_at_ - now, 0);
}

void ServerConnection::onConnected(Connection&, int status) noexcept {
  if (state_ != State::kConnecting) return;
  if (status != 0) {
    char text[160];
    if (status == UV_ETIMEDOUT)
      snprintf(text, sizeof text, "backend %s: connect timed out", name());
    else
      snprintf(text, sizeof text, "backend %s: connect failed: %s", name(), sysErrorText(status));
    backendFailed(status == UV_ETIMEDOUT ? BackendFailure::kConnectTimeout
                                         : BackendFailure::kConnectRefused,
                  text);
    return;
  }
  state_ = State::kReady;
  if (conn_->startRead() != 0) {
    char text[160];
    snprintf(text, sizeof text, "backend %s: connection failed", name());
    fail(CacheErrorReason::kBackendFailed, text);
    return;
  }
  worker_.flushes().add(this);
}

// Writes the chain kMaxWriteBuffers blocks at a time until the socket stops taking it whole
// (a remainder is queued and onWritten goes on from there) or nothing is left: a chain
// longer than one writev (a value of megabytes) never waits for a callback that no queued
// write would make.
void ServerConnection::flush() noexcept {
  while (state_ == State::kReady && !writing_ && !out_.empty()) {
    uv_buf_t bufs[kMaxWriteBuffers];
    const int n = out_.buffers(bufs, kMaxWriteBuffers);
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += bufs[i].len;
    size_t now = 0;
    const int rc = conn_->write(bufs, static_cast<unsigned>(n), &now);
    if (rc < 0) {
      char text[160];
      snprintf(text, sizeof text, "backend %s: write failed: %s", name(), sysErrorText(rc));
      backendFailed(BackendFailure::kConnectReset, text);
      return;
    }
    stats_.bytes_tx.add(static_cast<uint64_t>(now));
    out_.consume(now);
    if (rc == 0) continue;
    writing_ = true;
    write_bytes_ = total - now;
  }
}

// Only the current connection's write calls back (UpstreamConn::close takes the connection
// back, cancelled writes and all).
void ServerConnection::onWritten(Connection&, ConnectionWrite*, int status) noexcept {
  writing_ = false;
  if (state_ != State::kReady) return;
  if (status < 0) {
    char text[160];
    snprintf(text, sizeof text, "backend %s: write failed: %s", name(), sysErrorText(status));
    backendFailed(BackendFailure::kConnectReset, text);
    return;
  }
  stats_.bytes_tx.add(write_bytes_);
  out_.consume(write_bytes_);
  flush();
}

void ServerConnection::onAlloc(Connection&, uv_buf_t* buf) noexcept {
  if (in_ == nullptr) {
    in_ = worker_.env().buffers().get();
    in_cap_ = BufferPool::kBlockSize;
    in_pooled_ = true;
    in_len_ = 0;
  }
  if (in_len_ == in_cap_ && !growBuffer(in_cap_ * 2)) {
    *buf = uv_buf_init(nullptr, 0);   // libuv reports UV_ENOBUFS
    return;
  }
  *buf = uv_buf_init(in_ + in_len_, static_cast<unsigned>(in_cap_ - in_len_));
}

bool ServerConnection::growBuffer(size_t want) noexcept {
  if (want > kMaxReplyBytes) return false;
  char* bigger = new (std::nothrow) char[want];
  if (bigger == nullptr) return false;
  memcpy(bigger, in_, in_len_);
  const size_t len = in_len_;
  releaseBuffer();
  in_ = bigger;
  in_len_ = len;
  in_cap_ = want;
  in_pooled_ = false;
  return true;
}

void ServerConnection::releaseBuffer() noexcept {
  if (in_ != nullptr) {
    if (in_pooled_)
      worker_.env().buffers().put(in_);
    else
      delete[] in_;
  }
  in_ = nullptr;
  in_len_ = in_cap_ = 0;
  in_pooled_ = false;
}

void ServerConnection::onRead(Connection&, char*, size_t n) noexcept {
  if (state_ != State::kReady || n == 0) return;
  in_len_ += n;
  stats_.bytes_rx.add(static_cast<uint64_t>(n));
  readReplies();
}

void ServerConnection::onEof(Connection&) noexcept { readFailed(UV_EOF); }

void ServerConnection::onError(Connection&, int status) noexcept { readFailed(status); }

void ServerConnection::readFailed(int status) noexcept {
  if (state_ != State::kReady) return;
  char text[160];
  if (status == UV_EOF)
    snprintf(text, sizeof text, "backend %s closed the connection", name());
  else if (status == UV_ENOBUFS)
    snprintf(text, sizeof text, "backend %s: reply larger than %zu bytes", name(),
             kMaxReplyBytes);
  else
    snprintf(text, sizeof text, "backend %s: connection failed: %s", name(),
             sysErrorText(status));
  // A reply over lb's own limit is not the backend failing.
  if (status == UV_ENOBUFS)
    fail(CacheErrorReason::kBackendFailed, text);
  else
    backendFailed(BackendFailure::kConnectReset, text);
}

// Every complete reply in the buffer goes to the fragment at the head of the FIFO. What is
// left (part of a reply) moves to the front of the buffer; an empty buffer goes back to the
// pool.
void ServerConnection::readReplies() noexcept {
  size_t pos = 0;
  const uint64_t now_ns = uv_hrtime();
  while (pos < in_len_ && state_ == State::kReady) {
    const uint8_t kind = handshake_pending_ ? group_.wire->handshakeKind()
                         : head_ != nullptr  ? head_->reply_kind
                                             : 0;
    const int64_t len = group_.wire->frameReply(kind, in_ + pos, in_len_ - pos, scan_);
    if (len == 0) break;
    if (len < 0 || (head_ == nullptr && !handshake_pending_)) {
      char text[160];
      snprintf(text, sizeof text, "backend %s sent %s", name(),
               len < 0 ? "a malformed reply" : "a reply to no command");
      fail(CacheErrorReason::kBackendFailed, text);
      return;
    }
    scan_ = ReplyScan{};
    const char* p = in_ + pos;
    pos += static_cast<size_t>(len);
    if (handshake_pending_) {
      handshake_pending_ = false;
      if (!group_.wire->handshakeOk(p, static_cast<size_t>(len))) {
        char text[200];
        const int shown = len > 80 ? 80 : static_cast<int>(len) - 2;
        snprintf(text, sizeof text, "backend %s refused lb's AUTH: %.*s", name(),
                 shown > 0 ? shown : 0, p);
        fail(CacheErrorReason::kBackendFailed, text);
        return;
      }
      continue;
    }
    CacheFragment* f = head_;
    head_ = f->next;
    if (head_ == nullptr) tail_ = nullptr;
    --queued_;
    ++live_release_;
    recordLatency(stats_, (now_ns - f->sent_ns) / 1000);
    if (!f->timed_out) {
      const bool error = group_.wire->isError(p, static_cast<size_t>(len));
      stats_.commands[static_cast<int>(error ? CommandResult::kError : CommandResult::kOk)].add();
      // An error reply is the application's (WRONGTYPE, NOT_STORED): the server answered.
      noteBackendSuccess(stats_);
    }
    if (f->command != nullptr)
      f->command->session->fragmentReply(f, p, static_cast<size_t>(len));
    worker_.freeFragment(f);
  }
  settleLive();
  if (state_ != State::kReady) return;
  if (pos == in_len_) {
    releaseBuffer();
  } else if (pos > 0) {
    memmove(in_, in_ + pos, in_len_ - pos);
    in_len_ -= pos;
    if (!in_pooled_ && in_len_ <= BufferPool::kBlockSize / 2 && scan_.pos == 0) {
      // A large reply is through: back to a pool block for the small ones.
      char* block = worker_.env().buffers().get();
      memcpy(block, in_, in_len_);
      delete[] in_;
      in_ = block;
      in_cap_ = BufferPool::kBlockSize;
      in_pooled_ = true;
    }
  }
  closeIfRetiredAndEmpty();
}

void ServerConnection::settleLive() noexcept {
  if (live_release_ == 0) return;
  group_.state->dropLive(live_release_);
  live_release_ = 0;
}

void ServerConnection::onTimerFired(uv_timer_t* t) {
  static_cast<ServerConnection*>(t->data)->handleTimer();
}

// Answers every fragment past its deadline with a timeout (it stays queued, detached, for
// its late reply), closes a connection whose oldest fragment has waited twice its timeout,
// and re-arms for the next deadline.
void ServerConnection::handleTimer() noexcept {
  timer_at_ = 0;
  if (state_ == State::kClosed) return;
  const uint64_t now = uv_now(worker_.env().loop());
  if (state_ == State::kConnecting && conn_ == nullptr) {
    // Pushed while no connection could even start.
    char text[160];
    snprintf(text, sizeof text, "backend %s: connect failed", name());
    backendFailed(BackendFailure::kConnectRefused, text);
    return;
  }
  if (head_ != nullptr && now >= head_->deadline_ms + head_->timeout_ms) {
    char text[160];
    snprintf(text, sizeof text, "backend %s stopped answering (no reply for %llums)", name(),
             static_cast<unsigned long long>(now - (head_->deadline_ms - head_->timeout_ms)));
    fail(CacheErrorReason::kBackendTimeout, text);
    return;
  }
  uint64_t next = head_ != nullptr ? head_->deadline_ms + head_->timeout_ms : 0;
  for (CacheFragment* f = head_; f != nullptr; f = f->next) {
    if (f->timed_out) continue;
    if (f->deadline_ms <= now) {
      f->timed_out = true;
      stats_.commands[static_cast<int>(CommandResult::kTimeout)].add();
      // Each command the server let time out is one failure, as each HTTP request is.
      noteBackendFailure(stats_, BackendFailure::kResponseTimeout);
      if (f->command != nullptr) {
        char text[160];
        snprintf(text, sizeof text, "backend %s timed out after %ums", name(), f->timeout_ms);
        f->command->session->fragmentFailed(f, CacheErrorReason::kBackendTimeout, text);
      }
      continue;
    }
    if (f->command != nullptr && (next == 0 || f->deadline_ms < next)) next = f->deadline_ms;
  }
  if (next != 0) armTimer(next);
}

void ServerConnection::backendFailed(BackendFailure kind, const char* text) noexcept {
  if (head_ != nullptr) noteBackendFailure(stats_, kind);
  fail(CacheErrorReason::kBackendFailed, text);
}

void ServerConnection::fail(CacheErrorReason reason, const char* text, bool for_good) noexcept {
  LB_DEBUG("cache: %s", text);
  if (conn_ != nullptr) {
    conn_->close();   // a pending write is cancelled and never calls back
    conn_ = nullptr;
  }
  writing_ = false;
  state_ = for_good ? State::kClosed : State::kIdle;
  handshake_pending_ = false;
  out_.clear();
  releaseBuffer();
  scan_ = ReplyScan{};
  // Detach the whole FIFO first: a session answering one command may not see the others.
  CacheFragment* f = head_;
  head_ = tail_ = nullptr;
  queued_ = 0;
  while (f != nullptr) {
    CacheFragment* next = f->next;
    ++live_release_;
    if (!f->timed_out) {
      const bool timeout = reason == CacheErrorReason::kBackendTimeout;
      stats_.commands[static_cast<int>(timeout ? CommandResult::kTimeout : CommandResult::kError)]
          .add();
      if (f->command != nullptr) f->command->session->fragmentFailed(f, reason, text);
    }
    worker_.freeFragment(f);
    f = next;
  }
  settleLive();
  if (timer_at_ != 0) {
    uv_timer_stop(&timer_);
    timer_at_ = 0;
  }
  if (!for_good) closeIfRetiredAndEmpty();
}

void ServerConnection::retire() noexcept {
  retired_ = true;
  closeIfRetiredAndEmpty();
}

void ServerConnection::closeIfRetiredAndEmpty() noexcept {
  if (retired_ && head_ == nullptr && state_ != State::kClosed) close();
}

void ServerConnection::close() noexcept {
  if (state_ == State::kClosed) return;
  fail(CacheErrorReason::kBackendFailed, "lb is stopping", true);
  uv_timer_stop(&timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onTimerClosed);
}

void ServerConnection::onTimerClosed(uv_handle_t* h) {
  auto* s = static_cast<ServerConnection*>(h->data);
  --s->pending_;
  s->maybeFree();
}

void ServerConnection::maybeFree() noexcept {
  if (state_ != State::kClosed || pending_ > 0) return;
  worker_.serverGone(&group_, this);
  delete this;
}

}  // namespace lb
