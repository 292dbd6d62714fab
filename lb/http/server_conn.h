// One client connection of lb's small HTTP/1.1 server (lb/http/server.h): it reads, parses
// requests with HttpParser, hands each to the connection's HttpHandler, writes what the
// handler queues, keeps the connection alive between requests, enforces the head-size and
// request-time limits, and closes gracefully (FIN, then a bounded lingering read) so that the
// last answer is not destroyed by an RST.
//
// Requests are answered strictly in order, one at a time: the next request of a pipelined
// batch is parsed only once the handler finished the current answer and the current request
// was read to its end. A handler answers at once or later (a timer, a stream it feeds as
// writes drain), and sees the request body as it arrives unless it pauses the connection.
//
// The socket's life (accept, reads, writes, the FIN, the lingering read, the counted close)
// is lb/net's Connection, as for every proxy session; what stays here is the HTTP state
// machine above it, the request/linger timer being the Connection's and the handler's timer
// one of its own. Reads land in the connection's own buffer (owner-supplied, not pool
// blocks): a head is parsed in place there, and must fit in it.
//
// Loop thread only. The connection owns its Connection, its handler timer and its handler;
// it frees them after the last close callback, and nothing else may delete it.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lb/http/parser.h"
#include "lb/http/server_options.h"
#include "lb/net/connection.h"

namespace lb {

class HttpServerConn;

// The server that accepted a connection, as the connection sees it.
class HttpConnOwner {
 public:
  // The connection's last close callback ran and its handler is gone; `conn` is deleted
  // right after this returns (the owner may free itself meanwhile).
  virtual void connectionClosed(HttpServerConn* conn) noexcept = 0;
  // False once the server stopped accepting: each answer from then on closes its connection
  // (Connection: close), so keep-alive clients move to whoever accepts now.
  virtual bool keepingAlive() const noexcept { return true; }

 protected:
  ~HttpConnOwner() = default;
};

// A request head as a handler sees it, viewed in place in the connection's buffer: valid
// only during HttpHandler::onRequest (copy what must live longer).
class HttpRequestHead {
 public:
  HttpRequestHead(const HttpParser& parser, const char* base) : p_(parser), base_(base) {}

  std::string_view method() const { return p_.head().method.in(base_); }   // "GET"
  uint8_t methodCode() const { return p_.method(); }                      // HTTP_GET, ...
  std::string_view target() const { return p_.head().url.in(base_); }     // "/p?q", as sent
  int httpMajor() const { return p_.head().http_major; }
  int httpMinor() const { return p_.head().http_minor; }
  uint32_t headerCount() const { return p_.head().header_count; }
  std::string_view headerName(uint32_t i) const { return p_.head().headers[i].name.in(base_); }
  std::string_view headerValue(uint32_t i) const { return p_.head().headers[i].value.in(base_); }
  // The first header named `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;
  bool hasBody() const { return p_.hasBody(); }
  bool chunked() const { return p_.chunked(); }
  uint64_t contentLength() const { return p_.contentLength(); }   // 0 without the header
  bool upgrade() const { return p_.upgrade(); }   // Upgrade + Connection: upgrade, or CONNECT

 private:
  const HttpParser& p_;
  const char* base_;
};

// What the server calls for one connection; the server's factory makes one per connection,
// and the connection deletes it after its last close callback (the destructor must not call
// the connection). Every call runs on the loop thread; an exception thrown from one resets
// the connection.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // A request head is complete. Answer through `conn` (write, then finish) now or later.
  virtual void onRequest(HttpServerConn& conn, const HttpRequestHead& head) = 0;
  // Body bytes of the current request, de-chunked, as they arrive (not while paused). `data`
  // lies in the connection's read buffer: copy what must outlive the call.
  virtual void onBody(HttpServerConn&, std::string_view /*data*/) {}
  // The current request was read to its end.
  virtual void onRequestComplete(HttpServerConn&) {}
  // Every write queued so far reached the socket: the moment to queue the next piece of a
  // long answer (backpressure without a queue).
  virtual void onWritten(HttpServerConn&) {}
  // The timer set with HttpServerConn::startTimer expired.
  virtual void onTimer(HttpServerConn&) {}
  // After startTunnel(): raw bytes from the client (in the read buffer, as for onBody).
  virtual void onTunnelData(HttpServerConn&, std::string_view /*data*/) {}
};

class HttpServerConn final : private HttpBodySink, private ConnectionOwner {
 public:
  HttpServerConn(const HttpServerConn&) = delete;
  HttpServerConn& operator=(const HttpServerConn&) = delete;

  // ---- for handlers: answering the current request ----
  // Queues bytes for the client, after everything queued before. Ignored once the
  // connection no longer answers (closing, or the answer was finished).
  void write(std::string bytes);
  // The same, with `borrowed` not copied (it must outlive the write: static data), between
  // the owned `prefix` and `suffix` (a chunk's size line and its CRLF).
  void write(std::string prefix, std::string_view borrowed, std::string suffix);
  // The answer is complete. The connection goes on to the next request once this one is
  // read to its end, or closes gracefully when it is not kept alive.
  void finish();
  // Whether the connection stays open after this answer: the request's wish (HTTP/1.1
  // default, HTTP/1.0 keep-alive, Connection: close), false for an upgrade request.
  bool keepAlive() const { return keep_alive_; }
  // Closes the connection (gracefully) after this answer; say so in the answer.
  void closeAfterAnswer() { keep_alive_ = false; }
  // Stops parsing the request until resume(): called from onRequest, no body byte reaches
  // the handler before resume(); called from onBody, the rest of the read being parsed
  // still does.
  void pause();
  void resume();
  // onTimer after `ms` milliseconds; a second call replaces the first.
  void startTimer(uint64_t ms);
  // Upgrade accepted (the 101 is written): once the request's message ends, every further
  // byte goes raw to onTunnelData, and writes go on; no finish() is needed. The client's
  // EOF closes the connection after the queued writes.
  void startTunnel();
  // Answers `status` itself (lb/http/status.h's closingResponse plus the server's extra
  // headers) and closes gracefully; a reset when an answer was already started.
  void refuse(int status);
  // Cuts the connection now with an RST (SO_LINGER 0): queued writes are dropped.
  void reset();

  // ---- for the server ----
  // Closes now (idempotent): in-flight writes are cancelled, the handler is not called again.
  void close();

 private:
  friend class HttpServer;
  enum class State {
    kHead,        // waiting for (or reading) a request head; the request timer runs
    kExchange,    // a request is with the handler: its body parsed, its answer written
    kTunnel,      // after an accepted upgrade: raw bytes both ways through the handler
    kFlushing,    // closing gracefully: the queued writes drain first
    kLingering,   // FIN sent: input read and dropped until EOF or the linger time is over
    kClosed,      // uv_close called; the object goes in the last close callback
  };
  // The current request/answer, while State::kExchange.
  struct Exchange {
    bool request_done = false;    // read to its end
    bool answer_started = false;  // something was written for it
    bool answer_done = false;     // finish() called
    bool paused = false;
    bool tunnel = false;          // startTunnel() called
  };

  HttpServerConn(uv_loop_t* loop, const HttpServerOptions& options, HttpConnOwner* owner);
  ~HttpServerConn();
  // Takes the pending connection off `listener`; false (and closing) when accept fails.
  bool accept(uv_stream_t* listener);
  void start(std::unique_ptr<HttpHandler> handler);

  static void onHandlerTimer(uv_timer_t* t);
  static void onHandlerTimerClosed(uv_handle_t* h);
  void onBody(const char* data, size_t len) noexcept override;

  // ConnectionOwner
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  void onTimer(Connection& c) noexcept override;   // the request time ran out
  void onLingerDone(Connection& c) noexcept override;
  void onClosed(Connection& c) noexcept override;
  void closeDone() noexcept;          // one of the two closes (Connection, handler timer) ended

  void drive();             // parses buffered input while the state allows it
  void beginExchange();     // a head is complete: hand it to the handler
  bool nextRequest();       // the exchange is over; false when the connection cannot go on
  void enterTunnel();
  void closeAfterWrites();  // graceful close: flush, FIN, linger
  void startLinger();
  void compact();           // drops parsed bytes that no head view points into
  // Queues a write whatever the exchange's state (write() checks it first).
  void queue(std::string prefix, std::string_view borrowed, std::string suffix);
  void updateReading();
  void armRequestTimer();
  bool answering() const { return state_ == State::kExchange || state_ == State::kTunnel; }
  // Runs a handler callback; an exception from it resets the connection.
  template <typename F>
  void call(F&& f) noexcept;

  const HttpServerOptions& options_;   // the server's, which outlives its connections
  HttpConnOwner* owner_;
  std::unique_ptr<HttpHandler> handler_;
  State state_ = State::kHead;
  Exchange ex_;
  bool keep_alive_ = true;
  Connection conn_;         // its timer: the request time, then the linger time
  uv_timer_t handler_timer_;   // handler_timer_.data = this
  HttpParser parser_;
  size_t cap_;
  std::unique_ptr<char[]> buf_;   // input, cap_ bytes; a head starts at offset 0 and must fit
  size_t used_ = 0;         // bytes in buf_
  size_t parsed_ = 0;       // of which the parser has consumed
  int pending_closes_ = 0;
  bool read_eof_ = false;
  bool driving_ = false;
};

}  // namespace lb
