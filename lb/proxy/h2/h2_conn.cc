// H2Conn: the client's connection, nghttp2's session over it, and the protections.
#include "lb/proxy/h2/h2_conn.h"

#include <algorithm>
#include <cstring>

#include "lb/core/log.h"
#include "lb/proxy/h2/h2_stream.h"

namespace lb {

namespace {
// How long a drain waits between GOAWAY's shutdown notice (last stream 2^31-1: "stop soon")
// and the GOAWAY naming the last stream lb took, so that streams the client sent before it
// read the notice are still served (RFC 9113 §6.8's two-step shutdown).
constexpr uint64_t kDrainNoticeMs = 1000;
// How long a connection lb ended with GOAWAY keeps reading (and dropping) after it, so that
// the client reads the GOAWAY (nginx's lingering close, as lb's HTTP/1.1 side does).
constexpr uint64_t kLingerMs = 1000;
// Empty DATA frames without END_STREAM in a row past which the client is flooding (they
// cost lb a frame's work and carry nothing); Envoy counts the same, in a row, from 1.
constexpr uint32_t kMaxEmptyFrames = 16;
// Header blocks refused for h2.max_header_list on one connection past which the client is
// not a confused one but a bomb.
constexpr uint32_t kMaxOversized = 8;
// SETTINGS and PING frames a client may send at once, and more each second: a client sends
// one SETTINGS at the start and a few after; a keep-alive PING every few seconds is plenty.
// Each costs lb an acknowledgement, so a flood of them is work lb refuses to do.
constexpr double kControlBurst = 100;
constexpr double kControlRate = 10;

// Rapid reset (CVE-2023-44487): a token for every stream the client resets before lb has
// answered it, 2 x max_concurrent_streams at most and max_concurrent_streams more each
// second. A browser that cancels what it no longer needs stays far below; a client that
// opens and resets streams as fast as it can empties the bucket within a second.
double resetBurst(const H2Config& h2) { return 2.0 * h2.max_concurrent_streams; }
double resetRate(const H2Config& h2) { return h2.max_concurrent_streams; }

uint32_t connectionWindow(const H2Config& h2) {
  // Every stream's window at once, so that streams stalled by slow backends never hold the
  // connection's window shut for the others.
  const uint64_t w = static_cast<uint64_t>(h2.max_concurrent_streams) * h2.initial_window;
  return static_cast<uint32_t>(std::min<uint64_t>(w, (1u << 31) - 1));
}

H2Stream* streamOf(nghttp2_session* s, int32_t id) {
  return static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(s, id));
}
}  // namespace

H2Room* H2Conn::start(const H2Start& start) noexcept {
  auto* c = new (std::nothrow) H2Conn(start);
  if (c == nullptr) return nullptr;
  if (!c->init()) {
    delete c;
    return nullptr;
  }
  c->client_->setOwner(*c);
  c->lstats_->h2_connections_active.add(1);
  c->touch();
  c->client_->startTimer(static_cast<uint64_t>(c->lst_->config->timeouts.idle.count()));
  c->client_->readStart();
  if (start.len > 0)
    c->feed(reinterpret_cast<const uint8_t*>(start.bytes), start.len);
  else
    c->wantWrite();   // lb's SETTINGS: the server's preface goes first (RFC 9113 §3.4)
  return c;
}

H2Conn::H2Conn(const H2Start& start)
    : worker_(start.worker),
      snap_(start.snapshot),
      lst_(start.listener),
      lstats_(&start.listener->state->per_worker[start.worker->index()]),
      client_(start.client),
      shell_(start.shell),
      tls_(start.tls) {
  client_ip_len_ = static_cast<uint32_t>(std::min(start.client_ip.size(), sizeof client_ip_));
  memcpy(client_ip_, start.client_ip.data(), client_ip_len_);
}

H2Conn::~H2Conn() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  worker_->buffers().put(in_);
  worker_->buffers().put(out_);
}

bool H2Conn::init() noexcept {
  const H2Config& h2 = lst_->config->h2;
  h2_worker_ = H2Worker::of(*worker_);
  if (h2_worker_ == nullptr) return false;
  nghttp2_session_callbacks* cb = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) return false;
  nghttp2_session_callbacks_set_on_begin_frame_callback(cb, onBeginFrame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, onBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cb, onHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, onFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, onDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, onStreamClose);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, onInvalidFrame);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, onFrameSend);
  nghttp2_option* opt = nullptr;
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    return false;
  }
  // The window opens as backends take the bytes (H2Stream::openWindow), not as they arrive.
  nghttp2_option_set_no_auto_window_update(opt, 1);
  int rv = nghttp2_session_server_new3(&session_, cb, this, opt, h2_worker_->memory().mem());
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rv != 0) return false;
  const nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h2.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, h2.initial_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, h2.max_header_list},
  };
  if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, 3) != 0) return false;
  if (nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                            static_cast<int32_t>(connectionWindow(h2))) != 0)
    return false;
  const uint64_t now = uv_now(worker_->loop());
  resets_.fill(resetBurst(h2), now);
  settings_budget_.fill(kControlBurst, now);
  pings_budget_.fill(kControlBurst, now);
  return true;
}

// ---- the client's connection ------------------------------------------------------------

void H2Conn::onAlloc(Connection&, uv_buf_t* buf) noexcept {
  if (in_ == nullptr) in_ = worker_->buffers().get();
  *buf = uv_buf_init(in_, static_cast<unsigned>(BufferPool::kBlockSize));
}

void H2Conn::onRead(Connection&, char* p, size_t n) noexcept {
  if (n == 0) {   // nothing was there: an idle connection keeps no block
    worker_->buffers().put(in_);
    in_ = nullptr;
    return;
  }
  if (state_ == State::kClosed || state_ == State::kClosing) return;
  touch();
  feed(reinterpret_cast<const uint8_t*>(p), n);
}

void H2Conn::onEof(Connection&) noexcept { closeNow(); }
void H2Conn::onError(Connection&, int) noexcept { closeNow(); }

void H2Conn::onWritten(Connection&, ConnectionWrite*, int status) noexcept {
  writing_ = false;
  if (state_ == State::kClosed) return;
  if (status < 0) {
    closeNow();
    return;
  }
  touch();
  flush();
  if (reading_paused_ && !writing_ && state_ != State::kClosed) {
    reading_paused_ = false;
    client_->readStart();
  }
}

void H2Conn::onTimer(Connection&) noexcept {
  if (state_ == State::kClosed) return;
  const uint64_t now = uv_now(worker_->loop());
  const uint64_t idle = static_cast<uint64_t>(lst_->config->timeouts.idle.count());
  if (state_ == State::kDraining && drain_notice_) {
    // The notice had its round trip: now the GOAWAY that names the last stream lb took.
    drain_notice_ = false;
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                          nullptr, 0);
    flush();
    if (state_ != State::kClosed) client_->startTimer(idle);
    return;
  }
  if (now < last_progress_ + idle) {
    client_->startTimer(last_progress_ + idle - now);
    return;
  }
  if (state_ == State::kClosing) {   // the GOAWAY itself could not be written in time
    closeNow();
    return;
  }
  if (stream_count_ == 0) {   // idle: a polite goodbye
    nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
    state_ = State::kClosing;
    flush();
    if (state_ != State::kClosed) client_->startTimer(idle);
    return;
  }
  // Nothing moved either way for timeouts.idle. Streams waiting on their backends are
  // theirs to time out (504); lb holding bytes the client's window or socket will not take
  // is a window held shut.
  bool stalled = writing_;
  for (H2Stream* st = streams_; st != nullptr && !stalled; st = st->next)
    stalled = st->waitingOnClient();
  if (!stalled) {
    client_->startTimer(idle);
    return;
  }
  goAway(NGHTTP2_ENHANCE_YOUR_CALM, H2GoawayReason::kStall);
  if (state_ != State::kClosed) client_->startTimer(idle);
}

// The client's connection's last callback went to the HTTP session (closeNow handed it
// back); nothing calls this.
void H2Conn::onClosed(Connection&) noexcept {}

void H2Conn::touch() noexcept { last_progress_ = uv_now(worker_->loop()); }

// ---- nghttp2 in, nghttp2 out --------------------------------------------------------------

void H2Conn::feed(const uint8_t* p, size_t n) noexcept {
  pings_ = settings_ = 0;
  in_read_ = true;
  const ssize_t rv = nghttp2_session_mem_recv(session_, p, n);
  in_read_ = false;
  if (state_ == State::kClosed) return;
  if (rv < 0) {
    // Fatal for nghttp2: the session may not be used again but to delete it, so lb writes
    // the GOAWAY itself.
    LB_DEBUG("h2: connection error: %s", nghttp2_strerror(static_cast<int>(rv)));
    switch (rv) {
      case NGHTTP2_ERR_FLOODED:   // acknowledgements the client does not read
        fatalGoAway(NGHTTP2_ENHANCE_YOUR_CALM, pings_ >= settings_
                                                   ? H2GoawayReason::kPingFlood
                                                   : H2GoawayReason::kSettingsFlood);
        return;
      case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS:
        fatalGoAway(NGHTTP2_ENHANCE_YOUR_CALM, H2GoawayReason::kContinuation);
        return;
      case NGHTTP2_ERR_BAD_CLIENT_MAGIC:   // not HTTP/2 after all: nothing to say in it
        lstats_->h2_goaways[static_cast<int>(H2GoawayReason::kProtocolError)].add();
        closeNow();
        return;
      default:   // a callback's verdict (fatal_code_: a bomb, a stream out of order), memory
        fatalGoAway(fatal_code_, fatal_reason_);
        return;
    }
  }
  startReady();
  wantWrite();
}

void H2Conn::wantWrite() noexcept {
  if (state_ != State::kClosed && !writing_) h2_worker_->flushes().add(this);
}

void H2Conn::startReady() noexcept {
  while (ready_ != nullptr && state_ != State::kClosed) {
    H2Stream* st = ready_;
    ready_ = st->ready_next;
    if (ready_ == nullptr) ready_tail_ = &ready_;
    st->ready_next = nullptr;
    st->start();
  }
}

void H2Conn::flush() noexcept {
  // Inside nghttp2's receive or send (a stream answering from a callback) the caller's own
  // loop sends it: nghttp2 must not be entered again.
  if (state_ == State::kClosed || writing_ || in_read_ || in_send_) return;
  for (;;) {
    if (out_ == nullptr) out_ = worker_->buffers().get();
    size_t len = 0;
    if (pending_len_ > 0) {
      const size_t k = std::min(pending_len_, BufferPool::kBlockSize);
      memcpy(out_, pending_, k);
      pending_ += k;
      pending_len_ -= k;
      len = k;
    }
    while (pending_len_ == 0 && len < BufferPool::kBlockSize) {
      const uint8_t* d = nullptr;
      in_send_ = true;
      const ssize_t m = nghttp2_session_mem_send(session_, &d);
      in_send_ = false;
      if (state_ == State::kClosed) return;
      if (m < 0) {
        closeNow();
        return;
      }
      if (m == 0) break;
      const size_t k = std::min(static_cast<size_t>(m), BufferPool::kBlockSize - len);
      memcpy(out_ + len, d, k);
      len += k;
      if (k < static_cast<size_t>(m)) {
        pending_ = d + k;
        pending_len_ = static_cast<size_t>(m) - k;
      }
    }
    if (len == 0) break;
    uv_buf_t b = uv_buf_init(out_, static_cast<unsigned>(len));
    const ssize_t w = client_->write(&write_, &b, 1);
    if (w < 0) {
      closeNow();
      return;
    }
    if (static_cast<size_t>(w) < len) {
      writing_ = true;
      // A client that does not read what lb writes does not get to send more meanwhile:
      // its PINGs and SETTINGS would pile acknowledgements up in nghttp2.
      if (!reading_paused_) {
        reading_paused_ = true;
        client_->readStop();
      }
      return;
    }
  }
  worker_->buffers().put(out_);   // nothing to send: an idle connection keeps no block
  out_ = nullptr;
  maybeFinish();
}

void H2Conn::maybeFinish() noexcept {
  if (state_ == State::kClosed || writing_) return;
  const bool done_talking =
      nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
  if (state_ == State::kClosing || done_talking ||
      (state_ == State::kDraining && !drain_notice_ && stream_count_ == 0))
    closeNow(true);
}

void H2Conn::goAway(uint32_t code, H2GoawayReason reason) noexcept {
  if (state_ == State::kClosing || state_ == State::kClosed) return;
  LB_DEBUG("h2: GOAWAY %s (%s)", nghttp2_http2_strerror(code), h2GoawayReasonName(reason));
  lstats_->h2_goaways[static_cast<int>(reason)].add();
  state_ = State::kClosing;
  // Streams in flight go with the connection: their backends are let go now.
  while (streams_ != nullptr) freeStream(streams_);
  nghttp2_session_terminate_session(session_, code);
  client_->readStop();
  flush();
}

// RFC 9113 §6.8's frame, by hand: the type, no flags, stream 0, the last stream lb took and
// the error code, queued behind whatever is being written.
void H2Conn::fatalGoAway(uint32_t code, H2GoawayReason reason) noexcept {
  if (state_ == State::kClosed) return;
  lstats_->h2_goaways[static_cast<int>(reason)].add();
  const int32_t last = nghttp2_session_get_last_proc_stream_id(session_);
  uint8_t* f = goaway_frame_;
  f[0] = f[1] = 0;
  f[2] = 8;
  f[3] = NGHTTP2_GOAWAY;
  f[4] = 0;
  f[5] = f[6] = f[7] = f[8] = 0;
  for (int i = 0; i < 4; ++i) {
    f[9 + i] = static_cast<uint8_t>(static_cast<uint32_t>(last) >> (24 - 8 * i));
    f[13 + i] = static_cast<uint8_t>(code >> (24 - 8 * i));
  }
  uv_buf_t b = uv_buf_init(reinterpret_cast<char*>(goaway_frame_), sizeof goaway_frame_);
  const bool sent = client_->write(&goaway_write_, &b, 1) >= 0;
  closeNow(sent);
}

void H2Conn::closeNow(bool linger) noexcept {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  h2_worker_->flushes().remove(this);
  while (streams_ != nullptr) freeStream(streams_);
  lstats_->h2_connections_active.add(-1);
  client_->stopTimer();
  client_->setOwner(*shell_);   // its last callback frees the session, which frees this
  if (linger && !client_->closing())
    client_->lingerClose(kLingerMs);   // the session's onLingerDone lets it close
  else
    client_->close();
}

// ---- the HTTP session's orders --------------------------------------------------------------

void H2Conn::drain() noexcept {
  if (state_ != State::kOpen) return;
  state_ = State::kDraining;
  drain_notice_ = true;
  nghttp2_submit_shutdown_notice(session_);
  wantWrite();
  if (state_ != State::kClosed) client_->startTimer(kDrainNoticeMs);
}

void H2Conn::abort() noexcept { closeNow(); }

void H2Conn::backendDown(const BackendState& backend) noexcept {
  for (H2Stream* st = streams_; st != nullptr;) {
    H2Stream* next = st->next;
    st->backendDown(backend);
    st = next;
  }
  flush();
}

void H2Conn::noteOversizedHeaders() noexcept {
  if (++oversized_ > kMaxOversized)
    goAway(NGHTTP2_ENHANCE_YOUR_CALM, H2GoawayReason::kHeaderList);
}

void H2Conn::freeStream(H2Stream* st) noexcept {
  if (st->prev != nullptr)
    st->prev->next = st->next;
  else
    streams_ = st->next;
  if (st->next != nullptr) st->next->prev = st->prev;
  st->prev = st->next = nullptr;
  if (st->phase() == H2Stream::Phase::kReady) {   // out of the list of streams to start
    H2Stream** p = &ready_;
    while (*p != nullptr && *p != st) p = &(*p)->ready_next;
    if (*p == st) *p = st->ready_next;
    ready_tail_ = &ready_;
    while (*ready_tail_ != nullptr) ready_tail_ = &(*ready_tail_)->ready_next;
    st->ready_next = nullptr;
  }
  if (decoding_ == st) decoding_ = nullptr;
  if (session_ != nullptr && state_ != State::kClosed)
    nghttp2_session_set_stream_user_data(session_, st->id(), nullptr);
  st->abandon();
  st->release();
  --stream_count_;
  h2_worker_->streams().put(st);
}

// ---- nghttp2's callbacks -------------------------------------------------------------------

int H2Conn::onBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
  auto* c = static_cast<H2Conn*>(user);
  if (hd->type != NGHTTP2_HEADERS || hd->stream_id % 2 == 0) return 0;
  const int32_t id = hd->stream_id;
  if (id > c->max_stream_id_) {
    if (id > c->max_stream_id_ + 2)
      c->skipped_[c->skipped_count_++ % kSkipped] = {c->max_stream_id_ + 2, id - 2};
    c->max_stream_id_ = id;
    return 0;
  }
  const uint32_t kept = std::min<uint32_t>(c->skipped_count_, kSkipped);
  for (uint32_t i = 0; i < kept; ++i)
    if (id >= c->skipped_[i].lo && id <= c->skipped_[i].hi)
      return NGHTTP2_ERR_CALLBACK_FAILURE;   // feed() answers GOAWAY PROTOCOL_ERROR
  return 0;
}

int H2Conn::onBeginHeaders(nghttp2_session* s, const nghttp2_frame* frame, void* user) {
  auto* c = static_cast<H2Conn*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST ||
      c->state_ == State::kClosed || c->state_ == State::kClosing)
    return 0;
  // Each stream is routed by the membership current when it begins.
  if (const auto& current = c->worker_->snapshot();
      current != nullptr && current.get() != c->snap_.get()) {
    if (const ListenerSnapshot* ls = current->findListener(c->lst_->config->name)) {
      c->snap_ = current;
      c->lst_ = ls;
    }
  }
  H2Stream* st = c->h2_worker_->streams().get();
  if (st == nullptr) {
    nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                              NGHTTP2_REFUSED_STREAM);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  st->begin(c, frame->hd.stream_id, c->snap_, c->lst_);
  st->next = c->streams_;
  if (c->streams_ != nullptr) c->streams_->prev = st;
  c->streams_ = st;
  ++c->stream_count_;
  c->lstats_->h2_streams.add();
  nghttp2_session_set_stream_user_data(s, frame->hd.stream_id, st);
  c->decoding_ = st;
  return 0;
}

int H2Conn::onHeader(nghttp2_session* s, const nghttp2_frame* frame, const uint8_t* name,
                     size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                     void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* c = static_cast<H2Conn*>(user);
  H2Stream* st = c->decoding_;
  if (st == nullptr || st->id() != frame->hd.stream_id) {   // a trailer block
    st = streamOf(s, frame->hd.stream_id);
    if (st == nullptr) return 0;
  }
  const bool trailer = frame->headers.cat != NGHTTP2_HCAT_REQUEST;
  if (!st->onField({reinterpret_cast<const char*>(name), namelen},
                   {reinterpret_cast<const char*>(value), valuelen}, trailer)) {
    c->fatal_code_ = NGHTTP2_ENHANCE_YOUR_CALM;
    c->fatal_reason_ = H2GoawayReason::kHeaderList;
    return NGHTTP2_ERR_CALLBACK_FAILURE;   // feed() ends the connection
  }
  return 0;
}

int H2Conn::onFrameRecv(nghttp2_session* s, const nghttp2_frame* frame, void* user) {
  auto* c = static_cast<H2Conn*>(user);
  if (c->state_ == State::kClosed || c->state_ == State::kClosing) return 0;
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_DATA && frame->hd.length == 0 && !end_stream) {
    if (++c->empty_frames_ > kMaxEmptyFrames) {
      c->goAway(NGHTTP2_ENHANCE_YOUR_CALM, H2GoawayReason::kEmptyFrames);
      return 0;
    }
  } else if (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) {
    c->empty_frames_ = 0;
  }
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS: {
      H2Stream* st = streamOf(s, frame->hd.stream_id);
      if (st == nullptr) return 0;
      if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        st->onHeadersEnd(end_stream);
        if (st->phase() == H2Stream::Phase::kReady) {
          *c->ready_tail_ = st;
          c->ready_tail_ = &st->ready_next;
          if (!c->in_read_) c->startReady();
        }
      } else if (end_stream) {   // trailers
        st->onRequestEnd();
      }
      return 0;
    }
    case NGHTTP2_DATA:
      if (H2Stream* st = streamOf(s, frame->hd.stream_id)) st->onDataFrameEnd(end_stream);
      return 0;
    case NGHTTP2_RST_STREAM: {
      H2Stream* st = streamOf(s, frame->hd.stream_id);
      const H2Config& h2 = c->lst_->config->h2;
      if (st != nullptr && st->unanswered() &&
          !c->resets_.take(resetBurst(h2), resetRate(h2), uv_now(c->worker_->loop())))
        c->goAway(NGHTTP2_ENHANCE_YOUR_CALM, H2GoawayReason::kRapidReset);
      return 0;
    }
    case NGHTTP2_PING:
      ++c->pings_;
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0 &&
          !c->pings_budget_.take(kControlBurst, kControlRate, uv_now(c->worker_->loop())))
        c->goAway(NGHTTP2_ENHANCE_YOUR_CALM, H2GoawayReason::kPingFlood);
      return 0;
    case NGHTTP2_SETTINGS:
      ++c->settings_;
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0 &&
          !c->settings_budget_.take(kControlBurst, kControlRate, uv_now(c->worker_->loop())))
        c->goAway(NGHTTP2_ENHANCE_YOUR_CALM, H2GoawayReason::kSettingsFlood);
      return 0;
    default:
      return 0;
  }
}

int H2Conn::onDataChunk(nghttp2_session* s, uint8_t, int32_t stream_id, const uint8_t* data,
                        size_t len, void* user) {
  auto* c = static_cast<H2Conn*>(user);
  if (c->state_ == State::kClosed || c->state_ == State::kClosing) return 0;
  if (H2Stream* st = streamOf(s, stream_id))
    st->onData(data, len);
  else  // a stream lb let go: its bytes still count against the connection's window
    nghttp2_session_consume_connection(s, len);
  return 0;
}

// Inside nghttp2's send or receive: the stream goes, and whether the connection ends with it
// is for flush's end (maybeFinish), once what was produced with it is written.
int H2Conn::onStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user) {
  auto* c = static_cast<H2Conn*>(user);
  if (c->state_ == State::kClosed) return 0;
  if (H2Stream* st = streamOf(c->session_, stream_id)) c->freeStream(st);
  return 0;
}

// A GOAWAY with an error that nghttp2 sent on its own (a connection error RFC 9113 defines:
// a bad frame, a stream id out of order, a compression error) is counted here; lb's own
// (goAway) counted itself and is already kClosing.
int H2Conn::onFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* c = static_cast<H2Conn*>(user);
  if (frame->hd.type != NGHTTP2_GOAWAY || frame->goaway.error_code == NGHTTP2_NO_ERROR ||
      c->state_ == State::kClosing || c->state_ == State::kClosed)
    return 0;
  c->lstats_->h2_goaways[static_cast<int>(H2GoawayReason::kProtocolError)].add();
  c->state_ = State::kClosing;
  return 0;
}

int H2Conn::onInvalidFrame(nghttp2_session*, const nghttp2_frame* frame, int error, void*) {
  LB_DEBUG("h2: invalid frame type %u on stream %d: %s", frame->hd.type, frame->hd.stream_id,
           nghttp2_strerror(error));
  return 0;
}

}  // namespace lb
