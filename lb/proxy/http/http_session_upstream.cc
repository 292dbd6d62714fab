// HttpSession's backend side: pick, connect and retry (kConnecting), the request head sent
// up, the response parsed and streamed down (kExchange), the end of an exchange, and the
// request's metrics and access-log line.
#include <algorithm>
#include <cstring>

#include "lb/core/log.h"
#include "lb/core/sys_error.h"
#include "lb/http/rewrite.h"
#include "lb/proxy/http/http_session.h"
#include "lb/runtime/access_log.h"

namespace lb {

// Gets a connection to the host attempt_ picked: a pooled one (unless `pooling` asks for a
// new one) goes straight to kExchange, a new one through kConnecting. The connect timeout
// (timeouts.connect) is the connection's own: it reports UV_ETIMEDOUT through onConnected
// (handleUpConnect), so the session's timer rests meanwhile.
void HttpSession::connectUpstream(Pooling pooling) noexcept {
  state_ = State::kConnecting;   // until a connection to the backend is ready
  Route& route = ex_->route;
  route.backend = attempt_.backend();
  route.stats = attempt_.stats();
  // A new attempt: the head goes (again) to a new connection, and nothing came back yet.
  ex_->request = RequestPhase::kHead;
  ex_->response = ResponsePhase::kAwaiting;
  ex_->resp.reset();
  int err = 0;
  up_ = attempt_.connect(*this, pooling, &err);
  if (up_ == nullptr) {
    LB_DEBUG("http: connect %s: %s", route.backend->config->address.c_str(), sysErrorText(err));
    attempt_.reportConnectFailure(err);
    upstreamFailed(true);
    return;
  }
  if (up_->reused()) {
    sendRequestHead();
    return;
  }
  client_.stopTimer();
  timer_due_ = 0;
}

void HttpSession::handleUpConnect(int status) noexcept {
  if (state_ != State::kConnecting) return;
  if (status < 0) {
    LB_DEBUG("http: connect %s: %s", ex_->route.backend->config->address.c_str(),
             sysErrorText(status));
    attempt_.reportConnectFailure(status);
    upstreamFailed(true);
    return;
  }
  sendRequestHead();
}

// Active checks took the backend of this exchange down. Waiting on it for the answer would
// last until timeouts.idle: a request with no answer yet moves on now, as after a reset (to
// the next host when it is safe to send again, else 502); one whose answer is under way
// finishes or times out as it would have.
void HttpSession::backendDown(const BackendState& backend) noexcept {
  if (state_ == State::kH2) {   // each stream has its own backend
    h2_->backendDown(backend);
    return;
  }
  // up_ is set only while an exchange is in flight, so ex_ is too.
  if (up_ == nullptr || ex_->route.backend == nullptr ||
      ex_->route.backend->state.get() != &backend)
    return;
  switch (state_) {
    case State::kConnecting:
      upstreamFailed(true);
      return;
    case State::kExchange:
      if (ex_->response != ResponsePhase::kAwaiting) return;
      ex_->route.fresh_retries = Route::kFreshRetries;   // never the same host on a new connection
      upstreamFailed(false);
      return;
    case State::kTunnel:
      closeAll();
      return;
    default:
      return;
  }
}

// kExchange begins: the rewritten head goes up (RequestPhase kHead until it is written), and
// the response is read from now on, whatever the request's progress.
void HttpSession::sendRequestHead() noexcept {
  state_ = State::kExchange;
  if (out_ == nullptr) out_ = worker_->buffers().get();
  UpstreamRequestOptions opt{{client_ip_, client_ip_len_}, ex_->facts.upgrade};
  size_t n = writeUpstreamRequest(ex_->req.head(), in_.buf, opt, out_, BufferPool::kBlockSize);
  if (n == 0) {
    sendError(431, HttpErrorReason::kHeaderTooLarge);
    return;
  }
  // Until the response head arrives this is the response timeout (504); later, idle.
  armTimer(lst_->config->timeouts.idle.count());
  if (up_->startRead() != 0) {
    upstreamFailed(false);
    return;
  }
  io_.up_reading = true;
  ex_->route.stats->bytes_tx.add(n);
  int w = up_->write(out_, n);
  if (w < 0) {
    upstreamFailed(false);
    return;
  }
  if (w == 0) afterRequestHeadWritten();
}

// RequestPhase kHead -> kBody (the parser resumes past the head), or straight to kDone for a
// retry of a request that was already complete (a bodiless one: nothing follows its head).
void HttpSession::afterRequestHeadWritten() noexcept {
  worker_->buffers().put(out_);
  out_ = nullptr;
  if (ex_->req.messageDone()) {
    ex_->request = RequestPhase::kDone;
  } else {
    ex_->request = RequestPhase::kBody;
    ex_->req.resumeAfterHead(false);
  }
  pumpRequest();
}

void HttpSession::handleUpWrite(int status) noexcept {
  switch (state_) {
    case State::kExchange:
      if (status < 0) {
        if (!up_->reused() && ex_->response == ResponsePhase::kAwaiting)
          attempt_.reportFailure(BackendFailure::kConnectReset);
        upstreamFailed(false);
        return;
      }
      touch(lst_->config->timeouts.idle.count());
      if (ex_->request == RequestPhase::kHead)
        afterRequestHeadWritten();
      else
        pumpRequest();
      return;
    case State::kTunnel:
      if (status < 0 || tunnel_ == TunnelPhase::kClientEnded) {   // the client's last bytes
        closeAll();                                               // reached the backend
        return;
      }
      touch(lst_->config->timeouts.idle.count());
      pumpTunnel();
      return;
    default:   // no other state holds an upstream connection with a write queued
      return;
  }
}

// The attempt failed (connect refused or timed out, reset, EOF, write error). Retries as the
// header comment says, or answers 502; a response already under way can only be cut short.
void HttpSession::upstreamFailed(bool connect_failure) noexcept {
  bool reused = up_ != nullptr && up_->reused();
  releaseUpstream(false);
  if (state_ == State::kClosed || state_ == State::kLingering) return;
  if (ex_->headSentToClient()) {
    closeAll();
    return;
  }
  // Safe to send again: nothing reached the backend (connect failure), or it was an
  // idempotent bodiless request and no response byte came back.
  Route& route = ex_->route;
  bool safe = connect_failure ||
              (ex_->response == ResponsePhase::kAwaiting && ex_->facts.retryable);
  if (safe && reused && !connect_failure && route.fresh_retries < Route::kFreshRetries) {
    // A pooled connection the backend had closed under us: the same host on a fresh one.
    ++route.fresh_retries;
    attempt_.pickSameAgain();
    connectUpstream(Pooling::kNewPoolable);
    return;
  }
  // The next distinct host of the key's order, while the cluster's retries last.
  if (safe && attempt_.pickNext()) {
    connectUpstream(Pooling::kReuseIdle);
    return;
  }
  sendError(502, HttpErrorReason::kBackendFailed);
}

// Gives the connection back (to the pool when `reusable` and idle, else closed) and the
// picked backend's unit of live load. Idempotent.
void HttpSession::releaseUpstream(bool reusable) noexcept {
  stopBodyPump();   // its duplicates of both sockets close before either goes anywhere
  attempt_.release();
  if (up_ != nullptr) {
    if (reusable && !up_->writing())
      worker_->upstreams().put(up_);
    else
      up_->close();
    up_ = nullptr;
  }
  io_.up_reading = false;
  // A queued client write may still point into upin_: keep it until that write completes.
  if (upin_.buf != nullptr && (!io_.down_writing || state_ == State::kClosed))
    releaseBlock(&upin_);
}

void HttpSession::setUpReading(bool on) noexcept {
  if (up_ == nullptr || on == io_.up_reading) return;
  io_.up_reading = on;
  if (on) {
    if (up_->startRead() != 0) io_.up_reading = false;
  } else {
    up_->stopRead();
  }
}

void HttpSession::allocUp(uv_buf_t* buf) noexcept {
  if (upin_.buf == nullptr) {
    upin_.buf = worker_->buffers().get();
    upin_.len = upin_.pos = 0;
  }
  // Until the response head is parsed, reads are at most kHeadRead: whatever body bytes
  // come with the head are copied through user space, and a body that will be spliced
  // should bring few (a 64 KiB read of a large object cost as much CPU as splicing the rest
  // of a 1 MiB body). A longer head takes more reads into the same block.
  // A body in large chunks is read up to the next chunk's first bytes (chunkedReadCap).
  size_t room = BufferPool::kBlockSize - upin_.len;
  if (ex_ != nullptr && !ex_->resp.headDone() && state_ == State::kExchange)
    room = std::min(room, kHeadRead);
  else if (ex_ != nullptr && state_ == State::kExchange && spliceable())
    room = chunkedReadCap(ex_->resp, room);
  *buf = uv_buf_init(upin_.buf + upin_.len, static_cast<unsigned>(room));
}

void HttpSession::handleUpRead(ssize_t n) noexcept {
  if (state_ == State::kClosed || n == 0) return;
  if (n == UV_ENOBUFS) {   // the block is full: wait until it drains (never spin on it)
    setUpReading(false);
    return;
  }
  if (n < 0) {
    io_.up_reading = false;
    if (up_ != nullptr) up_->stopRead();
    handleBackendEof(n);
    return;
  }
  upin_.len += static_cast<uint32_t>(n);
  if (ex_->response == ResponsePhase::kAwaiting) ex_->response = ResponsePhase::kHead;
  ex_->route.stats->bytes_rx.add(static_cast<uint64_t>(n));
  touch(lst_->config->timeouts.idle.count());
  if (state_ == State::kTunnel)
    pumpTunnel();
  else if (state_ == State::kExchange)
    pumpResponse();
}

// EOF or a read error from the backend. Reading from the backend stops while a client write
// is queued, so everything it sent before has been parsed and passed on by now.
void HttpSession::handleBackendEof(ssize_t n) noexcept {
  if (state_ == State::kTunnel) {
    endTunnel(TunnelPhase::kBackendEnded);
    return;
  }
  if (state_ != State::kExchange) return;
  switch (ex_->response) {
    case ResponsePhase::kAwaiting:   // nothing came back: maybe retry
      // A new connection that ends before a byte is the backend's failure; a pooled one that
      // the backend had closed while idle is keep-alive's race, not a failure.
      if (up_ != nullptr && !up_->reused()) attempt_.reportFailure(BackendFailure::kConnectReset);
      upstreamFailed(false);
      return;
    case ResponsePhase::kHead:       // a partial head, then nothing: not retryable
      releaseUpstream(false);
      sendError(502, HttpErrorReason::kBackendFailed);
      return;
    case ResponsePhase::kBody:
      if (n == UV_EOF && ex_->resp.needsEof()) {
        // The body ran until the backend closed: that EOF is its end (Connection: close was
        // already promised to the client).
        ex_->resp.finishAtEof();
        ex_->response = ResponsePhase::kDone;
        ex_->keep_client = false;
        releaseUpstream(false);
        if (!io_.down_writing) finishExchange();
        return;
      }
      closeAll();   // the response was cut short
      return;
    case ResponsePhase::kDone:
      closeAll();   // unreachable: a done response with no write queued has finished
      return;
  }
}

// ResponsePhase kHead and kBody: parses what the backend sent and passes it down, one write at
// a time (a queued write stops reading from the backend until handleDownWrite).
void HttpSession::pumpResponse() noexcept {
  if (rout_ != nullptr && !io_.down_writing) {
    worker_->buffers().put(rout_);
    rout_ = nullptr;
  }
  while (state_ == State::kExchange && !io_.down_writing &&
         ex_->response != ResponsePhase::kDone) {
    if (upin_.buf == nullptr) {
      setUpReading(true);
      return;
    }
    if (!ex_->resp.headDone()) {
      if (!ex_->resp.started() && upin_.pos > 0) {   // a new head starts at offset 0
        uint32_t rest = upin_.len - upin_.pos;
        memmove(upin_.buf, upin_.buf + upin_.pos, rest);
        upin_.len = rest;
        upin_.pos = 0;
      }
      size_t c = 0;
      auto r = ex_->resp.feed(upin_.buf, upin_.buf + upin_.pos, upin_.len - upin_.pos, &c);
      if (r == HttpParser::Result::kError) {
        LB_DEBUG("http: malformed response from %s: %s",
                 ex_->route.backend->config->name.c_str(), ex_->resp.errorReason());
        releaseUpstream(false);
        sendError(502, HttpErrorReason::kBackendFailed);
        return;
      }
      upin_.pos += static_cast<uint32_t>(c);
      if (r == HttpParser::Result::kNeedMore) {
        if (upin_.len >= BufferPool::kBlockSize) {   // a response head over 64 KiB
          releaseUpstream(false);
          sendError(502, HttpErrorReason::kBackendFailed);
          return;
        }
        setUpReading(true);
        return;
      }
      onResponseHead();
      continue;
    }
    size_t c = 0;
    auto r = ex_->resp.feed(upin_.buf, upin_.buf + upin_.pos, upin_.len - upin_.pos, &c);
    if (r == HttpParser::Result::kError) {
      closeAll();   // bad framing mid-body: cut the client short rather than pass it on
      return;
    }
    const char* chunk = upin_.buf + upin_.pos;
    upin_.pos += static_cast<uint32_t>(c);
    if (r == HttpParser::Result::kMessageComplete) ex_->response = ResponsePhase::kDone;
    if (c > 0 || rout_pending_ > 0) {
      // The head (when still pending) and these body bytes in one writev.
      uv_buf_t bufs[2];
      unsigned count = 0;
      if (rout_pending_ > 0) bufs[count++] = uv_buf_init(rout_, rout_pending_);
      if (c > 0) bufs[count++] = uv_buf_init(const_cast<char*>(chunk), static_cast<unsigned>(c));
      rout_pending_ = 0;
      int w = writeDownBufs(bufs, count);
      if (w < 0) {
        closeAll();
        return;
      }
      if (w == 1) return;   // handleDownWrite resumes
    }
    if (ex_->response == ResponsePhase::kDone) break;
    upin_.len = upin_.pos = 0;
    if (spliceResponseBody()) return;   // onPumpDone carries on
    setUpReading(true);
    return;
  }
  if (state_ == State::kExchange && ex_->response == ResponsePhase::kDone && !io_.down_writing)
    finishExchange();
}

// A complete response head: an interim 1xx passes through (still ResponsePhase kHead), a 101
// starts the tunnel, anything else goes down rewritten (kBody).
void HttpSession::onResponseHead() noexcept {
  const ParsedHead& h = ex_->resp.head();
  const int status = h.status;
  if (rout_ == nullptr) rout_ = worker_->buffers().get();
  if (status >= 100 && status < 200 && status != 101) {
    // Interim (100 Continue, 103): passed on, and the final response follows on the same
    // parser. Never to an HTTP/1.0 client (RFC 9110 §15.2).
    size_t n = 0;
    if (!ex_->facts.http10) {
      DownstreamResponseOptions opt;
      n = writeDownstreamResponse(h, upin_.buf, opt, rout_, BufferPool::kBlockSize);
    }
    // h is cleared from here on: the parser moves to the final response.
    ex_->resp.resumeAfterHead(false);
    size_t c = 0;
    ex_->resp.feed(upin_.buf, upin_.buf + upin_.pos, 0, &c);
    ex_->resp.nextMessage();
    if (!ex_->facts.http10 && (n == 0 || writeDown(rout_, n) < 0)) closeAll();
    return;
  }
  if (status == 101) {
    if (!ex_->facts.upgrade) {
      releaseUpstream(false);
      sendError(502, HttpErrorReason::kBackendFailed);
      return;
    }
    DownstreamResponseOptions opt;
    opt.upgrade = true;
    size_t n = writeDownstreamResponse(h, upin_.buf, opt, rout_, BufferPool::kBlockSize);
    ex_->status = status;
    ex_->response = ResponsePhase::kBody;
    attempt_.reportSuccess();
    recordResponse(status, true);
    if (n == 0 || writeDown(rout_, n) < 0) {
      closeAll();
      return;
    }
    startTunnel();
    return;
  }
  ex_->status = status;
  // Passive health's view of the backend: a 5xx is a failure, anything else an answer.
  if (status >= 500)
    attempt_.reportFailure(BackendFailure::kServerError);
  else
    attempt_.reportSuccess();
  ex_->resp.resumeAfterHead(ex_->facts.head_method);
  ex_->keep_client = ex_->facts.keep_alive && ex_->resp.keepAliveNow() && !worker_->draining() &&
                    !ex_->facts.upgrade && !io_.down_eof;
  DownstreamResponseOptions opt;
  opt.keep_alive = ex_->keep_client;
  opt.client_http10 = ex_->facts.http10;
  opt.cookie = &ex_->cookie;
  size_t n = writeDownstreamResponse(h, upin_.buf, opt, rout_, BufferPool::kBlockSize);
  if (n == 0) {
    releaseUpstream(false);
    sendError(502, HttpErrorReason::kBackendFailed);
    return;
  }
  ex_->response = ResponsePhase::kBody;
  // Written by pumpResponse with the body bytes that follow it in this read (or alone, when
  // none came with it).
  rout_pending_ = static_cast<uint32_t>(n);
}

// ResponsePhase kDone and the client has all of it: the exchange ends. kIdle/kHead for the
// next request when both sides keep the connection, else kLingering.
void HttpSession::finishExchange() noexcept {
  // The rest of the request body would be unread: the client connection cannot carry another.
  if (ex_->request != RequestPhase::kDone) ex_->keep_client = false;
  recordResponse(ex_->status, true);
  bool reusable = ex_->resp.keepAlive() && ex_->request == RequestPhase::kDone &&
                  upin_.pos == upin_.len && !ex_->facts.upgrade;
  releaseUpstream(reusable);
  if (upin_.buf != nullptr) releaseBlock(&upin_);
  // The response head went out with the last write (none is queued here): an idle
  // connection keeps no block.
  worker_->buffers().put(rout_);
  rout_ = nullptr;
  if (ex_->keep_client)
    nextRequest();
  else
    lingerClose();
}

// The request's statistics and access-log line: once per request, when lb answers it itself
// (from_backend false) or when the backend's response is complete (or a 101 starts a tunnel).
void HttpSession::recordResponse(int status, bool from_backend) noexcept {
  const int cls = codeClassIndex(status);
  lstats_->requests[cls].add();
  const Route& route = ex_->route;
  if (AccessLog* log = worker_->accessLog(); log != nullptr && log->enabled()) {
    AccessRecord r;
    r.listener = lst_->config->name;
    r.http = true;
    r.proto = "http";
    r.client = client_.peer();
    r.has_key = route.source == KeySource::kKey;
    r.key_hash = route.hash;
    if (route.backend != nullptr) r.backend = route.backend->config->name;
    r.status = status;
    r.bytes_in = ex_->log.bytes_in;
    r.bytes_out = ex_->log.bytes_out;
    r.duration_us = ex_->log.start_ns == 0 ? 0 : (uv_hrtime() - ex_->log.start_ns) / 1000;
    r.method = {ex_->log.method, ex_->log.method_len};
    r.path = {ex_->log.path, ex_->log.path_len};
    log->write(r);
  }
  if (!from_backend || route.stats == nullptr) return;
  route.stats->requests[cls].add();
  uint64_t us = (uv_hrtime() - ex_->log.start_ns) / 1000;
  double seconds = static_cast<double>(us) / 1e6;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) {
      route.stats->latency_le[i].add();
      break;
    }
  }
  route.stats->latency_count.add();
  route.stats->latency_sum_us.add(us);
}

}  // namespace lb
