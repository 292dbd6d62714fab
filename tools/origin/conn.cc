// lb-origin's connection: reading, llhttp parsing one exchange at a time, writing with
// backpressure, and a lingering close. What each request is answered lives in
// tools/origin/respond.cc. See origin_conn.h for the threading contract and
// tools/origin/main.cc for the behaviours a test can ask for.
#include "tools/origin/conn.h"

namespace lb::origin {
namespace {

constexpr size_t kMaxHeadBytes = 65536;           // url + headers; beyond: 431
constexpr size_t kMaxPendingBytes = 1 << 20;      // unparsed input before we stop reading
constexpr size_t kMaxWriteQueueBytes = 4 << 20;   // unsent output before we stop reading
constexpr uint64_t kLingerMs = 1000;              // drain input after FIN, then close

struct WriteReq {
  uv_write_t req;
  OriginConn* conn;
  std::string prefix;   // owned bytes written before `data`
  std::string owned;    // owned body bytes
  std::string suffix;
  bool bytes_chunk = false;
};

}  // namespace

// ---- lifecycle ---------------------------------------------------------------------------

OriginConn::OriginConn(OriginShared* shared, std::set<OriginConn*>* live)
    : shared_(shared), live_(live), id_(shared->connections_accepted.fetch_add(1) + 1) {
  llhttp_init(&parser_, HTTP_REQUEST, settings());
  parser_.data = this;
  tcp_.data = this;
  timer_.data = this;
  shutdown_req_.data = this;
  live_->insert(this);
  shared_->connections_active.fetch_add(1);
}

OriginConn::~OriginConn() {
  live_->erase(this);
  shared_->connections_active.fetch_sub(1);
}

bool OriginConn::accept(uv_stream_t* server, OriginShared* shared,
                        std::set<OriginConn*>* live) {
  auto* c = new OriginConn(shared, live);
  uv_tcp_init(server->loop, &c->tcp_);
  uv_timer_init(server->loop, &c->timer_);
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->tcp_)) != 0) {
    c->close();   // frees it in the close callbacks
    return false;
  }
  uv_tcp_nodelay(&c->tcp_, 1);
  c->updateReading();
  return true;
}

void OriginConn::close(bool reset) {
  if (closing_) return;
  closing_ = true;
  if (reading_) uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
  reading_ = false;
  uv_timer_stop(&timer_);
  pending_closes_ = 2;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onClosed);
  // A reset is refused while a shutdown is in flight; then a plain close will do.
  if (reset && uv_tcp_close_reset(&tcp_, onClosed) == 0) return;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), onClosed);
}

void OriginConn::onClosed(uv_handle_t* h) {
  auto* c = static_cast<OriginConn*>(h->data);
  if (--c->pending_closes_ == 0) delete c;
}

// Graceful end: let every queued write reach the socket, send FIN, then keep reading (and
// discarding) for a moment so that unread input does not turn our close into an RST that
// could destroy the response on its way (what nginx calls lingering close).
void OriginConn::closeAfterWrites() {
  close_after_writes_ = true;
  if (writes_in_flight_ == 0 && !lingering_ && !closing_) startLinger();
}

void OriginConn::startLinger() {
  lingering_ = true;
  if (uv_shutdown(&shutdown_req_, reinterpret_cast<uv_stream_t*>(&tcp_), onShutdown) != 0)
    close();
}

void OriginConn::onShutdown(uv_shutdown_t* req, int status) {
  auto* c = static_cast<OriginConn*>(req->data);
  if (status == UV_ECANCELED || c->closing_) return;
  if (status < 0 || c->read_eof_) {
    c->close();
    return;
  }
  uv_timer_start(&c->timer_, onTimer, kLingerMs, 0);
  c->updateReading();
}

// ---- reading -----------------------------------------------------------------------------

void OriginConn::updateReading() {
  if (closing_) return;
  auto* s = reinterpret_cast<uv_stream_t*>(&tcp_);
  bool want = !read_eof_ &&
              (lingering_ ||
               ((tunnel_ || (!paused_ && !close_after_writes_ && pending_.size() < kMaxPendingBytes)) &&
                uv_stream_get_write_queue_size(s) < kMaxWriteQueueBytes));
  if (want && !reading_) {
    if (uv_read_start(s, onAlloc, onRead) != 0) {
      close();
      return;
    }
    reading_ = true;
  } else if (!want && reading_) {
    uv_read_stop(s);
    reading_ = false;
  }
}

void OriginConn::onAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* c = static_cast<OriginConn*>(h->data);
  *buf = uv_buf_init(c->read_buf_, sizeof(c->read_buf_));
}

void OriginConn::onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  static_cast<OriginConn*>(s->data)->handleRead(n, buf);
}

void OriginConn::handleRead(ssize_t n, const uv_buf_t* buf) {
  if (closing_ || n == 0) return;
  if (n < 0) {
    if (n != UV_EOF || lingering_) {
      close();
      return;
    }
    read_eof_ = true;
    updateReading();
    bool delayed_without_body = ex_.head_done && !ex_.delayed && ex_.delay_ms > 0 &&
                                (parser_.flags & F_CHUNKED) == 0 && parser_.content_length == 0;
    if (tunnel_) {
      closeAfterWrites();
    } else if (delayed_without_body) {
      // A client that half-closes after its request still gets the delayed answer.
      ex_.keep_alive = false;
      pending_.clear();
    } else if (!ex_.head_done || !ex_.message_done) {
      // Idle, or a request that can no longer complete: nothing more to answer.
      if (!ex_.response_started || ex_.response_done) close();
      else close(true);
    } else {
      // The request is complete and its response under way: finish it, then close.
      ex_.keep_alive = false;
      pending_.clear();
      resumeIfReady();
    }
    return;
  }
  if (lingering_) return;   // discarded
  if (tunnel_) {
    write(std::string(buf->base, static_cast<size_t>(n)));
    updateReading();
    return;
  }
  pending_.append(buf->base, static_cast<size_t>(n));
  drive();
}

// ---- parsing -----------------------------------------------------------------------------

void OriginConn::drive() {
  if (driving_) return;   // re-entered through resumeIfReady(): the outer loop continues
  driving_ = true;
  while (!closing_ && !tunnel_ && !paused_ && !close_after_writes_) {
    // Runs once even with no input: a parser resumed after a pause may have a message to
    // complete without reading another byte.
    const char* base = pending_.data();
    llhttp_errno_t e = llhttp_execute(&parser_, base, pending_.size());
    if (e == HPE_OK) {
      pending_.clear();
      break;
    }
    if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
      pending_.erase(0, static_cast<size_t>(llhttp_get_error_pos(&parser_) - base));
      paused_ = true;
      afterPause();
      continue;
    }
    if (closing_) break;
    if (e == HPE_USER) badRequest(431, "header too large");
    else badRequest(400, llhttp_errno_name(e));
    break;
  }
  driving_ = false;
  updateReading();
}

void OriginConn::afterPause() {
  if (closing_ || close_after_writes_) return;
  if (ex_.websocket && ex_.message_done) {
    // Everything after the upgrade request is raw bytes: echo them from now on.
    tunnel_ = true;
    if (!pending_.empty()) write(std::move(pending_));
    pending_.clear();
    return;
  }
  resumeIfReady();   // otherwise waiting for the delay timer or for /bytes to finish
}

void OriginConn::resumeIfReady() {
  if (!paused_ || closing_ || close_after_writes_ || tunnel_) return;
  if (!ex_.message_done || !ex_.response_done) return;
  if (!ex_.keep_alive) {
    closeAfterWrites();
    return;
  }
  ex_ = Exchange{};
  paused_ = false;
  llhttp_resume(&parser_);
  drive();
}

void OriginConn::badRequest(int status, const char* reason) {
  (void)reason;   // a client must not be able to fill the log: not printed
  if (ex_.response_started) {
    close(true);   // mid-response: the only honest signal left is to cut the connection
    return;
  }
  std::string body = std::to_string(status) + " " + reasonPhrase(status) + "\n";
  write("HTTP/1.1 " + std::to_string(status) + " " + reasonPhrase(status) +
        "\r\nX-Backend: " + shared_->name + "\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  closeAfterWrites();
}

const llhttp_settings_t* OriginConn::settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t x;
    llhttp_settings_init(&x);
    x.on_message_begin = onMessageBegin;
    x.on_url = onUrl;
    x.on_header_field = onHeaderField;
    x.on_header_value = onHeaderValue;
    x.on_headers_complete = onHeadersComplete;
    x.on_body = onBody;
    x.on_message_complete = onMessageComplete;
    return x;
  }();
  return &s;
}

static OriginConn* connOf(llhttp_t* p) { return static_cast<OriginConn*>(p->data); }

int OriginConn::onMessageBegin(llhttp_t* p) {
  connOf(p)->ex_ = Exchange{};
  return 0;
}

int OriginConn::onUrl(llhttp_t* p, const char* at, size_t n) {
  Exchange& ex = connOf(p)->ex_;
  if ((ex.head_bytes += n) > kMaxHeadBytes) return HPE_USER;
  ex.url.append(at, n);
  return 0;
}

int OriginConn::onHeaderField(llhttp_t* p, const char* at, size_t n) {
  Exchange& ex = connOf(p)->ex_;
  if ((ex.head_bytes += n) > kMaxHeadBytes) return HPE_USER;
  if (ex.in_value || ex.headers.empty()) ex.headers.emplace_back();
  ex.in_value = false;
  ex.headers.back().first.append(at, n);
  return 0;
}

int OriginConn::onHeaderValue(llhttp_t* p, const char* at, size_t n) {
  Exchange& ex = connOf(p)->ex_;
  if ((ex.head_bytes += n) > kMaxHeadBytes) return HPE_USER;
  if (ex.headers.empty()) return HPE_USER;
  ex.in_value = true;
  ex.headers.back().second.append(at, n);
  return 0;
}

int OriginConn::onHeadersComplete(llhttp_t* p) { return connOf(p)->headersComplete(); }

int OriginConn::onBody(llhttp_t* p, const char* at, size_t n) {
  OriginConn* c = connOf(p);
  Exchange& ex = c->ex_;
  ex.body_bytes += n;
  if (ex.mode != Mode::kEcho) return 0;
  if (ex.chunked_out) c->write(hexSize(n) + "\r\n" + std::string(at, n) + "\r\n");
  else c->write(std::string(at, n));
  return 0;
}

int OriginConn::onMessageComplete(llhttp_t* p) {
  OriginConn* c = connOf(p);
  Exchange& ex = c->ex_;
  ex.message_done = true;
  if (ex.mode == Mode::kEcho) {
    if (ex.chunked_out) c->write("0\r\nX-Body-Bytes: " + std::to_string(ex.body_bytes) + "\r\n\r\n");
    ex.response_done = true;
  }
  return HPE_PAUSED;   // one exchange at a time: drive() decides when to go on
}

// ---- writing -----------------------------------------------------------------------------

void OriginConn::write(std::string data) {
  if (closing_ || data.empty()) return;
  auto* w = new WriteReq;
  w->conn = this;
  w->owned = std::move(data);
  w->req.data = w;
  uv_buf_t buf = uv_buf_init(w->owned.data(), static_cast<unsigned>(w->owned.size()));
  if (uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&tcp_), &buf, 1, onWrite) != 0) {
    delete w;
    close();
    return;
  }
  ++writes_in_flight_;
}

void OriginConn::writeStatic(const char* data, size_t n, std::string prefix, std::string suffix,
                             bool bytes_chunk) {
  if (closing_) return;
  auto* w = new WriteReq;
  w->conn = this;
  w->prefix = std::move(prefix);
  w->suffix = std::move(suffix);
  w->bytes_chunk = bytes_chunk;
  w->req.data = w;
  uv_buf_t bufs[3];
  unsigned count = 0;
  if (!w->prefix.empty())
    bufs[count++] = uv_buf_init(w->prefix.data(), static_cast<unsigned>(w->prefix.size()));
  bufs[count++] = uv_buf_init(const_cast<char*>(data), static_cast<unsigned>(n));
  if (!w->suffix.empty())
    bufs[count++] = uv_buf_init(w->suffix.data(), static_cast<unsigned>(w->suffix.size()));
  if (uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&tcp_), bufs, count, onWrite) != 0) {
    delete w;
    close();
    return;
  }
  ++writes_in_flight_;
}

void OriginConn::onWrite(uv_write_t* req, int status) {
  auto* w = static_cast<WriteReq*>(req->data);
  OriginConn* c = w->conn;
  bool bytes_chunk = w->bytes_chunk;
  delete w;
  c->handleWriteDone(status, bytes_chunk);
}

void OriginConn::handleWriteDone(int status, bool bytes_chunk) {
  --writes_in_flight_;
  if (status == UV_ECANCELED || closing_) return;   // close() runs; the object is still alive
  if (status < 0) {
    close();
    return;
  }
  if (bytes_chunk) sendBytesChunk();   // backpressure: the next chunk only now
  if (closing_) return;
  if (close_after_writes_ && writes_in_flight_ == 0 && !lingering_) startLinger();
  updateReading();
}

}  // namespace lb::origin
