// The upstream half of HttpSession: pick, connect, retry, the response, the upgrade tunnel.
#include <cstring>

#include "lb/http/rewrite.h"
#include "lb/proxy/http/http_session.h"
#include "lb/core/log.h"
#include "lb/runtime/access_log.h"

namespace lb {

// Connects to the host attempt_ picked (a pooled idle connection first, unless `pooling`
// asks for a new one). The connect timeout (timeouts.connect) is the connection's own: it
// reports UV_ETIMEDOUT through onUpstreamConnect, so the session's timer rests meanwhile.
void HttpSession::connectUpstream(Pooling pooling) noexcept {
  backend_ = attempt_.backend();
  bstats_ = attempt_.stats();
  resp_.reset();
  resp_started_ = false;
  head_written_ = false;
  int err = 0;
  up_ = attempt_.connect(this, pooling, &err);
  if (up_ == nullptr) {
    LB_DEBUG("http: connect %s: %s", backend_->config->address.c_str(), uv_strerror(err));
    upstreamFailed(true);
    return;
  }
  if (up_->reused()) {
    sendRequestHead();
    return;
  }
  state_ = State::kConnecting;
  uv_timer_stop(&timer_);
}

void HttpSession::onUpstreamConnect(int status) noexcept {
  if (closing_ || state_ != State::kConnecting) return;
  if (status < 0) {
    LB_DEBUG("http: connect %s: %s", backend_->config->address.c_str(), uv_strerror(status));
    upstreamFailed(true);
    return;
  }
  sendRequestHead();
}

void HttpSession::sendRequestHead() noexcept {
  state_ = State::kProxying;
  if (out_ == nullptr) out_ = worker_->buffers().get();
  UpstreamRequestOptions opt{{client_ip_, client_ip_len_}, upgrade_req_};
  size_t n = writeUpstreamRequest(req_.head(), in_.buf, opt, out_, BufferPool::kBlockSize);
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
  up_reading_ = true;
  bstats_->bytes_tx.add(n);
  int w = up_->write(out_, n);
  if (w < 0) {
    upstreamFailed(false);
    return;
  }
  if (w == 0) afterRequestHeadWritten();
}

void HttpSession::afterRequestHeadWritten() noexcept {
  head_written_ = true;
  worker_->buffers().put(out_);
  out_ = nullptr;
  if (!req_resumed_) {
    req_resumed_ = true;
    req_.resumeAfterHead(false);
  }
  pumpRequest();
}

void HttpSession::onUpstreamWrite(int status) noexcept {
  if (closing_) return;
  if (status < 0) {
    upstreamFailed(false);
    return;
  }
  touch(lst_->config->timeouts.idle.count());
  if (state_ == State::kTunnel) {
    if (close_after_write_) {
      closeAll();
      return;
    }
    pumpTunnel();
    return;
  }
  if (!head_written_) {
    afterRequestHeadWritten();
    return;
  }
  pumpRequest();
}

void HttpSession::upstreamFailed(bool connect_failure) noexcept {
  bool reused = up_ != nullptr && up_->reused();
  releaseUpstream(false);
  if (closing_ || state_ == State::kLingering) return;
  if (resp_head_sent_) {   // mid-response: the client can only see it cut short
    closeAll();
    return;
  }
  // Safe to send again: nothing reached the backend (connect failure), or it was an
  // idempotent bodiless request and no response byte came back.
  bool safe = connect_failure || (!resp_started_ && retry_ok_);
  if (safe && reused && !connect_failure && !fresh_retry_done_) {
    // A pooled connection the backend had closed under us: the same host on a fresh one.
    fresh_retry_done_ = true;
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

void HttpSession::releaseUpstream(bool reusable) noexcept {
  attempt_.release();
  if (up_ != nullptr) {
    if (reusable && !up_->writing())
      worker_->upstreams().put(up_);
    else
      up_->close();
    up_ = nullptr;
  }
  up_reading_ = false;
  // A queued client write may still point into upin_: keep it until that write completes.
  if (upin_.buf != nullptr && (!down_writing_ || closing_)) releaseBlock(&upin_);
}

void HttpSession::setUpReading(bool on) noexcept {
  if (up_ == nullptr || on == up_reading_) return;
  up_reading_ = on;
  if (on) {
    if (up_->startRead() != 0) up_reading_ = false;
  } else {
    up_->stopRead();
  }
}

void HttpSession::onUpstreamAlloc(uv_buf_t* buf) noexcept {
  if (upin_.buf == nullptr) {
    upin_.buf = worker_->buffers().get();
    upin_.len = upin_.pos = 0;
  }
  *buf = uv_buf_init(upin_.buf + upin_.len, BufferPool::kBlockSize - upin_.len);
}

void HttpSession::onUpstreamRead(ssize_t n, const uv_buf_t*) noexcept {
  if (closing_ || n == 0) return;
  if (n == UV_ENOBUFS) {   // the block is full: wait until it drains (never spin on it)
    setUpReading(false);
    return;
  }
  if (n < 0) {
    up_reading_ = false;
    if (up_ != nullptr) up_->stopRead();
    if (state_ == State::kTunnel) {
      close_after_write_ = true;
      if (!down_writing_) closeAll();
      return;
    }
    if (state_ != State::kProxying) return;
    if (n == UV_EOF && resp_head_sent_ && !resp_done_ && resp_.needsEof()) {
      // The body ran until the backend closed: that EOF is its end (Connection: close was
      // already promised to the client).
      resp_.finishAtEof();
      resp_done_ = true;
      keep_down_ = false;
      releaseUpstream(false);
      if (!down_writing_) finishExchange();
      return;
    }
    if (!resp_started_ || !resp_head_sent_) {
      if (resp_started_) {   // a partial head, then nothing: not retryable
        releaseUpstream(false);
        sendError(502, HttpErrorReason::kBackendFailed);
        return;
      }
      upstreamFailed(false);
      return;
    }
    closeAll();   // the response was cut short
    return;
  }
  upin_.len += static_cast<uint32_t>(n);
  resp_started_ = true;
  bstats_->bytes_rx.add(static_cast<uint64_t>(n));
  touch(lst_->config->timeouts.idle.count());
  if (state_ == State::kTunnel)
    pumpTunnel();
  else if (state_ == State::kProxying)
    pumpResponse();
}

void HttpSession::pumpResponse() noexcept {
  if (rout_ != nullptr && !down_writing_) {
    worker_->buffers().put(rout_);
    rout_ = nullptr;
  }
  while (!closing_ && state_ == State::kProxying && !down_writing_ && !resp_done_) {
    if (upin_.buf == nullptr) {
      setUpReading(true);
      return;
    }
    if (!resp_.headDone()) {
      if (!resp_.started() && upin_.pos > 0) {   // a new head starts at offset 0
        uint32_t rest = upin_.len - upin_.pos;
        memmove(upin_.buf, upin_.buf + upin_.pos, rest);
        upin_.len = rest;
        upin_.pos = 0;
      }
      size_t c = 0;
      auto r = resp_.feed(upin_.buf, upin_.buf + upin_.pos, upin_.len - upin_.pos, &c);
      if (r == HttpParser::Result::kError) {
        LB_DEBUG("http: malformed response from %s: %s", backend_->config->name.c_str(),
                 resp_.errorReason());
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
    auto r = resp_.feed(upin_.buf, upin_.buf + upin_.pos, upin_.len - upin_.pos, &c);
    if (r == HttpParser::Result::kError) {
      closeAll();   // bad framing mid-body: cut the client short rather than pass it on
      return;
    }
    const char* chunk = upin_.buf + upin_.pos;
    upin_.pos += static_cast<uint32_t>(c);
    if (r == HttpParser::Result::kMessageComplete) resp_done_ = true;
    if (c > 0) {
      int w = writeDown(chunk, c);
      if (w < 0) {
        closeAll();
        return;
      }
      if (w == 1) {
        setUpReading(false);
        return;   // handleDownWrite resumes
      }
    }
    if (resp_done_) break;
    upin_.len = upin_.pos = 0;
    setUpReading(true);
    return;
  }
  if (resp_done_ && !down_writing_ && !closing_ && state_ == State::kProxying) finishExchange();
}

void HttpSession::onResponseHead() noexcept {
  const ParsedHead& h = resp_.head();
  const int status = h.status;
  if (rout_ == nullptr) rout_ = worker_->buffers().get();
  if (status >= 100 && status < 200 && status != 101) {
    // Interim (100 Continue, 103): passed on, and the final response follows on the same
    // parser. Never to an HTTP/1.0 client (RFC 9110 §15.2).
    size_t n = 0;
    if (!client_http10_) {
      DownstreamResponseOptions opt;
      n = writeDownstreamResponse(h, upin_.buf, opt, rout_, BufferPool::kBlockSize);
    }
    // h is cleared from here on: the parser moves to the final response.
    resp_.resumeAfterHead(false);
    size_t c = 0;
    resp_.feed(upin_.buf, upin_.buf + upin_.pos, 0, &c);
    resp_.nextMessage();
    if (!client_http10_ && (n == 0 || writeDown(rout_, n) < 0)) closeAll();
    return;
  }
  if (status == 101) {
    if (!upgrade_req_) {
      releaseUpstream(false);
      sendError(502, HttpErrorReason::kBackendFailed);
      return;
    }
    DownstreamResponseOptions opt;
    opt.upgrade = true;
    size_t n = writeDownstreamResponse(h, upin_.buf, opt, rout_, BufferPool::kBlockSize);
    status_ = status;
    resp_head_sent_ = true;
    recordResponse(status, true);
    state_ = State::kTunnel;
    if (n == 0 || writeDown(rout_, n) < 0) {
      closeAll();
      return;
    }
    pumpTunnel();
    return;
  }
  status_ = status;
  resp_.resumeAfterHead(is_head_);
  keep_down_ = keep_req_ && resp_.keepAliveNow() && !worker_->draining() && !upgrade_req_ &&
               !down_eof_;
  DownstreamResponseOptions opt;
  opt.keep_alive = keep_down_;
  opt.client_http10 = client_http10_;
  opt.cookie = &cookie_;
  size_t n = writeDownstreamResponse(h, upin_.buf, opt, rout_, BufferPool::kBlockSize);
  if (n == 0) {
    releaseUpstream(false);
    sendError(502, HttpErrorReason::kBackendFailed);
    return;
  }
  resp_head_sent_ = true;
  if (writeDown(rout_, n) < 0) closeAll();
}

void HttpSession::finishExchange() noexcept {
  if (!req_done_) keep_down_ = false;   // the rest of the request body would be unread
  recordResponse(status_, true);
  bool reusable = resp_.keepAlive() && req_done_ && upin_.pos == upin_.len && !upgrade_req_;
  releaseUpstream(reusable);
  if (upin_.buf != nullptr) releaseBlock(&upin_);
  if (keep_down_)
    nextRequest();
  else
    lingerClose();
}

void HttpSession::pumpTunnel() noexcept {
  if (closing_ || state_ != State::kTunnel || up_ == nullptr) return;
  // client -> backend
  if (!up_->writing()) {
    if (in_.buf != nullptr && in_.pos < in_.len) {
      const char* p = in_.buf + in_.pos;
      size_t n = in_.len - in_.pos;
      in_.pos = in_.len;
      bstats_->bytes_tx.add(n);
      int w = up_->write(p, n);
      if (w < 0) {
        closeAll();
        return;
      }
      if (w == 1) setDownReading(false);
    }
    if (!up_->writing()) {
      if (in_.buf != nullptr) in_.len = in_.pos = 0;
      setDownReading(true);
    }
  }
  // backend -> client
  if (!down_writing_) {
    if (upin_.buf != nullptr && upin_.pos < upin_.len) {
      const char* p = upin_.buf + upin_.pos;
      size_t n = upin_.len - upin_.pos;
      upin_.pos = upin_.len;
      int w = writeDown(p, n);
      if (w < 0) {
        closeAll();
        return;
      }
      if (w == 1) setUpReading(false);
    }
    if (!down_writing_) {
      if (upin_.buf != nullptr) upin_.len = upin_.pos = 0;
      setUpReading(true);
    }
  }
}

void HttpSession::recordResponse(int status, bool from_backend) noexcept {
  const int cls = codeClassIndex(status);
  lstats_->requests[cls].add();
  if (AccessLog* log = worker_->accessLog(); log != nullptr && log->enabled()) {
    AccessRecord r;
    r.listener = lst_->config->name;
    r.http = true;
    r.client = reinterpret_cast<const sockaddr*>(&peer_);
    r.has_key = has_key_;
    r.key_hash = hash_;
    if (backend_ != nullptr) r.backend = backend_->config->name;
    r.status = status;
    r.bytes_in = log_in_;
    r.bytes_out = log_out_;
    r.duration_us = start_ns_ == 0 ? 0 : (uv_hrtime() - start_ns_) / 1000;
    r.method = {log_method_, log_method_len_};
    r.path = {log_path_, log_path_len_};
    log->write(r);
  }
  if (!from_backend || bstats_ == nullptr) return;
  bstats_->requests[cls].add();
  uint64_t us = (uv_hrtime() - start_ns_) / 1000;
  double seconds = static_cast<double>(us) / 1e6;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) {
      bstats_->latency_le[i].add();
      break;
    }
  }
  bstats_->latency_count.add();
  bstats_->latency_sum_us.add(us);
}

}  // namespace lb
