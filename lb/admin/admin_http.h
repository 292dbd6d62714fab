// A small HTTP/1.1 server for the admin endpoints, on the main thread's libuv loop, parsing
// with llhttp. Admin traffic is a scraper and an operator's curl, so it serves one request at
// a time per connection (pipelined requests wait, parsing is paused while a response is
// written), bounds each request's size, the number of connections and their idle time, and
// answers only GET and HEAD.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>

namespace lb {

struct AdminRequest {
  std::string method;   // "GET" or "HEAD": the server answers any other with 405
  std::string path;     // the target before '?', undecoded
  std::string query;    // the target after '?', undecoded; "" when absent
};

struct AdminResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string extra_headers;   // whole lines, each ending "\r\n"
};

// Called on the loop thread for each complete request. May throw: the server answers 500.
using AdminHandler = std::function<AdminResponse(const AdminRequest&)>;

// Limits an operator never meets and a misbehaving client cannot exceed.
struct AdminLimits {
  size_t max_request_bytes = 16 * 1024;   // request line + headers + body; beyond: 431
  size_t max_connections = 64;            // beyond: accepted and closed at once
  uint64_t idle_timeout_ms = 30000;       // a request must arrive within this, from accept or
                                          // from the previous response
};

class AdminConnection;

// Loop thread only. Owns its listener and every connection; frees itself after the last
// close callback once stop() was called.
class AdminHttpServer {
 public:
  // Binds and listens on `listen` ("127.0.0.1:9901", "[::1]:9901"; port 0 picks a free one).
  // nullptr with *error set when the address is bad or the bind fails. `on_closed` runs once,
  // after the last handle closed and the server freed itself.
  static AdminHttpServer* start(uv_loop_t* loop, const std::string& listen, AdminHandler handler,
                                std::function<void()> on_closed, std::string* error,
                                AdminLimits limits = {});
  AdminHttpServer(const AdminHttpServer&) = delete;
  AdminHttpServer& operator=(const AdminHttpServer&) = delete;

  // Closes the listener and every connection (in-flight writes are cancelled). Idempotent.
  void stop();
  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  size_t connectionCount() const { return connections_.size(); }

 private:
  friend class AdminConnection;
  AdminHttpServer(uv_loop_t* loop, AdminHandler handler, std::function<void()> on_closed,
                  AdminLimits limits);
  ~AdminHttpServer() = default;
  static void onConnection(uv_stream_t* server, int status);
  static void onListenerClosed(uv_handle_t* handle);
  void accept();
  void forget(AdminConnection* c);   // a connection's last close callback ran
  void maybeFree();

  uv_loop_t* loop_;
  uv_tcp_t listener_;                 // listener_.data = this
  AdminHandler handler_;
  std::function<void()> on_closed_;
  AdminLimits limits_;
  int port_ = 0;
  bool stopping_ = false;
  bool listener_closed_ = false;
  std::set<AdminConnection*> connections_;
  char read_buffer_[16 * 1024];       // one read at a time on this loop: shared by all
};

// "host:port" or "[v6]:port" to a socket address. False when it does not parse.
bool parseListenAddress(const std::string& listen, sockaddr_storage* out);

}  // namespace lb
