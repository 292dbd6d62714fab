// H2Stream, the response's way down: the backend's bytes through the HttpParser, the head
// as HEADERS (interim ones too), the body into DATA as the client's window takes it, and the
// backend's end, silence or failure.
#include <cstdio>
#include <cstring>

#include "lb/core/log.h"
#include "lb/core/strings.h"
#include "lb/http/rewrite.h"
#include "lb/proxy/h2/h2_stream.h"

namespace lb {

namespace {
// Response fields an HTTP/2 message must not carry (RFC 9113 §8.2.2), besides those the
// backend's Connection header names; in any case, as the backend wrote it.
bool connectionSpecific(std::string_view name) {
  switch (name.size()) {
    case 2: return equalsNoCase(name, "te");
    case 7: return equalsNoCase(name, "upgrade");
    case 10: return equalsNoCase(name, "connection") || equalsNoCase(name, "keep-alive");
    case 16: return equalsNoCase(name, "proxy-connection");
    case 17: return equalsNoCase(name, "transfer-encoding");
    default: return false;
  }
}
}  // namespace

// ---- the response's way down ----------------------------------------------------------------

void H2Stream::onAlloc(Connection&, uv_buf_t* buf) noexcept {
  if (upin_ == nullptr) {
    upin_ = conn_->worker().buffers().get();
    upin_len_ = upin_pos_ = 0;
  }
  *buf = uv_buf_init(upin_ + upin_len_, static_cast<unsigned>(BufferPool::kBlockSize - upin_len_));
}

void H2Stream::onRead(Connection&, char*, size_t n) noexcept {
  if (n == 0) {
    if (upin_len_ == 0) {
      conn_->worker().buffers().put(upin_);
      upin_ = nullptr;
    }
    return;
  }
  up_touched_ = uv_now(conn_->worker().loop());   // the timer reads it when it fires
  upin_len_ += static_cast<uint32_t>(n);
  handleResponseBytes();
}

void H2Stream::handleResponseBytes() noexcept {
  while (up_ != nullptr && upin_pos_ < upin_len_) {
    size_t consumed = 0;
    const auto r = resp_.feed(upin_, upin_ + upin_pos_, upin_len_ - upin_pos_, &consumed);
    upin_pos_ += static_cast<uint32_t>(consumed);
    if (r == HttpParser::Result::kNeedMore) break;
    if (r == HttpParser::Result::kError) {
      LB_DEBUG("h2: backend response refused: %s", resp_.errorReason());
      attempt_.reportFailure(BackendFailure::kServerError);
      if (response_submitted_) {
        reset(NGHTTP2_INTERNAL_ERROR);
      } else {
        releaseUpstream(false);
        answer(502, HttpErrorReason::kBackendFailed);
      }
      return;
    }
    if (r == HttpParser::Result::kHeadComplete) {
      const int status = resp_.head().status;
      if (status < 200) {
        if (status == 101) {   // no upgrade was asked for: the backend is confused
          releaseUpstream(false);
          answer(502, HttpErrorReason::kBackendFailed);
          return;
        }
        // RFC 9113 §8.1: an interim response is a HEADERS of its own before the final one
        // (a client that sent expect: 100-continue waits for it before its DATA).
        char st[3];
        const nghttp2_nv nv = field(":status", statusDigits(status, st));
        nghttp2_submit_headers(conn_->session(), NGHTTP2_FLAG_NONE, id_, nullptr, &nv, 1,
                               nullptr);
        interim_ = true;
        resp_.resumeAfterHead(false);
        continue;
      }
      if (!submitResponseHead()) return;
      resp_.resumeAfterHead(method_ == "HEAD");
      continue;
    }
    // kMessageComplete
    if (interim_) {
      interim_ = false;
      resp_.nextMessage();
      continue;
    }
    responseComplete();
    return;
  }
  if (up_ == nullptr) return;
  if (!response_submitted_ && upin_len_ == BufferPool::kBlockSize) {   // a head past a block
    releaseUpstream(false);
    answer(502, HttpErrorReason::kBackendFailed);
    return;
  }
  if (response_submitted_ && upin_pos_ == upin_len_) upin_pos_ = upin_len_ = 0;
  if (down_q_.size() >= kBodyHigh && !up_reading_paused_) {
    up_reading_paused_ = true;
    up_->stopRead();
  }
  if (deferred_ && !down_q_.empty()) {
    deferred_ = false;
    nghttp2_session_resume_data(conn_->session(), id_);
  }
  conn_->wantWrite();
}

bool H2Stream::submitResponseHead() noexcept {
  const ParsedHead& h = resp_.head();
  status_ = h.status;
  if (status_ >= 500)
    attempt_.reportFailure(BackendFailure::kServerError);
  else
    attempt_.reportSuccess();
  char status[3];
  nghttp2_nv nva[ParsedHead::kMaxHeaders + 2];
  size_t n = 0;
  nva[n++] = field(":status", statusDigits(status_, status));
  const ConnectionTokens tokens = connectionTokens(h, upin_);
  // Names go as the backend wrote them: nghttp2 lowercases its copy (RFC 9113 §8.2.1).
  for (uint32_t i = 0; i < h.header_count; ++i) {
    const std::string_view name = h.headers[i].name.in(upin_);
    if (connectionSpecific(name) || tokens.has(name)) continue;
    nva[n++] = field(name, h.headers[i].value.in(upin_));
  }
  char cookie[160];
  if (cookie_.set) {
    const int k = snprintf(cookie, sizeof cookie, "%.*s=%.*s; Max-Age=%llu; Path=/; HttpOnly",
                           static_cast<int>(cookie_.name.size()), cookie_.name.data(),
                           static_cast<int>(cookie_.value_len), cookie_.value,
                           static_cast<unsigned long long>(cookie_.ttl.count() / 1000));
    if (k > 0 && static_cast<size_t>(k) < sizeof cookie && n < std::size(nva))
      nva[n++] = field("set-cookie", {cookie, static_cast<size_t>(k)});
  }
  const bool body = method_ != "HEAD" && status_ != 204 && status_ != 304;
  nghttp2_data_provider prd;
  prd.source.ptr = nullptr;
  prd.read_callback = readBodyCallback;
  if (const int rv = nghttp2_submit_response(conn_->session(), id_, nva, n, body ? &prd : nullptr);
      rv != 0) {
    LB_DEBUG("h2: stream %d: response not submitted: %s", id_, nghttp2_strerror(rv));
    reset(NGHTTP2_INTERNAL_ERROR);
    return false;
  }
  response_submitted_ = true;
  return true;
}

void H2Stream::onBody(const char* data, size_t len) noexcept {
  bytes_out_ += len;
  down_q_.append(data, len);   // bounded: reading pauses at kBodyHigh
}

ssize_t H2Stream::readBody(uint8_t* buf, size_t length, uint32_t* flags) noexcept {
  const size_t n = down_q_.take(reinterpret_cast<char*>(buf), length);
  if (down_q_.empty() && response_done_) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    // The trailers carry END_STREAM instead (nghttp2 takes them from inside this callback).
    if (trailer_count_ > 0 && submitTrailers()) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
  } else if (n == 0) {
    deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  if (up_reading_paused_ && up_ != nullptr && down_q_.size() < kBodyHigh / 2) {
    up_reading_paused_ = false;
    if (up_->startRead() != 0) upstreamFailed(false);
  }
  return static_cast<ssize_t>(n);
}

// ---- the response's trailers ----------------------------------------------------------------

bool H2Stream::keepTrailerBytes(const char* data, size_t len) noexcept {
  if (trailers_ == nullptr) trailers_ = conn_->worker().buffers().get();
  if (trailers_len_ + len > BufferPool::kBlockSize) {
    trailer_state_ = TrailerState::kRefused;
    return false;
  }
  memcpy(trailers_ + trailers_len_, data, len);
  trailers_len_ += static_cast<uint32_t>(len);
  return true;
}

void H2Stream::onTrailerName(const char* data, size_t len) noexcept {
  if (trailer_state_ == TrailerState::kRefused) return;
  if (trailer_state_ != TrailerState::kName) {
    if (trailer_count_ == kMaxTrailers) {
      trailer_state_ = TrailerState::kRefused;
      return;
    }
    trailer_fields_[trailer_count_] = {trailers_len_, 0, 0, 0};
    trailer_state_ = TrailerState::kName;
  }
  if (keepTrailerBytes(data, len))
    trailer_fields_[trailer_count_].name_len += static_cast<uint32_t>(len);
}

void H2Stream::onTrailerValue(const char* data, size_t len) noexcept {
  if (trailer_state_ == TrailerState::kRefused) return;
  if (trailer_state_ == TrailerState::kName) {
    trailer_fields_[trailer_count_].value_off = trailers_len_;
    trailer_state_ = TrailerState::kValue;
  }
  if (keepTrailerBytes(data, len))
    trailer_fields_[trailer_count_].value_len += static_cast<uint32_t>(len);
}

void H2Stream::onTrailerFieldEnd() noexcept {
  if (trailer_state_ == TrailerState::kRefused) return;
  TrailerField& f = trailer_fields_[trailer_count_];
  if (trailer_state_ == TrailerState::kName) f.value_off = trailers_len_;   // an empty value
  while (f.value_len > 0 &&   // trailing whitespace is no part of the value (RFC 9110 §5.5)
         (trailers_[f.value_off + f.value_len - 1] == ' ' ||
          trailers_[f.value_off + f.value_len - 1] == '\t'))
    --f.value_len;
  ++trailer_count_;
  trailer_state_ = TrailerState::kNone;
}

// What a trailer section may not carry on to an HTTP/2 client: the connection-specific fields
// (RFC 9113 §8.2.2) and those that frame or route the message (RFC 9110 §6.5.1).
bool H2Stream::submitTrailers() noexcept {
  nghttp2_nv nva[kMaxTrailers];
  size_t n = 0;
  for (uint32_t i = 0; i < trailer_count_; ++i) {
    const TrailerField& f = trailer_fields_[i];
    const std::string_view name(trailers_ + f.name_off, f.name_len);
    if (connectionSpecific(name) || equalsNoCase(name, "content-length") ||
        equalsNoCase(name, "host") || equalsNoCase(name, "trailer"))
      continue;
    nva[n++] = field(name, {trailers_ + f.value_off, f.value_len});
  }
  if (n == 0) return false;
  if (const int rv = nghttp2_submit_trailer(conn_->session(), id_, nva, n); rv != 0) {
    LB_DEBUG("h2: stream %d: trailers not submitted: %s", id_, nghttp2_strerror(rv));
    return false;
  }
  return true;
}

void H2Stream::responseComplete() noexcept {
  if (trailer_state_ == TrailerState::kRefused) {
    // No limit is silent: a trailer section past a block or kMaxTrailers fields is not cut
    // short without a word. The stream ends in RST_STREAM, so that no client takes a part of
    // the trailers for all of them.
    LB_DEBUG("h2: stream %d: response trailers past %u fields or %zu bytes", id_, kMaxTrailers,
             BufferPool::kBlockSize);
    reset(NGHTTP2_INTERNAL_ERROR);
    return;
  }
  response_done_ = true;
  phase_ = Phase::kAnswered;
  record(status_, true);
  const bool sent = request_ended_ && up_q_.empty() && up_ != nullptr && !up_->writing();
  releaseUpstream(sent && resp_.keepAlive() && upin_pos_ == upin_len_);
  if (deferred_) {
    deferred_ = false;
    nghttp2_session_resume_data(conn_->session(), id_);
  }
  openWindow();
  conn_->wantWrite();
}

void H2Stream::onEof(Connection&) noexcept {
  if (response_submitted_ && resp_.finishAtEof()) {
    responseComplete();
    return;
  }
  noteReset();
  upstreamFailed(false);
}

void H2Stream::onError(Connection&, int) noexcept {
  noteReset();
  upstreamFailed(false);
}

// A new connection closed before the answer counts against the backend; a pooled one the
// backend had closed while idle does not (it is retried on a fresh one).
void H2Stream::noteReset() noexcept {
  if (!up_reused_ && !resp_.started()) attempt_.reportFailure(BackendFailure::kConnectReset);
}

void H2Stream::onTimer(Connection&) noexcept {
  // Bytes came since the timer started: wait out the rest from the last of them.
  const uint64_t idle = static_cast<uint64_t>(lst_->config->timeouts.idle.count());
  const uint64_t now = uv_now(conn_->worker().loop());
  if (up_ != nullptr && now < up_touched_ + idle) {
    up_->connection().startTimer(up_touched_ + idle - now);
    return;
  }
  if (response_submitted_) {   // the body stopped coming: cut short
    reset(NGHTTP2_INTERNAL_ERROR);
    return;
  }
  if (request_ended_) attempt_.reportFailure(BackendFailure::kResponseTimeout);
  releaseUpstream(false);
  answer(504, HttpErrorReason::kBackendTimeout);
}

// A read only stamps up_touched_, and onTimer starts the timer again for what is left (as
// HttpSession does). A pooled connection keeps the timer its last exchange left running
// (releaseUpstream), and the next exchange on it arms nothing while it runs: its first
// firing, early for this exchange, waits out the rest. So a busy connection costs the
// timer heap one start per timeouts.idle, not a start and a stop per response.
void H2Stream::armUpTimer() noexcept {
  if (up_ == nullptr) return;
  up_touched_ = uv_now(conn_->worker().loop());
  if (!up_->connection().timerActive())
    up_->connection().startTimer(static_cast<uint64_t>(lst_->config->timeouts.idle.count()));
}

}  // namespace lb
