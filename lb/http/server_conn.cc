// The server connection's mechanics: reading into one buffer, parsing one exchange at a time,
// writing with backpressure, and the graceful close. What is answered is the handler's.
#include "lb/http/server_conn.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "lb/core/log.h"
#include "lb/core/strings.h"
#include "lb/http/status.h"

namespace lb {

namespace {

// Unsent output beyond which the connection stops reading and starts no further answer: a
// client that pipelines requests but never reads cannot make the server buffer without bound.
constexpr size_t kMaxQueuedWriteBytes = 4 << 20;

}  // namespace

struct HttpServerConnWrite {
  ConnectionWrite w;    // first: onWritten's ConnectionWrite* is this write
  std::string prefix;   // owned bytes around the borrowed ones
  std::string suffix;
};

std::optional<std::string_view> HttpRequestHead::header(std::string_view name) const {
  for (uint32_t i = 0; i < headerCount(); ++i)
    if (equalsNoCase(headerName(i), name)) return headerValue(i);
  return std::nullopt;
}

// ---- lifecycle ------------------------------------------------------------------------------

HttpServerConn::HttpServerConn(uv_loop_t* loop, const HttpServerOptions& options,
                               HttpConnOwner* owner)
    : options_(options),
      owner_(owner),
      conn_(*this, loop),
      parser_(HTTP_REQUEST, this),
      cap_(std::max<size_t>(options.max_head_bytes, 1)) {
  buf_.reset(new char[cap_]);
  uv_timer_init(loop, &handler_timer_);
  handler_timer_.data = this;
  pending_closes_ = 2;   // the Connection's onClosed and the handler timer's close
}

HttpServerConn::~HttpServerConn() = default;

bool HttpServerConn::accept(uv_stream_t* listener) {
  if (conn_.accept(listener, nullptr) != 0) {   // plain: admin and lb-origin speak no TLS
    close();
    return false;
  }
  conn_.setNoDelay();   // answers are written whole; Nagle would only delay them
  return true;
}

void HttpServerConn::start(std::unique_ptr<HttpHandler> handler) {
  handler_ = std::move(handler);
  armRequestTimer();
  updateReading();
}

void HttpServerConn::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  conn_.close();   // cancels queued writes
  uv_close(reinterpret_cast<uv_handle_t*>(&handler_timer_), onHandlerTimerClosed);
}

void HttpServerConn::reset() {
  if (state_ == State::kClosed) return;
  // SO_LINGER 0 turns the close into an RST, as uv_tcp_close_reset does; like libuv, not
  // once the FIN is on its way (the linger), where a plain close will do.
  uv_os_fd_t fd;
  if (!conn_.lingering() &&
      uv_fileno(reinterpret_cast<const uv_handle_t*>(conn_.tcp()), &fd) == 0) {
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  close();
}

void HttpServerConn::onClosed(Connection&) noexcept { closeDone(); }

void HttpServerConn::onHandlerTimerClosed(uv_handle_t* h) {
  static_cast<HttpServerConn*>(h->data)->closeDone();
}

void HttpServerConn::closeDone() noexcept {
  if (--pending_closes_ > 0) return;
  handler_.reset();
  owner_->connectionClosed(this);
  delete this;
}

// Graceful end: let every queued write reach the socket, send FIN, then keep reading (and
// dropping) for a bounded time, so that input the client sent after what we answered does
// not turn our close into an RST that could destroy the answer on its way (what nginx calls
// lingering close).
void HttpServerConn::closeAfterWrites() {
  if (state_ == State::kClosed || state_ == State::kFlushing || state_ == State::kLingering)
    return;
  state_ = State::kFlushing;
  conn_.stopTimer();
  uv_timer_stop(&handler_timer_);
  if (conn_.writesInFlight() == 0) startLinger();
  else updateReading();
}

void HttpServerConn::startLinger() {
  state_ = State::kLingering;
  used_ = parsed_ = 0;
  // The Connection reads (into a scratch block) and drops until the client's EOF, an error
  // or the linger time, then closes: onClosed follows.
  if (read_eof_ || !conn_.lingerClose(options_.linger_ms))
    close();   // the client is done too, or gone: nothing to linger for
}

// The client closed, reset, or the linger time passed; the Connection closes itself next.
void HttpServerConn::onLingerDone(Connection&) noexcept { close(); }

void HttpServerConn::onTimer(Connection&) noexcept {
  close();   // the request time ran out (State::kHead, kExchange)
}

void HttpServerConn::armRequestTimer() {
  if (options_.request_timeout_ms > 0) conn_.startTimer(options_.request_timeout_ms);
}

template <typename F>
void HttpServerConn::call(F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    LB_DEBUG("http server: handler failed: %s", e.what());
    reset();
  } catch (...) {
    reset();
  }
}

// ---- reading --------------------------------------------------------------------------------

void HttpServerConn::updateReading() {
  // The linger's reads are the Connection's (lingerClose started them).
  if (state_ == State::kClosed || state_ == State::kLingering) return;
  bool want = !read_eof_ && handler_ != nullptr;
  if (state_ == State::kFlushing) {
    want = false;   // reading resumes, to drop input, once the FIN is on its way
  } else {
    want = want && used_ < cap_ && conn_.queued() < kMaxQueuedWriteBytes;
  }
  if (want == conn_.reading()) return;
  if (want && conn_.readStart() != 0) {
    close();
    return;
  }
  if (!want) conn_.readStop();
}

void HttpServerConn::onAlloc(Connection&, uv_buf_t* buf) noexcept {
  // A tunnel hands each read on at once: it reuses the whole buffer. Otherwise the read
  // lands after the bytes still to be parsed.
  size_t at = state_ == State::kTunnel ? 0 : used_;
  *buf = uv_buf_init(buf_.get() + at, static_cast<unsigned>(cap_ - at));
}

void HttpServerConn::onError(Connection&, int) noexcept {
  close();   // ECONNRESET and friends: nobody is left to answer
}

void HttpServerConn::onRead(Connection&, char*, size_t n) noexcept {
  if (state_ == State::kClosed || n == 0) return;   // n == 0: our buffer back, empty
  switch (state_) {
    case State::kHead:
    case State::kExchange:
      used_ += n;
      drive();
      return;
    case State::kTunnel:
      call([&] { handler_->onTunnelData(*this, {buf_.get(), n}); });
      updateReading();
      return;
    default:   // kFlushing, kLingering: dropped
      return;
  }
}

void HttpServerConn::onEof(Connection&) noexcept {
  read_eof_ = true;
  updateReading();
  switch (state_) {
    case State::kHead:   // idle, or half a request that can no longer complete
      if (conn_.writesInFlight() > 0) closeAfterWrites();   // the last answer still goes out
      else close();
      return;
    case State::kTunnel:
      closeAfterWrites();
      return;
    case State::kExchange:
      if (ex_.request_done || !parser_.hasBody()) {
        // A client that half-closes after its request still gets the answer, then the close.
        keep_alive_ = false;
        if (ex_.answer_done) closeAfterWrites();
        return;
      }
      // The request can no longer complete. An answer cut short is reset, not ended as if
      // it were whole.
      if (ex_.answer_started && !ex_.answer_done) reset();
      else close();
      return;
    default:   // kFlushing: startLinger sees read_eof_ once the writes are out
      return;
  }
}

// ---- parsing --------------------------------------------------------------------------------

void HttpServerConn::drive() {
  if (driving_ || state_ == State::kClosed) return;   // re-entered from a handler: the outer
  driving_ = true;                                      // loop goes on
  while (state_ == State::kHead || state_ == State::kExchange) {
    if (state_ == State::kExchange) {
      if (ex_.paused) break;
      if (ex_.request_done) {
        if (!ex_.answer_done || !nextRequest()) break;
        continue;
      }
      // Fed even with no new input: a parser resumed after the head may complete a message
      // without another byte.
    } else if (used_ == parsed_) {
      break;
    }
    size_t consumed = 0;
    HttpParser::Result r =
        parser_.feed(buf_.get(), buf_.get() + parsed_, used_ - parsed_, &consumed);
    parsed_ += consumed;
    if (state_ != State::kHead && state_ != State::kExchange) break;   // closed from onBody
    if (r == HttpParser::Result::kNeedMore) {
      // The head does not fit: 414 while the request-target is what does not (RFC 9112 §3).
      if (state_ == State::kHead && used_ == cap_) refuse(parser_.urlComplete() ? 431 : 414);
      break;
    }
    if (r == HttpParser::Result::kHeadComplete) {
      beginExchange();
    } else if (r == HttpParser::Result::kMessageComplete) {
      ex_.request_done = true;
      call([&] { handler_->onRequestComplete(*this); });
      if (state_ == State::kExchange && ex_.tunnel) enterTunnel();
    } else {
      LB_DEBUG("http server: bad request: %s", parser_.errorReason());
      refuse(parser_.error() == HttpParser::Error::kTooManyHeaders ? 431
             : parser_.error() == HttpParser::Error::kBodyTooLarge ? 413
             : parser_.error() == HttpParser::Error::kVersion      ? 505
                                                                   : 400);
    }
  }
  if (state_ == State::kHead || state_ == State::kExchange) compact();
  driving_ = false;
  updateReading();
}

void HttpServerConn::beginExchange() {
  state_ = State::kExchange;
  ex_ = Exchange{};
  // After an upgrade request the bytes are no longer HTTP: unless the handler takes the
  // tunnel, the connection ends with this answer.
  keep_alive_ = parser_.keepAlive() && !parser_.upgrade() && owner_->keepingAlive();
  const HttpRequestHead head(parser_, buf_.get());
  call([&] { handler_->onRequest(*this, head); });
  if (state_ == State::kExchange) parser_.resumeAfterHead(false);
}

bool HttpServerConn::nextRequest() {
  if (!keep_alive_) {
    closeAfterWrites();
    return false;
  }
  if (conn_.queued() >= kMaxQueuedWriteBytes)
    return false;   // onWritten drives again as the queue drains
  parser_.nextMessage();
  state_ = State::kHead;
  ex_ = Exchange{};
  compact();   // the next head starts at offset 0, where it has the whole buffer
  armRequestTimer();
  return true;
}

void HttpServerConn::enterTunnel() {
  state_ = State::kTunnel;
  conn_.stopTimer();   // a tunnel lasts as long as both sides want
  std::string_view rest(buf_.get() + parsed_, used_ - parsed_);
  if (!rest.empty()) call([&] { handler_->onTunnelData(*this, rest); });
  used_ = parsed_ = 0;
  if (read_eof_) closeAfterWrites();   // the client half-closed before the tunnel opened
}

void HttpServerConn::compact() {
  if (parsed_ == 0 || parser_.inHead()) return;   // a head's spans are offsets into buf_
  memmove(buf_.get(), buf_.get() + parsed_, used_ - parsed_);
  used_ -= parsed_;
  parsed_ = 0;
}

void HttpServerConn::onBody(const char* data, size_t len) noexcept {
  if (state_ != State::kExchange) return;   // the handler already gave up on this request
  call([&] { handler_->onBody(*this, {data, len}); });
}

// ---- the handler's controls -----------------------------------------------------------------

void HttpServerConn::finish() {
  if (state_ != State::kExchange || ex_.answer_done) return;
  ex_.answer_done = true;
  if (!keep_alive_) {
    closeAfterWrites();   // whatever is left of the request is read and dropped meanwhile
    return;
  }
  drive();
}

void HttpServerConn::pause() {
  if (state_ == State::kExchange) ex_.paused = true;
}

void HttpServerConn::resume() {
  if (state_ != State::kExchange || !ex_.paused) return;
  ex_.paused = false;
  drive();
}

void HttpServerConn::startTimer(uint64_t ms) {
  if (answering()) uv_timer_start(&handler_timer_, onHandlerTimer, ms, 0);
}

void HttpServerConn::onHandlerTimer(uv_timer_t* t) {
  auto* c = static_cast<HttpServerConn*>(t->data);
  if (c->answering()) c->call([c] { c->handler_->onTimer(*c); });
}

void HttpServerConn::startTunnel() {
  if (state_ != State::kExchange) return;
  ex_.tunnel = true;
  if (ex_.request_done) enterTunnel();
}

void HttpServerConn::refuse(int status) {
  if (state_ != State::kHead && state_ != State::kExchange) return;
  if (state_ == State::kExchange && ex_.answer_started && !ex_.answer_done) {
    reset();   // mid-answer: the only honest signal left is to cut the connection
    return;
  }
  if (state_ == State::kHead || !ex_.answer_started)
    queue(closingResponse(status, options_.error_headers), {}, {});
  closeAfterWrites();
}

// ---- writing --------------------------------------------------------------------------------

void HttpServerConn::write(std::string bytes) { write(std::move(bytes), {}, {}); }

void HttpServerConn::write(std::string prefix, std::string_view borrowed, std::string suffix) {
  if (state_ == State::kExchange ? ex_.answer_done : state_ != State::kTunnel) return;
  ex_.answer_started = true;
  queue(std::move(prefix), borrowed, std::move(suffix));
}

void HttpServerConn::queue(std::string prefix, std::string_view borrowed, std::string suffix) {
  if (prefix.empty() && borrowed.empty() && suffix.empty()) return;
  auto* w = new HttpServerConnWrite{{}, std::move(prefix), std::move(suffix)};
  w->w.user = w;
  uv_buf_t bufs[3];
  unsigned n = 0;
  if (!w->prefix.empty())
    bufs[n++] = uv_buf_init(w->prefix.data(), static_cast<unsigned>(w->prefix.size()));
  if (!borrowed.empty())
    bufs[n++] = uv_buf_init(const_cast<char*>(borrowed.data()),
                            static_cast<unsigned>(borrowed.size()));
  if (!w->suffix.empty())
    bufs[n++] = uv_buf_init(w->suffix.data(), static_cast<unsigned>(w->suffix.size()));
  // Always queued (no try-write first): every write completes in onWritten on a later loop
  // turn, so a handler that writes again from onWritten never recurses into itself.
  if (conn_.write(&w->w, bufs, n, /*try_first=*/false) < 0) {
    delete w;
    close();
  }
}

void HttpServerConn::onWritten(Connection&, ConnectionWrite* cw, int status) noexcept {
  delete static_cast<HttpServerConnWrite*>(cw->user);
  if (status == UV_ECANCELED || state_ == State::kClosed) return;   // close() runs
  if (status < 0) {   // the client went away
    close();
    return;
  }
  if (state_ == State::kFlushing) {
    if (conn_.writesInFlight() == 0) startLinger();
    return;
  }
  if (conn_.writesInFlight() == 0 && answering()) call([this] { handler_->onWritten(*this); });
  drive();   // reading, or an answer held back by the write queue, may go on
}

}  // namespace lb
