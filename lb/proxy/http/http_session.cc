// The downstream half of HttpSession: accept, request heads, request bodies, errors, close.
#include "lb/proxy/http/http_session.h"

#include <algorithm>
#include <cstring>

#include "lb/core/strings.h"
#include "lb/http/rewrite.h"
#include "lb/core/log.h"

#include "plugins/keys/key_chain.h"

namespace lb {

namespace {
// After lb answers an error it half-closes and keeps reading (discarding) this long, so the
// client reads the answer instead of a reset caused by its own unread bytes (nginx's
// lingering close).
constexpr uint64_t kLingerMs = 1000;

// Per-worker state for keyless requests: a xorshift generator and a round-robin counter.
thread_local uint64_t t_rng = 0x9e3779b97f4a7c15ull;
thread_local uint32_t t_rr = 0;
uint64_t nextRandom() noexcept {
  t_rng ^= t_rng << 13;
  t_rng ^= t_rng >> 7;
  t_rng ^= t_rng << 17;
  return t_rng;
}
}  // namespace

void HttpSession::accept(Worker* worker, uv_stream_t* server,
                         const std::shared_ptr<const Snapshot>& snap, const ListenerSnapshot* ls) {
  auto* s = new (std::nothrow) HttpSession(worker, snap, ls);
  if (s == nullptr) return;
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&s->down_)) != 0) {
    s->closeAll();
    return;
  }
  s->start();
}

HttpSession::HttpSession(Worker* worker, const std::shared_ptr<const Snapshot>& snap,
                         const ListenerSnapshot* ls)
    : worker_(worker),
      snap_(snap),
      lst_(ls),
      cluster_(&snap->clusters[ls->cluster]),
      lstats_(&ls->state->per_worker[worker->index()]) {
  uv_tcp_init(worker_->loop(), &down_);
  uv_timer_init(worker_->loop(), &timer_);
  down_.data = this;
  timer_.data = this;
  down_write_.data = this;
  shutdown_req_.data = this;
  worker_->link(this);
  lstats_->connections_active.add(1);
  if (t_rng == 0x9e3779b97f4a7c15ull) t_rng ^= uv_hrtime() + worker->index();
}

HttpSession::~HttpSession() {
  releaseBlock(&in_);
  releaseBlock(&upin_);
  worker_->buffers().put(out_);
  worker_->buffers().put(rout_);
}

void HttpSession::start() noexcept {
  worker_->noteAccepted();
  uv_tcp_nodelay(&down_, 1);
  int len = sizeof peer_;
  uv_tcp_getpeername(&down_, reinterpret_cast<sockaddr*>(&peer_), &len);
  len = sizeof local_;
  uv_tcp_getsockname(&down_, reinterpret_cast<sockaddr*>(&local_), &len);
  if (peer_.ss_family == AF_INET6)
    uv_ip6_name(reinterpret_cast<sockaddr_in6*>(&peer_), client_ip_, sizeof client_ip_);
  else
    uv_ip4_name(reinterpret_cast<sockaddr_in*>(&peer_), client_ip_, sizeof client_ip_);
  client_ip_len_ = static_cast<uint32_t>(strlen(client_ip_));
  // limits.max_connections, split evenly over the workers (each enforces its share without
  // talking to the others): past it, 503 and close, as HAProxy answers past maxconn.
  const uint32_t workers = lst_->state->workers == 0 ? 1 : lst_->state->workers;
  const int64_t share = (lst_->config->limits.max_connections + workers - 1) / workers;
  if (lstats_->connections_active.get() > share) {
    sendError(503, HttpErrorReason::kNoBackend);
    return;
  }
  // A new connection owes a request head within the header timeout (slowloris).
  head_timer_ = true;
  armTimer(lst_->config->timeouts.header.count());
  setDownReading(true);
}

// ---- libuv trampolines -------------------------------------------------------------------

void HttpSession::onDownAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* s = static_cast<HttpSession*>(h->data);
  if (s->in_.buf == nullptr) {
    s->in_.buf = s->worker_->buffers().get();
    s->in_.len = s->in_.pos = 0;
  }
  *buf = uv_buf_init(s->in_.buf + s->in_.len, BufferPool::kBlockSize - s->in_.len);
}

void HttpSession::onDownRead(uv_stream_t* st, ssize_t n, const uv_buf_t*) {
  static_cast<HttpSession*>(st->data)->handleDownRead(n);
}

void HttpSession::onDownWrite(uv_write_t* req, int status) {
  auto* s = static_cast<HttpSession*>(req->data);
  --s->pending_;
  s->down_writing_ = false;
  if (s->closing_) {
    s->maybeDelete();
    return;
  }
  s->handleDownWrite(status);
}

void HttpSession::onShutdown(uv_shutdown_t* req, int) {
  auto* s = static_cast<HttpSession*>(req->data);
  --s->pending_;
  s->maybeDelete();
}

void HttpSession::onTimer(uv_timer_t* t) {
  auto* s = static_cast<HttpSession*>(t->data);
  if (!s->closing_) s->handleTimer();
}

void HttpSession::onClosed(uv_handle_t* h) {
  auto* s = static_cast<HttpSession*>(h->data);
  --s->pending_;
  s->maybeDelete();
}

// ---- reading requests --------------------------------------------------------------------

void HttpSession::setDownReading(bool on) noexcept {
  if (closing_ || on == down_reading_ || (on && down_eof_)) return;
  down_reading_ = on;
  if (on)
    uv_read_start(reinterpret_cast<uv_stream_t*>(&down_), onDownAlloc, onDownRead);
  else
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&down_));
}

void HttpSession::handleDownRead(ssize_t n) noexcept {
  if (closing_) return;
  if (n == 0) return;
  if (n == UV_ENOBUFS) {   // the block is full: wait until it drains (never spin on it)
    setDownReading(false);
    return;
  }
  if (n < 0) {
    down_eof_ = true;
    down_reading_ = false;
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&down_));
    if (in_.buf != nullptr && in_.len == in_.pos) releaseBlock(&in_);
    switch (state_) {
      case State::kHead:
      case State::kLingering:
        closeAll();
        return;
      case State::kConnecting:
      case State::kProxying:
        // The client went away (or half-closed, which HTTP/1.1 clients do not do while
        // waiting): abandon the exchange so the backend's slot frees up now, as nginx does
        // without proxy_ignore_client_abort.
        closeAll();
        return;
      case State::kTunnel:
        close_after_write_ = true;
        if (up_ == nullptr || !up_->writing()) closeAll();
        return;
      case State::kClosed:
        return;
    }
    return;
  }
  in_.len += static_cast<uint32_t>(n);
  switch (state_) {
    case State::kHead:
      if (!head_timer_) {
        head_timer_ = true;
        armTimer(lst_->config->timeouts.header.count());
      }
      processHead();
      return;
    case State::kProxying:
      touch(lst_->config->timeouts.idle.count());
      if (req_done_) {
        // Pipelined bytes of the next request: they wait, unparsed. Reading goes on only to
        // see the client leave; a full block stops it.
        if (in_.len >= BufferPool::kBlockSize) setDownReading(false);
        return;
      }
      pumpRequest();
      return;
    case State::kTunnel:
      touch(lst_->config->timeouts.idle.count());
      pumpTunnel();
      return;
    case State::kLingering:
      in_.len = in_.pos = 0;   // discard
      return;
    default:
      // kConnecting reads nothing; bytes that arrive anyway stay queued.
      return;
  }
}

void HttpSession::processHead() noexcept {
  if (in_.len == in_.pos) return;
  size_t consumed = 0;
  auto r = req_.feed(in_.buf, in_.buf + in_.pos, in_.len - in_.pos, &consumed);
  const uint32_t max_head =
      std::min<uint32_t>(lst_->config->limits.max_header_bytes, BufferPool::kBlockSize);
  switch (r) {
    case HttpParser::Result::kNeedMore:
      in_.pos = in_.len;
      if (in_.len >= max_head) sendError(431, HttpErrorReason::kHeaderTooLarge);
      return;
    case HttpParser::Result::kHeadComplete:
      in_.pos += static_cast<uint32_t>(consumed);
      head_end_ = in_.pos;
      if (head_end_ > max_head) {
        sendError(431, HttpErrorReason::kHeaderTooLarge);
        return;
      }
      onRequestHead();
      return;
    case HttpParser::Result::kMessageComplete:   // cannot happen before a head
    case HttpParser::Result::kError:
      switch (req_.error()) {
        case HttpParser::Error::kTooManyHeaders:
          sendError(431, HttpErrorReason::kHeaderTooLarge);
          return;
        case HttpParser::Error::kBodyTooLarge:
          sendError(413, HttpErrorReason::kBodyTooLarge);
          return;
        default:
          LB_DEBUG("http: malformed request: %s", req_.errorReason());
          sendError(400, HttpErrorReason::kMalformed);
          return;
      }
  }
}

void HttpSession::onRequestHead() noexcept {
  setDownReading(false);
  start_ns_ = uv_hrtime();
  const ParsedHead& h = req_.head();
  const char* base = in_.buf;
  {
    std::string_view m = h.method.in(base), u = h.url.in(base);
    log_method_len_ = static_cast<uint8_t>(std::min(m.size(), sizeof log_method_));
    memcpy(log_method_, m.data(), log_method_len_);
    log_path_len_ = static_cast<uint16_t>(std::min(u.size(), sizeof log_path_));
    memcpy(log_path_, u.data(), log_path_len_);
    log_in_ = head_end_;
    log_out_ = 0;
  }
  // What llhttp leaves to the application (RFC 9112 §3.2): exactly one Host in HTTP/1.1.
  int hosts = 0;
  for (uint32_t i = 0; i < h.header_count; ++i)
    if (equalsNoCase(h.headers[i].name.in(base), "host")) ++hosts;
  if (hosts > 1 || (hosts == 0 && h.http_minor >= 1) || req_.method() == HTTP_CONNECT) {
    sendError(400, HttpErrorReason::kMalformed);
    return;
  }
  is_head_ = req_.method() == HTTP_HEAD;
  client_http10_ = h.http_major == 1 && h.http_minor == 0;
  upgrade_req_ = req_.upgrade();
  keep_req_ = req_.keepAlive();
  retry_ok_ = isIdempotentMethod(req_.method()) && !req_.hasBody();

  // The affinity key, from the head viewed in place.
  cookie_.set = false;
  has_key_ = false;
  round_robin_ = false;
  if (lst_->keys != nullptr) {
    HttpRequestView view = requestView(h, base, view_headers_);
    KeyContext ctx;
    ctx.peer = reinterpret_cast<const sockaddr*>(&peer_);
    ctx.local = reinterpret_cast<const sockaddr*>(&local_);
    ctx.request = &view;
    ctx.cookie_out = &cookie_;
    has_key_ = lst_->keys->compute(ctx, cluster_->selector->key_hash, &hash_);
  }
  if (!has_key_) {
    switch (lst_->config->on_missing_key) {
      case OnMissingKey::kReject:
        sendError(400, HttpErrorReason::kMissingKey);
        return;
      case OnMissingKey::kRandom:
        hash_ = nextRandom();
        break;
      case OnMissingKey::kRoundRobin:
        round_robin_ = true;
        rr_base_ = t_rr++;
        break;
    }
  }
  attempt_ = 0;
  tries_ = 0;
  fresh_retry_done_ = false;
  pickAndConnect(0, false);
}

void HttpSession::pumpRequest() noexcept {
  while (!closing_ && state_ == State::kProxying && !req_done_ && up_ != nullptr &&
         !up_->writing()) {
    size_t consumed = 0;
    auto r = req_.feed(in_.buf, in_.buf + in_.pos, in_.len - in_.pos, &consumed);
    if (r == HttpParser::Result::kError) {
      // Bad framing mid-body: nothing more may reach the backend.
      releaseUpstream(false);
      if (!resp_head_sent_)
        sendError(req_.error() == HttpParser::Error::kBodyTooLarge ? 413 : 400,
                  req_.error() == HttpParser::Error::kBodyTooLarge
                      ? HttpErrorReason::kBodyTooLarge
                      : HttpErrorReason::kMalformed);
      else
        closeAll();
      return;
    }
    const char* chunk = in_.buf + in_.pos;
    in_.pos += static_cast<uint32_t>(consumed);
    if (r == HttpParser::Result::kMessageComplete) req_done_ = true;
    if (consumed > 0) {
      body_sent_ = true;
      bstats_->bytes_tx.add(consumed);
      log_in_ += consumed;
      int w = up_->write(chunk, consumed);
      if (w < 0) {
        upstreamFailed(false);
        return;
      }
      if (w == 1) {
        setDownReading(false);
        return;   // onUpstreamWrite resumes
      }
    }
    if (req_done_) break;
    if (r == HttpParser::Result::kNeedMore) {
      // Everything buffered went out: the head is no longer needed, reuse the block.
      in_.len = in_.pos = 0;
      head_end_ = 0;
      setDownReading(true);
      return;
    }
  }
  if (req_done_) {
    // Keep reading, to notice a client that leaves while the backend works (handleDownRead
    // queues pipelined bytes without parsing them).
    setDownReading(in_.len < BufferPool::kBlockSize);
    if (resp_done_ && !down_writing_) finishExchange();
  }
}

void HttpSession::nextRequest() noexcept {
  req_.reset();
  // Pipelined bytes move to the front: the next head is parsed from offset 0.
  if (in_.buf != nullptr) {
    uint32_t rest = in_.len - in_.pos;
    if (rest > 0 && in_.pos > 0) memmove(in_.buf, in_.buf + in_.pos, rest);
    in_.len = rest;
    in_.pos = 0;
    if (rest == 0) releaseBlock(&in_);
  }
  head_end_ = 0;
  backend_ = nullptr;
  bstats_ = nullptr;
  req_done_ = req_resumed_ = body_sent_ = resp_started_ = resp_head_sent_ = resp_done_ = false;
  keep_down_ = false;
  status_ = 0;
  // The next request's record starts empty: an error lb answers before its head is complete
  // must not carry this request's key, request line or byte counts.
  has_key_ = false;
  start_ns_ = 0;
  log_in_ = log_out_ = 0;
  log_method_len_ = 0;
  log_path_len_ = 0;
  // Between requests the connection moves to the newest snapshot, if its listener is there.
  const auto& current = worker_->snapshot();
  if (current != nullptr && current->generation != snap_->generation) {
    const ListenerSnapshot* ls = current->findListener(lst_->config->name);
    if (ls == nullptr) {
      closeAll();
      return;
    }
    snap_ = current;
    lst_ = ls;
    cluster_ = &snap_->clusters[ls->cluster];
    lstats_ = &ls->state->per_worker[worker_->index()];
  }
  state_ = State::kHead;
  if (worker_->draining() && in_.len == 0) {
    closeAll();
    return;
  }
  if (in_.len > 0) {
    head_timer_ = true;
    armTimer(lst_->config->timeouts.header.count());
    processHead();
  } else {
    head_timer_ = false;
    armTimer(lst_->config->timeouts.idle.count());
  }
  if (state_ == State::kHead) setDownReading(true);
}

// ---- writing, errors, closing ------------------------------------------------------------

int HttpSession::writeDown(const char* p, size_t n) noexcept {
  log_out_ += n;
  uv_stream_t* s = reinterpret_cast<uv_stream_t*>(&down_);
  uv_buf_t b = uv_buf_init(const_cast<char*>(p), static_cast<unsigned>(n));
  int w = uv_try_write(s, &b, 1);
  if (w == static_cast<int>(n)) return 0;
  if (w < 0 && w != UV_EAGAIN) return w;
  if (w > 0) {
    b.base += w;
    b.len -= w;
  }
  int rc = uv_write(&down_write_, s, &b, 1, onDownWrite);
  if (rc != 0) return rc;
  ++pending_;
  down_writing_ = true;
  return 1;
}

void HttpSession::handleDownWrite(int status) noexcept {
  if (status < 0) {
    closeAll();
    return;
  }
  if (state_ == State::kLingering) return;
  if (close_after_write_ && state_ == State::kTunnel) {
    closeAll();
    return;
  }
  if (state_ == State::kTunnel) {
    pumpTunnel();
    return;
  }
  pumpResponse();
}

void HttpSession::sendError(int status, HttpErrorReason reason) noexcept {
  if (closing_ || state_ == State::kLingering) return;
  lstats_->http_errors[static_cast<int>(reason)].add();
  releaseUpstream(false);
  if (resp_head_sent_) {   // the client already has a head: all lb can do is cut it short
    closeAll();
    return;
  }
  state_ = State::kLingering;
  setDownReading(false);
  std::string_view msg = errorResponse(status);
  int w = down_writing_ ? -1 : writeDown(msg.data(), msg.size());
  recordResponse(status, false);   // after the write: its line counts the answer's bytes
  if (w < 0) {
    closeAll();
    return;
  }
  lingerClose();
}

void HttpSession::lingerClose() noexcept {
  state_ = State::kLingering;
  releaseUpstream(false);
  if (uv_shutdown(&shutdown_req_, reinterpret_cast<uv_stream_t*>(&down_), onShutdown) == 0)
    ++pending_;
  in_.len = in_.pos = 0;
  armTimer(kLingerMs);
  setDownReading(true);
  if (down_eof_) closeAll();
}

void HttpSession::handleTimer() noexcept {
  uint64_t now = uv_now(worker_->loop());
  if (now < deadline_) {   // activity since the timer was set: wait out the rest
    uv_timer_start(&timer_, onTimer, deadline_ - now, 0);
    return;
  }
  switch (state_) {
    case State::kHead:
      // A request has begun (or a new connection owes its first one) and its head did not
      // complete in time: 408, as slowloris deserves.
      if (head_timer_)
        sendError(408, HttpErrorReason::kHeaderTimeout);
      else
        closeAll();   // keep-alive idle
      return;
    case State::kConnecting:
      upstreamFailed(true);
      return;
    case State::kProxying:
      if (!resp_head_sent_) {
        releaseUpstream(false);
        sendError(504, HttpErrorReason::kBackendTimeout);
      } else {
        closeAll();
      }
      return;
    case State::kTunnel:
    case State::kLingering:
      closeAll();
      return;
    case State::kClosed:
      return;
  }
}

void HttpSession::armTimer(uint64_t ms) noexcept {
  if (closing_) return;
  deadline_ = uv_now(worker_->loop()) + ms;
  uv_timer_start(&timer_, onTimer, ms, 0);
}

void HttpSession::touch(uint64_t ms) noexcept { deadline_ = uv_now(worker_->loop()) + ms; }

void HttpSession::releaseBlock(Block* b) noexcept {
  worker_->buffers().put(b->buf);
  b->buf = nullptr;
  b->len = b->pos = 0;
}

void HttpSession::abort() noexcept { closeAll(); }

void HttpSession::drain() noexcept {
  // Idle between requests: close now. Otherwise the response in flight carries
  // Connection: close (worker_->draining() is read when its head is written).
  if (state_ == State::kHead && in_.len == 0 && !req_.started()) closeAll();
}

void HttpSession::closeAll() noexcept {
  if (closing_) return;
  closing_ = true;
  state_ = State::kClosed;
  releaseUpstream(false);
  if (down_reading_) uv_read_stop(reinterpret_cast<uv_stream_t*>(&down_));
  down_reading_ = false;
  uv_timer_stop(&timer_);
  pending_ += 2;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&down_), onClosed);
  worker_->unlink(this);
  lstats_->connections_active.add(-1);
}

void HttpSession::maybeDelete() noexcept {
  if (closing_ && pending_ == 0) delete this;
}

}  // namespace lb
