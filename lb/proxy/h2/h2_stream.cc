// H2Stream: a request stream's life (begin, release), its key, pick and connect, and how it
// ends: retries, lb's own answers, resets, the access-log line. The request's way up is in
// h2_stream_request.cc, the response's way down in h2_stream_response.cc.
#include "lb/proxy/h2/h2_stream.h"

#include <cstdio>

#include "lb/http/status.h"
#include "lb/runtime/access_log.h"
#include "plugins/keys/key_chain.h"

namespace lb {

namespace {
// RFC 9110 §9.2.2.
bool idempotent(std::string_view m) {
  return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS" ||
         m == "TRACE";
}
}  // namespace

std::string_view H2Stream::statusDigits(int status, char (&out)[3]) noexcept {
  out[0] = static_cast<char>('0' + status / 100 % 10);
  out[1] = static_cast<char>('0' + status / 10 % 10);
  out[2] = static_cast<char>('0' + status % 10);
  return {out, 3};
}

nghttp2_nv H2Stream::field(std::string_view name, std::string_view value) noexcept {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// The data source of every response: the stream is found by id, so that a stream lb has
// already let go (the connection's GOAWAY) is never read.
ssize_t H2Stream::readBodyCallback(nghttp2_session* s, int32_t id, uint8_t* buf, size_t length,
                                   uint32_t* flags, nghttp2_data_source*, void*) {
  auto* st = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(s, id));
  if (st == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  return st->readBody(buf, length, flags);
}

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
  owed_ = body_in_ = body_declared_ = 0;
  byte_held_ = false;
  resp_.reset();
  resp_.setTrailerSink(this);
  trailers_len_ = trailer_count_ = 0;
  trailer_state_ = TrailerState::kNone;
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
  conn_->worker().buffers().put(trailers_);
  trailers_ = nullptr;
  attempt_.release();
  snap_.reset();
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
    // A pooled connection keeps its timer running (armUpTimer); fired while it is idle, it
    // reaches the pool, which ignores it.
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
