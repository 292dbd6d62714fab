// lb's small HTTP/1.1 server: the admin endpoints and lb-origin both stand on it. It listens
// on one address, accepts up to a connection limit, and gives each connection an
// HttpServerConn (lb/http/server_conn.h: parsing, keep-alive, pipelining in order, limits,
// lingering close) and a handler from the caller's factory. What is answered is the
// handler's business: a buffered request/response function (lb/http/buffered_handler.h) or a
// streaming handler of its own.
//
//   HttpServerOptions o;
//   o.max_connections = 64;
//   auto* s = HttpServer::start(loop, address, o, bufferedHandlers(fn, 16384), on_closed, &err);
//   ...
//   s->stop();   // on_closed runs once every handle is closed
//
// Loop thread only (it may be started from another thread before that loop runs). The server
// owns its listener and every connection, and frees itself after the last close callback
// once stop() was called.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "lb/http/server_conn.h"
#include "lb/http/server_options.h"

namespace lb {

class HttpServer final : private HttpConnOwner {
 public:
  // Makes the handler of one new connection; nullptr refuses it (closed at once).
  using HandlerFactory = std::function<std::unique_ptr<HttpHandler>(HttpServerConn&)>;

  // Binds and listens on `address` (port 0: a free one, see port()). nullptr with *error set
  // ("cannot listen on ADDRESS: REASON") when it cannot. `on_closed` runs once, after the
  // server freed itself.
  static HttpServer* start(uv_loop_t* loop, const sockaddr_storage& address,
                           HttpServerOptions options, HandlerFactory factory,
                           std::function<void()> on_closed, std::string* error);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Closes the listener and every connection now (in-flight writes are cancelled).
  // Idempotent.
  void stop();
  int port() const;
  // "127.0.0.1:9901", with the port actually bound.
  std::string address() const;
  // A close-on-exec dup of the listening socket, for the lb that replaces this process; -1
  // once stopping.
  int dupListeningSocket() const;
  // Closes the listening socket only: the connections open go on (an upgrade's old process,
  // whose admin socket the new one serves from now on). stop() still ends everything.
  void stopAccepting();
  size_t connectionCount() const { return connections_.size(); }
  bool keepingAlive() const noexcept override {
    return !stopping_ && !uv_is_closing(reinterpret_cast<const uv_handle_t*>(&listener_));
  }

 private:
  HttpServer(uv_loop_t* loop, HttpServerOptions options, HandlerFactory factory,
             std::function<void()> on_closed);
  ~HttpServer() = default;
  static void onConnection(uv_stream_t* listener, int status);
  static void onListenerClosed(uv_handle_t* handle);
  void accept();
  void connectionClosed(HttpServerConn* c) noexcept override;
  void maybeFree();

  uv_loop_t* loop_;
  uv_tcp_t listener_;                // listener_.data = this
  sockaddr_storage bound_{};
  HttpServerOptions options_;
  HandlerFactory factory_;
  std::function<void()> on_closed_;
  bool stopping_ = false;
  bool listener_closed_ = false;
  std::set<HttpServerConn*> connections_;
};

}  // namespace lb
