// H2Stream: a request's header block, its key and pick, its translation into HTTP/1.1 over a
// pooled upstream connection, and the response's way back into HEADERS and DATA.
#include "lb/proxy/h2/h2_stream.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "lb/core/log.h"
#include "lb/http/rewrite.h"
#include "lb/http/status.h"
#include "lb/runtime/access_log.h"
#include "plugins/keys/key_chain.h"

namespace lb {

namespace {
bool isMethod(std::string_view m, std::string_view want) { return m == want; }

// RFC 9110 §9.2.2.
bool idempotent(std::string_view m) {
  return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS" ||
         m == "TRACE";
}

// Response fields an HTTP/2 message must not carry (RFC 9113 §8.2.2), besides those the
// backend's Connection header names.
bool connectionSpecific(std::string_view lower) {
  return lower == "connection" || lower == "keep-alive" || lower == "proxy-connection" ||
         lower == "transfer-encoding" || lower == "upgrade" || lower == "te";
}

// A status (100-599, as the parser and lb's answers give it) as :status wants it.
std::string_view statusDigits(int status, char (&out)[3]) {
  out[0] = static_cast<char>('0' + status / 100 % 10);
  out[1] = static_cast<char>('0' + status / 10 % 10);
  out[2] = static_cast<char>('0' + status % 10);
  return {out, 3};
}

nghttp2_nv field(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// The data source of every response: the stream is found by id, so that a stream lb has
// already let go (the connection's GOAWAY) is never read.
ssize_t readBodyCallback(nghttp2_session* s, int32_t id, uint8_t* buf, size_t length,
                         uint32_t* flags, nghttp2_data_source*, void*) {
  auto* st = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(s, id));
  if (st == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  return st->readBody(buf, length, flags);
}
}  // namespace

void H2Stream::begin(H2StreamHost* conn, int32_t id, std::shared_ptr<const Snapshot> snap,
                     const ListenerSnapshot* ls) noexcept {
  conn_ = conn;
  id_ = id;
  phase_ = Phase::kHeaders;
  snap_ = std::move(snap);
  lst_ = ls;
  cluster_ = &snap_->clusters[ls->cluster];
  fields_len_ = list_bytes_ = 0;
  method_ = path_ = authority_ = scheme_ = {};
  header_count_ = 0;
  oversized_ = has_body_ = chunked_up_ = request_ended_ = end_written_ = false;
  up_q_.setPool(&conn->worker().buffers());
  down_q_.setPool(&conn->worker().buffers());
  up_inflight_ = 0;
  owed_ = body_in_ = 0;
  resp_.reset();
  upin_len_ = upin_pos_ = 0;
  response_submitted_ = response_done_ = up_reading_paused_ = deferred_ = interim_ = false;
  up_reused_ = false;
  status_ = 0;
  up_ = nullptr;
  fresh_retries_ = 0;
  hash_ = 0;
  keyed_ = false;
  cookie_.set = false;
  start_ns_ = uv_hrtime();
  bytes_out_ = 0;
  prev = next = ready_next = nullptr;
}

void H2Stream::release() noexcept {
  up_q_.clear();
  down_q_.clear();
  conn_->worker().buffers().put(fields_);
  fields_ = nullptr;
  conn_->worker().buffers().put(upin_);
  upin_ = nullptr;
  attempt_.release();
  snap_.reset();
}

// ---- the request's header block ------------------------------------------------------------

bool H2Stream::onField(std::string_view name, std::string_view value, bool trailer) noexcept {
  if (trailer) {
    // Trailers go up only in a chunked body, which has a place for them (RFC 9112 §7.1.2);
    // a body framed by content-length has none, and they are dropped, as nginx does.
    if (!chunked_up_ || phase_ == Phase::kAnswered || name.empty() || name[0] == ':')
      return true;
    bool ok = end_written_ || up_q_.append("0\r\n", 3);
    end_written_ = true;
    ok = ok && up_q_.append(name.data(), name.size()) && up_q_.append(": ", 2) &&
         up_q_.append(value.data(), value.size()) && up_q_.append("\r\n", 2);
    if (!ok) reset(NGHTTP2_INTERNAL_ERROR);
    return true;
  }
  if (phase_ != Phase::kHeaders) return true;
  list_bytes_ += name.size() + value.size() + 32;
  // An HPACK bomb: a few bytes on the wire naming big fields of the dynamic table again and
  // again. Past kBombFactor times the limit it is no confused client: the connection ends
  // now, before nghttp2 decodes the rest of the block.
  if (list_bytes_ > kBombFactor * lst_->config->h2.max_header_list) return false;
  if (oversized_) return true;
  if (fields_ == nullptr) fields_ = conn_->worker().buffers().get();
  if (list_bytes_ > lst_->config->h2.max_header_list ||
      fields_len_ + name.size() + value.size() > BufferPool::kBlockSize ||
      (name[0] != ':' && header_count_ == ParsedHead::kMaxHeaders)) {
    oversized_ = true;
    return true;
  }
  char* n = fields_ + fields_len_;
  memcpy(n, name.data(), name.size());
  char* v = n + name.size();
  memcpy(v, value.data(), value.size());
  fields_len_ += static_cast<uint32_t>(name.size() + value.size());
  const std::string_view nv(n, name.size()), vv(v, value.size());
  if (nv == ":method")
    method_ = vv;
  else if (nv == ":path")
    path_ = vv;
  else if (nv == ":authority")
    authority_ = vv;
  else if (nv == ":scheme")
    scheme_ = vv;
  else if (nv[0] != ':')
    headers_[header_count_++] = {nv, vv};
  return true;
}

std::string_view H2Stream::fieldValue(std::string_view name) const noexcept {
  for (uint32_t i = 0; i < header_count_; ++i)
    if (headers_[i].name == name) return headers_[i].value;
  return {};
}

// The block is whole (nghttp2 has checked RFC 9113 §8.2-8.3: lowercase names, no
// connection-specific fields, `te: trailers` only, the pseudo-header fields a request needs).
// What lb adds: a request names its authority, lb does not tunnel CONNECT, the cookie crumbs
// are joined, and the HTTP/1.1 head is written now, so that DATA in the same read follows it.
void H2Stream::onHeadersEnd(bool end_stream) noexcept {
  if (phase_ != Phase::kHeaders) return;
  has_body_ = !end_stream;
  request_ended_ = end_stream;
  if (oversized_) {
    answer(431, HttpErrorReason::kHeaderTooLarge);
    conn_->noteOversizedHeaders();   // last: it may end the connection, and this stream
    return;
  }
  if (authority_.empty()) authority_ = fieldValue("host");
  if (authority_.empty() || isMethod(method_, "CONNECT") || path_.empty()) {
    answer(400, HttpErrorReason::kMalformed);
    return;
  }
  // RFC 9113 §8.2.3: a client may split cookie into crumbs; HTTP/1.1 wants one field.
  uint32_t first_cookie = header_count_, crumbs = 0;
  for (uint32_t i = 0; i < header_count_; ++i) {
    if (headers_[i].name != "cookie") continue;
    if (crumbs++ == 0) first_cookie = i;
  }
  if (crumbs > 1) {
    const uint32_t start = fields_len_;
    for (uint32_t i = first_cookie; i < header_count_; ++i) {
      if (headers_[i].name != "cookie") continue;
      const std::string_view v = headers_[i].value;
      if (fields_len_ + v.size() + 2 > BufferPool::kBlockSize) {
        answer(431, HttpErrorReason::kHeaderTooLarge);
        return;
      }
      if (fields_len_ > start) {
        memcpy(fields_ + fields_len_, "; ", 2);
        fields_len_ += 2;
      }
      memcpy(fields_ + fields_len_, v.data(), v.size());
      fields_len_ += static_cast<uint32_t>(v.size());
    }
    headers_[first_cookie].value = {fields_ + start, fields_len_ - start};
    uint32_t out = first_cookie + 1;
    for (uint32_t i = first_cookie + 1; i < header_count_; ++i)
      if (headers_[i].name != "cookie") headers_[out++] = headers_[i];
    header_count_ = out;
  }
  const std::string_view cl = fieldValue("content-length");
  chunked_up_ = has_body_ && cl.empty();
  if (!writeRequestHead()) {
    answer(431, HttpErrorReason::kHeaderTooLarge);
    return;
  }
  phase_ = Phase::kReady;
}

// The HTTP/1.1 request head: the request line from :method and :path, Host from
// :authority, the fields in order (cookie joined, x-forwarded-* replaced), and the body's
// framing: its content-length, else chunked, else none (content-length: 0 for a method
// that usually has a body).
bool H2Stream::writeRequestHead() noexcept {
  auto put = [&](std::string_view s) { return up_q_.append(s.data(), s.size()); };
  bool ok = put(method_) && put(" ") && put(path_) && put(" HTTP/1.1\r\nhost: ") &&
            put(authority_) && put("\r\n");
  std::string_view xff;
  for (uint32_t i = 0; ok && i < header_count_; ++i) {
    const HttpHeader& h = headers_[i];
    if (h.name == "host" || h.name == "te" || h.name == "x-forwarded-proto") continue;
    if (h.name == "x-forwarded-for") {
      xff = h.value;
      continue;
    }
    ok = put(h.name) && put(": ") && put(h.value) && put("\r\n");
  }
  ok = ok && put("x-forwarded-for: ");
  if (ok && !xff.empty()) ok = put(xff) && put(", ");
  ok = ok && put(conn_->clientIp()) && put("\r\nx-forwarded-proto: ") &&
       put(conn_->tls() ? "https" : "http") && put("\r\n");
  if (chunked_up_) {
    ok = ok && put("transfer-encoding: chunked\r\n");
  } else if (!has_body_ && fieldValue("content-length").empty() &&
             (method_ == "POST" || method_ == "PUT" || method_ == "PATCH")) {
    ok = ok && put("content-length: 0\r\n");
  }
  return ok && put("\r\n");
}

void H2Stream::onData(const uint8_t* data, size_t len) noexcept {
  body_in_ += len;
  owed_ += len;
  if (phase_ == Phase::kAnswered) {   // lb answered already: the rest is read and dropped
    openWindow();
    return;
  }
  bool ok = true;
  if (chunked_up_) {
    char size[24];
    const int k = snprintf(size, sizeof size, "%zx\r\n", len);
    ok = up_q_.append(size, static_cast<size_t>(k)) &&
         up_q_.append(reinterpret_cast<const char*>(data), len) && up_q_.append("\r\n", 2);
  } else {
    ok = up_q_.append(reinterpret_cast<const char*>(data), len);
  }
  if (!ok) {   // past the window lb gave: the client ignored flow control
    reset(NGHTTP2_FLOW_CONTROL_ERROR);
    return;
  }
  if (phase_ == Phase::kExchange) pumpUp();
}

void H2Stream::onRequestEnd() noexcept {
  request_ended_ = true;
  if (phase_ == Phase::kAnswered || !chunked_up_) return;
  if (!end_written_) up_q_.append("0\r\n", 3);
  end_written_ = true;
  up_q_.append("\r\n", 2);
  if (phase_ == Phase::kExchange) pumpUp();
}

// ---- key, pick, connect -----------------------------------------------------------------------

void H2Stream::start() noexcept {
  if (phase_ != Phase::kReady) return;
  // The key policies read the request as HTTP/1.1 would show it: Host included.
  uint32_t count = header_count_;
  if (fieldValue("host").empty() && count < ParsedHead::kMaxHeaders)
    headers_[count++] = {"host", authority_};
  HttpRequestView view{method_, path_, {headers_, count}};
  if (!deriveKey(view)) {
    answer(400, HttpErrorReason::kMissingKey);
    return;
  }
  WorkerEnv& w = conn_->worker();
  if (keyed_) {
    const bool may_spread = method_ == "GET" || method_ == "HEAD";
    attempt_.begin(w, *lst_, *cluster_, hash_,
                   may_spread ? cluster_->spreadFor(w.index(), hash_) : 0);
  } else {
    attempt_.beginKeyless(w, *lst_, *cluster_);
  }
  if (!attempt_.pickFirst()) {
    answer(503, HttpErrorReason::kNoBackend);
    return;
  }
  phase_ = Phase::kConnecting;
  connectUpstream(Pooling::kReuseIdle);
}

bool H2Stream::deriveKey(const HttpRequestView& view) noexcept {
  if (lst_->keys != nullptr) {
    KeyContext ctx;
    ctx.peer = conn_->client().peer();
    ctx.local = conn_->client().local();
    ctx.request = &view;
    ctx.cookie_out = &cookie_;
    KeyText text;
    ctx.text_out = &text;
    if (lst_->keys->compute(ctx, cluster_->selector->key_hash, &hash_)) {
      keyed_ = true;
      cluster_->countKey(conn_->worker().index(), hash_, text.bytes);
      return true;
    }
  }
  return lst_->config->on_missing_key != OnMissingKey::kReject;
}

void H2Stream::connectUpstream(Pooling pooling) noexcept {
  int err = 0;
  up_ = attempt_.connect(*this, pooling, &err);
  if (up_ == nullptr) {
    attempt_.reportConnectFailure(err);
    upstreamFailed(true);
    return;
  }
  up_reused_ = up_->reused();
  if (up_reused_) onConnected(up_->connection(), 0);
}

void H2Stream::onConnected(Connection&, int status) noexcept {
  if (status < 0) {
    attempt_.reportConnectFailure(status);
    upstreamFailed(true);
    return;
  }
  phase_ = Phase::kExchange;
  up_->connection().readIntoPool(nullptr);
  if (up_->startRead() != 0) {
    upstreamFailed(false);
    return;
  }
  armUpTimer();
  pumpUp();
}

// ---- the request's way up -------------------------------------------------------------------

void H2Stream::pumpUp() noexcept {
  while (up_ != nullptr && phase_ == Phase::kExchange && !up_->writing() && !up_q_.empty()) {
    const std::string_view f = up_q_.front();
    const int w = up_->write(f.data(), f.size());
    if (w < 0) {
      upstreamFailed(false);
      return;
    }
    if (w == 1) {   // the rest is queued: onWritten takes it off the queue
      up_inflight_ = f.size();
      break;
    }
    up_q_.consume(f.size());
  }
  openWindow();
}

// The client may send as much more as the backend has taken: WINDOW_UPDATE for what left.
void H2Stream::openWindow() noexcept {
  if (owed_ == 0 || up_q_.size() >= kBodyHigh) return;
  nghttp2_session_consume(conn_->session(), id_, owed_);
  owed_ = 0;
  conn_->wantWrite();
}

void H2Stream::onWritten(Connection&, ConnectionWrite*, int status) noexcept {
  if (status < 0) {
    if (status != UV_ECANCELED) upstreamFailed(false);
    return;
  }
  up_q_.consume(up_inflight_);
  up_inflight_ = 0;
  if (response_done_) {   // the answer came first; the request's rest was on its way
    releaseUpstream(false);
    return;
  }
  pumpUp();
}

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
  handleResponseBytes(n);
}

void H2Stream::handleResponseBytes(size_t) noexcept {
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
  for (uint32_t i = 0; i < h.header_count; ++i) {
    char* name = upin_ + h.headers[i].name.off;
    const size_t len = h.headers[i].name.len;
    for (size_t k = 0; k < len; ++k)   // HTTP/2 field names are lowercase (§8.2.1)
      if (name[k] >= 'A' && name[k] <= 'Z') name[k] = static_cast<char>(name[k] + 32);
    const std::string_view lower(name, len);
    if (connectionSpecific(lower) || tokens.has(lower)) continue;
    nva[n++] = field(lower, h.headers[i].value.in(upin_));
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

void H2Stream::responseComplete() noexcept {
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

// Once an exchange: a read only stamps up_touched_, and onTimer starts the timer again for
// what is left (as HttpSession does), so a response costs one start and one stop of the
// backend's timer however many reads it takes.
void H2Stream::armUpTimer() noexcept {
  if (up_ == nullptr) return;
  up_touched_ = uv_now(conn_->worker().loop());
  up_->connection().startTimer(static_cast<uint64_t>(lst_->config->timeouts.idle.count()));
}

// ---- failures, answers, the end ---------------------------------------------------------------

void H2Stream::upstreamFailed(bool connect_failure) noexcept {
  const bool written = !connect_failure;
  const bool was_reused = up_reused_;
  releaseUpstream(false);
  if (response_submitted_) {
    reset(NGHTTP2_INTERNAL_ERROR);
    return;
  }
  if (phase_ == Phase::kAnswered) return;
  // A connect that failed sent nothing: the next host. A reset before the answer is safe to
  // repeat only for an idempotent bodiless request, whose head is written again.
  if (written && (has_body_ || !idempotent(method_))) {
    answer(502, HttpErrorReason::kBackendFailed);
    return;
  }
  if (written) {
    up_q_.clear();
    resp_.reset();
    if (!writeRequestHead()) {
      answer(502, HttpErrorReason::kBackendFailed);
      return;
    }
    if (was_reused && fresh_retries_ == 0) {   // the backend had closed the idle connection
      ++fresh_retries_;
      attempt_.pickSameAgain();
      phase_ = Phase::kConnecting;
      connectUpstream(Pooling::kNewPoolable);
      return;
    }
  }
  if (!attempt_.pickNext()) {
    answer(502, HttpErrorReason::kBackendFailed);
    return;
  }
  phase_ = Phase::kConnecting;
  connectUpstream(Pooling::kReuseIdle);
}

void H2Stream::releaseUpstream(bool reusable) noexcept {
  if (up_ != nullptr) {
    up_->connection().stopTimer();
    if (reusable && !up_->writing())
      conn_->worker().upstreams().put(up_);
    else
      up_->close();
    up_ = nullptr;
  }
  attempt_.release();
  up_reading_paused_ = false;
  if (upin_ != nullptr && upin_pos_ == upin_len_) {
    conn_->worker().buffers().put(upin_);
    upin_ = nullptr;
    upin_len_ = upin_pos_ = 0;
  }
}

void H2Stream::answer(int status, HttpErrorReason reason) noexcept {
  if (response_submitted_) {
    reset(NGHTTP2_INTERNAL_ERROR);
    return;
  }
  lst_->state->per_worker[conn_->worker().index()].http_errors[static_cast<int>(reason)].add();
  releaseUpstream(false);
  up_q_.clear();
  phase_ = Phase::kAnswered;
  status_ = status;
  char text[64];
  int len = snprintf(text, sizeof text, "%s\n", reasonPhrase(status));
  for (int i = 0; i < len; ++i)
    if (text[i] >= 'A' && text[i] <= 'Z') text[i] = static_cast<char>(text[i] + 32);
  down_q_.clear();
  down_q_.append(text, static_cast<size_t>(len));
  bytes_out_ = static_cast<uint64_t>(len);
  response_done_ = true;
  char st[3], cl[8];
  const int cl_len = snprintf(cl, sizeof cl, "%d", len);
  const nghttp2_nv nva[] = {field(":status", statusDigits(status, st)), field("content-type", "text/plain"),
                            field("content-length", {cl, static_cast<size_t>(cl_len)})};
  nghttp2_data_provider prd;
  prd.source.ptr = nullptr;
  prd.read_callback = readBodyCallback;
  response_submitted_ = true;
  record(status, false);
  if (nghttp2_submit_response(conn_->session(), id_, nva, 3, &prd) != 0) {
    nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, NGHTTP2_INTERNAL_ERROR);
    return;
  }
  openWindow();
  conn_->wantWrite();
}

void H2Stream::reset(uint32_t code) noexcept {
  releaseUpstream(false);
  if (phase_ != Phase::kAnswered) record(status_ != 0 ? status_ : 502, status_ != 0);
  phase_ = Phase::kAnswered;
  response_done_ = true;
  nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, code);
  conn_->wantWrite();
}

void H2Stream::abandon() noexcept { releaseUpstream(false); }

void H2Stream::backendDown(const BackendState& backend) noexcept {
  if (up_ == nullptr || response_submitted_ || attempt_.backend() == nullptr ||
      attempt_.backend()->state.get() != &backend)
    return;
  upstreamFailed(phase_ == Phase::kConnecting);
}

void H2Stream::record(int status, bool from_backend) noexcept {
  const int cls = codeClassIndex(status);
  WorkerEnv& w = conn_->worker();
  lst_->state->per_worker[w.index()].requests[cls].add();
  const BackendSnapshot* backend = attempt_.backend();
  if (AccessLog* log = w.accessLog(); log != nullptr && log->enabled()) {
    AccessRecord r;
    r.listener = lst_->config->name;
    r.http = true;
    r.proto = "h2";
    r.client = conn_->client().peer();
    r.has_key = keyed_;
    r.key_hash = hash_;
    if (backend != nullptr) r.backend = backend->config->name;
    r.status = status;
    r.bytes_in = std::min<uint64_t>(list_bytes_, fields_len_ + 32 * header_count_) + body_in_;   // the decoded header block, as RFC 9113 counts it

    r.bytes_out = bytes_out_;
    r.duration_us = (uv_hrtime() - start_ns_) / 1000;
    r.method = method_;
    r.path = path_;
    log->write(r);
  }
  if (!from_backend || attempt_.stats() == nullptr) return;
  attempt_.stats()->requests[cls].add();
  recordLatency(*attempt_.stats(), (uv_hrtime() - start_ns_) / 1000);
}

}  // namespace lb
